/**
 * Resources and Notifications against the real server: a CPU-burning local
 * training job's view shows the resource strip moving, the Resources panel
 * lists the job while it runs (a click opens its view), the status bar shows
 * this server's CPU and memory; the Notifications tab adds a webhook rule to
 * a tiny local receiver, sends a test that arrives, shows the delivery log
 * and removes the rule. Pictures in light, dark and zh-CN.
 */
import {
  expect,
  galata,
  IJupyterLabPageFixture,
  test
} from '@jupyterlab/galata';
import type { APIRequestContext } from '@playwright/test';
import * as http from 'http';

import { lightAndDark, putText } from './helpers';

const API = '/cube/api/v1';

/** Burns one core until a file named "stop" appears next to it (or 120 s pass). */
const BURN = `
import os, time
held = b"x" * (48 * 2**20)
end = time.monotonic() + 120
while not os.path.exists("stop") and time.monotonic() < end:
    sum(i * i for i in range(20000))
`;

async function startBurn(
  request: APIRequestContext,
  base: string,
  tmpPath: string,
  name: string
): Promise<string> {
  await putText(request, base, `${tmpPath}/burn.py`, BURN);
  const response = await request.post(`${base}${API}/training/jobs`, {
    data: {
      framework: 'plain',
      command: ['python3', 'burn.py'],
      working_dir: tmpPath,
      name
    }
  });
  expect(response.status(), await response.text()).toBe(201);
  return (await response.json()).id;
}

async function stopBurn(
  request: APIRequestContext,
  base: string,
  tmpPath: string,
  jobId: string
): Promise<void> {
  await putText(request, base, `${tmpPath}/stop`, '');
  await request.post(`${base}${API}/training/jobs/${jobId}/stop`);
  await expect
    .poll(
      async () =>
        (
          await (
            await request.get(`${base}${API}/training/jobs/${jobId}`)
          ).json()
        ).status,
      { timeout: 60_000 }
    )
    .not.toMatch(/queued|running/);
}

async function command(
  page: IJupyterLabPageFixture,
  id: string,
  args: Record<string, unknown> = {}
): Promise<void> {
  await page.evaluate(
    async ({ id, args }) => {
      await (window as any).jupyterapp.commands.execute(id, args);
    },
    { id, args }
  );
}

/** A local webhook receiver that records the JSON bodies it gets. */
async function receiver(): Promise<{
  url: string;
  bodies: any[];
  close: () => void;
}> {
  const bodies: any[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', chunk => (raw += chunk));
    req.on('end', () => {
      try {
        bodies.push(JSON.parse(raw || '{}'));
      } catch {
        bodies.push({ raw });
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"ok": true}');
    });
  });
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    bodies,
    close: () => server.close()
  };
}

/** Galata's own wait, with more time: the machine these run on is shared and busy. */
function waitFor(launcher: string) {
  return async ({}, use: any) => {
    await use(async (page: any, helpers: any) => {
      await page
        .locator('#jupyterlab-splash')
        .waitFor({ state: 'detached', timeout: 90_000 });
      await helpers.waitForCondition(
        () => helpers.activity.isTabActive(launcher),
        60_000
      );
    });
  };
}

test.describe('cube-lab resources', () => {
  test.setTimeout(240_000);
  test.use({ waitForApplication: waitFor('Launcher') });

  test.beforeEach(async ({ page }) => {
    await page.addLocatorHandler(
      page.getByRole('dialog', { name: /Directory not found/ }),
      async d => {
        await d.getByRole('button', { name: 'Close' }).click();
      }
    );
  });

  test("a running job's strip moves and the Resources panel lists it", async ({
    page,
    request,
    baseURL,
    tmpPath
  }) => {
    const base = baseURL!;
    const jobId = await startBurn(request, base, tmpPath, 'burn-cpu');
    try {
      await command(page, 'cube-lab:open-training-job', { id: jobId });
      const view = page.locator(`.cube-TJobDetail[data-job="${jobId}"]`);
      const strip = view.locator('.cube-RStrip');
      await expect(strip).toBeVisible();
      const cpu = strip.locator('.cube-RSpark[data-figure="cpu"] svg');
      // the strip moves: more points come while the job runs
      await expect
        .poll(async () => Number(await cpu.getAttribute('data-points')), {
          timeout: 60_000
        })
        .toBeGreaterThan(2);
      const first = Number(await cpu.getAttribute('data-points'));
      await expect
        .poll(async () => Number(await cpu.getAttribute('data-points')), {
          timeout: 30_000
        })
        .toBeGreaterThan(first);
      await expect(
        strip.locator('.cube-RSpark[data-figure="memory"] path')
      ).toBeVisible();
      // no GPU here: no GPU charts and no error
      await expect(
        strip.locator('.cube-RSpark[data-figure^="gpu"]')
      ).toHaveCount(0);
      await expect(strip.locator('.cube-RStrip-error')).toHaveCount(0);
      await lightAndDark(page, 'resources-strip', { ready: strip });

      // The Resources panel lists the job with what it holds.
      await page.sidebar.openTab('cube-lab-resources-panel');
      const panel = page.locator('#cube-lab-resources');
      const item = panel.locator(`li[data-id="${jobId}"]`);
      await expect(item).toContainText('burn-cpu', { timeout: 30_000 });
      await expect(item).toContainText(/CPU \d/);
      await expect(item).toContainText(/MiB/);
      await expect(
        panel.locator('.cube-Resources-quota').first()
      ).toContainText('GPUs in use');
      await expect(panel.locator('.cube-Resources-server')).toContainText(
        'Mem'
      );
      // The status bar shows this server's CPU and memory.
      await expect(page.locator('.cube-ServerStatus-text')).toContainText(
        /CPU .* Mem/
      );
      await lightAndDark(page, 'resources-panel', { ready: item });
      // A click opens the job's view.
      await page.activity.activateTab('Launcher').catch(() => undefined);
      await item.locator('button').click();
      await expect(view).toBeVisible();
    } finally {
      await stopBurn(request, base, tmpPath, jobId);
    }
    // Once it ended the panel no longer lists it.
    await page.sidebar.openTab('cube-lab-resources-panel');
    await expect(
      page.locator(`#cube-lab-resources li[data-id="${jobId}"]`)
    ).toHaveCount(0, { timeout: 30_000 });
    await expect(
      page.locator('#cube-lab-resources .cube-Resources-empty')
    ).toBeVisible();
  });

  test('the Notifications tab adds a webhook rule, tests it and removes it', async ({
    page,
    request,
    baseURL
  }) => {
    const base = baseURL!;
    const hook = await receiver();
    const who = await (await request.get(`${base}${API}/whoami`)).json();
    const project: string = who.user;
    try {
      await command(page, 'cube-lab:open-notifications', { project });
      const tab = page.locator('.cube-Notifications-body');
      await expect(tab.locator('.cube-Notifications-empty')).toBeVisible();
      const add = tab.locator('.cube-Notifications-add');
      // checked here first: a bad URL
      await add.locator('input[name="name"]').fill('ui-hook');
      await add.locator('input[name="url"]').fill('not a url');
      await add.getByRole('button', { name: 'Add rule' }).click();
      await expect(add.locator('.cube-Field-error')).toContainText('http://');
      await add.locator('input[name="url"]').fill(hook.url);
      await lightAndDark(page, 'notifications-add', { ready: add });
      await add.getByRole('button', { name: 'Add rule' }).click();
      const rule = tab.locator('li[data-rule="ui-hook"]');
      await expect(rule).toContainText('job.failed, run.failed');
      // the list shows the URL as its host only
      await expect(rule).toContainText('http://127.0.0.1');
      await expect(rule).not.toContainText('/hook');
      await rule.getByRole('button', { name: 'Send a test' }).click();
      const log = rule.locator('.cube-Notifications-log');
      await expect(log.locator('tr[data-ok="true"]')).toContainText(
        'rule.test',
        {
          timeout: 30_000
        }
      );
      await expect.poll(() => hook.bodies.length).toBeGreaterThan(0);
      expect(hook.bodies[0].event).toBe('rule.test');
      await lightAndDark(page, 'notifications-rules', { ready: log });
      await rule.getByRole('button', { name: 'Remove' }).click();
      await expect(rule).toHaveCount(0);
      await expect(tab.locator('.cube-Notifications-empty')).toBeVisible();
    } finally {
      await request.delete(
        `${base}${API}/projects/${project}/alert-rules/ui-hook`
      );
      hook.close();
    }
  });
});

test.describe('cube-lab resources in Chinese', () => {
  test.use({
    mockSettings: {
      ...galata.DEFAULT_SETTINGS,
      '@jupyterlab/translation-extension:plugin': { locale: 'zh_CN' }
    },
    waitForApplication: waitFor('启动页')
  });

  test('the Resources panel and the Notifications tab speak Chinese', async ({
    page,
    request,
    baseURL,
    tmpPath
  }) => {
    test.setTimeout(180_000);
    const base = baseURL!;
    const jobId = await startBurn(request, base, tmpPath, 'burn-zh');
    try {
      await page.sidebar.openTab('cube-lab-resources-panel');
      const panel = page.locator('#cube-lab-resources');
      const item = panel.locator(`li[data-id="${jobId}"]`);
      await expect(item).toContainText('训练任务', { timeout: 60_000 });
      await expect(panel.locator('.cube-Resources-server')).toContainText(
        '内存'
      );
      await lightAndDark(page, 'zh-resources-panel', { ready: item });
      await command(page, 'cube-lab:open-notifications');
      const tab = page.locator('.cube-Notifications-body');
      await expect(tab.locator('h2')).toHaveText('通知');
      await expect(tab.getByRole('button', { name: '添加规则' })).toBeVisible();
      await lightAndDark(page, 'zh-notifications', { ready: tab });
    } finally {
      await stopBurn(request, base, tmpPath, jobId);
    }
  });
});
