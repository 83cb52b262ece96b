/**
 * The hub's admin page in Chromium: the admin logs in with the one-time password the hub
 * printed at its first start, opens /services/cube-admin/, creates a project group with a
 * GPU quota, lowers it, and sees it applied (an admission over the quota is refused with the
 * reason); then gives each member at most one GPU and an idle timeout, which the card states
 * and admission applies. Runs only under playwright.hub.config.js, which starts a throwaway hub.
 */
import { expect, test } from '@playwright/test';
import * as path from 'path';

import { loginAsAdmin, needsHub } from './hub-helpers';

needsHub();

test('admin creates a project group with a GPU quota and it is enforced', async ({
  page
}) => {
  await loginAsAdmin(page);

  await page.goto('/services/cube-admin/');
  await expect(
    page.getByRole('heading', { name: 'Project groups and quotas' })
  ).toBeVisible();

  const form = page.locator('#new-group');
  await form.locator('#new-group-name').fill('vision');
  await form.locator('#new-group-users').fill('admin');
  await form.locator('[data-accelerator="nvidia.com/gpu"]').fill('4');
  await form.locator('[data-profile="gpu-1"]').check();
  await page.getByRole('button', { name: 'Create group' }).click();

  const card = page.locator('.cube-group[data-group="vision"]');
  await expect(card).toBeVisible();
  await expect(page.locator('#cube-message')).toHaveText(
    'Created group vision'
  );
  const gpuRow = card.locator(
    'table.usage tr[data-dimension="nvidia.com/gpu"]'
  );
  await expect(gpuRow).toContainText('GPUs (nvidia.com/gpu)');
  await expect(gpuRow.locator('td').nth(2)).toHaveText('4');
  await expect(card.locator('[data-member="admin"]')).toBeVisible();

  // lower the quota on the group's own form
  await card
    .locator('.quota-editor [data-accelerator="nvidia.com/gpu"]')
    .fill('2');
  await card.getByRole('button', { name: 'Save quota and profiles' }).click();
  await expect(page.locator('#cube-message')).toHaveText('Saved vision');
  await expect(gpuRow.locator('td').nth(2)).toHaveText('2');
  await expect(
    card.locator('.quota-editor [data-profile="gpu-1"]')
  ).toBeChecked();

  // applied: asking for 3 GPUs in project vision is refused, 2 are admitted
  const ask = async (gpus: string) =>
    page.evaluate(async n => {
      const xsrf = document.cookie.match(/_xsrf=([^;]+)/);
      const resp = await fetch('api/admission', {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'X-XSRFToken': xsrf ? decodeURIComponent(xsrf[1]) : ''
        },
        body: JSON.stringify({
          project: 'vision',
          accelerators: { 'nvidia.com/gpu': n }
        })
      });
      return { status: resp.status, body: await resp.json() };
    }, gpus);
  const refused = await ask('3');
  expect(refused.status).toBe(403);
  expect(refused.body.error).toBe(
    'project vision uses 0 of 2 GPUs (nvidia.com/gpu); this needs 3'
  );
  const admitted = await ask('2');
  expect(admitted.status).toBe(201);
  await page.reload();
  await expect(gpuRow.locator('td').nth(1)).toHaveText('2');
  await expect(card.locator('table.per-user')).toContainText('admin');

  // each member at most 1 GPU; servers idle for 30 minutes are stopped
  const editor = card.locator('.quota-editor');
  await editor.locator('[data-member-accelerator="nvidia.com/gpu"]').fill('1');
  await editor.locator('[data-idle]').fill('30');
  await card.getByRole('button', { name: 'Save quota and profiles' }).click();
  await expect(page.locator('#cube-message')).toHaveText('Saved vision');
  await expect(card.locator('[data-field=per-member]')).toHaveText(
    'Each member at most: 1 GPU (nvidia.com/gpu). Servers idle for 30 minutes are stopped.'
  );
  await expect(editor.locator('[data-idle]')).toHaveValue('30');
  await expect(gpuRow.locator('td').nth(2)).toHaveText('2'); // the group's own limit kept
  const released = await page.evaluate(async id => {
    const xsrf = document.cookie.match(/_xsrf=([^;]+)/);
    const resp = await fetch(`api/admission/${id}`, {
      method: 'DELETE',
      headers: { 'X-XSRFToken': xsrf ? decodeURIComponent(xsrf[1]) : '' }
    });
    return resp.status;
  }, admitted.body.id);
  expect(released).toBeLessThan(300);
  const mine = await ask('2');
  expect(mine.status).toBe(403);
  expect(mine.body.error).toBe(
    'admin uses 0 of the 1 GPUs (nvidia.com/gpu) each member of project vision may use; this needs 2'
  );
  await page.setViewportSize({ width: 1280, height: 720 });
  await editor.evaluate(el =>
    el.scrollIntoView({ behavior: 'instant', block: 'center' })
  );
  await page.screenshot({
    path: path.resolve(
      __dirname,
      '..',
      'screenshots',
      'hub-admin-per-member-en.png'
    )
  });
});
