/**
 * Data labeling against the real server: three small PNGs are written with
 * the contents API, registered as a dataset from the "New dataset" tab, an
 * object-detection project is created from the next form, and in
 * the annotator a box is drawn with the mouse, relabeled with a hotkey,
 * undone and redrawn, submitted (Enter) and the next task shown (timed);
 * then the labels are exported as COCO from the project view and the export
 * on disk is checked against the boxes drawn.
 */
import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import type { APIRequestContext, Locator } from '@playwright/test';
import * as fs from 'fs';
import * as path from 'path';
import * as zlib from 'zlib';

import { lightAndDark } from './helpers';

const API = '/cube/api/v1';
const FOLDER = 'label-ui/shapes';
const DATASET = 'shapes';
const PROJECT = 'shapes-boxes';

/* A tiny PNG encoder: enough for solid images with a square in them. */

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) {
      c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    }
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(data: Buffer): number {
  let c = 0xffffffff;
  for (const byte of data) {
    c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8);
  }
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** An RGB PNG of `width` x `height`: a background with a square. */
function png(
  width: number,
  height: number,
  background: [number, number, number],
  square: { x: number; y: number; size: number; rgb: [number, number, number] }
): Buffer {
  const rows: Buffer[] = [];
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + width * 3);
    for (let x = 0; x < width; x++) {
      const inside =
        x >= square.x &&
        x < square.x + square.size &&
        y >= square.y &&
        y < square.y + square.size;
      const rgb = inside ? square.rgb : background;
      row[1 + x * 3] = rgb[0];
      row[2 + x * 3] = rgb[1];
      row[3 + x * 3] = rgb[2];
    }
    rows.push(row);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', zlib.deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0))
  ]);
}

async function putContents(
  request: APIRequestContext,
  baseURL: string,
  filePath: string,
  body: Record<string, unknown>
): Promise<void> {
  const response = await request.put(
    `${baseURL}/api/contents/${filePath.split('/').map(encodeURIComponent).join('/')}`,
    { data: body }
  );
  expect(response.ok(), await response.text()).toBeTruthy();
}

async function writeImages(
  request: APIRequestContext,
  baseURL: string
): Promise<void> {
  await putContents(request, baseURL, 'label-ui', { type: 'directory' });
  await putContents(request, baseURL, FOLDER, { type: 'directory' });
  const images: [string, Buffer][] = [
    [
      'a-red.png',
      png(96, 64, [235, 235, 235], {
        x: 20,
        y: 12,
        size: 30,
        rgb: [220, 40, 40]
      })
    ],
    [
      'b-green.png',
      png(96, 64, [40, 40, 40], { x: 50, y: 20, size: 24, rgb: [60, 200, 80] })
    ],
    [
      'c-blue.png',
      png(96, 64, [250, 240, 200], {
        x: 8,
        y: 30,
        size: 20,
        rgb: [40, 80, 220]
      })
    ]
  ];
  for (const [name, data] of images) {
    await putContents(request, baseURL, `${FOLDER}/${name}`, {
      type: 'file',
      format: 'base64',
      content: data.toString('base64')
    });
  }
}

async function openLabeling(page: IJupyterLabPageFixture): Promise<Locator> {
  await page.sidebar.openTab('cube-lab-labeling-panel');
  const section = page.locator('#cube-lab-labeling');
  await expect(section).toBeVisible();
  return section;
}

/** Drag on the image from one fraction of it to another. */
async function drawBox(
  page: IJupyterLabPageFixture,
  image: Locator,
  from: [number, number],
  to: [number, number]
): Promise<void> {
  const box = (await image.boundingBox())!;
  const at = (f: [number, number]) => [
    box.x + box.width * f[0],
    box.y + box.height * f[1]
  ];
  const [x0, y0] = at(from);
  const [x1, y1] = at(to);
  await page.mouse.move(x0, y0);
  await page.mouse.down();
  await page.mouse.move((x0 + x1) / 2, (y0 + y1) / 2, { steps: 4 });
  await page.mouse.move(x1, y1, { steps: 4 });
  await page.mouse.up();
}

async function boxesOf(annotator: Locator) {
  return annotator.locator('.cube-LBox[data-box]').evaluateAll(nodes =>
    nodes.map(n => ({
      label: n.getAttribute('data-label'),
      x: Number(n.getAttribute('data-x')),
      y: Number(n.getAttribute('data-y')),
      w: Number(n.getAttribute('data-w')),
      h: Number(n.getAttribute('data-h'))
    }))
  );
}

/** The COCO JSON of an export: the file itself, or the .json inside its folder. */
function readCoco(exportPath: string): any {
  let file = exportPath;
  if (fs.statSync(exportPath).isDirectory()) {
    const found: string[] = [];
    const walk = (dir: string) => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) {
          walk(full);
        } else if (entry.name.endsWith('.json')) {
          found.push(full);
        }
      }
    };
    walk(exportPath);
    expect(found.length, `no .json under ${exportPath}`).toBeGreaterThan(0);
    file = found[0];
  }
  return JSON.parse(fs.readFileSync(file, 'utf-8'));
}

test.describe('cube-lab labeling', () => {
  test.setTimeout(180_000);

  test('create a dataset and a box project, label with mouse and keys, export COCO', async ({
    page,
    request,
    baseURL
  }) => {
    const base = baseURL!;
    await writeImages(request, base);

    // The panel starts empty and offers to create a dataset.
    const section = await openLabeling(page);
    const empty = section.locator('.cube-TEmpty');
    await expect(empty).toContainText('Nothing to label yet');
    await lightAndDark(page, 'labeling-empty', { ready: empty });
    await section.getByRole('button', { name: 'New dataset' }).click();
    // The form opens in a tab of its own.
    const forms = page.locator('.cube-LFormView');
    await expect(page.activity.getTabLocator('New dataset')).toBeVisible();
    const datasetForm = forms.locator('form[aria-label="New dataset"]');
    await datasetForm.locator('input[name="path"]').fill(FOLDER);
    // The name follows the path.
    await expect(datasetForm.locator('input[name="name"]')).toHaveValue(
      DATASET
    );
    await lightAndDark(page, 'labeling-dataset-form', { ready: datasetForm });
    await datasetForm.getByRole('button', { name: 'Create dataset' }).click();

    // Next: the project form, on that dataset, in the same tab.
    const projectForm = forms.locator(
      'form[aria-label="New labeling project"]'
    );
    await expect(projectForm).toBeVisible();
    await expect(
      page.activity.getTabLocator('New labeling project')
    ).toBeVisible();
    await expect(projectForm.locator('select[name="dataset"]')).toHaveValue(
      DATASET
    );
    await expect(projectForm.locator('select[name="type"]')).toHaveValue(
      'image-bbox'
    );
    await projectForm.locator('input[name="name"]').fill(PROJECT);
    await projectForm
      .locator('input[name="labels"]')
      .fill('square, background');
    await projectForm
      .locator('textarea[name="instructions"]')
      .fill('Draw a tight box around each coloured square.');
    await expect(projectForm.locator('.cube-LPreview-label')).toHaveCount(2);
    await lightAndDark(page, 'labeling-form', { ready: projectForm });
    await projectForm.getByRole('button', { name: 'Create project' }).click();

    // It opens the project's tab (the form's tab closes); the panel lists
    // project and dataset.
    const view = page.locator(`.cube-LDetail[data-labeling="${PROJECT}"]`);
    await expect(view).toBeVisible();
    await expect(page.activity.getTabLocator(PROJECT)).toBeVisible();
    await expect(forms).toHaveCount(0);
    await expect(view.locator('.cube-LBig')).toContainText(
      '0 of 3 tasks labeled'
    );
    const item = section.locator(`.cube-LProject[data-labeling="${PROJECT}"]`);
    await expect(item).toContainText('0/3');
    await expect(
      section.locator(`.cube-LDataset[data-dataset="${DATASET}"]`)
    ).toContainText('3 items');

    // Label: the first task, its image loaded.
    await view.getByRole('button', { name: 'Start labeling' }).click();
    const annotator = page.locator('.cube-LAnnotator[data-mode="annotate"]');
    await expect(annotator).toHaveAttribute('data-status', 'assigned');
    const firstTask = await annotator.getAttribute('data-task');
    const image = annotator.locator('img.cube-LImage');
    await expect
      .poll(() => image.evaluate(img => (img as HTMLImageElement).naturalWidth))
      .toBe(96);
    await expect(annotator.locator('.cube-LInstructions')).toContainText(
      'tight box'
    );

    // Fitted to the view (upscaled: the image is small).
    await expect
      .poll(async () => (await image.boundingBox())!.width)
      .toBeGreaterThan(150);
    // Draw a box with the mouse: it gets the active (first) label.
    await drawBox(page, image, [0.2, 0.18], [0.53, 0.67]);
    await expect(annotator.locator('.cube-LBox[data-box]')).toHaveCount(1);
    let boxes = await boxesOf(annotator);
    expect(boxes[0].label).toBe('square');
    // Image pixels of a 96 x 64 image, whatever the zoom.
    expect(boxes[0].x).toBeGreaterThanOrEqual(18);
    expect(boxes[0].x).toBeLessThanOrEqual(21);
    expect(boxes[0].w).toBeGreaterThanOrEqual(30);
    expect(boxes[0].w).toBeLessThanOrEqual(33);

    // Hotkey 2 relabels the selected box; Ctrl-Z undoes, Ctrl-Shift-Z redoes.
    await page.keyboard.press('2');
    await expect(annotator.locator('.cube-LBox[data-box]')).toHaveAttribute(
      'data-label',
      'background'
    );
    await page.keyboard.press('Control+z');
    await expect(annotator.locator('.cube-LBox[data-box]')).toHaveAttribute(
      'data-label',
      'square'
    );
    await page.keyboard.press('Control+z');
    await expect(annotator.locator('.cube-LBox[data-box]')).toHaveCount(0);
    await page.keyboard.press('Control+Shift+z');
    await expect(annotator.locator('.cube-LBox[data-box]')).toHaveCount(1);
    // Key 1 on the selected box: back to "square".
    await page.keyboard.press('1');
    boxes = await boxesOf(annotator);
    expect(boxes.map(b => b.label)).toEqual(['square']);

    // Autosave stores the draft without submitting it.
    await expect(annotator).toHaveAttribute('data-save', 'saved', {
      timeout: 10_000
    });
    const listed = await (await request.get(`${base}${API}/labeling`)).json();
    const owner = listed.projects.find((p: any) => p.name === PROJECT).project;
    const draftTask = await (
      await request.get(
        `${base}${API}/projects/${encodeURIComponent(owner)}/labeling/${PROJECT}/tasks/${firstTask}`
      )
    ).json();
    expect(draftTask.status).toBe('assigned');
    expect(draftTask.result.boxes).toEqual([
      {
        label: 'square',
        x: boxes[0].x,
        y: boxes[0].y,
        w: boxes[0].w,
        h: boxes[0].h
      }
    ]);
    const drawn = [boxes[0]];

    // Enter submits and shows the next task, fetched while this one was shown.
    await page.keyboard.press('Enter');
    await expect(annotator).not.toHaveAttribute('data-task', firstTask!);
    await expect(annotator).toHaveAttribute('data-status', 'assigned');
    const view2 = page.locator('.cube-LAnnotatorView');
    await expect(view2).toHaveAttribute('data-switch-ms', /\d/);
    const switchMs = Number(await view2.getAttribute('data-switch-ms'));
    console.log(`next task shown in ${switchMs} ms`);
    expect(switchMs).toBeLessThan(150);

    // Back (read-only, submitted) and forward again.
    await page.keyboard.press('ArrowLeft');
    await expect(annotator).toHaveAttribute('data-task', firstTask!);
    await expect(annotator).toHaveAttribute('data-status', 'submitted');
    await expect(annotator.locator('.cube-LBox[data-box]')).toHaveCount(1);
    await page.keyboard.press('ArrowRight');
    await expect(annotator).not.toHaveAttribute('data-task', firstTask!);

    // Second task: the box tool off (B) pans instead of drawing; on again draws.
    await page.keyboard.press('b');
    await expect(annotator.locator('.cube-LTool')).toHaveAttribute(
      'aria-pressed',
      'false'
    );
    const before = await image.boundingBox();
    await drawBox(page, image, [0.5, 0.5], [0.6, 0.6]);
    const after = await image.boundingBox();
    expect(after!.x).toBeGreaterThan(before!.x + 5);
    await expect(annotator.locator('.cube-LBox[data-box]')).toHaveCount(0);
    await page.keyboard.press('b');
    await drawBox(page, image, [0.5, 0.3], [0.78, 0.69]);
    await expect(annotator.locator('.cube-LBox[data-box]')).toHaveCount(1);
    drawn.push((await boxesOf(annotator))[0]);
    await page.keyboard.press('Enter');
    await expect(annotator.locator('.cube-LBox[data-box]')).toHaveCount(0);

    // A box drawn, selected: the annotator in both themes.
    await drawBox(page, image, [0.08, 0.45], [0.3, 0.78]);
    await lightAndDark(page, 'labeling-annotator', {
      ready: annotator.locator('.cube-LBox[data-box]')
    });
    await page.keyboard.press('Delete');
    await expect(annotator.locator('.cube-LBox[data-box]')).toHaveCount(0);
    await expect(annotator).toHaveAttribute('data-save', 'saved', {
      timeout: 10_000
    });

    // Export COCO from the project view.
    await page.locator('.lm-TabBar-tab', { hasText: PROJECT }).first().click();
    await expect(view.locator('.cube-LBig')).toContainText(
      '2 of 3 tasks labeled',
      {
        timeout: 15_000
      }
    );
    await lightAndDark(page, 'labeling-project', { ready: view });
    await expect(view.locator('select[name="export-format"]')).toHaveValue(
      'coco'
    );
    await view.getByRole('button', { name: 'Export' }).click();
    const exported = view.locator('.cube-LExported');
    await expect(exported).toContainText(
      `${DATASET} version 1 · COCO JSON · 2 items`
    );
    // The dataset lists the new version, written where the view says.
    const dataset = await (
      await request.get(
        `${base}${API}/projects/${encodeURIComponent(owner)}/datasets/${DATASET}`
      )
    ).json();
    expect(dataset.versions.map((v: any) => [v.version, v.format])).toEqual([
      [1, 'coco']
    ]);
    expect(await exported.locator('.cube-LPath').textContent()).toBe(
      dataset.versions[0].path
    );

    // The COCO file holds the two submitted boxes, in image pixels.
    const coco = readCoco(dataset.versions[0].path);
    const categories = new Map<number, string>(
      coco.categories.map((c: any) => [c.id, c.name])
    );
    expect([...categories.values()].sort()).toEqual(['background', 'square']);
    const got = coco.annotations
      .map((a: any) => ({
        label: categories.get(a.category_id),
        bbox: a.bbox.map((v: number) => Math.round(v))
      }))
      .sort((a: any, b: any) => a.bbox[0] - b.bbox[0]);
    const want = drawn
      .map(b => ({ label: b.label, bbox: [b.x, b.y, b.w, b.h] }))
      .sort((a, b) => a.bbox[0] - b.bbox[0]);
    expect(got).toEqual(want);
    // The submitted tasks' images (the third one was not submitted).
    expect(coco.images).toHaveLength(2);

    // The download link serves the version.
    const href = await view.locator('.cube-LDownload').getAttribute('href');
    const download = await request.get(href!);
    expect(download.status()).toBe(200);
    expect((await download.body()).length).toBeGreaterThan(100);

    await lightAndDark(page, 'labeling-export', { ready: exported });
    // "Train from these labels" opens the training form's tab with the
    // version as its data.
    await view.getByRole('button', { name: 'Train from these labels' }).click();
    await expect(page.activity.getTabLocator('Launch training')).toBeVisible();
    const env = page.locator('.cube-TLaunchView textarea[name="env"]');
    await expect(env).toBeVisible();
    await expect(env).toHaveValue(
      `CUBE_LAB_DATASET=${dataset.versions[0].path}`
    );
    await page.activity.closePanel('Launch training');
    await page
      .locator('.lm-DockPanel-tabBar .lm-TabBar-tab', {
        has: page.locator('.lm-TabBar-tabLabel', {
          hasText: new RegExp(`^${PROJECT}$`)
        })
      })
      .click();
    await expect(view).toBeVisible();
    await page.sidebar.openTab('cube-lab-labeling-panel');
    await expect(item).toContainText('2/3');
    await lightAndDark(page, 'labeling-panel', { ready: item });
  });

  test('mark named entities by selecting text and pressing a hotkey', async ({
    page,
    request,
    baseURL
  }) => {
    const base = baseURL!;
    await putContents(request, base, 'label-ui', { type: 'directory' });
    await putContents(request, base, 'label-ui/people.csv', {
      type: 'file',
      format: 'text',
      content:
        'text,source\n"Alice met Bob in Paris.",a\n"Carol moved to Berlin.",b\n'
    });
    const post = async (url: string, data: Record<string, unknown>) => {
      const response = await request.post(`${base}${API}${url}`, { data });
      expect(response.status(), await response.text()).toBe(201);
      return response.json();
    };
    const dataset = await post('/datasets', {
      name: 'people',
      path: 'label-ui/people.csv'
    });
    expect(dataset.kind).toBe('texts');
    const project = await post('/labeling', {
      name: 'people-ner',
      dataset: 'people',
      type: 'text-ner',
      labels: ['PER', 'LOC']
    });

    await page.evaluate(
      args =>
        (window as any).jupyterapp.commands.execute(
          'cube-lab:open-annotator',
          args
        ),
      { project: project.project, name: 'people-ner', mode: 'annotate' }
    );
    const annotator = page.locator('.cube-LAnnotator[data-type="text-ner"]');
    const text = annotator.locator('.cube-LText');
    await expect(text).toHaveText('Alice met Bob in Paris.');

    /** Select characters [start, end) of the text as a user would. */
    const select = (start: number, end: number) =>
      text.evaluate(
        (root, [s, e]) => {
          const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
          const nodes: Text[] = [];
          while (walker.nextNode()) {
            nodes.push(walker.currentNode as Text);
          }
          const find = (offset: number): [Text, number] => {
            let at = 0;
            for (const node of nodes) {
              if (offset <= at + node.length) {
                return [node, offset - at];
              }
              at += node.length;
            }
            throw new Error('offset past the text');
          };
          const range = document.createRange();
          range.setStart(...find(s));
          range.setEnd(...find(e));
          const selection = window.getSelection()!;
          selection.removeAllRanges();
          selection.addRange(range);
        },
        [start, end]
      );

    // Select " Bob " (spaces trimmed) and press 1 (PER).
    await text.click();
    await select(9, 14);
    await page.keyboard.press('1');
    await expect(annotator.locator('.cube-LSpan[data-label="PER"]')).toHaveText(
      'Bob'
    );
    // Select "Paris" and press 2 (LOC); then "Alice" as PER.
    await select(17, 22);
    await page.keyboard.press('2');
    await select(0, 5);
    await page.keyboard.press('1');
    await expect(annotator.locator('.cube-LSpan')).toHaveText([
      'Alice',
      'Bob',
      'Paris'
    ]);
    await lightAndDark(page, 'labeling-ner', {
      ready: annotator.locator('.cube-LSpan').first()
    });
    const first = await annotator.getAttribute('data-task');
    await page.keyboard.press('Enter');
    await expect(text).toHaveText('Carol moved to Berlin.');
    const task = await (
      await request.get(
        `${base}${API}/projects/${encodeURIComponent(project.project)}/labeling/people-ner/tasks/${first}`
      )
    ).json();
    expect(task.status).toBe('submitted');
    expect(task.result.spans).toEqual([
      { label: 'PER', start: 0, end: 5, text: 'Alice' },
      { label: 'PER', start: 10, end: 13, text: 'Bob' },
      { label: 'LOC', start: 17, end: 22, text: 'Paris' }
    ]);
  });
});
