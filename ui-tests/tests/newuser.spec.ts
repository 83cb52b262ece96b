/**
 * The new user's tour: a notebook in the "Python 3 (cube-lab)" kernel registers a
 * model with %cube_register, and the model shows up in the Models panel.
 */
import { expect, test } from '@jupyterlab/galata';

import { lightAndDark } from './helpers';

test('a model registered from a notebook appears in the Models panel', async ({
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

  await page.sidebar.openTab('cube-lab-models-panel');
  const models = page.locator('#cube-lab-models');
  await expect(models).toBeVisible();
  const item = models.locator('.cube-ModelItem[data-model="tour-model"]');
  await expect(item).toBeVisible({ timeout: 30_000 });
  await expect(item).toContainText('staging');
  await lightAndDark(page, 'models-from-notebook', { ready: item });
  // The model opens in its tab, next to the notebook.
  await item.click();
  const tab = page.locator('.cube-ModelTab');
  await expect(tab.getByText('staging').first()).toBeVisible();
  await expect(page.activity.getTabLocator('tour-model')).toBeVisible();
  await expect(page.activity.getTabLocator('tour.ipynb')).toBeVisible();
});
