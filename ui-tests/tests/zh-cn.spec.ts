/**
 * 简体中文: with Settings > Language set to zh_CN, JupyterLab (its own language
 * pack) and every cube-lab panel speak Chinese, from the catalog shipped in the
 * cube-lab wheel (cube_lab/locale). Each panel is pictured in the light and the
 * dark theme at 1280x720 for a look at how the longer-or-shorter text sits.
 */
import { expect, galata, test } from '@jupyterlab/galata';

import { lightAndDark } from './helpers';

const API = '/cube/api/v1';

/** The cube-lab panels: id, the header in Chinese, the picture's name. */
const PANELS: [string, string, string][] = [
  ['cube-lab-models-panel', '模型', 'zh-models-panel'],
  ['cube-lab-pipeline-runs-panel', '流水线运行', 'zh-pipeline-runs-panel'],
  ['cube-lab-training-panel', '训练', 'zh-training-panel'],
  ['cube-lab-tuning-panel', '超参搜索', 'zh-tuning-panel'],
  ['cube-lab-deployments-panel', '推理服务', 'zh-deployments-panel'],
  ['cube-lab-labeling-panel', '标注', 'zh-labeling-panel'],
  ['cube-lab-kb-panel', '知识库', 'zh-kb-panel']
];

test.use({
  mockSettings: {
    ...galata.DEFAULT_SETTINGS,
    '@jupyterlab/translation-extension:plugin': { locale: 'zh_CN' }
  },
  // Galata waits for a tab named "Launcher": in Chinese it is 启动页
  waitForApplication: async ({}, use) => {
    await use(async (page, helpers) => {
      await page.locator('#jupyterlab-splash').waitFor({ state: 'detached' });
      await helpers.waitForCondition(() =>
        helpers.activity.isTabActive('启动页')
      );
    });
  }
});

test('the workspace and every cube-lab panel are in Chinese', async ({
  page,
  request,
  baseURL,
  tmpPath
}) => {
  test.setTimeout(120_000);
  // A model, so the Models panel shows a row and not only its empty state.
  const file = `${tmpPath}/weights.bin`;
  const put = await request.put(`${baseURL}/api/contents/${file}`, {
    data: {
      type: 'file',
      format: 'base64',
      content: Buffer.from('weights').toString('base64')
    }
  });
  expect(put.ok(), await put.text()).toBeTruthy();
  const registered = await request.post(`${baseURL}${API}/models`, {
    data: { name: 'zh-demo', path: file, description: '中文模型说明' }
  });
  expect(registered.ok(), await registered.text()).toBeTruthy();
  // course material (read-only), so the panel shows that badge in Chinese too
  const { project } = await registered.json();
  const readOnly = await request.patch(
    `${baseURL}${API}/projects/${encodeURIComponent(project)}/models/zh-demo`,
    { data: { read_only: true } }
  );
  expect(readOnly.ok(), await readOnly.text()).toBeTruthy();

  // JupyterLab's own menus come from its language pack
  await expect(
    page.locator('.lm-MenuBar-itemLabel', { hasText: '文件' })
  ).toBeVisible();
  // the launcher's cube-lab cards come from cube-lab's catalog
  const launcher = page.locator('.jp-Launcher');
  await expect(
    launcher.locator('.jp-LauncherCard', { hasText: '模型' }).first()
  ).toBeVisible();
  await lightAndDark(page, 'zh-launcher');

  for (const [id, header, picture] of PANELS) {
    await page.sidebar.openTab(id);
    const panel = page.locator(`#${id}`);
    await expect(panel.locator('.cube-SidePanel-title')).toHaveText(header);
    if (id === 'cube-lab-models-panel') {
      await expect(panel.getByText('zh-demo')).toBeVisible({ timeout: 15_000 });
      await expect(panel.locator('.cube-Badge-readonly')).toHaveText('只读');
    }
    await lightAndDark(page, picture, {
      ready: panel.locator('.cube-SidePanel-title')
    });
  }
});
