/**
 * The Tuning side panel and tabs against the real server: a tiny NNI trial
 * script is written with the contents API, an experiment (6 trials, 2 at a
 * time, Random tuner) is created from the "New tuning experiment" tab, the
 * trials table fills live, the intermediate curves and the parallel-
 * coordinates plot draw, a trial's log opens, and the experiment's tab keeps
 * its name after a reload.
 */
import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import type { APIRequestContext } from '@playwright/test';
import * as path from 'path';

import { layoutSaved, lightAndDark } from './helpers';

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
  await page.sidebar.openTab('cube-lab-tuning-panel');
  const section = page.locator('#cube-lab-tuning');
  await expect(section).toBeVisible();
  return section;
}

/** The "+" in the panel's header: the "New tuning experiment" tab. */
async function openNewExperiment(page: IJupyterLabPageFixture) {
  await page
    .locator('#cube-lab-tuning-panel .cube-SidePanel-header')
    .getByRole('button', { name: 'New tuning experiment' })
    .click();
  await expect(
    page.activity.getTabLocator('New tuning experiment')
  ).toBeVisible();
  const form = page
    .locator('.cube-TuFormView')
    .getByRole('form', { name: 'New experiment' });
  await expect(form).toBeVisible();
  return form;
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
    await openTuning(page);
    const form = await openNewExperiment(page);
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
    const form = await openNewExperiment(page);
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
    // Back in the form's tab, "current" is the file that was open before it.
    await page.activity.activateTab('New tuning experiment');
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
    await lightAndDark(page, 'tuning-form', { ready: form });
    await form.getByRole('button', { name: 'Start' }).click();

    // The experiment's tab opens, named after it, and follows the trials;
    // the form's tab closes.
    const view = page.locator('.cube-TuExperimentView:visible');
    const detail = view.locator('.cube-TuDetail');
    await expect(view.locator('h2')).toHaveText('quadratic');
    await expect(page.activity.getTabLocator('quadratic')).toBeVisible();
    await expect(
      page.activity.getTabLocator('New tuning experiment')
    ).toHaveCount(0);
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

    await view.locator('.cube-TuCharts').evaluate(el => el.scrollIntoView());
    await lightAndDark(page, 'tuning-charts', {
      ready: view.locator('.cube-TuParallel')
    });
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
    await lightAndDark(page, 'tuning-experiment', { ready: log });

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

    // The panel's list: status and best metric.
    const item = section.locator(`.cube-TJob[data-experiment="${expId}"]`);
    await expect(item.locator('.cube-TBadge')).toHaveText('done', {
      timeout: 30 * 1000
    });
    await expect(item).toContainText('6/6 trials');
    await expect(item.locator('.cube-TuBestMeta')).toContainText(
      'best default'
    );
    await lightAndDark(page, 'tuning-panel', { ready: item });

    // After a reload the experiment's tab comes back with its name, not its id.
    await layoutSaved(page, 'cube-lab-tuning-panel', [expId!]);
    // (Galata's own wait expects the Launcher in front: the restored tab is.)
    await page.reload({ waitForIsReady: false });
    await page.locator('#jupyterlab-splash').waitFor({ state: 'detached' });
    await expect(page.activity.getTabLocator('quadratic')).toBeVisible();
    await expect(page.activity.getTabLocator(expId!)).toHaveCount(0);
    await expect(page.locator('.cube-TuDetail')).toHaveAttribute(
      'data-experiment',
      expId!
    );
    await expect(page.locator('#cube-lab-tuning-panel')).toBeVisible();
  });
});
