/**
 * A user's lab under the hub, in Chromium. The user's server holds no store: it forwards
 * to the cube-lab service with the user's token, and the panels call the service straight
 * (through the hub's proxy, with the service's own OAuth cookie and XSRF token, from a
 * session the page opens in a hidden frame). The admin logs in, starts a server, makes a
 * project through the server's forward with the browser's cookie and XSRF token, and the
 * Models panel lists it, its requests going to the service. Runs only under
 * playwright.hub.config.js, which starts a throwaway hub.
 */
import { expect, test } from '@playwright/test';
import * as fs from 'fs';

import { loginAsAdmin, needsHub } from './hub-helpers';

needsHub();

test('the lab under the hub works through the cube-lab service', async ({
  page
}) => {
  test.setTimeout(180 * 1000);
  const apiCalls: string[] = [];
  page.on('request', request => {
    const path = new URL(request.url()).pathname;
    if (path.includes('/cube/api/v1/')) {
      apiCalls.push(path);
    }
  });
  await loginAsAdmin(page);

  await page.goto('/hub/spawn');
  const start = page.locator('input[type="submit"], button[type="submit"]');
  if (await start.count()) {
    await start.first().click();
  }
  await page.waitForURL(/\/user\/admin\/lab/, { timeout: 150 * 1000 });
  await expect(page.locator('#jp-main-dock-panel')).toBeVisible({
    timeout: 60 * 1000
  });

  // a write with the browser's cookie and XSRF token, as the panels make it
  // (the lab server's: the service has an _xsrf cookie of its own, at its path)
  const xsrf = (await page.context().cookies()).find(
    c => c.name === '_xsrf' && c.path.startsWith('/user/admin')
  );
  const made = await page.request.post('/user/admin/cube/api/v1/projects', {
    data: { name: 'hub-ui-project' },
    headers: { 'X-XSRFToken': xsrf ? xsrf.value : '' }
  });
  expect(made.status(), await made.text()).toBe(201);
  const me = await page.request.get('/user/admin/cube/api/v1/whoami');
  expect(me.status()).toBe(200);
  expect((await me.json()).user).toBe('admin');

  await page.locator('[data-id="cube-lab-models-panel"]').click();
  const panel = page.locator('#cube-lab-models-panel');
  await expect(panel).toBeVisible();
  await expect(panel.locator('select').first()).toContainText(
    'hub-ui-project',
    { timeout: 30 * 1000 }
  );
  // the page's own API requests (page.request's above are not the page's) went to the
  // service straight, none through the forward
  expect(apiCalls.length).toBeGreaterThan(0);
  expect(
    apiCalls.filter(p => !p.startsWith('/services/cube-lab/cube/api/v1/'))
  ).toEqual([]);
  fs.mkdirSync('screenshots', { recursive: true });
  await page.screenshot({ path: 'screenshots/hub-models-panel.png' });
});
