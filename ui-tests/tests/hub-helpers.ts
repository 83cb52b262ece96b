/**
 * Helpers of the hub's UI tests (hub-*.spec.ts, run by playwright.hub.config.js, which
 * starts a throwaway hub in $CUBE_HUB_UI_ROOT): the admin's one-time password and login.
 */
import { test, type Page } from '@playwright/test';
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
