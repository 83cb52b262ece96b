/**
 * What is inside the cube-lab views reads whole at 1280x720 (issue 14):
 * New Pipeline asks for a name, node cards say what a node is in words, the
 * runs list keeps its actions in view, version compare and the labeling
 * cards fit, an export's full path and loading code can be copied, tuning
 * statuses and labels are not cut, and a failed training job says why it
 * has no metrics. Each view is opened by its command, so the test does not
 * depend on where the shell puts the panels.
 * It runs last (views.spec.ts sorts after training.spec.ts) because the
 * failed training job it leaves cannot be deleted.
 */
import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

import { lightAndDark, pipelineDocument, putText } from './helpers';

const API = '/cube/api/v1';
const FACTORY = 'cube-lab Pipeline Editor';

test.use({ viewport: { width: 1280, height: 720 } });

async function command(
  page: IJupyterLabPageFixture,
  id: string,
  args: Record<string, unknown> = {}
): Promise<void> {
  await page.evaluate(
    ([id, args]) =>
      (window as any).jupyterapp.commands.execute(id, args).then(() => null),
    [id, args] as const
  );
}

/** Screenshots in the light and the dark theme. */
/** `inner` lies inside `outer` horizontally (1 px of rounding allowed). */
async function expectInside(inner: Locator, outer: Locator, what: string) {
  const a = (await inner.boundingBox())!;
  const b = (await outer.boundingBox())!;
  expect(a, what).toBeTruthy();
  expect(a.x, `${what}: left edge`).toBeGreaterThanOrEqual(b.x - 1);
  expect(a.x + a.width, `${what}: right edge`).toBeLessThanOrEqual(
    b.x + b.width + 1
  );
}

/** No text in `root` is cut: nothing overflows its box sideways. */
async function expectNothingCut(root: Locator, selector: string) {
  const cut = await root
    .locator(selector)
    .evaluateAll(nodes =>
      nodes
        .filter(n => (n as HTMLElement).scrollWidth > n.clientWidth + 1)
        .map(n => `${n.className}: ${n.textContent}`)
    );
  expect(cut).toEqual([]);
}

/** A select whose box is narrower than its chosen option's text. */
async function cutSelects(root: Locator): Promise<string[]> {
  return root.locator('select').evaluateAll(nodes => {
    const canvas = document.createElement('canvas');
    const ctx = canvas.getContext('2d')!;
    const out: string[] = [];
    for (const node of nodes as HTMLSelectElement[]) {
      if (!node.offsetParent) {
        continue;
      }
      const style = getComputedStyle(node);
      ctx.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
      const text = node.selectedOptions[0]?.textContent ?? '';
      const room =
        node.clientWidth -
        parseFloat(style.paddingLeft) -
        parseFloat(style.paddingRight);
      // The arrow of a select takes about 16 px of its padding box.
      if (ctx.measureText(text).width > room - 12) {
        out.push(`${node.name}: "${text}" in ${node.clientWidth}px`);
      }
    }
    return out;
  });
}

/**
 * What a test created on the server, removed when it ends (passed or not):
 * the specs after this one (models, labeling) start from empty lists.
 */
const cleanups: (() => Promise<unknown>)[] = [];

test.describe('cube-lab view contents', () => {
  test.setTimeout(180 * 1000);

  test.afterEach(async () => {
    // Newest first: a labeling project goes before its dataset.
    while (cleanups.length) {
      await cleanups.pop()!().catch(() => undefined);
    }
  });

  test('New Pipeline asks for a name; nodes say what they are; runs keep their actions', async ({
    page,
    request,
    baseURL,
    tmpPath
  }) => {
    const base = baseURL!;
    // The dialog: a display name, and a file name that follows it.
    void command(page, 'cube-lab:new-pipeline', { cwd: tmpPath });
    const dialog = page.locator('.jp-Dialog');
    await expect(dialog.locator('.jp-Dialog-header')).toHaveText(
      'New Pipeline'
    );
    await dialog
      .locator('input[name="pipeline-name"]')
      .fill('Train & evaluate');
    await expect(dialog.locator('input[name="pipeline-file"]')).toHaveValue(
      'train-evaluate.pipeline'
    );
    await dialog.getByRole('button', { name: 'Create' }).click();
    const tab = page.locator('#jp-main-dock-panel .lm-TabBar-tab', {
      hasText: 'train-evaluate.pipeline'
    });
    await expect(tab).toBeVisible();
    const created = await (
      await request.get(
        `${base}/api/contents/${tmpPath}/train-evaluate.pipeline?content=1`
      )
    ).json();
    expect(
      JSON.parse(created.content).pipelines[0].app_data.properties.name
    ).toBe('Train & evaluate');

    // A taken file name is said in the dialog, which stays open.
    void command(page, 'cube-lab:new-pipeline', { cwd: tmpPath });
    await dialog.locator('input[name="pipeline-name"]').fill('Train evaluate');
    await dialog
      .locator('input[name="pipeline-file"]')
      .fill('train-evaluate.pipeline');
    await dialog.getByRole('button', { name: 'Create' }).click();
    await expect(dialog.locator('.cube-NewPipeline-error')).toContainText(
      'already exists'
    );
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await expect(dialog).toHaveCount(0);

    // Node cards: kinds in words, not op ids.
    await putText(request, base, `${tmpPath}/prep.py`, "print('prep')\n");
    await putText(request, base, `${tmpPath}/explore.ipynb`, '{}');
    const doc = pipelineDocument('kinds', [
      {
        id: 'n1',
        type: 'execution_node',
        op: 'execute-python-node',
        app_data: {
          label: 'prep.py',
          component_parameters: { filename: 'prep.py' },
          ui_data: { label: 'prep.py', x_pos: 40, y_pos: 40 }
        },
        inputs: [{ id: 'inPort', links: [] }],
        outputs: [{ id: 'outPort' }]
      },
      {
        id: 'n2',
        type: 'execution_node',
        op: 'execute-notebook-node',
        app_data: {
          label: 'explore.ipynb',
          component_parameters: { filename: 'explore.ipynb' },
          ui_data: { label: 'explore.ipynb', x_pos: 300, y_pos: 40 }
        },
        inputs: [
          {
            id: 'inPort',
            links: [{ id: 'l1', node_id_ref: 'n1', port_id_ref: 'outPort' }]
          }
        ],
        outputs: [{ id: 'outPort' }]
      },
      {
        id: 'n3',
        type: 'execution_node',
        op: 'cube-lab:template',
        app_data: {
          label: 'fit',
          component_parameters: {
            template: 'train-sklearn',
            parameters: {}
          },
          ui_data: { label: 'fit', x_pos: 300, y_pos: 160 }
        },
        inputs: [{ id: 'inPort', links: [] }],
        outputs: [{ id: 'outPort' }]
      }
    ]);
    await putText(
      request,
      base,
      `${tmpPath}/kinds.pipeline`,
      JSON.stringify(doc, null, 2)
    );
    await command(page, 'docmanager:open', {
      path: `${tmpPath}/kinds.pipeline`,
      factory: FACTORY
    });
    const editor = page.locator('.cube-PipelineEditor:visible');
    const meta = (label: string) =>
      editor.locator('.react-flow__node', {
        has: page.locator('.cube-PNode-label', { hasText: label })
      });
    await expect(meta('prep.py').locator('.cube-PNode-op')).toHaveText(
      'Python script'
    );
    await expect(meta('explore.ipynb').locator('.cube-PNode-op')).toHaveText(
      'Notebook'
    );
    await expect(meta('fit').locator('.cube-PNode-op')).toHaveText(
      'Job template: Train a scikit-learn model'
    );
    await expect(editor.locator('.react-flow')).not.toContainText(
      'execute-notebook-node'
    );
    // Palette titles wrap rather than end in "…".
    await expectNothingCut(editor, '.cube-Palette-item');
    // The template node's properties: its choices are not cut.
    await meta('fit').click();
    const properties = editor.locator('.cube-Properties');
    await expect(properties.locator('.cube-Properties-kind')).toHaveText(
      'Job template: Train a scikit-learn model'
    );
    await expect(properties.locator('select').first()).toBeVisible();
    expect(await cutSelects(properties)).toEqual([]);
    await lightAndDark(page, 'content-pipeline-kinds');

    // A run to list: Open and Re-run are in view without scrolling sideways.
    await putText(
      request,
      base,
      `${tmpPath}/one.pipeline`,
      JSON.stringify({
        ...doc,
        pipelines: [
          {
            ...doc.pipelines[0],
            nodes: [doc.pipelines[0].nodes[0]],
            app_data: {
              ...doc.pipelines[0].app_data,
              properties: { name: 'one step', runtime: 'Generic' }
            }
          }
        ]
      })
    );
    const started = await request.post(`${base}${API}/pipelines/runs`, {
      data: { path: `${tmpPath}/one.pipeline` }
    });
    expect(started.status(), await started.text()).toBeLessThan(300);
    const run = await started.json();
    await expect
      .poll(
        async () =>
          (
            await (
              await request.get(`${base}${API}/pipelines/runs/${run.id}`)
            ).json()
          ).status,
        { timeout: 60 * 1000 }
      )
      .toBe('succeeded');
    await command(page, 'cube-lab:open-pipeline-runs');
    await command(page, 'cube-lab:refresh-pipeline-runs');
    const runs = page.locator('#cube-lab-pipeline-runs');
    const row = runs.locator(`.cube-Runs-row[data-run="${run.id}"]`);
    await expect(row).toBeVisible();
    await expect(row.locator('.cube-Runs-meta')).toContainText('manual');
    for (const width of [250, 400]) {
      // Resize the left area as a user drags its handle.
      await page.evaluate(w => {
        const shell = (window as any).jupyterapp.shell;
        const split = shell._hsplitPanel;
        const total = split.node.clientWidth;
        const sizes = split.relativeSizes();
        const left = w / total;
        const rest = 1 - left - (sizes.length > 2 ? sizes[2] : 0);
        split.setRelativeSizes(
          sizes.length > 2 ? [left, rest, sizes[2]] : [left, rest]
        );
      }, width);
      await page.waitForTimeout(300);
      const box = (await runs.boundingBox())!;
      expect(Math.abs(box.width - width)).toBeLessThan(40);
      for (const button of ['Open', 'Re-run']) {
        const action = row.getByRole('button', { name: button });
        await expect(action).toBeVisible();
        await expectInside(action, runs, `${button} at ${width}px`);
      }
      const sideways = await runs.evaluate(n => n.scrollWidth - n.clientWidth);
      expect(sideways).toBeLessThanOrEqual(1);
      if (width === 250) {
        await lightAndDark(page, 'content-pipeline-runs-250');
      }
    }
  });

  test('compare, labeling cards and exports read whole', async ({
    page,
    request,
    baseURL,
    tmpPath,
    context
  }) => {
    const base = baseURL!;
    const post = async (url: string, data: Record<string, unknown>) => {
      const response = await request.post(`${base}${API}${url}`, { data });
      expect(response.status(), await response.text()).toBeLessThan(300);
      return response.status() === 204 ? null : response.json();
    };

    // Two versions with long parameter values, compared in a tab.
    await putText(request, base, `${tmpPath}/weights.txt`, 'w'.repeat(512));
    const params = (n: number) => ({
      estimator: `sklearn.ensemble.GradientBoostingClassifier-${n}`,
      learning_rate: 0.1 * n,
      max_depth: 3 + n
    });
    const v1 = await post('/models', {
      name: 'content-compare',
      path: `${tmpPath}/weights.txt`,
      flavor: 'generic',
      metrics: { accuracy: 0.912, loss: 0.31, f1_macro_weighted: 0.9 },
      params: params(1)
    });
    cleanups.push(() =>
      request.delete(
        `${base}${API}/projects/${encodeURIComponent(v1.project)}/models/content-compare`
      )
    );
    await post('/models', {
      name: 'content-compare',
      path: `${tmpPath}/weights.txt`,
      flavor: 'generic',
      metrics: { accuracy: 0.947, loss: 0.22, f1_macro_weighted: 0.93 },
      params: params(2),
      aliases: ['production']
    });
    await command(page, 'cube-lab:open-model-tab', {
      project: v1.project,
      name: 'content-compare'
    });
    const tab = page.locator('.cube-ModelTab:visible');
    const checks = tab.locator('.cube-VersionRow input[type="checkbox"]');
    await expect(checks).toHaveCount(2);
    await checks.nth(0).check();
    await checks.nth(1).check();
    await tab.locator('.cube-CompareButton').click();
    const compare = tab.locator('.cube-CompareTable');
    await expect(compare.locator('tr[data-metric="accuracy"]')).toContainText(
      '0.947'
    );
    const wrap = tab.locator('.cube-TableWrap');
    for (const cell of await compare.locator('td').all()) {
      await expectInside(cell, wrap, 'a compare cell');
    }
    await lightAndDark(page, 'content-models-compare');
    // Narrow (a split tab): names above values, every value still whole.
    await page.setViewportSize({ width: 560, height: 720 });
    await expect(
      tab.locator('.cube-CompareTable.cube-mod-stacked')
    ).toBeVisible();
    const narrow = tab.locator('.cube-CompareTable.cube-mod-stacked');
    await expect(
      narrow.locator('tr[data-param="estimator"] td').last()
    ).toContainText('sklearn.ensemble.GradientBoostingClassifier-2');
    for (const cell of await narrow.locator('td').all()) {
      await expectInside(cell, tab.locator('.cube-TableWrap'), 'a narrow cell');
    }
    await lightAndDark(page, 'content-models-compare-narrow');
    await page.setViewportSize({ width: 1280, height: 720 });

    // A labeling project with two submitted tasks, then an export.
    await putText(
      request,
      base,
      `${tmpPath}/reviews.csv`,
      'text\n"Great product, works well"\n"Broke after a day"\n"Fine"\n'
    );
    const dataset = `reviews-${Date.now() % 100000}`;
    const created = await post('/datasets', {
      name: dataset,
      path: `${tmpPath}/reviews.csv`
    });
    cleanups.push(() =>
      request.delete(
        `${base}${API}/projects/${encodeURIComponent(created.project)}/datasets/${dataset}`
      )
    );
    const project = await post('/labeling', {
      name: `${dataset}-sentiment`,
      dataset,
      type: 'text-class',
      labels: ['positive', 'negative', 'neutral']
    });
    const where = `/projects/${encodeURIComponent(project.project)}/labeling/${project.name}`;
    cleanups.push(() => request.delete(`${base}${API}${where}`));
    for (const label of ['positive', 'negative']) {
      const task = await post(`${where}/next`, {});
      const saved = await request.put(
        `${base}${API}${where}/tasks/${task.id}`,
        {
          data: { result: { labels: [label] }, submit: true }
        }
      );
      expect(saved.ok(), await saved.text()).toBeTruthy();
    }
    await command(page, 'cube-lab:open-labeling-project', {
      project: project.project,
      name: project.name
    });
    const view = page.locator(`.cube-LDetail[data-labeling="${project.name}"]`);
    await expect(view.locator('.cube-LBig')).toContainText('2 of 3');
    // The Per person table stays inside its card; selects show their option.
    const users = view.locator('.cube-LUsers');
    await expect(users).toBeVisible();
    await expectInside(
      users,
      view.locator('.cube-LCard', { has: page.locator('.cube-LUsers') }),
      'Per person'
    );
    await view.locator('select[name="export-format"]').selectOption('csv');
    expect(await cutSelects(view)).toEqual([]);

    await view.locator('.cube-LExport-go').click();
    const exported = view.locator('.cube-LExported');
    await expect(exported).toContainText(`${dataset} version 1`);
    const ds = await (
      await request.get(
        `${base}${API}/projects/${encodeURIComponent(project.project)}/datasets/${dataset}`
      )
    ).json();
    const fullPath = ds.versions[0].path as string;
    // The whole path, wrapped, in monospace; and it copies.
    await expect(exported.locator('.cube-LPath')).toHaveText(fullPath);
    await expectNothingCut(exported, '.cube-LPath');
    const font = await exported
      .locator('.cube-LPath')
      .evaluate(n => getComputedStyle(n).fontFamily);
    expect(font).toMatch(/mono/i);
    await context.grantPermissions(['clipboard-read', 'clipboard-write']);
    await exported.getByRole('button', { name: 'Copy the full path' }).click();
    await expect(
      exported.getByRole('button', { name: 'Copy the full path' })
    ).toContainText('Copied');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(
      fullPath
    );
    const snippet = exported.locator('.cube-LSnippet');
    await expect(snippet).toContainText('import cube_lab');
    await expect(snippet).toContainText(
      `cube_lab.datasets.load("${dataset}", version=1)`
    );
    await exported
      .getByRole('button', { name: 'Copy the Python code' })
      .click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(
      await snippet.textContent()
    );
    await exported.scrollIntoViewIfNeeded();
    await lightAndDark(page, 'content-labeling-export');
  });

  test('tuning statuses and labels are whole', async ({ page, baseURL }) => {
    // An experiment as the REST API answers it, with five early-stopped
    // trials and long choice names (the layout is what is checked here).
    const id = 'exp-content-check';
    const choices = ['GradientBoostingClassifier', 'RandomForestClassifier'];
    const trials = Array.from({ length: 6 }, (_, i) => ({
      id: `t${i}`,
      seq: i + 1,
      parameters: { model: choices[i % 2], learning_rate: 0.05 * (i + 1) },
      status: i === 0 ? 'succeeded' : 'early_stopped',
      intermediate: [0.5, 0.6 + i / 100],
      final: i === 0 ? 0.91 : 0.6 + i / 100,
      exit_code: 0,
      error: null,
      started_at: '2026-01-01T10:00:00Z',
      finished_at: '2026-01-01T10:00:05Z',
      duration_s: 5
    }));
    const experiment = {
      id,
      name: 'gradient boosting vs forests',
      project: 'me',
      owner: 'me',
      status: 'done',
      error: null,
      spec: {
        name: 'gradient boosting vs forests',
        search_space: {
          model: { _type: 'choice', _value: choices },
          learning_rate: { _type: 'uniform', _value: [0.01, 0.3] }
        },
        trial_command: 'python trial.py',
        code_dir: '/tmp',
        concurrency: 2,
        max_trials: 6,
        max_duration_s: null,
        tuner: { name: 'TPE', class_args: {} },
        assessor: { name: 'Medianstop', class_args: {} },
        metric: 'accuracy',
        mode: 'maximize',
        project: null
      },
      created_at: '2026-01-01T10:00:00Z',
      started_at: '2026-01-01T10:00:00Z',
      finished_at: '2026-01-01T10:01:00Z',
      trial_count: 6,
      best: trials[0],
      trials
    };
    await page.route(
      url => url.pathname.endsWith(`${API}/tuning/experiments/${id}`),
      route => route.fulfill({ json: experiment })
    );
    await command(page, 'cube-lab:open-tuning-experiment', { id });
    const view = page.locator(`.cube-TuDetail[data-experiment="${id}"]`);
    const status = view.locator('.cube-TFact', { hasText: 'Status' });
    await expect(status.locator('dd')).toHaveText(
      '1 succeeded, 5 early stopped'
    );
    await expectNothingCut(view, '.cube-TFacts dd, .cube-TBadge');
    await expect(
      view.locator('.cube-TuTable tr[data-trial="t1"] .cube-TBadge')
    ).toHaveText('early stopped');
    const ticks = view.locator('.cube-TuAxis[data-axis="model"] text');
    await expect(ticks).toContainText([
      'model',
      'GradientBoostingClassifier',
      'RandomForestClassifier'
    ]);
    await lightAndDark(page, 'content-tuning');
    void baseURL;
  });

  test('a failed training job says why it has no metrics', async ({
    page,
    request,
    baseURL,
    tmpPath
  }) => {
    const base = baseURL!;
    await putText(
      request,
      base,
      `${tmpPath}/broken.py`,
      "import sys\nprint('loading the data')\nraise ValueError('the table has no column \"label\"')\n"
    );
    const response = await request.post(`${base}${API}/training/jobs`, {
      data: {
        framework: 'plain',
        command: ['python3', 'broken.py'],
        working_dir: tmpPath,
        name: 'broken-run'
      }
    });
    expect(response.status(), await response.text()).toBe(201);
    const job = await response.json();
    await expect
      .poll(
        async () =>
          (
            await (
              await request.get(`${base}${API}/training/jobs/${job.id}`)
            ).json()
          ).status,
        { timeout: 60 * 1000 }
      )
      .toBe('failed');
    await command(page, 'cube-lab:open-training-job', { id: job.id });
    const view = page.locator(`.cube-TJobDetail[data-job="${job.id}"]`);
    const box = view.locator('.cube-TCharts-failed');
    await expect(box).toContainText(
      'The job failed before it reported any metrics.'
    );
    await expect(box.locator('.cube-TCharts-reason')).toHaveText(
      'ValueError: the table has no column "label"'
    );
    await expect(view).not.toContainText('This job reported no metrics');
    await expect(view.locator('.cube-TJobFailure')).toContainText(
      'The job failed: exit code 1'
    );
    await lightAndDark(page, 'content-training-failed');

    // A launch the server refuses (deepspeed is not installed here): the
    // form shows the whole answer, with its install command.
    await putText(request, base, `${tmpPath}/train.py`, "print('hi')\n");
    await command(page, 'cube-lab:launch-training');
    const form = page.locator('.cube-TForm:visible');
    await form.locator('select[name="framework"]').selectOption('deepspeed');
    await form.locator('input[name="script"]').fill(`${tmpPath}/train.py`);
    await form.getByRole('button', { name: 'Launch' }).click();
    const refused = form.locator('.cube-TError');
    await expect(refused.locator('.cube-TError-title')).toContainText(
      "framework 'deepspeed' needs"
    );
    const detail = refused.locator('.cube-TError-detail');
    await expect(detail).toContainText('-m pip install');
    await expect(detail).toContainText('deepspeed');
    await expectNothingCut(refused, '.cube-TError-title, .cube-TError-detail');
    const hidden = await detail.evaluate(n => n.scrollHeight - n.clientHeight);
    expect(hidden).toBeLessThanOrEqual(1);
    expect(await cutSelects(form)).toEqual([]);
    await refused.scrollIntoViewIfNeeded();
    await lightAndDark(page, 'content-training-refused');
  });
});
