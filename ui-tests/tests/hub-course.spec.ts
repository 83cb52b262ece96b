/**
 * A class on the hub, in Chromium, in English and in Chinese: the teacher (the hub's admin)
 * makes a course with the admin page's New course form (a bad name first: the error in the
 * page's message area), imports a roster CSV of two students with Chinese display names on
 * the admin page's group card, hands out a starter notebook on the course page; each student
 * logs in with the initial password the import showed, is sent to change it (it is one-time)
 * and does, starts a server, opens the handed-out notebook in their own JupyterLab; the
 * first presses Submit on their own course page (which shows nobody else), the second in the
 * lab's Course panel; the teacher sees both
 * submissions on the course page, and each member's resources in words. The hand-out carries
 * the teacher's model too (read-only in the course: listed on the course page and in the
 * lab's panel); the second student registers a model from the hand-out's notebook, which their
 * submission brings to the teacher. The page's language comes
 * from the browser's Accept-Language (the context's locale), the lab's from its
 * Settings > Language. Runs only under playwright.hub.config.js (a throwaway hub).
 */
import { expect, test, type Browser, type Page } from '@playwright/test';
import * as fs from 'fs';
import * as path from 'path';

import {
  loginAsAdmin,
  needsHub,
  ROOT,
  storeCall,
  userToken
} from './hub-helpers';

needsHub();

const SHOTS = path.resolve(__dirname, '..', 'screenshots');
const VIEWPORT = { width: 1280, height: 720 };

interface Case {
  lang: 'en' | 'zh';
  locale: string;
  heading: (c: string) => string;
  handedOut: string;
  onTime: string;
  created: (c: string) => string;
  submitted: string;
  resources: string;
  notSubmitted: string;
  labSubmitted: string;
  labStatus: string;
  withModel: string;
  material: (c: string) => string;
}

const CASES: Case[] = [
  {
    lang: 'en',
    locale: 'en-US',
    heading: c => `Course ${c}`,
    handedOut: 'Handed out lab1 to 2 students',
    onTime: 'on time',
    created: c => `Created course ${c}`,
    submitted: 'Submitted lab1',
    resources: '1 server, 1 CPU core, 1 GiB memory',
    notSubmitted: 'Not submitted yet',
    labSubmitted: 'Submitted lab1 at',
    labStatus: 'Submitted ',
    withModel: 'With it: 1 model',
    material: c => `Model ${c}/base-en:v1`
  },
  {
    lang: 'zh',
    locale: 'zh-CN',
    heading: c => `课程 ${c}`,
    handedOut: '已将 lab1 分发给 2 名学生',
    onTime: '按时',
    created: c => `已创建课程 ${c}`,
    submitted: '已提交 lab1',
    resources: '1 个服务器, 1 个 CPU 核, 1 GiB 内存',
    notSubmitted: '尚未提交',
    labSubmitted: '提交 lab1',
    labStatus: '已提交',
    withModel: '一并提交：1 个模型',
    material: c => `模型 ${c}/base-zh:v1`
  }
];

/** A fetch on a cube-admin page, with the service's XSRF cookie. */
async function adminCall(
  page: Page,
  method: string,
  url: string,
  body?: unknown
): Promise<{ status: number; body: any }> {
  return page.evaluate(
    async ([m, u, b]) => {
      const xsrf = document.cookie.match(/_xsrf=([^;]+)/);
      const resp = await fetch(u as string, {
        method: m as string,
        headers: {
          'Content-Type': 'application/json',
          'X-XSRFToken': xsrf ? decodeURIComponent(xsrf[1]) : ''
        },
        body: b === undefined ? undefined : JSON.stringify(b)
      });
      return { status: resp.status, body: await resp.json() };
    },
    [method, url, body]
  );
}

/** The starter notebook, saved in the teacher's space (their home under the hub's data). */
function writeStarter(folder: string): void {
  const dir = path.join(ROOT as string, 'data', 'users', 'admin', folder);
  fs.mkdirSync(dir, { recursive: true });
  const notebook = {
    cells: [
      {
        cell_type: 'markdown',
        metadata: {},
        source: ['# Lab 1: 线性回归\n', '\n', 'Fill in the code below.']
      },
      {
        cell_type: 'code',
        execution_count: null,
        metadata: {},
        outputs: [],
        source: ['answer = 6 * 7  # 你的代码']
      }
    ],
    metadata: {
      kernelspec: {
        display_name: 'Python 3',
        language: 'python',
        name: 'python3'
      }
    },
    nbformat: 4,
    nbformat_minor: 5
  };
  fs.writeFileSync(path.join(dir, 'lab1.ipynb'), JSON.stringify(notebook));
}

/** A student logs in, starts their server, opens the notebook, and submits it on their
 * course page, or (``fromLab``) from the lab's Course panel. */
async function studentSubmits(
  browser: Browser,
  c: Case,
  course: string,
  name: string,
  password: string,
  shot: string | null,
  other: string,
  fromLab: boolean
): Promise<void> {
  const context = await browser.newContext({
    locale: c.locale,
    viewport: VIEWPORT
  });
  const page = await context.newPage();
  try {
    await page.goto('/hub/login');
    await page.locator('#username_input').fill(name);
    await page.locator('#password_input').fill(password);
    await page.locator('#login_submit').click();
    // the roster's initial password is one-time: the hub asks for a new one first
    await page.waitForURL(/\/hub\/change-password/);
    await expect(page.locator('#one-time-notice')).toBeVisible();
    await page.locator('#old_password_input').fill(password);
    await page.locator('#new_password_input').fill(`${password}-Mine-7`);
    await page
      .locator('#new_password_confirmation_input')
      .fill(`${password}-Mine-7`);
    if (shot) {
      await page.screenshot({
        path: path.join(SHOTS, `hub-course-change-password-${c.lang}.png`)
      });
    }
    await page.locator('#change_password_submit').click();
    await expect(page.locator('.alert-success')).toBeVisible();
    await page.goto('/hub/spawn');
    const start = page.locator('input[type="submit"], button[type="submit"]');
    if (await start.count()) {
      await start.first().click();
    }
    await page.waitForURL(new RegExp(`/user/${name}/lab`), {
      timeout: 170 * 1000
    });
    await expect(page.locator('#jp-main-dock-panel')).toBeVisible({
      timeout: 60 * 1000
    });
    const xsrf = (await context.cookies()).find(
      k => k.name === '_xsrf' && k.path.startsWith(`/user/${name}`)
    );
    const setting = async (plugin: string, raw: string): Promise<void> => {
      const set = await page.request.put(
        `/user/${name}/lab/api/settings/${plugin}`,
        { data: { raw }, headers: { 'X-XSRFToken': xsrf ? xsrf.value : '' } }
      );
      expect(set.status(), await set.text()).toBe(204);
    };
    // no "Jupyter news?" toast over the screenshots
    await setting(
      '@jupyterlab/apputils-extension:notification',
      '{"fetchNews": "false"}'
    );
    if (c.lang === 'zh') {
      await setting(
        '@jupyterlab/translation-extension:plugin',
        '{"locale": "zh_CN"}'
      );
    }
    await page.goto(`/user/${name}/lab/tree/course/${course}/lab1/lab1.ipynb`);
    const notebook = page.locator('.jp-NotebookPanel');
    await expect(notebook.locator('.jp-MarkdownOutput h1')).toContainText(
      'Lab 1',
      { timeout: 60 * 1000 }
    );
    await expect(notebook.locator('.jp-CodeCell').first()).toContainText(
      'answer = 6 * 7'
    );
    if (c.lang === 'zh') {
      // the lab itself speaks Chinese: its File menu is 文件
      await expect(
        page.locator('.lm-MenuBar-itemLabel', { hasText: '文件' })
      ).toBeVisible();
    }
    if (shot) {
      await page.screenshot({ path: path.join(SHOTS, shot) });
    }
    if (fromLab) {
      // a model registered from the hand-out's notebook: the submission brings it along
      const folder = `course/${course}/lab1`;
      fs.writeFileSync(
        path.join(ROOT as string, 'data', 'users', name, folder, 'answer.bin'),
        'weights of the answer'
      );
      const token = await userToken(page.request, name);
      const registered = await storeCall(
        page.request,
        token,
        'POST',
        'models',
        {
          name: 'answer',
          path: `${folder}/answer.bin`,
          source: `${folder}/lab1.ipynb`,
          metrics: { accuracy: 0.9 }
        }
      );
      expect(registered.status, JSON.stringify(registered.body)).toBe(201);
      // the submission, from the lab's Course panel
      await page
        .locator('.lm-TabBar-tab[data-id="cube-lab-course-panel"]')
        .click();
      const mine = page.locator(
        `.cube-Course[data-course="${course}"] .cube-Handout[data-handout="lab1"]`
      );
      await expect(mine.locator('[data-field=status]')).toHaveText(
        c.notSubmitted
      );
      // the teacher's model, handed out with the folder: read-only in the course
      await expect(mine.locator('[data-material]')).toHaveText([
        c.material(course)
      ]);
      await mine.locator('[data-action=submit]').click();
      await page.locator('.jp-Dialog .jp-mod-accept').click();
      await expect(page.locator('.cube-CoursePanel-message')).toContainText(
        c.labSubmitted
      );
      await expect(page.locator('.cube-CoursePanel-message')).toContainText(
        c.withModel
      );
      await expect(mine.locator('[data-field=status]')).toContainText(
        c.labStatus
      );
      await page.screenshot({
        path: path.join(SHOTS, `hub-course-lab-panel-${c.lang}.png`)
      });
      // the same panel in the dark theme
      await setting(
        '@jupyterlab/apputils-extension:themes',
        '{"theme": "JupyterLab Dark"}'
      );
      await page.reload();
      await expect(notebook.locator('.jp-CodeCell').first()).toBeVisible({
        timeout: 60 * 1000
      });
      // the restored layout may have the panel open already
      const tab = page.locator(
        '.lm-TabBar-tab[data-id="cube-lab-course-panel"]'
      );
      if (!/lm-mod-current/.test((await tab.getAttribute('class')) ?? '')) {
        await tab.click();
      }
      await expect(mine).toBeVisible();
      await expect(mine.locator('[data-field=status]')).toContainText(
        c.labStatus
      );
      await expect(page.locator('body')).toHaveAttribute(
        'data-jp-theme-light',
        'false'
      );
      await page.screenshot({
        path: path.join(SHOTS, `hub-course-lab-panel-dark-${c.lang}.png`)
      });
      return;
    }
    // the submission, on the student's own course page: their hand-out, nobody else's
    await page.goto(`/services/cube-admin/courses/${course}`);
    await expect(
      page.getByRole('heading', { name: c.heading(course) })
    ).toBeVisible();
    const row = page.locator('#my-handouts tr[data-handout="lab1"]');
    await expect(row.locator('[data-field=submission]')).not.toContainText(
      c.onTime
    );
    await expect(page.locator('body')).not.toContainText(other);
    await expect(page.locator('#members')).toHaveCount(0);
    await row.locator('[data-action=submit]').click();
    await expect(page.locator('#cube-message')).toHaveText(c.submitted);
    await expect(row.locator('[data-field=submission]')).toContainText(
      c.onTime
    );
    if (shot) {
      await page.screenshot({
        path: path.join(SHOTS, shot.replace('-lab-', '-page-'))
      });
    }
  } finally {
    await context.close();
  }
}

for (const c of CASES) {
  test.describe(`a class on the hub (${c.lang})`, () => {
    test.use({ locale: c.locale, viewport: VIEWPORT });

    test(`teacher hands out, two students submit (${c.lang})`, async ({
      page,
      browser
    }) => {
      test.setTimeout(600 * 1000);
      const course = `ml-${c.lang}`;
      const students = [`s1${c.lang}`, `s2${c.lang}`];
      const display = ['王伟', '李娜'];
      fs.mkdirSync(SHOTS, { recursive: true });
      await loginAsAdmin(page);

      // the course, with the admin page's New course form (a bad name first)
      await page.goto('/services/cube-admin/');
      await page.locator('#new-course-name').fill('bad name!');
      await page.locator('#create-course').click();
      await expect(page.locator('#cube-message')).toHaveClass(/alert-danger/);
      await page.locator('#new-course-name').fill(course);
      await page.locator('#new-course-servers').fill('10');
      await page.locator('#create-course').click();
      await expect(page.locator('#cube-message')).toHaveText(c.created(course));
      const listed = page.locator(`#course-list tr[data-course="${course}"]`);
      await expect(listed.locator('a')).toHaveAttribute(
        'href',
        `/services/cube-admin/courses/${course}`
      );
      // (instant: the hub's Bootstrap scrolls smoothly)
      await page
        .locator('#courses')
        .evaluate(el => el.scrollIntoView({ behavior: 'instant' }));
      await page.screenshot({
        path: path.join(SHOTS, `hub-course-admin-courses-${c.lang}.png`)
      });
      const made = await adminCall(page, 'GET', `api/courses/${course}`);
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      expect(made.body.quota.servers).toBe(10);
      expect(made.body.profiles).toEqual(['cpu']);

      // the roster, on the admin page: the teacher and two students
      const card = page.locator(`.cube-group[data-group="${course}"]`);
      await expect(card).toBeVisible();
      const csv =
        'user name,display name,e-mail,role\n' +
        'admin,林老师,lin@example.edu,teacher\n' +
        `${students[0]},${display[0]},${students[0]}@example.edu,学生\n` +
        `${students[1]},${display[1]},${students[1]}@example.edu,student\n`;
      await card.locator('[data-role=roster-file]').setInputFiles({
        name: 'roster.csv',
        mimeType: 'text/csv',
        buffer: Buffer.from(csv, 'utf-8')
      });
      await card.locator('[data-action=import-roster]').click();
      const report = page
        .locator(`.cube-group[data-group="${course}"]`)
        .locator('table.roster-report');
      await expect(report).toBeVisible({ timeout: 30 * 1000 });
      const passwords: string[] = [];
      for (const s of students) {
        const row = report.locator('tbody tr', { hasText: s });
        await expect(row.locator('td').nth(2)).toHaveText(
          display[students.indexOf(s)]
        );
        // the role and the account's state, in the page's language
        await expect(row.locator('td').nth(3)).toHaveText(
          c.lang === 'zh' ? '学生' : 'student'
        );
        await expect(row.locator('td').nth(4)).toHaveText(
          c.lang === 'zh' ? '新建账号' : 'new account'
        );
        passwords.push((await row.locator('td').nth(6).innerText()).trim());
      }
      expect(passwords.every(p => p.length >= 8)).toBe(true);
      await report.scrollIntoViewIfNeeded();
      await page.screenshot({
        path: path.join(SHOTS, `hub-course-roster-${c.lang}.png`)
      });

      // the teacher's model, registered through the cube-lab service
      writeStarter(`lab1-starter-${c.lang}`);
      fs.writeFileSync(
        path.join(ROOT as string, 'data', 'users', 'admin', 'base.bin'),
        'weights of the base model'
      );
      const teacher = await userToken(page.request, 'admin');
      const base = await storeCall(page.request, teacher, 'POST', 'models', {
        name: `base-${c.lang}`,
        path: 'base.bin',
        metrics: { accuracy: 0.8 }
      });
      expect(base.status, JSON.stringify(base.body)).toBe(201);

      // the hand-out, on the course page: the starter folder and the model
      await page.goto(`/services/cube-admin/courses/${course}`);
      await expect(
        page.getByRole('heading', { name: c.heading(course) })
      ).toBeVisible();
      await page.locator('#handout-source').fill(`lab1-starter-${c.lang}`);
      await page.locator('#handout-name').fill('lab1');
      await page.locator('#handout-models').fill(`base-${c.lang}`);
      await page.locator('#hand-out').click();
      await expect(page.locator('#cube-message')).toHaveText(c.handedOut);
      const handout = page.locator('.cube-handout[data-handout="lab1"]');
      await expect(handout).toBeVisible({ timeout: 30 * 1000 });
      await expect(handout.locator('.cube-material')).toContainText(
        `${course}/base-${c.lang}:v1`
      );

      // the students, one after the other (a server each: slow on 2 cores): the first on
      // the course page, the second from the lab's Course panel
      for (let i = 0; i < students.length; i++) {
        await studentSubmits(
          browser,
          c,
          course,
          students[i],
          passwords[i],
          i === 0 ? `hub-course-student-lab-${c.lang}.png` : null,
          display[1 - i],
          i === 1
        );
      }

      // the teacher sees both, on time, with the display names and the running servers
      await page.reload();
      for (let i = 0; i < students.length; i++) {
        const row = handout.locator(`tr[data-student="${students[i]}"]`);
        await expect(row).toContainText(display[i]);
        await expect(row.locator('td').nth(1)).toHaveText(c.onTime);
        // the notebook (and the second student's model file)
        await expect(row.locator('td').nth(3)).toHaveText(i === 1 ? '2' : '1');
        // the second student's model, copied into the teacher's project
        await expect(row.locator('td').nth(4)).toHaveText(
          i === 1 ? `${course}.lab1.answer v1` : ''
        );
        await expect(
          page.locator(`#members tr[data-member="${students[i]}"]`)
        ).toContainText(display[i]);
      }
      await expect(page.locator('[data-total=running]')).toHaveText('2');
      const usage = page.locator(
        `#members tr[data-member="${students[0]}"] [data-field=usage]`
      );
      await expect(usage).toHaveText(c.resources);
      // the live refresh words them the same
      await usage.evaluate(el => (el.textContent = '?'));
      await expect(usage).toHaveText(c.resources, { timeout: 20 * 1000 });
      await page.screenshot({
        path: path.join(SHOTS, `hub-course-page-${c.lang}.png`),
        fullPage: false
      });
      // the hand-out and its submissions, below the members
      await handout.scrollIntoViewIfNeeded();
      await page.screenshot({
        path: path.join(SHOTS, `hub-course-submissions-${c.lang}.png`)
      });
      // the submissions are in the teacher's space, with the manifest
      const where = path.join(
        ROOT as string,
        'data',
        'users',
        'admin',
        'course',
        course,
        'lab1',
        'submissions'
      );
      for (const s of students) {
        expect(fs.existsSync(path.join(where, s, 'lab1.ipynb'))).toBe(true);
      }
      const manifest = JSON.parse(
        fs.readFileSync(path.join(where, 'manifest.json'), 'utf-8')
      );
      expect(Object.keys(manifest.submissions).sort()).toEqual(students);

      // the teacher stops the students' servers with a reason
      page.on('dialog', dialog => dialog.accept('end of the lab'));
      for (const s of students) {
        await page
          .locator(`#members button[data-action=stop][data-user="${s}"]`)
          .click();
        // stopping a server waits for its process to end: seconds on a busy machine
        await expect(page.locator('#cube-message')).toHaveClass(
          /alert-success/,
          { timeout: 60_000 }
        );
      }
    });
  });
}
