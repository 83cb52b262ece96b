/**
 * Elyra component catalogs in the pipeline editor: a local-directory catalog
 * (written where Elyra keeps them) shows its components in the palette under
 * the catalog's name; a double click adds one, whose inputs are form fields.
 */
import { expect, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';

import { SCREENSHOTS } from './helpers';

const FIXTURES = path.resolve(
  __dirname,
  '..',
  '..',
  'tests',
  'data',
  'catalogs',
  'components'
);

test.describe('cube-lab pipeline catalogs', () => {
  test.beforeAll(() => {
    // The server's JUPYTER_DATA_DIR (playwright.config.js): Elyra's catalog folder.
    const tmp = process.env.CUBE_LAB_UI_TMP!;
    const components = path.join(tmp, 'catalog-components');
    fs.mkdirSync(components, { recursive: true });
    fs.copyFileSync(
      path.join(FIXTURES, 'write_greeting.yaml'),
      path.join(components, 'write_greeting.yaml')
    );
    const folder = path.join(tmp, 'data', 'metadata', 'component-catalogs');
    fs.mkdirSync(folder, { recursive: true });
    fs.writeFileSync(
      path.join(folder, 'my_components.json'),
      JSON.stringify({
        display_name: 'My components',
        schema_name: 'local-directory-catalog',
        metadata: { runtime_type: 'KUBEFLOW_PIPELINES', paths: [components] }
      })
    );
  });

  test('lists catalog components in the palette and edits their inputs', async ({
    page,
    tmpPath
  }) => {
    await page.evaluate(async cwd => {
      await (window as any).jupyterapp.commands.execute(
        'cube-lab:new-pipeline',
        { cwd, name: 'Catalog' }
      );
    }, tmpPath);
    const editor = page.locator('.cube-PipelineEditor');
    const palette = editor.locator('.cube-Palette');
    await expect(palette).toBeVisible();
    const group = palette.locator('.cube-Palette-group', {
      has: page.locator('.cube-Palette-category', { hasText: 'My components' })
    });
    const item = group.locator('.cube-Palette-item', {
      hasText: 'Write greeting'
    });
    await expect(item).toBeVisible();
    await item.dblclick();
    const node = editor.locator('.react-flow__node', {
      has: page.locator('.cube-PNode-label', { hasText: 'Write greeting' })
    });
    await expect(node).toBeVisible();
    await node.click();
    const props = editor.locator('.cube-SidePane');
    await expect(props.locator('input[name="param-greeting"]')).toHaveValue(
      'hello'
    );
    await expect(props.locator('input[name="param-times"]')).toHaveValue('2');
    await expect(props).toContainText('busybox:1.36');
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'pipeline-catalog-palette.png')
    });
  });
});
