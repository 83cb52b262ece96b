/**
 * The README's 5-minute tour, step by step, as a newcomer follows it: the starter
 * notebook that `make lab` puts in the workspace registers a model, the model shows in
 * the Models panel, and `cube-lab model list` works in a JupyterLab terminal with no
 * manual `export PATH`.
 */
import { expect, galata, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';

const SCREENSHOTS = path.resolve(__dirname, '..', 'screenshots');
const STARTER = path.resolve(
  __dirname,
  '..',
  '..',
  'starter',
  'getting-started.ipynb'
);

// Screen-reader mode keeps the terminal's text in the page (xterm draws on a canvas).
test.use({
  mockSettings: {
    ...galata.DEFAULT_SETTINGS,
    '@jupyterlab/terminal-extension:plugin': { screenReaderMode: true }
  }
});

test('the README tour works as written', async ({
  page,
  request,
  baseURL,
  tmpPath
}) => {
  test.setTimeout(180_000);

  // Step 1: the launcher's cube-lab category has a card for every capability.
  const launcher = page.locator('.jp-Launcher');
  await expect(launcher).toBeVisible();
  const section = launcher.locator('.jp-Launcher-section', {
    hasText: 'cube-lab'
  });
  for (const card of [
    'Models',
    'Pipeline',
    'Training',
    'Tuning',
    'Deployments',
    'Labeling'
  ]) {
    await expect(
      section.locator('.jp-LauncherCard', { hasText: card }).first()
    ).toBeVisible();
  }

  // Step 2: the starter notebook `make lab` copies into the workspace, run as it is.
  const upload = await request.put(
    `${baseURL}/api/contents/${tmpPath}/getting-started.ipynb`,
    {
      data: {
        type: 'notebook',
        format: 'json',
        content: JSON.parse(fs.readFileSync(STARTER, 'utf-8'))
      }
    }
  );
  expect(upload.ok(), await upload.text()).toBeTruthy();
  await page.filebrowser.refresh();
  await page.notebook.openByPath(`${tmpPath}/getting-started.ipynb`);
  await page.notebook.activate('getting-started.ipynb');
  await expect(page.locator('.jp-Notebook-ExecutionIndicator')).toBeVisible();
  await page.notebook.run();
  const outputs = page.locator('.jp-NotebookPanel .jp-OutputArea-output');
  await expect(
    outputs.filter({ hasText: 'Registered iris-rf v1' })
  ).toHaveCount(1, { timeout: 90_000 });
  await expect(outputs.filter({ hasText: 'iris-rf v2, lineage' })).toHaveCount(
    1,
    { timeout: 60_000 }
  );
  await expect(outputs.filter({ hasText: 'staging=v1' }).first()).toBeVisible({
    timeout: 60_000
  });
  // A successful tour prints nothing a user must read past (no red stderr blocks).
  await expect(
    page.locator(
      '.jp-NotebookPanel [data-mime-type="application/vnd.jupyter.stderr"]'
    )
  ).toHaveCount(0);

  // Step 3: the model is in the Models panel, with its alias.
  await page.sidebar.openTab('cube-lab-models-panel');
  const models = page.locator('#cube-lab-models');
  await expect(models.getByText('iris-rf').first()).toBeVisible({
    timeout: 30_000
  });
  await models.getByText('iris-rf').first().click();
  await expect(models.getByText('staging').first()).toBeVisible();
  await page.screenshot({
    path: path.join(SCREENSHOTS, 'tour-notebook-light.png')
  });

  // Step 5: a JupyterLab terminal finds `cube-lab` with no `export`.
  await page.menu.clickMenuItem('File>New>Terminal');
  const terminal = page.locator('.jp-Terminal').last();
  const rows = terminal.locator('.xterm-accessibility');
  await expect(rows).toContainText('$', { timeout: 30_000 });
  await terminal.click();
  await page.keyboard.type('cube-lab model list\n', { delay: 10 });
  await expect(rows).toContainText('iris-rf', { timeout: 60_000 });
  await expect(rows).toContainText('staging=v1');
  // the file the notebook saved, registered as it is (the workspace is the notebook's folder)
  await page.keyboard.type(
    `cd ${tmpPath} && cube-lab model register iris-rf.joblib --name iris-file --metric accuracy=0.97\n`,
    { delay: 10 }
  );
  await expect(rows).toContainText('Registered iris-file v1', {
    timeout: 60_000
  });
  await expect(rows).not.toContainText('error');
  await expect(rows).not.toContainText('command not found');
  await page.screenshot({
    path: path.join(SCREENSHOTS, 'tour-terminal-light.png')
  });
});
