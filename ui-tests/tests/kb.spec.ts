/**
 * The Knowledge bases panel against the real server: a knowledge base is
 * created from the side panel, two Markdown documents (written through the
 * contents API) are added by path and their ingest is watched to done (files
 * 2 of 2), a retrieval test ranks the right chunk first with its scores and
 * the query's words highlighted, and Ask answers through a fake
 * OpenAI-compatible server started here with a numbered citation that shows
 * the cited chunk; the same knowledge base in the Chat panel (its Ask's
 * "Chat in the Chat panel"): two questions, numbered citations that show the
 * chunk and open the source file. Pictured in the light and the dark theme,
 * in English and in Chinese.
 */
import {
  expect,
  galata,
  IJupyterLabPageFixture,
  test
} from '@jupyterlab/galata';
import type { APIRequestContext, Locator } from '@playwright/test';
import * as http from 'http';
import type { AddressInfo } from 'net';

import { lightAndDark, putText } from './helpers';

const API = '/cube/api/v1';

const REFUNDS = `# Refunds

A refund is paid back to the original card within thirty days of the
return. Store credit is offered for items bought in a sale. Keep the
receipt: the zephyrine sticker on it is the proof of purchase.
`;

const SHIPPING = `# Shipping

Parcels leave the warehouse every weekday before noon and arrive in two
to four working days. Heavy furniture travels by freight and is booked
for a delivery slot by phone.
`;

/** A fake OpenAI-compatible chat server: it cites the passage about thirty days. */
async function fakeModel(): Promise<{ url: string; close: () => void }> {
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', chunk => (raw += chunk));
    req.on('end', () => {
      const body = JSON.parse(raw || '{}');
      const prompt = (body.messages ?? [])
        .map((m: { content: string }) => m.content)
        .join('\n');
      let cite = 1;
      for (const m of prompt.matchAll(/\[(\d+)\]([^[]*)/g)) {
        if (m[2].includes('thirty days')) {
          cite = Number(m[1]);
          break;
        }
      }
      const content = `A refund is paid within thirty days of the return [${cite}].`;
      if (body.stream) {
        // streamed as OpenAI does: a piece per word, a moment apart
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        const words = content.split(/(?<= )/);
        let n = 0;
        const next = () => {
          if (n < words.length) {
            const piece = {
              id: 'chatcmpl-fake',
              object: 'chat.completion.chunk',
              model: body.model ?? 'fake',
              choices: [
                {
                  index: 0,
                  delta: { content: words[n++] },
                  finish_reason: null
                }
              ]
            };
            res.write(`data: ${JSON.stringify(piece)}\n\n`);
            setTimeout(next, 60);
          } else {
            res.end('data: [DONE]\n\n');
          }
        };
        next();
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'chatcmpl-fake',
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: body.model ?? 'fake',
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content },
              finish_reason: 'stop'
            }
          ],
          usage: { prompt_tokens: 50, completion_tokens: 12, total_tokens: 62 }
        })
      );
    });
  });
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/v1`, close: () => server.close() };
}

async function removeKb(
  request: APIRequestContext,
  base: string,
  name: string
): Promise<void> {
  const list = await request.get(`${base}${API}/kb`);
  for (const kb of (await list.json()).knowledge_bases ?? []) {
    if (kb.name === name) {
      await request.delete(
        `${base}${API}/kb/${encodeURIComponent(kb.project)}/${encodeURIComponent(name)}`
      );
    }
  }
}

/** Create, preview both documents' chunks, add them, watch the ingest end; the open view. */
async function createAndIngest(
  page: IJupyterLabPageFixture,
  name: string,
  folder: string,
  labels: { create: string; preview: string; progress: RegExp },
  picture: string
): Promise<Locator> {
  // the cube-lab tabs come a moment after the launcher
  await expect(
    page.locator('.lm-TabBar-tab[data-id="cube-lab-kb-panel"]')
  ).toBeVisible({ timeout: 30_000 });
  await page.sidebar.openTab('cube-lab-kb-panel');
  const panel = page.locator('.cube-KbPanel');
  // the side panel's toolbar button (the empty state's own one is there
  // only while no knowledge base is listed)
  await page
    .locator('#cube-lab-kb-panel')
    .getByRole('button', { name: labels.create })
    .first()
    .click();
  const form = panel.locator('.cube-KbCreate');
  await form.locator('input[name="kb-name"]').fill(name);
  await form.locator('button[type="submit"]').click();

  const view = page.locator('.cube-KbView');
  await expect(view.locator('.cube-Header h2')).toHaveText(name, {
    timeout: 15_000
  });
  await expect(panel.locator(`.cube-KbItem[data-kb="${name}"]`)).toBeVisible();

  // the chunks first: each file's count and first chunks, nothing added yet
  await view.locator('input[name="kb-preview-first"]').check();
  await view
    .locator('input[name="kb-paths"]')
    .fill(`${folder}/refunds.md, ${folder}/shipping.md`);
  await view.getByRole('button', { name: labels.preview, exact: true }).click();
  const preview = view.locator('.cube-KbPreview');
  await expect(preview).toHaveAttribute('data-state', 'shown', {
    timeout: 30_000
  });
  const files = preview.locator('.cube-KbPreview-file');
  await expect(files).toHaveCount(2);
  for (const file of await files.all()) {
    await expect(file).toHaveAttribute('data-chunks', /^[1-9]\d*$/);
    await expect(file.locator('.cube-KbPreview-chunk').first()).toBeVisible();
  }
  await expect(
    preview.locator('.cube-KbPreview-file[data-source$="refunds.md"]')
  ).toContainText('thirty days');
  await expect(view.locator('.cube-KbSourceTable')).toHaveCount(0);
  // other options: preview again (Add waits for it), then add with them
  await preview
    .locator('select[name="kb-preview-chunking"]')
    .selectOption('tokens');
  await preview.locator('input[name="kb-preview-size"]').fill('20');
  await preview.locator('input[name="kb-preview-overlap"]').fill('4');
  await expect(preview.locator('button[name="kb-preview-add"]')).toBeDisabled();
  await preview.locator('button[name="kb-preview-run"]').click();
  await expect(preview.locator('.cube-KbPreview-summary')).toContainText(/20/, {
    timeout: 30_000
  });
  await expect(preview.locator('button[name="kb-preview-add"]')).toBeEnabled();
  await preview.scrollIntoViewIfNeeded();
  await lightAndDark(page, picture, { ready: files.first() });
  await preview.locator('button[name="kb-preview-add"]').click();
  await expect(preview).toHaveCount(0);
  const ingest = view.locator('.cube-KbIngest').first();
  await expect(ingest).toBeVisible();
  await expect(ingest).toHaveAttribute('data-status', 'succeeded', {
    timeout: 120_000
  });
  await expect(ingest.locator('.cube-KbIngest-text')).toHaveText(
    labels.progress
  );
  await expect(ingest.locator('.cube-KbIngest-file')).toHaveCount(2);
  await expect(view.locator('.cube-KbSourceTable tbody tr')).toHaveCount(2);
  return view;
}

/** From the view's Ask: the Chat tab on the knowledge base, a URL answering. */
async function chatWithKb(
  page: IJupyterLabPageFixture,
  ask: Locator,
  url: string,
  name: string
): Promise<Locator> {
  await ask.locator('button[name="kb-open-chat"]').click();
  const chat = page.locator('.cube-ChatView');
  await expect(chat).toBeVisible({ timeout: 15_000 });
  await expect(chat.locator('select[name="target"]')).toHaveValue(
    `kb:${name}`,
    { timeout: 15_000 }
  );
  // no LLM deployment in this spec: an OpenAI-compatible URL answers
  await expect(chat.locator('select[name="target-answerer"]')).toHaveValue(
    'url'
  );
  await chat.locator('input[name="target-url"]').fill(url);
  await chat.locator('input[name="target-model"]').fill('fake-model');
  return chat;
}

/** Send a question in the Chat tab; its answer once complete (the `nth`, from 1). */
async function askInChat(
  chat: Locator,
  question: string,
  nth: number
): Promise<Locator> {
  await chat.locator('textarea[name="message"]').fill(question);
  await chat.locator('button[name="send"]').click();
  const answer = chat.locator('.cube-ChatKbAnswer').nth(nth - 1);
  await expect(answer).toHaveAttribute('data-status', 'complete', {
    timeout: 30_000
  });
  return answer;
}

/**
 * Register, in the knowledge base's project, a model that is no reranker
 * (a two-label classifier's config): what the Evaluate reranker can pick.
 */
async function registerNotAReranker(
  request: APIRequestContext,
  base: string,
  folder: string,
  kb: string
): Promise<string> {
  const list = await (await request.get(`${base}${API}/kb`)).json();
  const project = (list.knowledge_bases ?? []).find(
    (k: { name: string }) => k.name === kb
  )?.project;
  expect(project, 'the knowledge base is listed').toBeTruthy();
  const dir = `${folder}/two-labels`;
  const made = await request.put(
    `${base}/api/contents/${dir.split('/').map(encodeURIComponent).join('/')}`,
    { data: { type: 'directory' } }
  );
  expect(made.ok(), await made.text()).toBeTruthy();
  await putText(
    request,
    base,
    `${dir}/config.json`,
    JSON.stringify({
      model_type: 'bert',
      architectures: ['BertForSequenceClassification'],
      id2label: { '0': 'no', '1': 'yes' },
      label2id: { no: 0, yes: 1 }
    })
  );
  const name = 'two-labels';
  const registered = await request.post(`${base}${API}/models`, {
    data: { name, path: dir, project }
  });
  expect(registered.status(), await registered.text()).toBe(201);
  return name;
}

async function retrievalTest(view: Locator, query: string): Promise<Locator> {
  await view.locator('input[name="kb-query"]').fill(query);
  await view.locator('.cube-KbSearch-form button[type="submit"]').click();
  await expect(view.locator('.cube-KbSearch-summary')).toContainText(query, {
    timeout: 30_000
  });
  const first = view.locator('.cube-KbHit').first();
  await expect(first).toBeVisible({ timeout: 30_000 });
  return first;
}

test.describe('cube-lab knowledge bases', () => {
  test.setTimeout(240_000);

  test('create, ingest two documents, retrieval test, ask with citations', async ({
    page,
    request,
    baseURL,
    tmpPath
  }) => {
    const base = baseURL!;
    await removeKb(request, base, 'handbook');
    await putText(request, base, `${tmpPath}/refunds.md`, REFUNDS);
    await putText(request, base, `${tmpPath}/shipping.md`, SHIPPING);

    // the empty panel, then the create form
    await page.sidebar.openTab('cube-lab-kb-panel');
    await expect(page.locator('.cube-KbPanel .cube-TEmpty')).toBeVisible({
      timeout: 15_000
    });

    const view = await createAndIngest(
      page,
      'handbook',
      tmpPath,
      {
        create: 'New knowledge base',
        preview: 'Preview',
        progress: /2 of 2 files · \d+ chunks?/
      },
      'kb-preview'
    );
    await expect(
      page.locator('.cube-KbItem[data-kb="handbook"] .cube-KbItem-meta')
    ).toContainText('2 sources', { timeout: 15_000 });
    await lightAndDark(page, 'kb-ingested');

    // hybrid: the refunds chunk first, with fused, vector and keyword scores
    const first = await retrievalTest(view, 'how long until my refund is paid');
    await expect(first).toHaveAttribute('data-source', /refunds\.md$/);
    await expect(first.locator('.cube-KbScore')).toHaveCount(3);
    await expect(first.locator('.cube-KbScore-fused')).toBeVisible();
    await expect(first.locator('mark.cube-KbMark').first()).toHaveText(
      /refund/i
    );

    // keyword: a rare exact term finds its chunk, highlighted
    await view.locator('select[name="kb-mode"]').selectOption('keyword');
    const rare = await retrievalTest(view, 'zephyrine');
    await expect(rare).toHaveAttribute('data-source', /refunds\.md$/);
    await expect(rare.locator('mark.cube-KbMark')).toHaveText('zephyrine');
    await view.locator('select[name="kb-mode"]').selectOption('hybrid');
    await retrievalTest(view, 'how long until my refund is paid');
    await lightAndDark(page, 'kb-retrieval-test');

    // Ask through a fake OpenAI-compatible server: a numbered citation
    const model = await fakeModel();
    try {
      const ask = view.locator('.cube-KbAsk');
      await ask.locator('select[name="kb-target"]').selectOption('__url__');
      await ask.locator('input[name="kb-base-url"]').fill(model.url);
      await ask.locator('input[name="kb-model"]').fill('fake-model');
      await ask
        .locator('input[name="kb-question"]')
        .fill('How long does a refund take?');
      await ask.locator('button[type="submit"]').click();
      // streamed: the citations and the first words while Stop is offered
      const turn = ask.locator('.cube-KbAsk-turn');
      await expect(ask.locator('button[name="kb-stop"]')).toBeVisible();
      await expect(turn.locator('.cube-KbCitations li').first()).toBeVisible({
        timeout: 30_000
      });
      await expect(turn).toHaveAttribute('data-status', 'complete', {
        timeout: 30_000
      });
      await expect(turn).toHaveAttribute('data-deltas', /^([2-9]|\d\d+)$/);
      await expect(ask.locator('button[name="kb-stop"]')).toHaveCount(0);
      const answer = ask.locator('.cube-KbAnswer');
      await expect(answer).toHaveAttribute('data-answered', 'true');
      const cite = answer.locator('.cube-KbCite').first();
      await expect(cite).toBeVisible();
      await cite.click();
      await expect(answer.locator('.cube-KbCited')).toContainText(
        'thirty days'
      );
      await expect(answer.locator('.cube-KbCited')).toContainText('refunds.md');
      await ask.scrollIntoViewIfNeeded();
      await lightAndDark(page, 'kb-ask');

      // the knowledge base in the Chat panel: questions after one another
      const chat = await chatWithKb(page, ask, model.url, 'handbook');
      const answers = chat.locator('.cube-ChatKbAnswer');
      const firstAnswer = await askInChat(
        chat,
        'How long does a refund take?',
        1
      );
      const chatCite = firstAnswer.locator('.cube-KbCite').first();
      await expect(chatCite).toBeVisible();
      await chatCite.click();
      const cited = firstAnswer.locator('.cube-KbCited');
      await expect(cited).toContainText('thirty days');
      await expect(cited).toContainText('refunds.md');
      // a second question: the first turn goes along as history
      const second = await askInChat(
        chat,
        'Is store credit offered for items bought in a sale?',
        2
      );
      await second.locator('.cube-KbCitations button').first().click();
      await second.locator('.cube-KbCited').scrollIntoViewIfNeeded();
      await expect(second.locator('.cube-KbCitations li')).not.toHaveCount(0);
      await expect(answers).toHaveCount(2);
      // these answers are the knowledge base's: no regenerate, compare or code
      await expect(chat.locator('button[name="regenerate"]')).toBeDisabled();
      await expect(
        chat.getByRole('button', { name: 'Compare' })
      ).toBeDisabled();
      await lightAndDark(page, 'chat-kb', {
        ready: second.locator('.cube-KbCited')
      });
      // the cited source opens in JupyterLab
      await cited.locator('.cube-KbCited-open').click();
      await expect(
        page.locator('.lm-TabBar-tab', { hasText: 'refunds.md' })
      ).toBeVisible({ timeout: 15_000 });
      await page.activity.activateTab('handbook');
      await expect(view).toBeVisible();
    } finally {
      model.close();
    }

    // evaluate two configurations side by side on one question set
    const evaluate = view.locator('.cube-KbEval');
    await evaluate.scrollIntoViewIfNeeded();
    await evaluate
      .locator('textarea[name="kb-eval-questions"]')
      .fill(
        [
          `How long until my refund is paid? => ${tmpPath}/refunds.md`,
          `When do parcels leave the warehouse? => ${tmpPath}/shipping.md`,
          'a line without its source'
        ].join('\n')
      );
    await expect(evaluate.locator('.cube-KbEval-errors')).toContainText(
      'Line 3'
    );
    await expect(evaluate.locator('button[name="kb-eval-run"]')).toBeDisabled();
    await evaluate
      .locator('textarea[name="kb-eval-questions"]')
      .fill(
        [
          `How long until my refund is paid? => ${tmpPath}/refunds.md`,
          `When do parcels leave the warehouse? => ${tmpPath}/shipping.md`,
          `zephyrine => ${tmpPath}/refunds.md`
        ].join('\n')
      );
    await evaluate
      .locator('select[name="kb-eval-mode-b"]')
      .selectOption('keyword');
    await evaluate.locator('input[name="kb-eval-k-b"]').fill('1');
    await evaluate.locator('button[name="kb-eval-run"]').click();
    const metrics = evaluate.locator('.cube-KbEval-table').first();
    await expect(metrics.locator('tbody tr')).toHaveCount(3, {
      timeout: 30_000
    });
    // hybrid with k=5 finds every expected source among 2 chunks
    await expect(
      metrics.locator('tr[data-metric="recall_at_k"] td[data-config="a"]')
    ).toHaveText('1.000');
    await expect(metrics.locator('th[data-config="b"]')).toContainText('k=1');
    for (const which of ['a', 'b']) {
      await expect(
        metrics.locator(`tr[data-metric="mrr"] td[data-config="${which}"]`)
      ).toHaveText(/^[01]\.\d{3}$/);
    }
    // neither configuration reranked: the headers say so
    await expect(
      metrics.locator('th[data-config] .cube-KbEval-reranker')
    ).toHaveText(['no reranker', 'no reranker']);
    await evaluate.locator('.cube-KbEval-per summary').click();
    await expect(evaluate.locator('.cube-KbEval-per tbody tr')).toHaveCount(3);
    await evaluate.scrollIntoViewIfNeeded();
    await lightAndDark(page, 'kb-evaluate', { ready: metrics });

    // B reranked by a registered model of the project: top_n only then, checked
    const notReranker = await registerNotAReranker(
      request,
      base,
      tmpPath,
      'handbook'
    );
    const rerankB = evaluate.locator('select[name="kb-eval-rerank-b"]');
    const topNB = evaluate.locator('input[name="kb-eval-topn-b"]');
    await expect(topNB).toBeDisabled();
    await expect(rerankB.locator('option').first()).toHaveText('none');
    // listed again when the field is focused: the model registered just now
    await rerankB.focus();
    await expect(rerankB.locator(`option[value="${notReranker}"]`)).toHaveCount(
      1,
      { timeout: 15_000 }
    );
    await rerankB.selectOption(notReranker);
    await expect(topNB).toBeEnabled();
    await topNB.fill('500');
    await expect(
      evaluate.locator('[data-config="b"] [role="alert"]')
    ).toContainText('top_n');
    await expect(evaluate.locator('button[name="kb-eval-run"]')).toBeDisabled();
    await topNB.fill('4');
    await evaluate.locator('button[name="kb-eval-run"]').click();
    // a two-label classifier is no cross-encoder: the server says why
    await expect(evaluate.locator('.cube-TError')).toContainText(
      'not a cross-encoder',
      { timeout: 60_000 }
    );
    await evaluate.scrollIntoViewIfNeeded();
    await lightAndDark(page, 'kb-evaluate-reranker');
    await rerankB.selectOption('');
    await expect(topNB).toBeDisabled();

    // a corrupt PDF fails alone, its error shown under its name
    await putText(request, base, `${tmpPath}/broken.pdf`, 'not a PDF at all');
    await view.locator('input[name="kb-preview-first"]').uncheck(); // added at once
    await view.locator('input[name="kb-paths"]').fill(`${tmpPath}/broken.pdf`);
    await view.getByRole('button', { name: 'Add', exact: true }).click();
    // the new ingest (the earlier one may still be first a moment)
    const failed = view
      .locator('.cube-KbIngest')
      .filter({
        has: page.locator('.cube-KbIngest-file[data-source$="broken.pdf"]')
      })
      .first();
    await expect(failed).toBeVisible({ timeout: 60_000 });
    await expect(failed.locator('.cube-KbIngest-file')).toHaveClass(
      /cube-mod-failed/,
      { timeout: 60_000 }
    );
    await expect(failed).not.toHaveAttribute('data-status', /queued|running/);
    await expect(failed.locator('.cube-KbIngest-text')).toContainText(
      '1 failed'
    );
    await expect(failed.locator('.cube-KbIngest-fileError')).toBeVisible();
    await expect(view.locator('.cube-KbSourceTable tbody tr')).toHaveCount(2);
    await failed.scrollIntoViewIfNeeded();
    await lightAndDark(page, 'kb-ingest-failed');

    // remove a source: its row goes
    await view
      .locator('.cube-KbSourceTable tr[data-source$="shipping.md"] button')
      .click();
    await page.locator('.jp-Dialog .jp-mod-warn').click();
    await expect(view.locator('.cube-KbSourceTable tbody tr')).toHaveCount(1);

    // delete from the panel, after the confirmation
    await page
      .locator('.cube-KbItem[data-kb="handbook"] .cube-KbItem-delete')
      .click();
    await expect(page.locator('.jp-Dialog')).toContainText('handbook');
    await page.locator('.jp-Dialog .jp-mod-warn').click();
    await expect(page.locator('.cube-KbItem[data-kb="handbook"]')).toHaveCount(
      0
    );
  });
});

test.describe('cube-lab knowledge bases in Chinese', () => {
  test.setTimeout(240_000);
  test.use({
    mockSettings: {
      ...galata.DEFAULT_SETTINGS,
      '@jupyterlab/translation-extension:plugin': { locale: 'zh_CN' }
    },
    waitForApplication: async ({}, use) => {
      await use(async (page, helpers) => {
        await page.locator('#jupyterlab-splash').waitFor({ state: 'detached' });
        await helpers.waitForCondition(() =>
          helpers.activity.isTabActive('启动页')
        );
      });
    }
  });

  test('the panel and the view in Chinese', async ({
    page,
    request,
    baseURL,
    tmpPath
  }) => {
    const base = baseURL!;
    await removeKb(request, base, 'handbook-zh');
    await putText(request, base, `${tmpPath}/refunds.md`, REFUNDS);
    await putText(request, base, `${tmpPath}/shipping.md`, SHIPPING);
    const view = await createAndIngest(
      page,
      'handbook-zh',
      tmpPath,
      {
        create: '新建知识库',
        preview: '预览',
        progress: /2\s*\/\s*2|共 2 个文件中的 2 个|2 个文件/
      },
      'zh-kb-preview'
    );
    const first = await retrievalTest(view, 'how long until my refund is paid');
    await expect(first).toHaveAttribute('data-source', /refunds\.md$/);
    await expect(view.locator('.cube-KbSection-title').first()).toHaveText(
      '来源'
    );
    await lightAndDark(page, 'zh-kb-view');
    // Evaluate in Chinese: both configurations with their reranker fields
    const evaluate = view.locator('.cube-KbEval');
    await evaluate
      .locator('textarea[name="kb-eval-questions"]')
      .fill(
        [
          `How long until my refund is paid? => ${tmpPath}/refunds.md`,
          `When do parcels leave the warehouse? => ${tmpPath}/shipping.md`
        ].join('\n')
      );
    await expect(
      evaluate.locator('select[name="kb-eval-rerank-a"] option').first()
    ).toHaveText('无');
    await evaluate.locator('button[name="kb-eval-run"]').click();
    const metrics = evaluate.locator('.cube-KbEval-table').first();
    await expect(metrics.locator('tbody tr')).toHaveCount(3, {
      timeout: 30_000
    });
    await expect(
      metrics.locator('th[data-config="a"] .cube-KbEval-reranker')
    ).toHaveText('不重排序');
    await evaluate.scrollIntoViewIfNeeded();
    await lightAndDark(page, 'zh-kb-evaluate', { ready: metrics });
    // the Chat tab on the knowledge base, in Chinese
    const model = await fakeModel();
    try {
      const chat = await chatWithKb(
        page,
        view.locator('.cube-KbAsk'),
        model.url,
        'handbook-zh'
      );
      const answer = await askInChat(chat, 'How long does a refund take?', 1);
      await answer.locator('.cube-KbCite').first().click();
      await expect(answer.locator('.cube-KbCited')).toContainText(
        'thirty days'
      );
      await lightAndDark(page, 'zh-chat-kb', {
        ready: answer.locator('.cube-KbCited')
      });
    } finally {
      model.close();
    }
    await removeKb(request, base, 'handbook-zh');
  });
});
