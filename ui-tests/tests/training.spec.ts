/**
 * The Training side panel and tabs against the real server: a tiny PyTorch
 * DDP script (gloo, CPU) is written with the contents API, launched on 2
 * processes from the "Launch training" tab, its per-rank log streams into the
 * job's tab and its cube_lab.report() metrics become charts; then the
 * checkpoint is registered as a model, the job is re-run and stopped, and the
 * job's tab keeps its name after a reload.
 */
import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import * as path from 'path';

import { layoutSaved, lightAndDark, putText } from './helpers';

const API = '/cube/api/v1';

/** 2 ranks train a linear model with DDP; the steps are slowed so the UI sees them live. */
const DDP_SCRIPT = `
import argparse, os, time
import torch, torch.distributed as dist
import cube_lab

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--pause", type=float, default=0.3)
args = parser.parse_args()

dist.init_process_group(os.environ.get("CUBE_DIST_BACKEND", "gloo"))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(rank)
x = torch.randn(128, 4)
y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
print(f"rank={rank} world={world} ready", flush=True)
for step in range(args.steps):
    opt.zero_grad()
    out = model(x)
    loss = ((out - y) ** 2).mean()
    loss.backward()
    opt.step()
    stats = torch.tensor([loss.item(), ((out - y).abs() < 0.5).float().mean().item()])
    dist.all_reduce(stats)
    stats /= world
    print(f"rank={rank} step={step} loss={stats[0]:.4f}", flush=True)
    if rank == 0:
        cube_lab.report(step=step, loss=stats[0].item(), accuracy=stats[1].item())
    time.sleep(args.pause)
if rank == 0:
    torch.save(model.module.state_dict(), os.path.join(os.environ["CUBE_OUTPUT_DIR"], "model.pt"))
dist.destroy_process_group()
`;

async function openTraining(page: IJupyterLabPageFixture) {
  await page.sidebar.openTab('cube-lab-training-panel');
  const section = page.locator('#cube-lab-training');
  await expect(section).toBeVisible();
  return section;
}

/** The "+" in the panel's header: the "Launch training" tab. */
async function openLaunchForm(page: IJupyterLabPageFixture) {
  await page
    .locator('#cube-lab-training-panel .cube-SidePanel-header')
    .getByRole('button', { name: 'Launch training' })
    .click();
  await expect(page.activity.getTabLocator('Launch training')).toBeVisible();
  const form = page
    .locator('.cube-TLaunchView')
    .getByRole('form', { name: 'New training job' });
  await expect(form).toBeVisible();
  return form;
}

test.describe('cube-lab training', () => {
  test.setTimeout(240 * 1000);

  test.beforeEach(async ({ page }) => {
    // The page may open on the test folder before Galata creates it.
    await page.addLocatorHandler(
      page.getByRole('dialog', { name: /Directory not found/ }),
      async d => {
        await d.getByRole('button', { name: 'Close' }).click();
      }
    );
  });

  test('checks the launch form and shows the server error', async ({
    page,
    tmpPath
  }) => {
    await openTraining(page);
    const form = await openLaunchForm(page);
    await form.locator('input[name="nproc"]').fill('0');
    await form.getByRole('button', { name: 'Launch' }).click();
    // Checked here: no script, 0 processes.
    await expect(
      form.locator('[data-field="script"] [role="alert"]')
    ).toContainText('Pick the script');
    await expect(
      form.locator('[data-field="nproc"] [role="alert"]')
    ).toContainText('whole number from 1');
    // Checked by the server: the script does not exist.
    await form.locator('input[name="nproc"]').fill('2');
    await form.locator('input[name="script"]').fill(`${tmpPath}/missing.py`);
    await form.getByRole('button', { name: 'Launch' }).click();
    const error = form.locator('.cube-TError');
    await expect(error).toContainText("script 'missing.py' not found");
    await expect(error).toContainText('relative to the working directory');
  });

  test('launches a 2-process DDP job, streams its log and charts its loss', async ({
    page,
    request,
    baseURL,
    tmpPath
  }) => {
    const base = baseURL!;
    await putText(request, base, `${tmpPath}/train_ddp.py`, DDP_SCRIPT);

    const section = await openTraining(page);
    const jobsBefore = (
      await (await request.get(`${base}${API}/training/jobs`)).json()
    ).jobs.length;
    if (jobsBefore === 0) {
      const empty = section.locator('.cube-TEmpty');
      await expect(empty).toContainText('No training jobs yet');
      await lightAndDark(page, 'training-empty', { ready: empty });
    }

    const form = await openLaunchForm(page);
    await form.locator('select[name="framework"]').selectOption('pytorch');
    // "Use current file" takes the script open in the editor.
    await form.getByRole('button', { name: 'Use current file' }).click();
    await expect(form.locator('[data-field="script"]')).toContainText(
      'Open the script in the editor'
    );
    await page.evaluate(async path => {
      await (window as any).jupyterapp.commands.execute('docmanager:open', {
        path
      });
    }, `${tmpPath}/train_ddp.py`);
    await expect(page.activity.getTabLocator('train_ddp.py')).toBeVisible();
    // Back in the form's tab, "current" is the script that was open before it.
    await page.activity.activateTab('Launch training');
    await form.getByRole('button', { name: 'Use current file' }).click();
    await expect(form.locator('input[name="script"]')).toHaveValue(
      `${tmpPath}/train_ddp.py`
    );
    await form.locator('input[name="args"]').fill('--steps 20 --pause 0.3');
    await form.locator('input[name="nproc"]').fill('2');
    await form.locator('summary').click();
    await form.locator('textarea[name="env"]').fill('OMP_NUM_THREADS=1');
    await form.locator('input[name="name"]').fill('ddp-linear');
    await lightAndDark(page, 'training-form', { ready: form });
    await form.getByRole('button', { name: 'Launch' }).click();

    // The job's tab opens, named after the job, and follows it; the form's
    // tab closes.
    const view = page.locator('.cube-TJobView:visible');
    await expect(view.locator('h2')).toHaveText('ddp-linear');
    await expect(page.activity.getTabLocator('ddp-linear')).toBeVisible();
    await expect(page.activity.getTabLocator('Launch training')).toHaveCount(0);
    const jobId = await view
      .locator('.cube-TJobDetail')
      .getAttribute('data-job');
    expect(jobId).toBeTruthy();
    const log = view.locator('.cube-TLog-text');
    // Lines of both ranks arrive while the job still runs: the log is live.
    await expect(
      view.locator('.cube-TJobDetail[data-status="running"] .cube-TLog-text')
    ).toContainText(/\[1\] rank=1 step=\d+/, { timeout: 90 * 1000 });
    await expect(log).toContainText(/\[0\] rank=0 step=\d+/);
    // A chart of the reported loss appears (and accuracy next to it).
    await expect(
      view.locator('.cube-TChart[data-metric="loss"] path.cube-TChart-line')
    ).toBeVisible({
      timeout: 30 * 1000
    });
    await expect(
      view.locator('.cube-TChart[data-metric="accuracy"]')
    ).toBeVisible();

    // The rank filter shows one rank's lines, without the prefix.
    await view.locator('select[name="rank"]').selectOption('1');
    await expect(log).toContainText('rank=1 step=');
    await expect(log).not.toContainText('rank=0');
    await view.locator('select[name="rank"]').selectOption('all');

    await expect(view.locator('.cube-TJobDetail')).toHaveAttribute(
      'data-status',
      'succeeded',
      {
        timeout: 90 * 1000
      }
    );
    await expect(log).toContainText('rank=0 step=19');
    await expect(log).toContainText('rank=1 step=19');
    await expect(view.locator('.cube-TLog-state')).toHaveText('complete');
    const points = await view
      .locator('.cube-TChart[data-metric="loss"] svg')
      .getAttribute('aria-label');
    expect(points).toBe('loss: 20 points');

    // The job in the panel's list, with its badge.
    const row = section.locator(`.cube-TJob[data-job="${jobId}"]`);
    await expect(row.locator('.cube-TBadge')).toHaveText('succeeded', {
      timeout: 30 * 1000
    });
    await view.locator('.cube-TLog-text').evaluate(el => (el.scrollTop = 0));
    await lightAndDark(page, 'training-job', {
      ready: view.locator('.cube-TChart[data-metric="loss"]')
    });

    // Register the checkpoint as a model: the registry keeps the job id.
    const register = view.getByRole('form', { name: 'Register model' });
    await register.locator('input[name="model-name"]').fill('ddp-linear');
    await register.getByRole('button', { name: 'Register' }).click();
    await expect(register.getByRole('status')).toContainText(
      'Registered ddp-linear version 1.'
    );
    const versions = await request.get(`${base}${API}/models?q=ddp-linear`);
    const model = (await versions.json()).models[0];
    const version = await (
      await request.get(
        `${base}${API}/projects/${model.project}/models/ddp-linear/versions/1`
      )
    ).json();
    expect(version.lineage.training_job_id).toBe(jobId);

    // After a reload the job's tab comes back with the job's name, not its id.
    await layoutSaved(page, 'cube-lab-training-panel', [jobId!]);
    // (Galata's own wait expects the Launcher in front: the restored tab is.)
    await page.reload({ waitForIsReady: false });
    await page.locator('#jupyterlab-splash').waitFor({ state: 'detached' });
    await expect(page.activity.getTabLocator('ddp-linear')).toBeVisible();
    await expect(page.activity.getTabLocator(jobId!)).toHaveCount(0);
    await expect(view.locator('.cube-TJobDetail')).toHaveAttribute(
      'data-job',
      jobId!
    );
    await expect(page.locator('#cube-lab-training-panel')).toBeVisible();

    // Re-run (same spec) and stop the new job as soon as it runs.
    await view.getByRole('button', { name: 'Re-run' }).click();
    const rerun = page.locator('.cube-TJobView:visible .cube-TJobDetail');
    await expect(rerun).not.toHaveAttribute('data-job', jobId!);
    await expect(rerun).toHaveAttribute('data-status', 'running', {
      timeout: 30 * 1000
    });
    await rerun.getByRole('button', { name: 'Stop' }).click();
    await expect(rerun).toHaveAttribute('data-status', 'cancelled', {
      timeout: 30 * 1000
    });
    await expect(rerun.locator('.cube-TLog-text')).not.toContainText('step=19');

    // The panel: both jobs, their badges.
    await page
      .locator('#cube-lab-training-panel')
      .getByRole('button', { name: 'Refresh training jobs' })
      .click();
    await expect(section.locator('.cube-TJob')).toHaveCount(jobsBefore + 2);
    await expect(
      section.locator('.cube-TJob').first().locator('.cube-TBadge')
    ).toHaveText('cancelled');
    await lightAndDark(page, 'training-panel', { ready: section });

    // "Edit & launch" fills the launch form's tab with the job's spec.
    await view.getByRole('button', { name: /Edit & launch/ }).click();
    const copy = page
      .locator('.cube-TLaunchView')
      .getByRole('form', { name: 'New training job' });
    await expect(copy.locator('input[name="script"]')).toHaveValue(
      /train_ddp\.py$/
    );
    await expect(copy.locator('input[name="nproc"]')).toHaveValue('2');
  });
});
