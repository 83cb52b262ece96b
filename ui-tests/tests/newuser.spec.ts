/**
 * The new user's tour: a notebook in the "Python 3 (cube-lab)" kernel registers a
 * model with %cube_register, and the model shows up in the Models section.
 */
import { expect, test } from '@jupyterlab/galata';
import * as path from 'path';

const SCREENSHOTS = path.resolve(__dirname, '..', 'screenshots');

test('a model registered from a notebook appears in the Models section', async ({
  page,
  request,
  baseURL,
  tmpPath
}) => {
  // Galata opens each test in its own folder (tmpPath): the kernel starts there.
  const weights = Buffer.from('tour weights '.repeat(20)).toString('base64');
  const upload = await request.put(
    `${baseURL}/api/contents/${tmpPath}/tour-weights.bin`,
    {
      data: { type: 'file', format: 'base64', content: weights }
    }
  );
  expect(upload.ok(), await upload.text()).toBeTruthy();

  await page.notebook.createNew('tour.ipynb', { kernel: 'cube-lab' });
  await page.notebook.setCell(
    0,
    'code',
    '%cube_register tour-model tour-weights.bin --metric accuracy=0.93 --alias staging'
  );
  await page.notebook.runCell(0);
  await expect
    .poll(
      async () => (await page.notebook.getCellTextOutput(0))?.join('\n') ?? '',
      {
        timeout: 60_000
      }
    )
    .toContain('Registered tour-model v1');

  await page.sidebar.openTab('cube-lab-sidebar');
  const models = page.locator('#cube-lab-models');
  await expect(models).toBeVisible();
  await expect(models.getByText('tour-model').first()).toBeVisible({
    timeout: 30_000
  });
  await models.getByText('tour-model').first().click();
  await expect(models.getByText('staging').first()).toBeVisible();
  await page.screenshot({
    path: path.join(SCREENSHOTS, 'tour-notebook-light.png')
  });
});
