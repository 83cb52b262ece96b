/**
 * One-click inference against the real server: a scikit-learn model is
 * trained and saved by the server's Python, registered with the REST API,
 * deployed from the Models panel, tested from the deployment's form, given a
 * canary from the Deploy dialog, and undeployed. A deployment whose model
 * cannot load fails, and is removed from the Deployments panel; its model
 * version's lineage lists the dataset it was registered with.
 */
import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import type { APIRequestContext } from '@playwright/test';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

import { lightAndDark } from './helpers';

const API = '/cube/api/v1';
const MODEL = 'iris-svc';

/** The Python that runs the server (the project's venv), else python3. */
function python(): string {
  const venv = path.resolve(__dirname, '..', '..', '.venv', 'bin', 'python');
  return (
    process.env.CUBE_LAB_PYTHON || (fs.existsSync(venv) ? venv : 'python3')
  );
}

/** Train a small random forest on iris and save it under the server root. */
function saveModel(relative: string): void {
  const tmp = process.env.CUBE_LAB_UI_TMP;
  if (!tmp) {
    throw new Error('CUBE_LAB_UI_TMP is not set (see playwright.config.js)');
  }
  const target = path.join(tmp, 'root', relative);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  execFileSync(
    python(),
    [
      '-c',
      [
        'import sys, joblib',
        'from sklearn.datasets import load_iris',
        'from sklearn.ensemble import RandomForestClassifier',
        'x, y = load_iris(return_X_y=True)',
        'joblib.dump(RandomForestClassifier(n_estimators=5, random_state=0).fit(x, y), sys.argv[1])'
      ].join('\n'),
      target
    ],
    { stdio: 'inherit', timeout: 60_000 }
  );
}

async function register(
  request: APIRequestContext,
  baseURL: string,
  body: Record<string, unknown>
): Promise<any> {
  const response = await request.post(`${baseURL}${API}/models`, {
    data: body
  });
  expect(response.status(), await response.text()).toBe(201);
  return response.json();
}

/** Open version `version` of the model: from the Models panel, in its tab. */
async function openVersion(
  page: IJupyterLabPageFixture,
  version: number
): Promise<void> {
  await page.sidebar.openTab('cube-lab-models-panel');
  await page
    .locator(`#cube-lab-models .cube-ModelItem[data-model="${MODEL}"]`)
    .click();
  const tab = page.locator('.cube-ModelTab');
  await tab
    .locator(`.cube-VersionRow[data-version="${version}"]`)
    .first()
    .click();
  await expect(
    tab.locator(`.cube-VersionDetail[data-version="${version}"]`)
  ).toBeVisible();
}

test.describe('cube-lab deployments', () => {
  test.setTimeout(180_000);

  test('deploy from Models, send a test request, canary, undeploy', async ({
    page,
    request,
    baseURL
  }) => {
    const base = baseURL!;
    saveModel('deploy-ui/iris.joblib');
    const v1 = await register(request, base, {
      name: MODEL,
      path: 'deploy-ui/iris.joblib',
      description: 'Random forest, 5 trees'
    });
    const v2 = await register(request, base, {
      name: MODEL,
      path: 'deploy-ui/iris.joblib'
    });
    const project = v1.project;

    await page.sidebar.openTab('cube-lab-deployments-panel');
    await expect(page.locator('#cube-lab-deployments')).toBeVisible();
    const empty = page.locator('#cube-lab-deployments .cube-TEmpty');
    await expect(empty).toContainText('No deployments yet');
    await lightAndDark(page, 'deployments-empty', { ready: empty });

    // Deploy v1 from its tab (opened from the Models panel).
    await openVersion(page, v1.version);
    await page.locator('.cube-ModelTab .cube-DeployButton').click();
    const dialog = page.locator('.cube-DDeployDialog');
    await expect(dialog).toBeVisible();
    await expect(dialog.locator('input[name="name"]')).toHaveValue(MODEL);
    await expect(dialog.locator('input[name="replicas"]')).toHaveValue('1');
    // Opt in to adaptive batching and to keeping every request with its answer.
    await dialog.locator('input[name="batching"]').check();
    await dialog.locator('input[name="samples"]').fill('100');
    await lightAndDark(page, 'deployments-dialog', { ready: dialog });
    const started = Date.now();
    await dialog.getByRole('button', { name: 'Deploy' }).click();

    // It opens the deployment once it serves.
    const view = page.locator(
      `.cube-DDetail[data-deployment="${MODEL}"][data-status="running"]`
    );
    await expect(view).toBeVisible({ timeout: 60_000 });
    console.log(`deploy to view: ${Date.now() - started} ms`);
    await expect(dialog).toHaveCount(0);
    await expect(view.locator('.cube-DEndpoint-url')).toContainText(
      'http://127.0.0.1:'
    );

    // The test form is filled from the model's metadata: 2 rows x 4 features.
    const editor = view.locator('textarea[name="request"]');
    await expect(view.locator('.cube-DTest-source')).toContainText(
      'model inputs: input-0 FP64 [-1, 4]'
    );
    const example = JSON.parse(await editor.inputValue());
    expect(example.inputs[0].shape).toEqual([2, 4]);

    // A real iris row (class 0) and a class-2 row.
    await editor.fill(
      JSON.stringify({
        inputs: [
          {
            name: 'input-0',
            shape: [2, 4],
            datatype: 'FP64',
            data: [5.1, 3.5, 1.4, 0.2, 6.7, 3.0, 5.2, 2.3]
          }
        ]
      })
    );
    await view.getByRole('button', { name: 'Send' }).click();
    await expect(view.locator('.cube-DStatus')).toHaveText('200');
    await expect(view.locator('.cube-DTest-summary')).toHaveText(
      'predict: [0, 2]'
    );
    await expect(view.locator('.cube-DTest-latency')).toContainText('ms');
    // The tab is named after the deployment (the model's tab is, too).
    await expect(
      page.locator(`.lm-TabBar-tab[title^="Deployment ${MODEL} "]`)
    ).toHaveText(MODEL);
    await lightAndDark(page, 'deployments-view', { ready: view });

    // A malformed request: the model's 400 is shown, the deployment keeps serving.
    await editor.fill('{"inputs": []}');
    await view.getByRole('button', { name: 'Send' }).click();
    await expect(view.locator('.cube-DStatus')).toHaveText('400');
    await expect(view.locator('.cube-DTest-body')).toContainText('inputs');

    // The metrics count the requests (rates computed in the page).
    await expect(view.locator('.cube-DMetrics-now')).toContainText(
      /[1-9]\d* requests in all/,
      { timeout: 15_000 }
    );
    await expect(view.locator('.cube-TChart')).toHaveCount(3);

    // Both requests were sampled with their answers; sampling can be stopped.
    const samples = view.locator('.cube-DSamples');
    await expect(samples).toContainText('keeping 100% of requests');
    await expect(samples.locator('tbody tr')).toHaveCount(2, {
      timeout: 15_000
    });
    await expect(samples.locator('tbody tr').last()).toContainText('200');
    await expect(samples.locator('tbody tr').first()).toContainText('400');
    await samples.locator('.cube-DSamples-table').scrollIntoViewIfNeeded();
    await lightAndDark(page, 'deployments-samples', { ready: samples });
    await samples.getByRole('button', { name: 'Stop sampling' }).click();
    await expect(samples).toContainText('off: nothing is kept');
    await expect(view.locator('.cube-DLog-text')).toContainText('listening');

    // The Deployments panel lists it with its endpoint.
    await page.sidebar.openTab('cube-lab-deployments-panel');
    const item = page.locator(
      `#cube-lab-deployments .cube-DItem[data-deployment="${MODEL}"]`
    );
    await expect(item).toContainText('running');
    await expect(item.locator('.cube-DItem-endpoint code')).toContainText(
      'http://127.0.0.1:'
    );

    // Deploy v2 of the same model: the dialog offers a canary.
    await openVersion(page, v2.version);
    await page.locator('.cube-ModelTab .cube-DeployButton').click();
    await expect(dialog.locator('input[value="canary"]')).toBeChecked();
    await dialog.locator('input[name="percent"]').fill('30');
    await lightAndDark(page, 'deployments-canary', { ready: dialog });
    await dialog.getByRole('button', { name: 'Deploy' }).click();
    await expect(dialog).toHaveCount(0, { timeout: 60_000 });
    await expect(view.locator('input[name="canary"]')).toHaveValue('30', {
      timeout: 15_000
    });
    await expect(
      view.getByRole('button', { name: `Promote v${v2.version}` })
    ).toBeVisible();
    await expect(item).toContainText(`v${v2.version} 30%`);
    await lightAndDark(page, 'deployments-panel', { ready: item });

    // Roll the canary back: v1 takes everything again.
    await view
      .getByRole('button', { name: `Roll back (drop v${v2.version})` })
      .click();
    await expect(view.locator('input[name="canary"]')).toHaveCount(0, {
      timeout: 30_000
    });

    // Undeploy, with confirmation.
    await view.getByRole('button', { name: 'Undeploy' }).click();
    await page
      .locator('.jp-Dialog')
      .getByRole('button', { name: 'Undeploy' })
      .click();
    await expect(
      page.locator(`.cube-DDetail[data-deployment="${MODEL}"]`)
    ).toHaveAttribute('data-status', 'stopped', { timeout: 30_000 });
    await expect(item).toContainText('stopped');
    const after = await request.get(
      `${base}${API}/projects/${project}/deployments/${MODEL}`
    );
    expect((await after.json()).status).toBe('stopped');
  });

  test('a failed deployment shows Remove and leaves the list after it', async ({
    page,
    request,
    baseURL
  }) => {
    const base = baseURL!;
    const name = 'broken-ui';
    // Ten bytes no library can load: registered as a "generic" model.
    const tmp = process.env.CUBE_LAB_UI_TMP!;
    const file = path.join(tmp, 'root', 'deploy-fail', 'weights.bin');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, Buffer.alloc(10));
    const version = await register(request, base, {
      name,
      path: 'deploy-fail/weights.bin',
      datasets: [{ name: 'pets', version: 2, path: '/data/datasets/7/v2' }]
    });
    const project = version.project;
    const deploy = await request.post(`${base}${API}/deployments`, {
      data: { model: `${name}:${version.version}` }
    });
    expect(deploy.status(), await deploy.text()).toBeGreaterThanOrEqual(400);

    await page.sidebar.openTab('cube-lab-deployments-panel');
    const item = page.locator(
      `#cube-lab-deployments .cube-DItem[data-deployment="${name}"]`
    );
    await expect(item).toHaveAttribute('data-status', 'failed', {
      timeout: 15_000
    });
    const remove = item.getByRole('button', { name: 'Remove' });
    await expect(remove).toBeVisible();
    await expect(item.locator('.cube-DItem-error')).toBeVisible();

    // Its view offers Remove (no Undeploy: nothing runs).
    await item.locator('.cube-DItem-main').click();
    const view = page.locator(`.cube-DDetail[data-deployment="${name}"]`);
    await expect(view).toHaveAttribute('data-status', 'failed');
    await expect(view.getByRole('button', { name: 'Remove' })).toBeVisible();
    await expect(view.getByRole('button', { name: 'Undeploy' })).toHaveCount(0);

    // Its model version (Open model) lists the dataset it was trained on.
    await view.getByRole('button', { name: 'Open model' }).click();
    const lineage = page.locator(
      `.cube-ModelTab .cube-VersionDetail[data-version="${version.version}"] .cube-Lineage`
    );
    await expect(lineage).toContainText('Datasets');
    await expect(lineage.locator('.cube-LineageDataset')).toHaveText('pets v2');
    await expect(lineage.locator('.cube-LineageDataset')).toHaveAttribute(
      'title',
      '/data/datasets/7/v2'
    );
    await page.locator(`.lm-TabBar-tab[title^="Deployment ${name} "]`).click();
    await expect(view).toBeVisible();
    await lightAndDark(page, 'deployments-failed', { ready: remove });

    // Remove from the panel, after a dialog that says what goes.
    await remove.click();
    const dialog = page.locator('.jp-Dialog');
    await expect(dialog).toContainText(`Remove ${name}?`);
    await expect(dialog).toContainText('its record and log are deleted');
    await lightAndDark(page, 'deployments-remove-dialog', { ready: dialog });
    await dialog.getByRole('button', { name: 'Remove' }).click();
    await expect(item).toHaveCount(0, { timeout: 15_000 });

    // The open view says it was removed and can be closed.
    await expect(view).toHaveAttribute('data-status', 'removed');
    await expect(view).toContainText(`Deployment ${name} was removed`);
    await lightAndDark(page, 'deployments-removed', {
      ready: view.locator('.cube-DRemoved')
    });
    const gone = await request.get(
      `${base}${API}/projects/${project}/deployments/${name}`
    );
    expect(gone.status()).toBe(404);
    const list = await (await request.get(`${base}${API}/deployments`)).json();
    expect(list.deployments.map((d: any) => d.name)).not.toContain(name);
    await view.getByRole('button', { name: 'Close' }).click();
    await expect(view).toHaveCount(0);

    // The model stays in the registry; the test leaves nothing behind.
    await page
      .locator('.lm-TabBar-tab', { hasText: `${name} v${version.version}` })
      .locator('.lm-TabBar-tabCloseIcon')
      .click();
    const model = await request.delete(
      `${base}${API}/projects/${project}/models/${name}`
    );
    expect(model.status()).toBe(204);
  });

  test('API keys, rate limit and address lists from the Access section', async ({
    page,
    request,
    baseURL
  }) => {
    const base = baseURL!;
    const name = 'keyed';
    saveModel('deploy-keys/iris.joblib');
    const version = await register(request, base, {
      name,
      path: 'deploy-keys/iris.joblib'
    });
    const project = version.project;
    const deploy = await request.post(`${base}${API}/deployments`, {
      data: { model: `${name}:${version.version}`, auth: 'required' }
    });
    expect(deploy.status(), await deploy.text()).toBe(201);
    const endpoint: string = (await deploy.json()).endpoint;
    const call = (key?: string) =>
      request.post(`${endpoint}/predict`, {
        data: { instances: [[5.1, 3.5, 1.4, 0.2]] },
        headers: key ? { Authorization: `Bearer ${key}` } : {}
      });
    expect((await call()).status()).toBe(401);

    await page.sidebar.openTab('cube-lab-deployments-panel');
    await page
      .locator(
        `#cube-lab-deployments .cube-DItem[data-deployment="${name}"] .cube-DItem-main`
      )
      .click();
    const view = page.locator(
      `.cube-DDetail[data-deployment="${name}"][data-status="running"]`
    );
    const section = view.locator('.cube-DAccess');
    await expect(section).toHaveAttribute('data-auth', 'required');
    await expect(section.locator('.cube-DAccess-empty')).toContainText(
      'nobody can call this deployment'
    );
    // The test form still answers: the server passes with its own token.
    await view.getByRole('button', { name: 'Send' }).click();
    await expect(view.locator('.cube-DStatus')).toHaveText('200');

    // Make two keys; the new one is shown once, with a copy button.
    const form = section.locator('.cube-DAccess-create');
    await form.locator('input[name="key-name"]').fill('ci');
    await form.getByRole('button', { name: 'Create key' }).click();
    const secret = section.locator('.cube-DAccess-secret');
    await expect(secret).toContainText('cube_');
    const key = (await secret.textContent())!.trim();
    expect((await call(key)).status()).toBe(200);
    expect((await call(key + 'x')).status()).toBe(401);
    await form.locator('input[name="key-name"]').fill('batch-jobs');
    await form.locator('input[name="key-days"]').fill('30');
    await form.getByRole('button', { name: 'Create key' }).click();
    await expect(section.locator('tbody tr')).toHaveCount(2);
    const other = (await secret.textContent())!.trim();
    expect(other).not.toBe(key);
    const ci = section.locator('tr[data-key="ci"]');
    await expect(ci).toContainText(key.slice(0, 12));
    await expect(ci).not.toContainText(key); // listed by its prefix only
    await expect(ci.locator('td').nth(3)).not.toHaveText('never', {
      timeout: 30_000
    }); // last used, read from the router

    // A rate limit and a deny list, saved to the running router.
    const settings = section.locator('.cube-DAccess-settings');
    await settings.locator('input[name="rate-limit"]').check();
    await settings.locator('input[name="rps"]').fill('5');
    await settings.locator('input[name="burst"]').fill('10');
    await settings.locator('textarea[name="deny"]').fill('not-an-address');
    await expect(settings.locator('.cube-TField-error')).toContainText(
      'not-an-address is not an IP address or CIDR network.'
    );
    await expect(settings.getByRole('button', { name: 'Save' })).toBeDisabled();
    await settings.locator('textarea[name="deny"]').fill('192.0.2.0/24');
    await settings.getByRole('button', { name: 'Save' }).click();
    await expect(settings).toContainText('Saved; the router applies it now.');
    await expect(section.locator('.cube-DAccess-summary')).toContainText(
      '5 requests/s, bursts of 10'
    );
    const stored = await (
      await request.get(
        `${base}${API}/projects/${project}/deployments/${name}/access`
      )
    ).json();
    expect(stored).toEqual({
      auth: 'required',
      rate_limit: { rps: 5, burst: 10, per_key: false },
      allow: [],
      deny: ['192.0.2.0/24']
    });
    await section.scrollIntoViewIfNeeded();
    await lightAndDark(page, 'deployments-access', { ready: secret });

    // Revoke "ci" after a dialog: refused at once, the other key still works.
    await section.getByRole('button', { name: 'Done' }).click();
    await expect(secret).toHaveCount(0);
    await ci.getByRole('button', { name: 'Revoke' }).click();
    const dialog = page.locator('.jp-Dialog');
    await expect(dialog).toContainText('Revoke key ci?');
    await dialog.getByRole('button', { name: 'Revoke' }).click();
    await expect(ci).toHaveAttribute('data-state', 'revoked');
    expect((await call(key)).status()).toBe(401);
    expect((await call(other)).status()).toBe(200);
    await section.scrollIntoViewIfNeeded();
    await lightAndDark(page, 'deployments-access-revoked', { ready: ci });

    const gone = await request.delete(
      `${base}${API}/projects/${project}/deployments/${name}?forget=true`
    );
    expect(gone.status()).toBe(204);
    await request.delete(`${base}${API}/projects/${project}/models/${name}`);
  });
});
