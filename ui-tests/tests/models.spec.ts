/**
 * The Models side panel and the model tabs, against the real server: files
 * are uploaded with the Jupyter contents API, registered with the cube-lab
 * REST API, then listed in the panel and browsed, compared and registered in
 * main-area tabs. Also the layout: one left-sidebar panel per capability,
 * launcher cards, and panels and tabs restored after a reload.
 */
import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import type { APIRequestContext } from '@playwright/test';

import { layoutSaved, lightAndDark } from './helpers';

const API = '/cube/api/v1';

/** The cube-lab panels of the left sidebar: id, header. */
const PANELS: [string, string][] = [
  ['cube-lab-models-panel', 'Models'],
  ['cube-lab-pipeline-runs-panel', 'Pipeline runs'],
  ['cube-lab-training-panel', 'Training'],
  ['cube-lab-tuning-panel', 'Tuning'],
  ['cube-lab-deployments-panel', 'Deployments'],
  ['cube-lab-labeling-panel', 'Labeling']
];

/** PUT a file through the Jupyter contents API. */
async function putFile(
  request: APIRequestContext,
  baseURL: string,
  filePath: string,
  content: string | Buffer,
  format: 'text' | 'base64' = 'base64'
): Promise<void> {
  const encoded =
    format === 'base64'
      ? Buffer.from(content).toString('base64')
      : content.toString();
  const response = await request.put(
    `${baseURL}/api/contents/${filePath
      .split('/')
      .map(encodeURIComponent)
      .join('/')}`,
    { data: { type: 'file', format, content: encoded } }
  );
  expect(response.ok(), await response.text()).toBeTruthy();
}

/** POST /models: register a version and return it. */
async function register(
  request: APIRequestContext,
  baseURL: string,
  body: Record<string, unknown>
): Promise<any> {
  const response = await request.post(`${baseURL}${API}/models`, {
    data: body
  });
  expect(response.status(), await response.text()).toBe(201);
  return response.json();
}

/** A small weights file uploaded and registered as model `name` (generic). */
async function registerWeights(
  request: APIRequestContext,
  baseURL: string,
  folder: string,
  name: string,
  accuracy: number
): Promise<any> {
  await putFile(request, baseURL, `${folder}/w.bin`, Buffer.from('weights'));
  return register(request, baseURL, {
    name,
    path: `${folder}/w.bin`,
    flavor: 'generic',
    metrics: { accuracy }
  });
}

const NOTEBOOK = JSON.stringify({
  cells: [
    {
      cell_type: 'markdown',
      id: 'a1',
      metadata: {},
      source: ['# Train the iris classifier']
    }
  ],
  metadata: {},
  nbformat: 4,
  nbformat_minor: 5
});

async function openModelsPanel(page: IJupyterLabPageFixture): Promise<void> {
  await page.sidebar.openTab('cube-lab-models-panel');
  await expect(page.locator('#cube-lab-models-panel')).toBeVisible();
  await expect(page.locator('#cube-lab-models')).toBeVisible();
}

test.describe('cube-lab models', () => {
  test('shows how to register a model when there is none', async ({
    page,
    request,
    baseURL
  }) => {
    const list = await request.get(`${baseURL}${API}/models`);
    expect(list.ok()).toBeTruthy();
    test.skip(
      (await list.json()).total > 0,
      'the server already holds models (reused server)'
    );
    await openModelsPanel(page);
    const empty = page.locator('#cube-lab-models .cube-Empty');
    await expect(empty).toBeVisible();
    await expect(empty).toContainText('%cube_register NAME PATH');
    await expect(empty).toContainText('cube_lab.registry.register(');
    await expect(empty).toContainText('cube-lab model register PATH');
    await expect(empty).toContainText('Register as model');
    await lightAndDark(page, 'models-empty', { ready: empty });
  });

  test('lists a registered model and shows its versions and metrics', async ({
    page,
    request,
    baseURL,
    tmpPath
  }) => {
    const base = baseURL!;
    await putFile(
      request,
      base,
      `${tmpPath}/weights.bin`,
      Buffer.alloc(4096, 7)
    );
    await putFile(request, base, `${tmpPath}/train.ipynb`, NOTEBOOK, 'text');

    const v1 = await register(request, base, {
      name: 'iris-classifier',
      path: `${tmpPath}/weights.bin`,
      flavor: 'generic',
      description: 'Baseline random forest',
      metrics: { accuracy: 0.912, f1: 0.905, loss: 0.31 },
      params: { n_estimators: 100, max_depth: 6, criterion: 'gini' },
      source: `${tmpPath}/train.ipynb`
    });
    const v2 = await register(request, base, {
      name: 'iris-classifier',
      path: `${tmpPath}/weights.bin`,
      flavor: 'generic',
      description: 'More trees, deeper',
      metrics: { accuracy: 0.947, f1: 0.941, loss: 0.22 },
      params: { n_estimators: 300, max_depth: 10, criterion: 'gini' },
      tags: { dataset: 'iris-v2', team: 'vision' },
      aliases: ['production'],
      source: `${tmpPath}/train.ipynb`,
      training_job_id: 'job-7f3a'
    });
    await register(request, base, {
      name: 'sentiment-bert',
      path: `${tmpPath}/weights.bin`,
      flavor: 'generic',
      metrics: { accuracy: 0.883 },
      aliases: ['staging']
    });
    expect(v2.version).toBe(v1.version + 1);
    expect(v2.aliases).toContain('production');

    await openModelsPanel(page);
    const section = page.locator('#cube-lab-models');
    const item = section.locator(
      '.cube-ModelItem[data-model="iris-classifier"]'
    );
    // The panel is a list: all three models in view, no details.
    await expect(item).toBeVisible();
    await expect(item).toContainText(`v${v2.version}`);
    await expect(item).toContainText('production');
    await expect(item).toContainText('generic');
    await expect(
      section.locator('.cube-ModelItem[data-model="sentiment-bert"]')
    ).toBeVisible();
    await lightAndDark(page, 'models-list', { ready: item });

    // Search narrows the list.
    await section.locator('.cube-Search-input').fill('sentiment');
    await expect(item).toHaveCount(0);
    await expect(
      section.locator('.cube-ModelItem[data-model="sentiment-bert"]')
    ).toBeVisible();
    await section.locator('.cube-Search-input').fill('');
    await expect(item).toBeVisible();

    // A model opens in a main-area tab named after it: its versions with
    // every key metric; the panel stays a list.
    await item.click();
    const tab = page.locator('.cube-ModelTab');
    await expect(page.activity.getTabLocator('iris-classifier')).toBeVisible();
    await expect(section.locator('.cube-ListView')).toBeVisible();
    const rows = tab.locator('.cube-VersionRow');
    await expect(rows).toHaveCount(2);
    await expect(rows.first()).toHaveAttribute(
      'data-version',
      String(v2.version)
    );
    await expect(rows.first()).toContainText('production');
    await expect(tab.locator('.cube-VersionsTable thead')).toContainText(
      'accuracy'
    );
    await expect(tab.locator('.cube-VersionsTable thead')).toContainText(
      'loss'
    );
    await expect(tab.locator(`tr[data-version="${v2.version}"]`)).toContainText(
      '0.947'
    );
    await lightAndDark(page, 'models-versions', { ready: rows.first() });

    // Compare both versions.
    await rows.nth(0).locator('input[type="checkbox"]').check();
    await rows.nth(1).locator('input[type="checkbox"]').check();
    await tab.locator('.cube-CompareButton').click();
    const compare = tab.locator('.cube-CompareTable');
    await expect(compare).toBeVisible();
    const accuracy = compare.locator('tr[data-metric="accuracy"]');
    await expect(accuracy).toContainText('0.912');
    await expect(accuracy).toContainText('0.947');
    await expect(accuracy.locator('.cube-mod-best')).toHaveText('0.947');
    await expect(
      compare.locator('tr[data-metric="loss"] .cube-mod-best')
    ).toHaveText('0.22');
    // The tab's title says what it shows.
    await expect(
      page.activity.getTabLocator('Compare iris-classifier')
    ).toBeVisible();
    await lightAndDark(page, 'models-compare', { ready: compare });

    // Version detail, in the same tab.
    await tab
      .locator('.cube-Breadcrumbs-link', { hasText: 'iris-classifier' })
      .click();
    await tab.locator(`.cube-VersionRow[data-version="${v2.version}"]`).click();
    const detail = tab.locator('.cube-VersionDetail');
    await expect(
      page.activity.getTabLocator(`iris-classifier v${v2.version}`)
    ).toBeVisible();
    await expect(detail).toBeVisible();
    await expect(detail.locator('.cube-Metrics')).toContainText('accuracy');
    await expect(detail.locator('.cube-Metrics')).toContainText('0.947');
    await expect(detail.locator('.cube-Params')).toContainText('n_estimators');
    await expect(detail.locator('.cube-Params')).toContainText('300');
    await expect(detail.locator('.cube-Tags')).toContainText('iris-v2');
    await expect(detail.locator('.cube-Lineage')).toContainText('job-7f3a');
    await expect(detail.locator('.cube-Artifact')).toContainText('4 KiB');
    await expect(detail.locator('.cube-Artifact')).toContainText('sha256:');
    const download = detail.locator('a[download]');
    await expect(download).toHaveAttribute(
      'href',
      new RegExp(
        `/cube/api/v1/projects/[^/]+/models/iris-classifier/versions/${v2.version}/download`
      )
    );
    await lightAndDark(page, 'models-version', { ready: detail });

    // Clicking the model in the panel again brings its tab back (one tab).
    await item.click();
    await expect(page.locator('.cube-ModelTab')).toHaveCount(1);
    await tab.locator(`.cube-VersionRow[data-version="${v2.version}"]`).click();
    await expect(detail).toBeVisible();

    // The lineage source opens the notebook.
    await detail.locator('.cube-SourceLink').click();
    await expect(
      page.locator('.jp-NotebookPanel .jp-RenderedMarkdown h1')
    ).toContainText('Train the iris classifier');
    expect(await page.activity.isTabActive('train.ipynb')).toBeTruthy();
  });

  test('sets and removes an alias, archives a version', async ({
    page,
    request,
    baseURL,
    tmpPath
  }) => {
    const base = baseURL!;
    const v = await registerWeights(request, base, tmpPath, 'alias-demo', 0.5);

    await openModelsPanel(page);
    const section = page.locator('#cube-lab-models');
    await section.locator('.cube-ModelItem[data-model="alias-demo"]').click();
    const tab = page.locator('.cube-ModelTab');
    await tab.locator(`.cube-VersionRow[data-version="${v.version}"]`).click();
    const detail = tab.locator('.cube-VersionDetail');

    // An invalid alias is refused before it reaches the server.
    await detail.getByRole('button', { name: 'Set alias' }).click();
    await page.locator('.jp-Dialog input').fill('latest');
    await page.locator('.jp-Dialog .jp-mod-accept').click();
    await expect(page.locator('.jp-Dialog')).toContainText('reserved');
    await page.locator('.jp-Dialog .jp-mod-accept').click();

    await detail.getByRole('button', { name: 'Set alias' }).click();
    await page.locator('.jp-Dialog input').fill('champion');
    await page.locator('.jp-Dialog .jp-mod-accept').click();
    await expect(detail.locator('.cube-Aliases')).toContainText('champion');

    await detail
      .getByRole('button', { name: 'Remove alias "champion"' })
      .click();
    await page.locator('.jp-Dialog .jp-mod-accept').click();
    await expect(detail.locator('.cube-Aliases .cube-Badge-alias')).toHaveCount(
      0
    );

    await detail.getByRole('button', { name: 'Archive' }).click();
    await expect(detail.locator('.cube-Badge-archived')).toBeVisible();
    const got = await request.get(
      `${base}${API}/projects/${encodeURIComponent(v.project)}/models/alias-demo/versions/${v.version}`
    );
    expect((await got.json()).archived).toBe(true);

    // Polling picks up a version registered elsewhere (no manual refresh).
    await tab
      .locator('.cube-Breadcrumbs-link', { hasText: 'alias-demo' })
      .click();
    await expect(tab.locator('.cube-VersionRow')).toHaveCount(1);
    const next = await register(request, base, {
      name: 'alias-demo',
      path: `${tmpPath}/w.bin`,
      flavor: 'generic',
      metrics: { accuracy: 0.6 }
    });
    await expect(
      tab.locator(`.cube-VersionRow[data-version="${next.version}"]`)
    ).toBeVisible({ timeout: 15000 });
  });

  test('a read-only model (course material) wears its badge', async ({
    page,
    request,
    baseURL,
    tmpPath
  }) => {
    const base = baseURL!;
    const v = await registerWeights(request, base, tmpPath, 'course-base', 0.8);
    const url = `${base}${API}/projects/${encodeURIComponent(v.project)}/models/course-base`;
    // its owner (here, the one local user) makes it read-only, as a hand-out does
    const patched = await request.patch(url, { data: { read_only: true } });
    expect(patched.status(), await patched.text()).toBe(200);
    expect((await patched.json()).read_only).toBe(true);

    await openModelsPanel(page);
    const item = page.locator(
      '#cube-lab-models .cube-ModelItem[data-model="course-base"]'
    );
    await expect(item.locator('.cube-Badge-readonly')).toHaveText('read-only');
    await item.click();
    const header = page.locator('.cube-ModelTab .cube-Header-title');
    await expect(header.locator('.cube-Badge-readonly')).toHaveAttribute(
      'title',
      /Course material of /
    );
    await lightAndDark(page, 'models-read-only', { ready: header });
    // the owner may lift it
    const lifted = await request.patch(url, { data: { read_only: false } });
    expect((await lifted.json()).read_only).toBe(false);
  });

  test('each capability has a left-sidebar panel with its icon, restored after a reload', async ({
    page
  }) => {
    for (const [id, header] of PANELS) {
      const tab = page.locator(`.jp-SideBar .lm-TabBar-tab[data-id="${id}"]`);
      await expect(tab).toBeVisible();
      // Its own icon, drawn in the theme's colour.
      await expect(tab.locator('svg .jp-icon3').first()).toBeAttached();
      await page.sidebar.openTab(id);
      const panel = page.locator(`#${id}`);
      await expect(panel).toBeVisible();
      await expect(panel.locator('.cube-SidePanel-title')).toHaveText(header);
      // One list in the panel, no accordion of sections.
      await expect(panel.locator('.lm-AccordionPanel')).toHaveCount(0);
      await expect(panel.locator('.cube-SidePanel-section')).toHaveCount(1);
    }
    // Only one panel shows at a time.
    await expect(page.locator('.cube-SidePanel:visible')).toHaveCount(1);

    // The open panel and a model tab come back after a reload.
    await page.sidebar.openTab('cube-lab-tuning-panel');
    await page.evaluate(async () => {
      await (window as any).jupyterapp.commands.execute(
        'cube-lab:open-model-tab',
        { project: 'nobody', name: 'restored-model' }
      );
    });
    await expect(page.activity.getTabLocator('restored-model')).toBeVisible();
    await layoutSaved(page, 'cube-lab-tuning-panel', ['restored-model']);
    // (Galata's own wait expects the Launcher in front: the restored tab is.)
    await page.reload({ waitForIsReady: false });
    await page.locator('#jupyterlab-splash').waitFor({ state: 'detached' });
    await expect(page.locator('#cube-lab-tuning-panel')).toBeVisible();
    await expect(page.activity.getTabLocator('restored-model')).toBeVisible();
    await page.activity.closeAll();
  });

  test('the launcher has a card per capability; cards and the palette open their panels', async ({
    page
  }) => {
    await page
      .locator('.jp-LauncherCard[data-category="cube-lab"]')
      .first()
      .waitFor();
    const cards = page.locator('.jp-LauncherCard[data-category="cube-lab"]');
    await expect(cards.locator('.jp-LauncherCard-label')).toHaveText([
      'Models',
      'Pipeline',
      'Training',
      'Tuning',
      'Deployments',
      'Chat',
      'Labeling'
    ]);
    await cards.last().scrollIntoViewIfNeeded();
    await lightAndDark(page, 'launcher', { ready: cards.first() });

    for (const [label, id] of [
      ['Deployments', 'cube-lab-deployments-panel'],
      ['Labeling', 'cube-lab-labeling-panel'],
      ['Models', 'cube-lab-models-panel']
    ]) {
      await cards.filter({ hasText: label }).click();
      await expect(page.locator(`#${id}`)).toBeVisible();
      if (label !== 'Models') {
        await page.sidebar.close('left');
      }
    }

    await page.sidebar.close('left');
    await expect(page.locator('#cube-lab-models-panel')).toBeHidden();
    await page.keyboard.press('Control+Shift+C');
    await page.locator('#modal-command-palette input').fill('Model registry');
    await page.keyboard.press('Enter');
    await expect(page.locator('#cube-lab-models')).toBeVisible();
  });

  test('registers a file from the file browser context menu', async ({
    page,
    request,
    baseURL,
    tmpPath
  }) => {
    const base = baseURL!;
    await putFile(
      request,
      base,
      `${tmpPath}/classifier.onnx`,
      Buffer.alloc(2048, 1)
    );
    await page.filebrowser.refresh();

    const file = page.locator('.jp-DirListing-item[data-isdir="false"]', {
      hasText: 'classifier.onnx'
    });
    await file.click({ button: 'right' });
    await page.getByRole('menuitem', { name: 'Register as Model…' }).click();

    const dialog = page.locator('.jp-Dialog');
    await expect(dialog).toBeVisible();
    const name = dialog.locator('input[name="name"]');
    await expect(name).toHaveValue('classifier');
    await expect(dialog.locator('.cube-Form-path')).toHaveAttribute(
      'title',
      `${tmpPath}/classifier.onnx`
    );
    await expect(dialog.locator('.cube-Form-path code')).toHaveText(
      'classifier.onnx'
    );
    await lightAndDark(page, 'register-dialog', { ready: dialog });

    // The client checks the name with the server's rule.
    await name.fill('-not valid');
    await expect(dialog.locator('.cube-Form-hint')).toContainText(
      'starts with a letter or a digit'
    );
    await dialog.locator('.jp-mod-accept').click();
    await expect(page.locator('.jp-Dialog .cube-Error')).toContainText(
      'starts with a letter or a digit'
    );

    await page.locator('.jp-Dialog input[name="name"]').fill('onnx-classifier');
    await page
      .locator('.jp-Dialog textarea[name="description"]')
      .fill('Exported from PyTorch');
    await page.locator('.jp-Dialog .jp-mod-accept').click();
    await expect(page.locator('.jp-Dialog')).toHaveCount(0);

    // The new version opens in its tab; the panel lists the model.
    const detail = page.locator('.cube-ModelTab .cube-VersionDetail');
    await expect(detail).toBeVisible();
    await expect(detail.locator('.cube-Header')).toContainText(
      'onnx-classifier'
    );
    await expect(detail.locator('.cube-Header')).toContainText('onnx');
    await expect(detail.locator('.cube-Description')).toHaveText(
      'Exported from PyTorch'
    );
    await expect(
      page
        .getByRole('alert')
        .filter({ hasText: 'Registered onnx-classifier version' })
    ).toBeVisible();

    await expect(
      page.locator(
        '#cube-lab-models .cube-ModelItem[data-model="onnx-classifier"]'
      )
    ).toBeVisible();
    const list = await request.get(`${base}${API}/models?q=onnx-classifier`);
    const models = (await list.json()).models;
    expect(models.map((m: any) => m.name)).toContain('onnx-classifier');
  });

  test('shows the server error when registering fails', async ({
    page,
    request,
    baseURL,
    tmpPath
  }) => {
    const base = baseURL!;
    await putFile(request, base, `${tmpPath}/gone.pkl`, Buffer.from('x'));
    await page.filebrowser.refresh();
    const file = page.locator('.jp-DirListing-item', { hasText: 'gone.pkl' });
    await file.click({ button: 'right' });
    await page.getByRole('menuitem', { name: 'Register as Model…' }).click();
    await expect(page.locator('.jp-Dialog')).toBeVisible();
    // The file disappears before the request reaches the server.
    const removed = await request.delete(
      `${base}/api/contents/${tmpPath}/gone.pkl`
    );
    expect(removed.ok()).toBeTruthy();
    await page.locator('.jp-Dialog .jp-mod-accept').click();
    const error = page.locator('.jp-Dialog .cube-Error');
    await expect(error).toBeVisible();
    await expect(error.locator('.cube-Error-title')).not.toBeEmpty();
    await lightAndDark(page, 'register-error', { ready: error });
    await page.locator('.jp-Dialog .jp-mod-reject').click();
    await expect(page.locator('.jp-Dialog')).toHaveCount(0);
  });
});
