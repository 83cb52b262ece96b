/**
 * Helpers of the cube-lab Galata tests: screenshots for ui-tests/screenshots/
 * (every view in the light and the dark theme, at the configured viewport,
 * 1280x720), and waiting for the layout to be saved before a reload.
 */
import { expect, IJupyterLabPageFixture } from '@jupyterlab/galata';
import type { APIRequestContext, Locator } from '@playwright/test';
import * as path from 'path';

export const SCREENSHOTS = path.resolve(__dirname, '..', 'screenshots');

/**
 * Save `<name>-light.png` and `<name>-dark.png`, then go back to the light
 * theme. `ready` is checked in the dark theme before its picture is taken.
 */
export async function lightAndDark(
  page: IJupyterLabPageFixture,
  name: string,
  options: { ready?: Locator } = {}
): Promise<void> {
  const shoot = (theme: 'light' | 'dark') =>
    page.screenshot({ path: path.join(SCREENSHOTS, `${name}-${theme}.png`) });
  await shoot('light');
  await page.theme.setDarkTheme();
  if (options.ready) {
    await options.ready.waitFor();
  }
  await shoot('dark');
  await page.theme.setLightTheme();
}

/**
 * Wait until JupyterLab has saved its layout with `current` as the open
 * left-sidebar panel and `tabs` among the main-area tabs' restore names
 * (the workspace is saved a moment after each change): then a reload can
 * restore it.
 */
export async function layoutSaved(
  page: IJupyterLabPageFixture,
  current: string,
  tabs: string[] = []
): Promise<void> {
  await expect
    .poll(
      () =>
        page.evaluate(async () => {
          const node = document.getElementById('jupyter-config-data');
          const config = JSON.parse(node?.textContent ?? '{}');
          const response = await fetch(
            `${config.baseUrl}lab/api/workspaces/${config.workspace}`
          );
          const layout =
            (await response.json())?.data?.['layout-restorer:data'] ?? {};
          const main = JSON.stringify(layout.main ?? {});
          return { left: layout.left?.current ?? null, main };
        }),
      { timeout: 15_000 }
    )
    .toEqual({
      left: current,
      main: expect.stringMatching(
        new RegExp(tabs.map(t => `(?=.*${t})`).join(''))
      )
    });
}

/** PUT a text file through the Jupyter contents API. */
export async function putText(
  request: APIRequestContext,
  baseURL: string,
  filePath: string,
  content: string
): Promise<void> {
  const encoded = filePath.split('/').map(encodeURIComponent).join('/');
  const response = await request.put(`${baseURL}/api/contents/${encoded}`, {
    data: { type: 'file', format: 'text', content }
  });
  expect(response.ok(), await response.text()).toBeTruthy();
}

/** An Elyra-format (pipeline-flow v3) document of these nodes on the Generic runtime. */
export function pipelineDocument(
  name: string,
  nodes: Record<string, unknown>[]
): Record<string, unknown> & { pipelines: Record<string, unknown>[] } {
  return {
    doc_type: 'pipeline',
    version: '3.0',
    json_schema:
      'http://api.dataplatform.ibm.com/schemas/common-pipeline/pipeline-flow/pipeline-flow-v3-schema.json',
    id: 'elyra-auto-generated-pipeline',
    primary_pipeline: 'primary',
    pipelines: [
      {
        id: 'primary',
        nodes,
        app_data: {
          ui_data: { comments: [] },
          version: 8,
          properties: {
            name,
            runtime: 'Generic',
            pipeline_defaults: {},
            pipeline_parameters: []
          }
        },
        runtime_ref: ''
      }
    ],
    schemas: []
  };
}
