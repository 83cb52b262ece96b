/**
 * The Tuning section of the cube-lab sidebar against the real server: a tiny
 * NNI trial script is written with the contents API, an experiment (6 trials,
 * 2 at a time, Random tuner) is created from the panel's form, the trials
 * table fills live, the intermediate curves and the parallel-coordinates plot
 * draw, and a trial's log opens.
 */
import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import type { APIRequestContext } from '@playwright/test';
import * as path from 'path';

const SCREENSHOTS = path.resolve(__dirname, '..', 'screenshots');
const API = '/cube/api/v1';

/** Unchanged NNI trial code; the pause lets the UI see trials run. */
const TRIAL = `
import time
import nni

params = nni.get_next_parameter()
x, opt = params["x"], params["optimizer"]
bonus = {"sgd": 0.0, "adam": 0.5, "rmsprop": 0.25}[opt]
for step in range(3):
    time.sleep(0.8)
    nni.report_intermediate_result(-(x - 1) ** 2 * (3 - step) / 3 + bonus)
print(f"trial x={x} optimizer={opt}", flush=True)
import os
with open(os.path.join(os.environ["NNI_OUTPUT_DIR"], "model.txt"), "w") as out:
    out.write(f"{x} {opt}")
nni.report_final_result(-(x - 1) ** 2 + bonus)
`;

const SPACE = {
  x: { _type: 'uniform', _value: [-3, 3] },
  optimizer: { _type: 'choice', _value: ['sgd', 'adam', 'rmsprop'] }
};

async function putFile(
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

async function openTuning(page: IJupyterLabPageFixture) {
  await page.sidebar.openTab('cube-lab-sidebar');
  const section = page.locator('#cube-lab-tuning');
  if (!(await section.isVisible())) {
    // Collapsed sections of the accordion: open ours by its title.
    await page
      .locator('#cube-lab-sidebar .jp-AccordionPanel-title', {
        hasText: 'Tuning'
      })
      .click();
  }
  await expect(section).toBeVisible();
  return section;
}

function newExperimentButton(page: IJupyterLabPageFixture) {
  return page
    .locator('#cube-lab-sidebar')
    .getByRole('button', { name: 'New experiment' })
    .first();
}

test.describe('cube-lab tuning', () => {
  test.setTimeout(240 * 1000);

  test.beforeEach(async ({ page }) => {
    await page.addLocatorHandler(
      page.getByRole('dialog', { name: /Directory not found/ }),
      async d => {
        await d.getByRole('button', { name: 'Close' }).click();
      }
    );
  });

  test('checks the search space as it is typed', async ({ page }) => {
    const section = await openTuning(page);
    await newExperimentButton(page).click();
    const form = section.getByRole('form', { name: 'New experiment' });
    await expect(form).toBeVisible();
    const space = form.locator('textarea[name="searchSpace"]');
    await space.fill('{"lr": {"_type": "loguniform", "_value": [0, 0.1]}');
    await expect(form.locator('.cube-TuProblems')).toContainText(
      'Not valid JSON'
    );
    await space.fill(
      '{"lr": {"_type": "loguniform", "_value": [0, 0.1]}, "bs": {"_type": "pick", "_value": [1]}}'
    );
    const problems = form.locator('.cube-TuProblems li');
    await expect(problems).toHaveText([
      'searchSpace.lr: loguniform needs _value = [low, high] with 0 < low < high',
      /searchSpace\.bs: unknown _type "pick"/
    ]);
    // The example from the server is valid.
    await form.getByRole('button', { name: 'Insert example' }).click();
    await expect(form.locator('.cube-TuProblems')).toHaveCount(0);
    await expect(form.locator('.cube-TuSpace-ok')).toContainText(
      '4 parameters'
    );
    // A bad command and trial count are caught before the server is asked.
    await form.locator('input[name="maxTrials"]').fill('0');
    await form.getByRole('button', { name: 'Start' }).click();
    await expect(
      form.locator('[data-field="maxTrials"] [role="alert"]')
    ).toContainText('whole number from 1');
    // The server's answer shows in the form: the folder has no such code.
    await form.locator('input[name="maxTrials"]').fill('2');
    await form.locator('input[name="folder"]').fill('no/such/folder');
    await form.getByRole('button', { name: 'Start' }).click();
    await expect(form.locator('.cube-TError')).toContainText('is not a folder');
  });

  test('runs an experiment, fills the trials table and draws the charts', async ({
    page,
    request,
    baseURL,
    tmpPath
  }) => {
    const base = baseURL!;
    const folder = `${tmpPath}/hpo`;
    await putFile(request, base, folder, { type: 'directory' });
    await putFile(request, base, `${folder}/trial.py`, {
      type: 'file',
      format: 'text',
      content: TRIAL
    });

    const section = await openTuning(page);
    await newExperimentButton(page).click();
    const form = section.getByRole('form', { name: 'New experiment' });
    // The tuners come from the server.
    await expect(form.locator('select[name="tuner"] option')).toContainText([
      'TPE',
      'Random'
    ]);
    await form
      .locator('textarea[name="searchSpace"]')
      .fill(JSON.stringify(SPACE, null, 2));
    await expect(form.locator('.cube-TuSpace-ok')).toContainText(
      '2 parameters'
    );
    // "Use the current file's folder" takes the folder of the open script.
    await page.evaluate(async p => {
      await (window as any).jupyterapp.commands.execute('docmanager:open', {
        path: p
      });
    }, `${folder}/trial.py`);
    await expect(page.activity.getTabLocator('trial.py')).toBeVisible();
    await form
      .getByRole('button', { name: 'Use the current file’s folder' })
      .click();
    await expect(form.locator('input[name="folder"]')).toHaveValue(folder);
    await form.locator('input[name="trialCommand"]').fill('python3 trial.py');
    await form.locator('select[name="tuner"]').selectOption('Random');
    await form.locator('select[name="mode"]').selectOption('maximize');
    await form.locator('input[name="maxTrials"]').fill('6');
    await form.locator('input[name="concurrency"]').fill('2');
    await form.locator('input[name="maxDuration"]').fill('10m');
    await form.locator('input[name="name"]').fill('quadratic');
    // Room for the form in the screenshots: fold the other sections.
    const expanded = page
      .locator(
        '#cube-lab-sidebar .jp-AccordionPanel-title[aria-expanded="true"]'
      )
      .filter({ hasNotText: 'Tuning' });
    for (let i = 0; i < 10 && (await expanded.count()); i++) {
      await expanded.first().locator('.lm-AccordionPanel-titleLabel').click();
    }
    await form.evaluate(el => el.scrollIntoView());
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'tuning-form-light.png')
    });
    await page.theme.setDarkTheme();
    await expect(form).toBeVisible();
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'tuning-form-dark.png')
    });
    await page.theme.setLightTheme();
    await form.getByRole('button', { name: 'Start' }).click();

    // The experiment view opens and follows the trials.
    const view = page.locator('.cube-TuExperimentView:visible');
    const detail = view.locator('.cube-TuDetail');
    await expect(view.locator('h2')).toHaveText('quadratic');
    const expId = await detail.getAttribute('data-experiment');
    expect(expId).toBeTruthy();
    const rows = view.locator('.cube-TuTable tbody tr');
    // Trials run 2 at a time: the table shows running trials while it fills.
    await expect(
      view.locator('.cube-TuTable tbody tr[data-status="running"]')
    ).toHaveCount(2, { timeout: 60 * 1000 });
    await expect(rows).toHaveCount(6, { timeout: 90 * 1000 });
    await expect(detail).toHaveAttribute('data-status', 'done', {
      timeout: 90 * 1000
    });
    await expect(
      view.locator('.cube-TuTable tbody tr[data-status="succeeded"]')
    ).toHaveCount(6);
    // Parameters are columns; every trial reported 3 intermediate results.
    await expect(view.locator('.cube-TuTable thead th')).toHaveText([
      /#/,
      /x/,
      /optimizer/,
      /status/,
      /reports/,
      /final/,
      /duration/
    ]);
    for (const cell of await rows.locator('td:nth-child(5)').all()) {
      await expect(cell).toHaveText('3');
    }

    // The best row is the server's best trial.
    const exp = await (
      await request.get(`${base}${API}/tuning/experiments/${expId}`)
    ).json();
    const best = exp.best;
    await expect(view.locator('tr.cube-mod-best')).toHaveAttribute(
      'data-trial',
      best.id
    );
    // Sorting by the metric (best first) puts it on top; again flips it.
    const finalHeader = view.getByRole('button', { name: /^final/ });
    await finalHeader.click();
    await expect(rows.first()).toHaveAttribute('data-trial', best.id);
    await finalHeader.click();
    await expect(rows.last()).toHaveAttribute('data-trial', best.id);
    const finals = await rows.locator('td:nth-child(6)').allTextContents();
    const values = finals.map(Number);
    expect([...values].sort((a, b) => a - b)).toEqual(values);

    // The charts: one curve per trial, one polyline per trial, 3 axes.
    await expect(view.locator('.cube-TuCurves g.cube-TuCurve')).toHaveCount(6);
    await expect(view.locator('.cube-TuParallel polyline')).toHaveCount(6);
    await expect(view.locator('.cube-TuParallel .cube-TuAxis')).toHaveCount(3);
    await expect(
      view.locator(`.cube-TuParallel polyline.cube-mod-best`)
    ).toHaveAttribute('data-trial', best.id);
    await expect(
      view.locator('.cube-TuAxis[data-axis="optimizer"] text')
    ).toContainText(['optimizer', 'sgd', 'adam', 'rmsprop']);

    await page.screenshot({
      path: path.join(SCREENSHOTS, 'tuning-experiment-light.png')
    });
    await view.locator('.cube-TuCharts').evaluate(el => el.scrollIntoView());
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'tuning-charts-light.png')
    });
    await page.theme.setDarkTheme();
    await expect(view.locator('.cube-TuParallel')).toBeVisible();
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'tuning-charts-dark.png')
    });
    await page.theme.setLightTheme();
    await view.locator('.cube-TuDetail').evaluate(el => el.scrollIntoView());

    // A trial's log on click.
    const trial = exp.trials[0];
    await view.locator(`tr[data-trial="${trial.id}"]`).click();
    const log = view.locator('.cube-TuLog-text');
    await expect(log).toContainText(
      `trial x=${trial.parameters.x} optimizer=${trial.parameters.optimizer}`
    );
    await expect(view.locator('.cube-TuLog .cube-TLog-state')).toHaveText(
      'complete'
    );
    await expect(view.locator('tr.cube-mod-selected')).toHaveAttribute(
      'data-trial',
      trial.id
    );
    await page.theme.setDarkTheme();
    await expect(view.locator('.cube-TuParallel')).toBeVisible();
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'tuning-experiment-dark.png')
    });
    await page.theme.setLightTheme();

    // "Train with these parameters" gives a cube-lab train command.
    await view.getByRole('button', { name: /^Train with / }).click();
    await expect(view.locator('.cube-TuNote-code')).toContainText(
      `cube-lab train --workdir`
    );
    await expect(view.locator('.cube-TuNote-code')).toContainText(
      `trial.py --x ${trial.parameters.x} --optimizer ${trial.parameters.optimizer}`
    );

    // "Register the trial's model" puts what it saved into the registry.
    await view.getByRole('button', { name: /^Register / }).click();
    const dialog = page.locator('.jp-Dialog');
    await dialog.locator('input').fill('tuned-quadratic');
    await dialog.getByRole('button', { name: 'Ok' }).click();
    await expect(view.locator('.cube-TuNote')).toContainText(
      'Registered tuned-quadratic version 1'
    );

    // The sidebar list: status and best metric.
    const item = section.locator(`.cube-TJob[data-experiment="${expId}"]`);
    await expect(item.locator('.cube-TBadge')).toHaveText('done', {
      timeout: 30 * 1000
    });
    await expect(item).toContainText('6/6 trials');
    await expect(item.locator('.cube-TuBestMeta')).toContainText(
      'best default'
    );
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'tuning-panel-light.png')
    });
    await page.theme.setDarkTheme();
    await expect(item).toBeVisible();
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'tuning-panel-dark.png')
    });
    await page.theme.setLightTheme();
  });
});
