/**
 * Deep links (src/links.ts, cube_lab/lab_links.py): a training job shown in a
 * notebook links to its view, and the click opens the job's tab in this
 * JupyterLab (no second page load), its live view charting the job's
 * metrics (pictured light and dark); a model version's `.url`, loaded as a
 * page, opens that version's tab and leaves the address without the link.
 */
import { expect, test } from '@jupyterlab/galata';

import { lightAndDark, pipelineDocument, putText } from './helpers';

test.use({ viewport: { width: 1280, height: 720 } });

/** Reports a falling loss and a rising accuracy: the view charts both. */
const REPORTER = `
import cube_lab
for step in range(12):
    cube_lab.report(step=step, loss=2.0 / (step + 1), accuracy=0.5 + step * 0.04)
`;

test('a job in a notebook links to its view, opened in place', async ({
  page,
  request,
  baseURL,
  tmpPath
}) => {
  test.setTimeout(180_000);
  await putText(request, baseURL!, `${tmpPath}/links-quick.py`, REPORTER);
  await putText(
    request,
    baseURL!,
    `${tmpPath}/links-weights.bin`,
    'w'.repeat(64)
  );

  await page.notebook.createNew('links.ipynb', { kernel: 'cube-lab' });
  await page.notebook.setCell(
    0,
    'code',
    "import cube_lab as cl\njob = cl.train('links-quick.py', framework='plain')\njob"
  );
  await page.notebook.runCell(0);
  const link = page
    .locator('.jp-OutputArea-output')
    .getByRole('link', { name: 'Open in JupyterLab' });
  await expect(link).toBeVisible({ timeout: 60_000 });
  const output = page.locator('.jp-OutputArea-output').first();
  await expect(output.getByText('Finished')).toBeVisible({ timeout: 60_000 });
  await expect(output.locator('svg[aria-label="loss"]')).toBeVisible();
  await expect(output.locator('svg[aria-label="accuracy"]')).toBeVisible();
  await lightAndDark(page, 'notebook-live-view');
  const before = await page.evaluate(() => performance.timeOrigin);
  await link.click();
  const tab = page.locator('.cube-TJobTab');
  await expect(tab).toBeVisible({ timeout: 30_000 });
  await expect(tab).toContainText('links-quick');
  // the same page: JupyterLab was not loaded again
  expect(await page.evaluate(() => performance.timeOrigin)).toBe(before);
  expect(page.url()).not.toContain('cube-open');

  await page.activity.activateTab('links.ipynb');
  // running the first cell added an empty second one below it
  await page.notebook.setCell(
    1,
    'code',
    "%cube_register links-model links-weights.bin --alias staging\nprint(cl.models.get('links-model:1').url)"
  );
  await page.notebook.runCell(1);
  let url = '';
  await expect
    .poll(
      async () => {
        const text =
          (await page.notebook.getCellTextOutput(1))?.join('\n') ?? '';
        url = text.split('\n').find(line => line.includes('cube-open=')) ?? '';
        return url;
      },
      { timeout: 60_000 }
    )
    .toContain('cube-open=model');
  await page.notebook.save();
  // a plain page load (Galata's goto waits for its own start-up conditions)
  await page.evaluate(target => window.location.assign(target), url.trim());
  const model = page.locator('.cube-ModelTab');
  await expect(model).toBeVisible({ timeout: 60_000 });
  await expect(model.getByText('staging').first()).toBeVisible();
  await expect(page.activity.getTabLocator('links-model')).toBeVisible();
  await expect.poll(() => page.url()).not.toContain('cube-open');
});

/** A one-node pipeline (Elyra's format) whose step prints and ends. */
const PIPELINE = JSON.stringify(
  pipelineDocument('links', [
    {
      id: 'step',
      type: 'execution_node',
      op: 'execute-python-node',
      app_data: {
        label: 'links-step.py',
        component_parameters: { filename: 'links-step.py' },
        ui_data: { label: 'links-step.py', x_pos: 60, y_pos: 80 }
      },
      inputs: [{ id: 'inPort', links: [] }],
      outputs: [{ id: 'outPort' }]
    }
  ])
);

test('a pipeline run in a notebook links to the editor on that run', async ({
  page,
  request,
  baseURL,
  tmpPath
}) => {
  test.setTimeout(180_000);
  await putText(
    request,
    baseURL!,
    `${tmpPath}/links-step.py`,
    "print('step ran')\n"
  );
  await putText(request, baseURL!, `${tmpPath}/links.pipeline`, PIPELINE);

  await page.notebook.createNew('run-links.ipynb', { kernel: 'cube-lab' });
  await page.notebook.setCell(
    0,
    'code',
    "import cube_lab as cl\nrun = cl.pipelines.run('links.pipeline')\nrun"
  );
  await page.notebook.runCell(0);
  const output = page.locator('.jp-OutputArea-output').first();
  const link = output.getByRole('link', { name: 'Open in JupyterLab' });
  await expect(link).toBeVisible({ timeout: 60_000 });
  await expect(output.getByText('links-step.py').first()).toBeVisible();
  await expect(output.getByText(/succeeded/i).first()).toBeVisible({
    timeout: 90_000
  });
  await lightAndDark(page, 'notebook-run-view');

  const before = await page.evaluate(() => performance.timeOrigin);
  await link.click();
  const editor = page.locator('.cube-PipelineEditor');
  await expect(editor).toBeVisible({ timeout: 30_000 });
  await expect(page.activity.getTabLocator('links.pipeline')).toBeVisible();
  // the editor shows that run: its node is green
  await expect(
    editor
      .locator('.react-flow__node', {
        has: page.locator('.cube-PNode-label', { hasText: 'links-step.py' })
      })
      .locator('.cube-PNode')
  ).toHaveAttribute('data-status', 'succeeded', { timeout: 30_000 });
  expect(await page.evaluate(() => performance.timeOrigin)).toBe(before);
  expect(page.url()).not.toContain('cube-open');
  await lightAndDark(page, 'pipeline-run-from-link');
});
