/**
 * The Chat tab against the real server: a tiny random-init Llama
 * (cube_lab.finetune.tiny, built here: nothing is downloaded) registered, and
 * deployed as an LLM from the Models panel (its version's Deploy dialog, the
 * LLM runtime, progress while it starts); the Chat tab, opened from the
 * deployment's view, streams
 * its answers (more than one delta each), stops one, regenerates one, takes a
 * thumbs up and an edited answer, copies the conversation as code, and exports
 * the feedback as preference data: a dataset version whose rows are prompt /
 * chosen / rejected. The tab is pictured in the light and the dark theme, in
 * compare mode, and in Chinese.
 */
import {
  expect,
  galata,
  IJupyterLabPageFixture,
  test
} from '@jupyterlab/galata';
import type { APIRequestContext, Locator } from '@playwright/test';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

import { lightAndDark } from './helpers';

const API = '/cube/api/v1';
const MODEL = 'chat-tiny';

function python(): string {
  const venv = path.resolve(__dirname, '..', '..', '.venv', 'bin', 'python');
  return (
    process.env.CUBE_LAB_PYTHON || (fs.existsSync(venv) ? venv : 'python3')
  );
}

/** Build the tiny model under the server's root (ROOT/chat-llm/tiny). */
function buildTiny(): string {
  const tmp = process.env.CUBE_LAB_UI_TMP;
  if (!tmp) {
    throw new Error('CUBE_LAB_UI_TMP is not set (see playwright.config.js)');
  }
  const relative = 'chat-llm/tiny';
  const target = path.join(tmp, 'root', relative);
  if (!fs.existsSync(path.join(target, 'config.json'))) {
    execFileSync(
      python(),
      [
        '-c',
        [
          'import sys',
          'from pathlib import Path',
          'from cube_lab.finetune import tiny',
          'texts = ["hello world, the quick brown fox jumps over the lazy dog",',
          '         "numbers one two three four five six seven eight nine ten"] * 20',
          'tiny.build(Path(sys.argv[1]), texts)'
        ].join('\n'),
        target
      ],
      { stdio: 'inherit', timeout: 120_000 }
    );
  }
  return relative;
}

/** The tiny model registered: its project, version and flavor. */
async function registerTiny(
  request: APIRequestContext,
  base: string
): Promise<{ project: string; version: number; flavor: string }> {
  const registered = await request.post(`${base}${API}/models`, {
    data: { name: MODEL, path: buildTiny() }
  });
  expect(registered.ok(), await registered.text()).toBeTruthy();
  const v = await registered.json();
  return { project: v.project, version: v.version, flavor: v.flavor };
}

/** The LLM deployment of the tiny model (made once per server): its project. */
async function deployTiny(
  request: APIRequestContext,
  base: string
): Promise<{ project: string; version: number }> {
  const existing = await request.get(`${base}${API}/deployments`);
  const running = ((await existing.json()).deployments ?? []).find(
    (d: any) => d.name === MODEL && d.status === 'running'
  );
  if (running) {
    return { project: running.project, version: running.version };
  }
  const version = await registerTiny(request, base);
  const deploy = await request.post(`${base}${API}/deployments`, {
    data: { model: `${MODEL}:${version.version}` },
    timeout: 240_000
  });
  expect(deploy.status(), await deploy.text()).toBe(201);
  const dep = await deploy.json();
  expect(dep.runtime).toBe('llm');
  return { project: dep.project, version: dep.version };
}

/** Record the most deltas any streaming answer showed (a streamed answer has several). */
async function watchDeltas(page: IJupyterLabPageFixture): Promise<void> {
  await page.evaluate(() => {
    const w = window as any;
    w.__chatMaxDeltas = 0;
    const note = () => {
      document
        .querySelectorAll('.cube-ChatMsg[data-streaming="true"]')
        .forEach(n => {
          const d = Number(n.getAttribute('data-deltas') ?? 0);
          w.__chatMaxDeltas = Math.max(w.__chatMaxDeltas, d);
        });
    };
    new MutationObserver(note).observe(document.body, {
      subtree: true,
      childList: true,
      attributes: true,
      attributeFilter: ['data-deltas']
    });
  });
}

async function maxDeltas(page: IJupyterLabPageFixture): Promise<number> {
  return page.evaluate(() => (window as any).__chatMaxDeltas as number);
}

/** Send `text` and wait for its answer to be saved. */
async function send(
  chat: Locator,
  pane: Locator,
  text: string
): Promise<Locator> {
  const before = await pane
    .locator('.cube-ChatMsg-assistant[data-message]')
    .count();
  await chat.locator('textarea[name="message"]').fill(text);
  await chat.locator('button[name="send"]').click();
  const answers = pane.locator('.cube-ChatMsg-assistant[data-message]');
  await expect(answers).toHaveCount(before + 1, { timeout: 120_000 });
  await expect(pane.locator('[data-streaming="true"]')).toHaveCount(0, {
    timeout: 60_000
  });
  return answers.last();
}

/** The page may open on the test folder before Galata creates it. */
test.beforeEach(async ({ page }) => {
  await page.addLocatorHandler(
    page.getByRole('dialog', { name: /Directory not found|找不到目录/ }),
    async d => {
      await d.locator('.jp-Dialog-button').last().click();
    }
  );
});

test.describe('cube-lab chat', () => {
  test.setTimeout(420_000);

  test('streams, stops, regenerates, takes feedback and exports preference data', async ({
    page,
    request,
    baseURL
  }) => {
    const base = baseURL!;
    const { project, version, flavor } = await registerTiny(request, base);
    expect(flavor).toBe('transformers');

    // Deploy it from the Models panel: its version's tab, Deploy, the LLM runtime
    await page.sidebar.openTab('cube-lab-models-panel');
    await page
      .locator(`#cube-lab-models .cube-ModelItem[data-model="${MODEL}"]`)
      .click();
    const tab = page.locator('.cube-ModelTab');
    await tab
      .locator(`.cube-VersionRow[data-version="${version}"]`)
      .first()
      .click();
    await expect(
      tab.locator(`.cube-VersionDetail[data-version="${version}"]`)
    ).toBeVisible();
    await tab.locator('.cube-DeployButton').click();
    const deployDialog = page.locator('.cube-DDeployDialog');
    await expect(deployDialog).toBeVisible();
    await expect(deployDialog.locator('input[name="name"]')).toHaveValue(MODEL);
    const runtime = deployDialog.locator('select[name="runtime"]');
    await expect(runtime).toHaveValue('auto');
    await runtime.selectOption('llm');
    await expect(deployDialog.locator('.cube-DDeploy-what')).toContainText(
      'OpenAI-compatible API'
    );
    // the LLM engine batches itself: the adaptive batching box is off
    await expect(deployDialog.locator('input[name="batching"]')).toBeDisabled();
    await lightAndDark(page, 'chat-deploy-dialog', { ready: deployDialog });
    await deployDialog.getByRole('button', { name: 'Deploy' }).click();
    // progress while the model loads, then the running deployment's view
    await expect(deployDialog.locator('.cube-DProgress')).toBeVisible();
    await expect(deployDialog.locator('.cube-DProgress')).toContainText(
      'Starting the model server'
    );
    const depView = page.locator(
      `.cube-DDetail[data-deployment="${MODEL}"][data-status="running"]`
    );
    await expect(depView).toBeVisible({ timeout: 240_000 });
    await expect(deployDialog).toHaveCount(0);
    const deployed = await request.get(
      `${base}${API}/projects/${project}/deployments/${MODEL}`
    );
    expect((await deployed.json()).runtime).toBe('llm');

    // the deployment's view has a Chat button for an LLM deployment
    await depView.locator('button[name="chat"]').click();

    const chat = page.locator('.cube-ChatView');
    await expect(chat).toBeVisible();
    await expect(chat.locator('select[name="target"]')).toHaveValue(
      `deployment:${MODEL}`,
      { timeout: 15_000 }
    );
    await watchDeltas(page);
    await chat.locator('textarea[name="system"]').fill('Be brief.');
    await chat.locator('input[name="temperature"]').fill('1');
    await chat.locator('input[name="max_tokens"]').fill('24');
    // a bad parameter is said, and sending waits for it
    await chat.locator('input[name="top_p"]').fill('3');
    await expect(
      chat.locator('[data-field="top_p"] [role="alert"]')
    ).toBeVisible();
    await chat.locator('textarea[name="message"]').fill('hello');
    await expect(chat.locator('button[name="send"]')).toBeDisabled();
    await chat.locator('input[name="top_p"]').fill('0.9');

    const pane = chat.locator('.cube-ChatPane[data-pane="a"]');
    const first = await send(chat, pane, 'hello world');
    await expect(first).toHaveAttribute('data-status', 'complete');
    expect(await maxDeltas(page)).toBeGreaterThan(1);
    await expect(first.locator('.jp-RenderedMarkdown')).toBeVisible();
    await expect(chat.locator('.cube-ChatList-item')).toHaveCount(1);
    await expect(chat.locator('.cube-ChatList-item').first()).toContainText(
      'hello world'
    );

    // Regenerate: a second answer of the turn, shown; the first kept
    await chat.locator('button[name="regenerate"]').click();
    await expect(pane.locator('[data-alternatives="2"]')).toBeVisible({
      timeout: 120_000
    });
    await expect(pane.locator('[data-streaming="true"]')).toHaveCount(0, {
      timeout: 60_000
    });
    await expect(pane.getByText('2 of 2')).toBeVisible();
    const kept = pane.locator('.cube-ChatMsg-assistant[data-message]').last();
    await kept.locator('[data-action="rate-up"]').click();
    await expect(kept).toHaveAttribute('data-rating', 'up');

    // a second turn: its answer edited
    const second = await send(chat, pane, 'numbers one two');
    await second.locator('[data-action="edit"]').click();
    await second.locator('.cube-ChatEdit-text').fill('One, two, **three**.');
    await second.getByRole('button', { name: 'Save the answer' }).click();
    await expect(
      second.locator('.cube-ChatTag', { hasText: 'edited' })
    ).toBeVisible();
    await expect(second.locator('.jp-RenderedMarkdown strong')).toHaveText(
      'three'
    );

    // Stop: a long answer stopped early is kept as "stopped"
    // the tiny model's context is 512 tokens
    await chat.locator('input[name="max_tokens"]').fill('400');
    // the tiny model answers in a blink: Stop is clicked from the page at the first
    // delta; a random model may end its answer (EOS) before that: up to 3 tries
    const stopped = pane.locator(
      '.cube-ChatMsg-assistant[data-status="stopped"]'
    );
    for (
      let attempt = 0;
      attempt < 3 && (await stopped.count()) === 0;
      attempt++
    ) {
      const answers = await pane
        .locator('.cube-ChatMsg-assistant[data-message]')
        .count();
      await page.evaluate(() => {
        const observer = new MutationObserver(() => {
          const streaming = document.querySelector(
            '.cube-ChatMsg[data-streaming="true"]'
          );
          const stop = document.querySelector<HTMLButtonElement>(
            '.cube-ChatView button[name="stop"]'
          );
          if (
            streaming &&
            Number(streaming.getAttribute('data-deltas')) >= 1 &&
            stop
          ) {
            observer.disconnect();
            stop.click();
          }
        });
        observer.observe(document.body, {
          subtree: true,
          childList: true,
          attributes: true
        });
      });
      await chat
        .locator('textarea[name="message"]')
        .fill('the quick brown fox');
      await chat.locator('button[name="send"]').click();
      await expect(
        pane.locator('.cube-ChatMsg-assistant[data-message]')
      ).toHaveCount(answers + 1, { timeout: 30_000 });
    }
    await expect(stopped).toHaveCount(1);
    await chat.locator('input[name="max_tokens"]').fill('24');

    // Copy as code
    await chat.getByRole('button', { name: 'Copy as code' }).click();
    await expect(chat.locator('.cube-ChatNotice')).toContainText(
      'CUBE_LAB_DEPLOYMENT_KEY'
    );
    await lightAndDark(page, 'chat-panel', {
      ready: chat.locator('.cube-ChatMsg').first()
    });

    // Export as preference data: 2 pairs (thumbs up over the regenerated one, the edit)
    await chat
      .getByRole('button', { name: 'Export as preference data' })
      .click();
    const dialog = page.locator('.jp-Dialog');
    await dialog.locator('input[name="dataset"]').fill('chat-prefs');
    await dialog.getByRole('button', { name: 'Export' }).click();
    const exported = chat.locator('.cube-ChatExported');
    await expect(exported).toHaveAttribute('data-ref', 'chat-prefs:1', {
      timeout: 30_000
    });
    await expect(exported).toContainText(
      '2 preference pairs from 1 conversations'
    );
    await lightAndDark(page, 'chat-exported', { ready: exported });

    const dataset = await request.get(
      `${base}${API}/projects/${project}/datasets/chat-prefs`
    );
    expect(dataset.ok(), await dataset.text()).toBeTruthy();
    const href = await exported
      .getByRole('link', { name: 'Download preferences.jsonl' })
      .getAttribute('href');
    const file = await request.get(href!);
    expect(file.ok()).toBeTruthy();
    const rows = (await file.text())
      .trim()
      .split('\n')
      .map(line => JSON.parse(line));
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.prompt[0]).toEqual({ role: 'system', content: 'Be brief.' });
      expect(typeof row.chosen).toBe('string');
      expect(typeof row.rejected).toBe('string');
    }
    expect(rows.map(r => r.chosen)).toContain('One, two, **three**.');

    // Compare: a second target beside the first, both answer the same prompt
    await chat.getByRole('button', { name: 'Compare' }).click();
    await expect(chat.locator('select[name="target-b"]')).toBeVisible();
    await chat.locator('textarea[name="message"]').fill('hello world');
    await chat.locator('button[name="send"]').click();
    const paneB = chat.locator('.cube-ChatPane[data-pane="b"]');
    await expect(
      paneB.locator('.cube-ChatMsg-assistant[data-message]')
    ).toHaveCount(1, { timeout: 120_000 });
    await expect(chat.locator('[data-streaming="true"]')).toHaveCount(0, {
      timeout: 60_000
    });
    await lightAndDark(page, 'chat-compare', { ready: paneB });
    await chat.getByRole('button', { name: 'End compare' }).click();

    // rename and delete a conversation
    const item = chat.locator('.cube-ChatList-item').first();
    await item.hover();
    await item.getByRole('button', { name: /^Rename/ }).click();
    await item.locator('input').fill('Renamed chat');
    await item.locator('input').press('Enter');
    await expect(
      chat.locator('.cube-ChatList-item', { hasText: 'Renamed chat' })
    ).toHaveCount(1);
    const count = await chat.locator('.cube-ChatList-item').count();
    const last = chat.locator('.cube-ChatList-item').last();
    await last.hover();
    await last.getByRole('button', { name: /^Delete/ }).click();
    await page
      .locator('.jp-Dialog')
      .getByRole('button', { name: 'Delete' })
      .click();
    await expect(chat.locator('.cube-ChatList-item')).toHaveCount(count - 1);
    // the exported dataset goes: the specs share one server (Labeling's empty state)
    const dropped = await request.delete(
      `${base}${API}/projects/${project}/datasets/chat-prefs`
    );
    expect(dropped.status(), await dropped.text()).toBe(204);
  });
});

test.describe('cube-lab chat in Chinese', () => {
  test.setTimeout(300_000);
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

  test('the Chat tab speaks Chinese', async ({ page, request, baseURL }) => {
    const { project, version } = await deployTiny(request, baseURL!);
    // the Deploy dialog in Chinese, with the LLM runtime chosen (cancelled)
    await page.evaluate(
      ({ project, name, version }) => {
        // not awaited: the command ends when the dialog closes
        void (window as any).jupyterapp.commands.execute(
          'cube-lab:deploy-model',
          { project, name, version, flavor: 'transformers' }
        );
      },
      { project, name: MODEL, version }
    );
    const deployDialog = page.locator('.cube-DDeployDialog');
    await expect(deployDialog).toBeVisible();
    await deployDialog.locator('select[name="runtime"]').selectOption('llm');
    await expect(deployDialog.locator('.cube-DDeploy-what')).toContainText(
      'OpenAI'
    );
    await lightAndDark(page, 'zh-chat-deploy-dialog', { ready: deployDialog });
    await deployDialog.locator('.jp-Dialog-button').first().click();
    await expect(deployDialog).toHaveCount(0);
    await page.evaluate(
      async ({ project, deployment }) => {
        await (window as any).jupyterapp.commands.execute(
          'cube-lab:open-chat',
          {
            project,
            deployment
          }
        );
      },
      { project, deployment: MODEL }
    );
    const chat = page.locator('.cube-ChatView');
    await expect(chat.getByRole('button', { name: '新对话' })).toBeVisible();
    await chat.locator('input[name="max_tokens"]').fill('24');
    const pane = chat.locator('.cube-ChatPane[data-pane="a"]');
    const answer = await send(chat, pane, '你好');
    await answer.locator('[data-action="rate-down"]').click();
    await expect(answer).toHaveAttribute('data-rating', 'down');
    await lightAndDark(page, 'zh-chat-panel', {
      ready: chat.locator('.cube-ChatMsg').first()
    });
    // the last test of the file: the deployment goes (a deployment outlives its server)
    const gone = await request.delete(
      `${baseURL}${API}/projects/${project}/deployments/${MODEL}?forget=true`
    );
    expect(gone.status()).toBe(204);
  });
});
