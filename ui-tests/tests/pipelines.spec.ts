/**
 * The pipeline editor against the real server: build a pipeline by dragging
 * notebooks from the file browser, connect, set a parameter, save, run,
 * watch the run on the canvas, read a node's log; and time a 200-node open.
 */
import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

import { lightAndDark, putText } from './helpers';

function notebook(...sources: string[]): string {
  return JSON.stringify({
    cells: sources.map((source, i) => ({
      cell_type: 'code',
      id: `c${i}`,
      // The first cell holds the defaults papermill overrides.
      metadata: i === 0 && sources.length > 1 ? { tags: ['parameters'] } : {},
      execution_count: null,
      outputs: [],
      source: [source]
    })),
    metadata: {
      kernelspec: {
        name: 'python3',
        display_name: 'Python 3',
        language: 'python'
      }
    },
    nbformat: 4,
    nbformat_minor: 5
  });
}

/** Drag a file browser item onto a point with real mouse moves (a Lumino drag). */
async function dragFile(
  page: IJupyterLabPageFixture,
  name: string,
  x: number,
  y: number
): Promise<void> {
  const item = page.locator(`.jp-DirListing-item[title^="Name: ${name}"]`);
  await expect(item).toBeVisible();
  const box = (await item.boundingBox())!;
  await page.mouse.move(box.x + 30, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + 60, box.y + box.height / 2 + 10, { steps: 5 });
  await page.mouse.move(x, y, { steps: 15 });
  await page.mouse.up();
}

function pipelineNode(page: IJupyterLabPageFixture, label: string) {
  return page.locator('.cube-PipelineEditor .react-flow__node', {
    has: page.locator('.cube-PNode-label', { hasText: label })
  });
}

test.describe('cube-lab pipeline editor', () => {
  test.setTimeout(240 * 1000);

  test('builds, saves, exports, schedules and runs a pipeline of two notebooks', async ({
    page,
    request,
    baseURL,
    tmpPath
  }) => {
    const base = baseURL!;
    // Any error dialog (e.g. the file browser's "Directory not found") fails
    // the test with its text instead of silently eating clicks.
    const errors: string[] = [];
    page.on('console', msg => {
      if (msg.type() === 'error' && /not found/i.test(msg.text())) {
        errors.push(msg.text());
      }
    });
    await putText(
      request,
      base,
      `${tmpPath}/prep.ipynb`,
      notebook(
        [
          'import json\n',
          "print('hello from prep')\n",
          "json.dump({'accuracy': 0.93, 'loss': [0.9, 0.5, 0.3, 0.2]}, open('metrics.json', 'w'))\n",
          "open('scores.csv', 'w').write('id,score\\n1,0.5\\n2,0.75\\n')\n"
        ].join('')
      )
    );
    await putText(
      request,
      base,
      `${tmpPath}/train.ipynb`,
      notebook("greeting = 'unset'", "print('train says', greeting)")
    );
    // Galata opened the file browser on tmpPath before the files existed.
    await page.filebrowser.refresh();

    await page.evaluate(async cwd => {
      await (window as any).jupyterapp.commands.execute(
        // A name given: no dialog (content.spec.ts fills the dialog).
        'cube-lab:new-pipeline',
        { cwd, name: 'Two notebooks' }
      );
    }, tmpPath);
    const editor = page.locator('.cube-PipelineEditor');
    await expect(editor.locator('.react-flow')).toBeVisible();
    // At 1280x720 next to the file browser the editor has room for the
    // palette; narrower (1024 wide) the palette hides so the canvas keeps its
    // room, and comes back when there is room again.
    await expect(editor.locator('.cube-Palette')).toBeVisible();
    const viewport = page.viewportSize()!;
    await page.setViewportSize({ width: 1024, height: viewport.height });
    await expect(editor.locator('.cube-Palette')).toHaveCount(0);
    await page.setViewportSize(viewport);
    await expect(editor.locator('.cube-Palette')).toBeVisible();
    const canvas = (await editor
      .locator('.cube-PipelineEditor-canvas')
      .boundingBox())!;

    await dragFile(
      page,
      'prep.ipynb',
      canvas.x + canvas.width * 0.3,
      canvas.y + canvas.height * 0.35
    );
    await expect(pipelineNode(page, 'prep.ipynb')).toBeVisible();
    await dragFile(
      page,
      'train.ipynb',
      canvas.x + canvas.width * 0.6,
      canvas.y + canvas.height * 0.6
    );
    await expect(pipelineNode(page, 'train.ipynb')).toBeVisible();
    // The file browser is not needed any more: give the editor the room.
    await page.sidebar.close('left');
    await editor.getByRole('button', { name: 'Fit', exact: true }).click();

    // Connect prep -> train: click the output handle, then the input one.
    await pipelineNode(page, 'prep.ipynb')
      .locator('.react-flow__handle.source')
      .click();
    await pipelineNode(page, 'train.ipynb')
      .locator('.react-flow__handle.target')
      .click();
    await expect(
      editor.locator('.react-flow__edge:not(.cube-CommentLink)')
    ).toHaveCount(1);

    // prep keeps two of its files as outputs (results to render later).
    await pipelineNode(page, 'prep.ipynb').click();
    const props = editor.locator('.cube-SidePane');
    await expect(props.locator('input[name="filename"]')).toHaveValue(
      'prep.ipynb'
    );
    await props
      .locator('textarea[name="outputs"]')
      .fill('metrics.json\nscores.csv');
    await props.locator('input[name="filename"]').click();

    // A parameter and a retry on the train node.
    await pipelineNode(page, 'train.ipynb').click();
    await expect(props.locator('input[name="filename"]')).toHaveValue(
      'train.ipynb'
    );
    const params = props.getByRole('group', { name: 'Parameters' });
    await params.getByRole('button', { name: '+ Add' }).click();
    await params.locator('input[name="node-param-key-0"]').fill('greeting');
    await params.locator('input[name="node-param-value-0"]').fill('hi');
    await params.locator('input[name="node-param-value-0"]').press('Enter');
    await props.locator('input[name="retries"]').fill('1');
    await props.locator('input[name="retries"]').press('Enter');

    // A comment about the selected train node.
    await editor.getByRole('button', { name: 'Comment', exact: true }).click();
    const comment = editor.locator('.cube-PComment');
    await expect(comment).toHaveCount(1);
    await comment.dblclick();
    await comment.locator('textarea').fill('Trains the model');
    await comment.locator('textarea').press('Escape');
    await expect(comment).toContainText('Trains the model');

    await expect(
      page.locator('#jp-main-dock-panel .lm-TabBar-tab.jp-mod-dirty')
    ).toHaveCount(1);
    await editor.getByRole('button', { name: 'Save', exact: true }).click();
    await expect(
      page.locator('#jp-main-dock-panel .lm-TabBar-tab.jp-mod-dirty')
    ).toHaveCount(0);

    // The file on disk is an Elyra pipeline with the link and the settings.
    const listing = await request.get(`${base}/api/contents/${tmpPath}`);
    const file = (await listing.json()).content.find((f: any) =>
      f.name.endsWith('.pipeline')
    );
    const saved = await request.get(
      `${base}/api/contents/${tmpPath}/${file.name}?content=1`
    );
    const doc = JSON.parse((await saved.json()).content);
    const nodes = doc.pipelines[0].nodes;
    expect(nodes).toHaveLength(2);
    const train = nodes.find(
      (n: any) => n.app_data.component_parameters.filename === 'train.ipynb'
    );
    const prep = nodes.find(
      (n: any) => n.app_data.component_parameters.filename === 'prep.ipynb'
    );
    expect(train.op).toBe('execute-notebook-node');
    expect(train.inputs[0].links[0]).toMatchObject({
      node_id_ref: prep.id,
      port_id_ref: 'outPort'
    });
    expect(train.app_data.cube_lab).toEqual({
      parameters: { greeting: 'hi' },
      retries: 1
    });
    expect(prep.app_data.component_parameters.outputs).toEqual([
      'metrics.json',
      'scores.csv'
    ]);
    expect(doc.pipelines[0].app_data.version).toBe(8);
    const comments = doc.pipelines[0].app_data.ui_data.comments;
    expect(comments).toHaveLength(1);
    expect(comments[0].content).toBe('Trains the model');
    expect(comments[0].associated_id_refs[0].node_ref).toBe(train.id);

    await lightAndDark(page, 'pipeline-editor', { ready: editor });

    // Export for Kubeflow Pipelines: a download of KFP v2 IR YAML.
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      editor
        .getByRole('button', { name: 'Export for Kubeflow Pipelines' })
        .click()
    ]);
    expect(download.suggestedFilename()).toBe(
      file.name.replace(/\.pipeline$/, '.yaml')
    );
    const ir = fs.readFileSync(await download.path(), 'utf-8');
    expect(ir).toContain('pipelineInfo:');
    expect(ir).toContain('dependentTasks:');
    await expect(editor.getByRole('status')).toContainText('Exported');

    // Schedule: add one, see it listed with its next run, delete it.
    await editor.getByRole('button', { name: 'Schedule', exact: true }).click();
    const dialog = page.locator('.jp-Dialog');
    await expect(dialog).toContainText('This pipeline has no schedules yet.');
    await dialog.locator('input[name="cron"]').fill('0 4 * * *');
    await dialog.getByRole('button', { name: 'Add schedule' }).click();
    const row = dialog.locator('.cube-Schedules-row');
    await expect(row).toHaveCount(1);
    await expect(row).toContainText('0 4 * * *');
    await lightAndDark(page, 'pipeline-schedule', { ready: row });
    await row.getByRole('button', { name: 'Delete' }).click();
    await expect(row).toHaveCount(0);
    await dialog.getByRole('button', { name: 'Close' }).click();
    await expect(dialog).toHaveCount(0);

    // Run and watch both nodes turn green.
    await editor.getByRole('button', { name: 'Run', exact: true }).click();
    await expect(
      pipelineNode(page, 'prep.ipynb').locator('.cube-PNode')
    ).toHaveAttribute('data-status', 'succeeded', { timeout: 150 * 1000 });
    await expect(
      pipelineNode(page, 'train.ipynb').locator('.cube-PNode')
    ).toHaveAttribute('data-status', 'succeeded', { timeout: 150 * 1000 });

    // The train node's log shows the parameter papermill injected.
    await pipelineNode(page, 'train.ipynb').click();
    await editor.getByRole('tab', { name: 'Run' }).click();
    await expect(editor.locator('.cube-NodeLog-text')).toContainText(
      'train says hi',
      { timeout: 30 * 1000 }
    );
    // prep's log and results: metrics as name/value rows, a chart of the
    // loss series, the CSV as a table.
    await pipelineNode(page, 'prep.ipynb').click();
    await expect(editor.locator('.cube-NodeLog-text')).toContainText(
      'hello from prep',
      { timeout: 30 * 1000 }
    );
    const results = editor.locator('.cube-NodeResults');
    await expect(results.locator('.cube-Metrics')).toContainText('accuracy');
    await expect(results.locator('.cube-Metrics')).toContainText('0.93');
    await expect(results.locator('.cube-ResultTable tbody tr')).toHaveCount(2);
    await expect(results.locator('.cube-ResultTable')).toContainText('0.75');
    await expect(
      results.locator('.cube-Chart-svg polyline.cube-Chart-series')
    ).toHaveCount(1);
    await lightAndDark(page, 'pipeline-run', { ready: results });

    // The run in the Pipeline runs panel.
    await page.sidebar.openTab('cube-lab-pipeline-runs-panel');
    const runs = page.locator('#cube-lab-pipeline-runs');
    await page.evaluate(() =>
      (window as any).jupyterapp.commands.execute(
        'cube-lab:refresh-pipeline-runs'
      )
    );
    await expect(runs.locator('.cube-Runs-row').first()).toContainText(
      'succeeded',
      { timeout: 30 * 1000 }
    );

    await lightAndDark(page, 'pipeline-runs-panel', {
      ready: runs.locator('.cube-Runs-row').first()
    });
    expect(errors).toEqual([]);
  });

  test('opens a 200-node pipeline quickly', async ({
    page,
    request,
    baseURL,
    tmpPath
  }) => {
    const nodes = [];
    const N = 200;
    for (let i = 0; i < N; i++) {
      const col = Math.floor(i / 10);
      const row = i % 10;
      nodes.push({
        id: `n${i}`,
        type: 'execution_node',
        op: 'cube-lab:shell',
        app_data: {
          label: `step ${i}`,
          component_parameters: { command: `echo ${i}` },
          ui_data: { label: `step ${i}`, x_pos: col * 260, y_pos: row * 90 }
        },
        inputs: [
          {
            id: 'inPort',
            links:
              i >= 10
                ? [
                    {
                      id: `l${i}`,
                      node_id_ref: `n${i - 10}`,
                      port_id_ref: 'outPort'
                    }
                  ]
                : []
          }
        ],
        outputs: [{ id: 'outPort' }]
      });
    }
    const doc = {
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
              name: 'big',
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
    const file = `${tmpPath}/big.pipeline`;
    await putText(request, baseURL!, file, JSON.stringify(doc, null, 2));
    // Open a small pipeline first so the figure is the open, not the code load.
    const small = {
      ...doc,
      pipelines: [{ ...doc.pipelines[0], nodes: nodes.slice(0, 1) }]
    };
    await putText(
      request,
      baseURL!,
      `${tmpPath}/small.pipeline`,
      JSON.stringify(small)
    );
    await page.evaluate(async p => {
      await (window as any).jupyterapp.commands.execute('docmanager:open', {
        path: p
      });
    }, `${tmpPath}/small.pipeline`);
    await expect(
      page.locator('.cube-PipelineEditor .react-flow__node')
    ).toHaveCount(1);
    await page.evaluate(async () => {
      await (window as any).jupyterapp.commands.execute(
        'application:close-all'
      );
    });
    await expect(page.locator('.cube-PipelineEditor')).toHaveCount(0);

    const rendered = await page.evaluate(async p => {
      const w = window as any;
      w.__cubeT0 = performance.now();
      void w.jupyterapp.commands.execute('docmanager:open', { path: p });
      await new Promise<void>(resolve => {
        const check = () =>
          document.querySelector('.cube-PipelineEditor .react-flow__node')
            ? resolve()
            : requestAnimationFrame(check);
        check();
      });
      // one more frame: painted
      await new Promise(r => requestAnimationFrame(() => r(null)));
      return {
        ms: performance.now() - w.__cubeT0,
        count: document.querySelectorAll(
          '.cube-PipelineEditor .react-flow__node'
        ).length
      };
    }, file);
    // A node in the middle of the grid (20 columns x 10 rows): after the fit it
    // is in the middle of the canvas, away from the panel edges.
    await page
      .locator('.cube-PipelineEditor .react-flow__node[data-id="n105"]')
      .click();
    await expect(
      page.locator('.cube-PipelineEditor .cube-PNode.cube-mod-selected')
    ).toHaveCount(1);
    const elapsed = Math.round(
      await page.evaluate(() => performance.now() - (window as any).__cubeT0)
    );
    console.log(
      `200-node pipeline: first paint ${Math.round(rendered.ms)} ms, ` +
        `a node selected (interactive) at ${elapsed} ms, ` +
        `${rendered.count} nodes in the DOM`
    );
    test.info().annotations.push({
      type: '200-node open ms',
      description: String(elapsed)
    });
    await lightAndDark(page, 'pipeline-200');
    // The target: interactive in under 1.5 s in Chromium. The test
    // machine is shared: when other work keeps its cores busy the figure says
    // more about them than about the editor, so the target is only enforced
    // on a machine that is not overloaded (the figure is printed either way).
    const load = os.loadavg()[0] / os.cpus().length;
    test.info().annotations.push({
      type: 'load per core at the end',
      description: load.toFixed(2)
    });
    expect(elapsed).toBeLessThan(load < 1.5 ? 1500 : 5000);
  });
});
