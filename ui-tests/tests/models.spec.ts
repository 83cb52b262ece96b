/**
 * The Models section of the cube-lab sidebar, against the real server:
 * files are uploaded with the Jupyter contents API, registered with the
 * cube-lab REST API, then browsed, compared and registered from the UI.
 */
import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import type { APIRequestContext } from '@playwright/test';
import * as path from 'path';

const SCREENSHOTS = path.resolve(__dirname, '..', 'screenshots');
const API = '/cube/api/v1';

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

async function openModelsSection(page: IJupyterLabPageFixture): Promise<void> {
  await page.sidebar.openTab('cube-lab-sidebar');
  await expect(page.locator('#cube-lab-sidebar')).toBeVisible();
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
    await openModelsSection(page);
    const empty = page.locator('#cube-lab-models .cube-Empty');
    await expect(empty).toBeVisible();
    await expect(empty).toContainText('%cube_register NAME PATH');
    await expect(empty).toContainText('cube_lab.registry.register(');
    await expect(empty).toContainText('cube-lab model register PATH');
    await expect(empty).toContainText('Register as model');
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'models-empty-light.png')
    });
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

    await openModelsSection(page);
    const section = page.locator('#cube-lab-models');
    const item = section.locator(
      '.cube-ModelItem[data-model="iris-classifier"]'
    );
    await expect(item).toBeVisible();
    await expect(item).toContainText(`v${v2.version}`);
    await expect(item).toContainText('production');
    await expect(item).toContainText('generic');
    await expect(
      section.locator('.cube-ModelItem[data-model="sentiment-bert"]')
    ).toBeVisible();
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'models-list-light.png')
    });

    // Search narrows the list.
    await section.locator('.cube-Search-input').fill('sentiment');
    await expect(item).toHaveCount(0);
    await expect(
      section.locator('.cube-ModelItem[data-model="sentiment-bert"]')
    ).toBeVisible();
    await section.locator('.cube-Search-input').fill('');
    await expect(item).toBeVisible();

    // Versions table.
    await item.click();
    const rows = section.locator('.cube-VersionRow');
    await expect(rows).toHaveCount(2);
    await expect(rows.first()).toHaveAttribute(
      'data-version',
      String(v2.version)
    );
    await expect(rows.first()).toContainText('production');
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'models-versions-light.png')
    });

    // Compare both versions.
    await rows.nth(0).locator('input[type="checkbox"]').check();
    await rows.nth(1).locator('input[type="checkbox"]').check();
    await section.locator('.cube-CompareButton').click();
    const compare = section.locator('.cube-CompareTable');
    await expect(compare).toBeVisible();
    const accuracy = compare.locator('tr[data-metric="accuracy"]');
    await expect(accuracy).toContainText('0.912');
    await expect(accuracy).toContainText('0.947');
    await expect(accuracy.locator('.cube-mod-best')).toHaveText('0.947');
    await expect(
      compare.locator('tr[data-metric="loss"] .cube-mod-best')
    ).toHaveText('0.22');
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'models-compare-light.png')
    });

    // The model in a main-area tab: a wide table with every key metric.
    await section
      .locator('.cube-Breadcrumbs-link', { hasText: 'iris-classifier' })
      .click();
    await section.locator('.cube-Breadcrumbs-tab').click();
    const tab = page.locator('.cube-ModelTab');
    await expect(tab.locator('.cube-VersionsTable')).toBeVisible();
    await expect(tab.locator('.cube-VersionsTable thead')).toContainText(
      'accuracy'
    );
    await expect(tab.locator('.cube-VersionsTable thead')).toContainText(
      'loss'
    );
    await expect(tab.locator(`tr[data-version="${v2.version}"]`)).toContainText(
      '0.947'
    );
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'models-tab-light.png')
    });
    await tab.locator(`tr[data-version="${v2.version}"]`).click();
    await expect(tab.locator('.cube-VersionDetail')).toBeVisible();
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'models-tab-version-light.png')
    });
    await page.activity.closeAll();

    // Version detail.

    await section
      .locator(`.cube-VersionRow[data-version="${v2.version}"]`)
      .click();
    const detail = section.locator('.cube-VersionDetail');
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
    await page.screenshot({ path: path.join(SCREENSHOTS, 'models-light.png') });

    await page.theme.setDarkTheme();
    await expect(detail).toBeVisible();
    await page.screenshot({ path: path.join(SCREENSHOTS, 'models-dark.png') });
    await section
      .locator('.cube-Breadcrumbs-link', { hasText: 'iris-classifier' })
      .click();
    await expect(rows).toHaveCount(2);
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'models-versions-dark.png')
    });
    await section
      .locator(`.cube-VersionRow[data-version="${v2.version}"]`)
      .click();
    await expect(detail).toBeVisible();
    await page.theme.setLightTheme();

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
    await putFile(request, base, `${tmpPath}/w.bin`, Buffer.from('weights'));
    const v = await register(request, base, {
      name: 'alias-demo',
      path: `${tmpPath}/w.bin`,
      flavor: 'generic',
      metrics: { accuracy: 0.5 }
    });

    await openModelsSection(page);
    const section = page.locator('#cube-lab-models');
    await section.locator('.cube-ModelItem[data-model="alias-demo"]').click();
    await section
      .locator(`.cube-VersionRow[data-version="${v.version}"]`)
      .click();
    const detail = section.locator('.cube-VersionDetail');

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
    await section
      .locator('.cube-Breadcrumbs-link', { hasText: 'alias-demo' })
      .click();
    await expect(section.locator('.cube-VersionRow')).toHaveCount(1);
    const next = await register(request, base, {
      name: 'alias-demo',
      path: `${tmpPath}/w.bin`,
      flavor: 'generic',
      metrics: { accuracy: 0.6 }
    });
    await expect(
      section.locator(`.cube-VersionRow[data-version="${next.version}"]`)
    ).toBeVisible({ timeout: 15000 });
  });

  test('the launcher and the palette open the model registry', async ({
    page
  }) => {
    await page
      .locator('.jp-LauncherCard[data-category="cube-lab"]')
      .first()
      .waitFor();
    const card = page.locator('.jp-LauncherCard[data-category="cube-lab"]', {
      hasText: 'Model registry'
    });
    await card.click();
    await expect(page.locator('#cube-lab-models')).toBeVisible();

    await page.sidebar.close('left');
    await expect(page.locator('#cube-lab-sidebar')).toBeHidden();
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
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'register-dialog-light.png')
    });

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

    // The new version is revealed in the Models section.
    const detail = page.locator('#cube-lab-models .cube-VersionDetail');
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
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'register-error-light.png')
    });
    await page.locator('.jp-Dialog .jp-mod-reject').click();
    await expect(page.locator('.jp-Dialog')).toHaveCount(0);
  });
});
