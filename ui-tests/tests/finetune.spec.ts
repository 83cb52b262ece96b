/**
 * The "Fine-tune" tab of the Training panel against the real server: a tiny
 * random-init Llama (cube_lab.finetune.tiny, built by a kernel in the test's
 * folder: nothing is downloaded) and 20 Alpaca rows; the form is checked,
 * its memory estimate shown, the fine-tune started; the job's tab charts the
 * loss, the job succeeds and the adapter is registered and opened. The form
 * and the estimate are pictured in the light and the dark theme, and in
 * Chinese.
 */
import {
  expect,
  galata,
  IJupyterLabPageFixture,
  test
} from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

import { lightAndDark } from './helpers';

const API = '/cube/api/v1';

/** Run Python in a kernel whose working directory is `folder`; fail on an error. */
async function runPython(
  page: IJupyterLabPageFixture,
  folder: string,
  code: string
): Promise<void> {
  const result = await page.evaluate(
    async ({ path, code }) => {
      const app = (window as any).jupyterapp;
      const session = await app.serviceManager.sessions.startNew({
        path,
        type: 'notebook',
        name: 'setup.ipynb',
        kernel: { name: 'python3' }
      });
      try {
        const future = session.kernel.requestExecute({ code });
        let error = '';
        future.onIOPub = (msg: any) => {
          if (msg.header.msg_type === 'error') {
            error = `${msg.content.ename}: ${msg.content.evalue}`;
          }
        };
        const reply = await future.done;
        return { status: reply.content.status as string, error };
      } finally {
        await session.shutdown();
      }
    },
    { path: `${folder}/setup.ipynb`, code }
  );
  expect(result.error).toBe('');
  expect(result.status).toBe('ok');
}

/** A tiny model in FOLDER/tiny and 20 Alpaca rows in FOLDER/train.json. */
async function tinyModel(
  page: IJupyterLabPageFixture,
  folder: string
): Promise<void> {
  await runPython(
    page,
    folder,
    [
      'import json',
      'from pathlib import Path',
      'from cube_lab.finetune import tiny',
      'rows = tiny.alpaca_rows()',
      'assert len(rows) == 20',
      "Path('train.json').write_text(json.dumps(rows))",
      "tiny.build(Path('tiny'), [json.dumps(r) for r in rows])"
    ].join('\n')
  );
}

/** The fine-tune form's tab, opened by its command. */
async function openFinetune(page: IJupyterLabPageFixture): Promise<Locator> {
  await page.evaluate(async () => {
    await (window as any).jupyterapp.commands.execute('cube-lab:finetune');
  });
  const form = page.locator('.cube-FinetuneView form.cube-FinetuneForm');
  await expect(form).toBeVisible();
  return form;
}

/** The fields of the test's fine-tune: the tiny folder, 20 steps. */
async function fill(form: Locator, folder: string, name: string) {
  await form.locator('input[name="name"]').fill(name);
  await form.locator('select[name="method"]').selectOption('sft');
  await form.locator('select[name="base"]').selectOption('');
  await form.locator('input[name="modelFolder"]').fill(`${folder}/tiny`);
  await form.locator('input[name="data"]').fill(`${folder}/train.json`);
  await form.locator('select[name="dataFormat"]').selectOption('alpaca');
  await form.locator('select[name="finetuningType"]').selectOption('lora');
  await form.locator('input[name="loraRank"]').fill('8');
  await form.locator('input[name="loraAlpha"]').fill('16');
  await form.locator('input[name="loraTarget"]').fill('all');
  await form.locator('input[name="cutoffLen"]').fill('128');
  await form.locator('input[name="batchSize"]').fill('4');
  await form.locator('input[name="gradientAccumulation"]').fill('1');
  await form.locator('input[name="learningRate"]').fill('0.01');
  await form.locator('input[name="maxSteps"]').fill('20');
  await form.locator('input[name="nproc"]').fill('1');
}

test.describe('cube-lab fine-tune form', () => {
  test.setTimeout(300 * 1000);

  test.beforeEach(async ({ page }) => {
    // The page may open on the test folder before Galata creates it.
    await page.addLocatorHandler(
      page.getByRole('dialog', { name: /Directory not found/ }),
      async d => {
        await d.getByRole('button', { name: 'Close' }).click();
      }
    );
  });

  test('estimates, starts a LoRA fine-tune of a tiny model and registers it', async ({
    page,
    request,
    baseURL,
    tmpPath
  }) => {
    const base = baseURL!;
    await tinyModel(page, tmpPath);
    // The same folder registered: a transformers version, a base of the picker.
    const registered = await request.post(`${base}${API}/models`, {
      data: { name: 'tiny-base', path: `${tmpPath}/tiny` }
    });
    expect(registered.status(), await registered.text()).toBe(201);
    expect((await registered.json()).flavor).toBe('transformers');

    // The "Fine-tune" button of the Training panel's header opens the tab.
    await page.sidebar.openTab('cube-lab-training-panel');
    await page
      .locator('#cube-lab-training-panel .cube-SidePanel-header')
      .getByRole('button', { name: 'Fine-tune' })
      .click();
    await expect(page.activity.getTabLocator('Fine-tune')).toBeVisible();
    const form = page.getByRole('form', { name: 'New fine-tune' });
    await expect(form).toBeVisible();

    // The registered base is offered; picking it hides the folder field.
    const picker = form.locator('select[name="base"]');
    await expect(picker.locator('option[value="tiny-base:1"]')).toHaveCount(1);
    await picker.selectOption('tiny-base:1');
    await expect(form.locator('input[name="modelFolder"]')).toHaveCount(0);
    await picker.selectOption('');
    await expect(form.locator('input[name="modelFolder"]')).toBeVisible();

    // Checked here: no base, no data, a learning rate that is not a number.
    await form.locator('input[name="learningRate"]').fill('fast');
    await form.getByRole('button', { name: 'Estimate memory' }).click();
    await expect(
      form.locator('[data-field="modelFolder"] [role="alert"]')
    ).toContainText('base model');
    await expect(
      form.locator('[data-field="data"] [role="alert"]')
    ).toContainText('data file');
    await expect(
      form.locator('[data-field="learningRate"] [role="alert"]')
    ).toContainText('Learning rate');

    await fill(form, tmpPath, 'tiny-sft');
    await page.locator('.cube-FinetuneView h2').scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    await lightAndDark(page, 'finetune-form', { ready: form });

    // Checked by the server: the folder holds no model.
    await form.locator('input[name="modelFolder"]').fill(`${tmpPath}/nothing`);
    await form.getByRole('button', { name: 'Estimate memory' }).click();
    await expect(form.locator('.cube-TError')).toBeVisible();
    await expect(form.locator('.cube-FinetuneEstimate')).toHaveCount(0);

    await form.locator('input[name="modelFolder"]').fill(`${tmpPath}/tiny`);

    // The estimate: the total per process and its parts, as the server says.
    await form.getByRole('button', { name: 'Estimate memory' }).click();
    const estimate = form.getByRole('status', { name: 'Memory estimate' });
    // the first estimate imports transformers on the server: seconds
    await expect(estimate).toContainText('per process', { timeout: 90_000 });
    await expect(form.locator('.cube-TError')).toHaveCount(0);
    const body = {
      config: {
        method: 'sft',
        model: `${tmpPath}/tiny`,
        data: { path: `${tmpPath}/train.json`, format: 'alpaca' },
        finetuning_type: 'lora',
        lora: { rank: 8, alpha: 16, target: 'all' },
        cutoff_len: 128,
        per_device_train_batch_size: 4,
        gradient_accumulation_steps: 1,
        learning_rate: 0.01,
        max_steps: 20
      },
      folder: '',
      nproc: 1
    };
    const expected = await (
      await request.post(`${base}${API}/finetune/estimate`, { data: body })
    ).json();
    expect(expected.parameters).toBeGreaterThan(0);
    await expect(estimate).toContainText(
      `${expected.parameters.toLocaleString('en-US')} parameters`
    );
    await expect(estimate).toContainText(
      `${expected.trainable_parameters.toLocaleString('en-US')} trainable`
    );
    for (const part of ['weights', 'gradients', 'optimizer', 'activations']) {
      await expect(estimate.locator(`tr[data-part="${part}"]`)).toBeVisible();
    }
    await form.locator('.cube-TForm-actions').scrollIntoViewIfNeeded();
    await lightAndDark(page, 'finetune-estimate', { ready: estimate });
    // The preview: the first records through the chat template, answers marked.
    await form.locator('select[name="template"]').selectOption('chatml');
    await form.getByRole('button', { name: 'Preview data' }).click();
    const preview = form.getByRole('region', { name: 'Data preview' });
    await expect(preview.locator('figure')).toHaveCount(3, { timeout: 60_000 });
    await expect(preview.locator('figcaption').first()).toContainText(
      /Record 1: \d+ of \d+ tokens trained/
    );
    await expect(preview.locator('pre').first()).toContainText(
      '<|im_start|>user'
    );
    await expect(preview.locator('mark').first()).toBeVisible();
    await preview.scrollIntoViewIfNeeded();
    await lightAndDark(page, 'finetune-preview', { ready: preview });
    await form.locator('select[name="template"]').selectOption('auto');
    await expect(preview).toHaveCount(0);

    // A change to the form drops the estimate it no longer matches.
    await form.getByRole('button', { name: 'Estimate memory' }).click();
    await expect(estimate).toContainText('per process');
    await form.locator('input[name="cutoffLen"]').fill('64');
    await expect(estimate).toHaveCount(0);
    await form.locator('input[name="cutoffLen"]').fill('128');

    // Start: the job's tab opens, the form's closes; the loss is charted.
    await form.getByRole('button', { name: 'Start' }).click();
    const view = page.locator('.cube-TJobView:visible');
    await expect(view.locator('h2')).toHaveText('tiny-sft', {
      timeout: 30_000
    });
    await expect(page.activity.getTabLocator('Fine-tune')).toHaveCount(0);
    await expect(
      view.locator('.cube-TChart[data-metric="loss"] path.cube-TChart-line')
    ).toBeVisible({ timeout: 180_000 });
    await expect(view.locator('.cube-TJobDetail')).toHaveAttribute(
      'data-status',
      'succeeded',
      { timeout: 180_000 }
    );
    // The panel's list follows (it polls): the job's badge there too.
    await expect(
      page
        .locator('#cube-lab-training .cube-TJob')
        .first()
        .locator('.cube-TBadge')
    ).toHaveText('succeeded', { timeout: 30_000 });
    await lightAndDark(page, 'finetune-job', {
      ready: view.locator('.cube-TChart[data-metric="loss"]')
    });

    // Register the adapter from the job's tab and open the version.
    const register = view.getByRole('form', { name: 'Register model' });
    await register.locator('input[name="model-name"]').fill('tiny-sft');
    await register.getByRole('button', { name: 'Register' }).click();
    const done = register.getByRole('status');
    await expect(done).toContainText('Registered tiny-sft version 1.');
    const models = await (
      await request.get(`${base}${API}/models?q=tiny-sft`)
    ).json();
    const model = models.models[0];
    const version = await (
      await request.get(
        `${base}${API}/projects/${model.project}/models/tiny-sft/versions/1`
      )
    ).json();
    expect(version.version).toBe(1);
    console.log(`registered tiny-sft v1, flavor ${version.flavor}`);
    await done.getByRole('button', { name: 'Open' }).click();
    await expect(page.locator('.cube-ModelTab:visible')).toContainText(
      'tiny-sft'
    );
  });
});

test.describe('cube-lab fine-tune form in Chinese', () => {
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

  test('the form and its estimate are in Chinese', async ({
    page,
    tmpPath
  }) => {
    test.setTimeout(180 * 1000);
    await tinyModel(page, tmpPath);
    const form = await openFinetune(page);
    await fill(form, tmpPath, 'tiny-zh');
    await expect(form.locator('[data-field="data"]')).toContainText('数据');
    await form.locator('button[type="button"]').first().click();
    const estimate = form.locator('.cube-FinetuneEstimate');
    await expect(estimate).toContainText('每个进程', { timeout: 90_000 });
    await form.locator('.cube-TForm-actions').scrollIntoViewIfNeeded();
    await lightAndDark(page, 'finetune-zh-estimate', { ready: estimate });
  });
});
