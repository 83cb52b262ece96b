/**
 * Helpers of the hub's UI tests (hub-*.spec.ts, run by playwright.hub.config.js, which
 * starts a throwaway hub in $CUBE_HUB_UI_ROOT): the admin's one-time password and login.
 */
import { test, type APIRequestContext, type Page } from '@playwright/test';
import * as fs from 'fs';
import * as path from 'path';

export const ROOT = process.env.CUBE_HUB_UI_ROOT;

/** Skip the calling spec unless the hub config started a hub. */
export function needsHub(): void {
  test.skip(
    !process.env.CUBE_HUB_UI_URL || !ROOT,
    'needs the hub: jlpm playwright test -c playwright.hub.config.js'
  );
}

/** The password the hub printed for the admin at its first start. */
export function adminPassword(): string {
  const log = fs.readFileSync(path.join(ROOT as string, 'hub.log'), 'utf-8');
  const found = /one-time password:\s+(\S+)/.exec(log);
  if (!found) {
    throw new Error('the hub printed no admin password');
  }
  return found[1];
}

/** Log in as the admin on the hub's login form. */
export async function loginAsAdmin(page: Page): Promise<void> {
  await page.goto('/hub/login');
  await page.locator('#username_input').fill('admin');
  await page.locator('#password_input').fill(adminPassword());
  await page.locator('#login_submit').click();
  await page.waitForURL(/\/hub\/(spawn|home)/);
}

/** A hub API token of `user`, made with the throwaway hub's driver service (whose token
 * the hub's config file in $CUBE_HUB_UI_ROOT holds). */
export async function userToken(
  request: APIRequestContext,
  user: string
): Promise<string> {
  const config = fs.readFileSync(
    path.join(ROOT as string, 'jupyterhub_config.py'),
    'utf-8'
  );
  const driver = /'api_token': '([^']+)'/.exec(config);
  if (!driver) {
    throw new Error('no driver token in the hub config');
  }
  const made = await request.post(`/hub/api/users/${user}/tokens`, {
    headers: { Authorization: `token ${driver[1]}` },
    data: { note: 'ui test' }
  });
  if (made.status() !== 201) {
    throw new Error(`token for ${user}: ${made.status()} ${await made.text()}`);
  }
  return (await made.json()).token;
}

/** A cube-lab API call through the hub's cube-lab service, with a user's token. */
export async function storeCall(
  request: APIRequestContext,
  token: string,
  method: 'GET' | 'POST',
  api: string,
  data?: unknown
): Promise<{ status: number; body: any }> {
  const resp = await request.fetch(`/services/cube-lab/cube/api/v1/${api}`, {
    method,
    headers: { Authorization: `token ${token}` },
    data
  });
  return { status: resp.status(), body: await resp.json() };
}
