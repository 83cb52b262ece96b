/**
 * The Course side panel (src/panels/course): its text helpers; a student's
 * hand-outs rendered (late, not submitted, read-only, not handed out yet);
 * Submit posting to the API and showing the success line, then the list read
 * again; an error answer shown with its detail; no panel outside the hub.
 */
import { ServerConnection } from '@jupyterlab/services';
import { nullTranslator } from '@jupyterlab/translation';
import { MessageLoop } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import type { Handout, MyCourses } from '../api';
import { CoursePanel, setupCourses } from '../panels/course';
import {
  canSubmit,
  deadlineText,
  extrasText,
  isOverdue,
  materialRef,
  sortHandouts,
  statusText
} from '../panels/course/logic';

const trans = nullTranslator.load('cube_lab');
const NOW = Date.now() / 1000;

function handout(over: Partial<Handout>): Handout {
  return {
    name: 'lab1',
    mode: 'copy',
    deadline: null,
    folder: 'course/ai101/lab1',
    handed_out: true,
    submission: null,
    ...over
  };
}

const DATA: MyCourses = {
  hub: true,
  user: 'stu1',
  courses: [
    {
      name: 'ai101',
      role: 'student',
      page: '/services/cube-admin/courses/ai101',
      handouts: [
        handout({
          name: 'lab0',
          folder: 'course/ai101/lab0',
          deadline: NOW - 3600,
          submission: { at: NOW - 60, late: true, how: 'submit', files: 2 }
        }),
        handout({ name: 'lab1', deadline: NOW + 86400 }),
        handout({
          name: 'notes',
          mode: 'readonly',
          folder: 'course/ai101/notes'
        }),
        handout({
          name: 'lab9',
          handed_out: false,
          folder: 'course/ai101/lab9'
        }),
        handout({
          name: 'base',
          mode: 'readonly',
          folder: null,
          handed_out: false,
          models: [
            { ref: 'resnet', project: 'ai101', name: 'resnet', version: 1 }
          ],
          datasets: [
            { ref: 'pets', project: 'ai101', name: 'pets', version: null }
          ]
        })
      ]
    },
    {
      name: 'ml200',
      role: 'assistant',
      page: '/services/cube-admin/courses/ml200',
      handouts: []
    }
  ]
};

describe('course logic', () => {
  it('says the deadline, overdue and the state', () => {
    expect(deadlineText(handout({}), trans)).toBe('No deadline');
    expect(deadlineText(handout({ deadline: NOW }), trans)).toMatch(/^Due /);
    expect(isOverdue(handout({ deadline: NOW - 1 }))).toBe(true);
    expect(isOverdue(handout({ deadline: NOW + 60 }))).toBe(false);
    expect(isOverdue(handout({}))).toBe(false);
    expect(statusText(handout({}), trans)).toBe('Not submitted yet');
    expect(statusText(handout({ mode: 'readonly' }), trans)).toBe(
      'Shared read-only'
    );
    expect(statusText(handout({ handed_out: false }), trans)).toBe(
      'Not in your space yet'
    );
    const s = { at: NOW, late: false, how: 'submit' as const, files: 3 };
    expect(statusText(handout({ submission: s }), trans)).toMatch(
      /^Submitted .* \(3 files\)$/
    );
    expect(
      statusText(handout({ submission: { ...s, late: true } }), trans)
    ).toMatch(/^Submitted late /);
    expect(
      statusText(handout({ submission: { ...s, how: 'collect' } }), trans)
    ).toMatch(/^Collected at the deadline /);
    expect(canSubmit(handout({ mode: 'readonly' }))).toBe(false);
    expect(canSubmit(handout({ handed_out: false }))).toBe(false);
    expect(statusText(handout({ folder: null }), trans)).toBe(
      "Read-only in the course's project"
    );
    expect(canSubmit(handout({ folder: null }))).toBe(false);
  });

  it('names material and what a submission brought along', () => {
    const m = { ref: 'r', project: 'ai101', name: 'resnet', version: 3 };
    expect(materialRef(m)).toBe('ai101/resnet:v3');
    expect(materialRef({ ...m, version: null })).toBe('ai101/resnet');
    expect(extrasText(0, 0, trans)).toBe('');
    expect(extrasText(1, 2, trans)).toBe('With it: 1 model, 2 runs');
    expect(extrasText(0, 1, trans)).toBe('With it: 1 run');
  });

  it('sorts by deadline, no deadline last', () => {
    const sorted = sortHandouts([
      handout({ name: 'b' }),
      handout({ name: 'c', deadline: NOW + 10 }),
      handout({ name: 'a' }),
      handout({ name: 'd', deadline: NOW - 10 })
    ]);
    expect(sorted.map(h => h.name)).toEqual(['d', 'c', 'a', 'b']);
  });
});

type Answer = { status: number; body: unknown };

/** Answers the panel's requests by method and path; records them. */
function server(route: (method: string, url: string) => Answer) {
  const seen: string[] = [];
  const spy = jest
    .spyOn(ServerConnection, 'makeRequest')
    .mockImplementation(async (url: string, init: RequestInit) => {
      const method = init?.method ?? 'GET';
      seen.push(`${method} ${url.replace(/^.*\/cube\/api\/v1\//, '')}`);
      const { status, body } = route(method, url);
      return {
        ok: status < 400,
        status,
        statusText: String(status),
        url,
        headers: new Headers({ 'Content-Type': 'application/json' }),
        text: async () => JSON.stringify(body),
        json: async () => body
      } as unknown as Response;
    });
  return { seen, spy };
}

async function settle(panel: Widget): Promise<void> {
  for (let i = 0; i < 5; i++) {
    MessageLoop.sendMessage(panel, Widget.Msg.UpdateRequest);
    await new Promise(r => setTimeout(r, 10));
  }
}

describe('CoursePanel', () => {
  let panel: CoursePanel;
  let opened: [string, Record<string, string>][];

  beforeEach(() => {
    opened = [];
    panel = new CoursePanel({
      translator: nullTranslator,
      initial: DATA,
      commands: (id, args) => opened.push([id, args]),
      confirm: async () => true
    });
    Widget.attach(panel, document.body);
  });

  afterEach(() => {
    panel.dispose();
    jest.restoreAllMocks();
  });

  const q = (sel: string) => panel.node.querySelector(sel) as HTMLElement;

  it("shows a student's hand-outs and the staff's course page", async () => {
    await settle(panel);
    const ai101 = q('.cube-Course[data-course="ai101"]');
    const names = [...ai101.querySelectorAll('.cube-Handout')].map(e =>
      e.getAttribute('data-handout')
    );
    expect(names).toEqual(['lab0', 'lab1', 'base', 'lab9', 'notes']);
    const base = q('.cube-Handout[data-handout="base"]');
    expect(
      [...base.querySelectorAll('[data-material]')].map(e => e.textContent)
    ).toEqual(['Model ai101/resnet:v1', 'Dataset ai101/pets']);
    expect(base.querySelector('button')).toBeNull();
    expect(base.textContent).toContain("Read-only in the course's project");
    const lab0 = q('.cube-Handout[data-handout="lab0"]');
    expect(lab0.classList).toContain('cube-mod-overdue');
    expect(lab0.querySelector('[data-field=status]')!.textContent).toMatch(
      /^Submitted late /
    );
    const lab1 = q('.cube-Handout[data-handout="lab1"]');
    expect(lab1.querySelector('[data-field=status]')!.textContent).toBe(
      'Not submitted yet'
    );
    expect(lab1.querySelector('[data-action=submit]')).not.toBeNull();
    const notes = q('.cube-Handout[data-handout="notes"]');
    expect(notes.querySelector('[data-action=submit]')).toBeNull();
    expect(notes.textContent).toContain('Shared read-only');
    expect(
      q('.cube-Handout[data-handout="lab9"]').querySelector('button')
    ).toBeNull();
    const link = q('.cube-Course[data-course="ml200"] a') as HTMLAnchorElement;
    expect(link.getAttribute('href')).toBe(
      '/services/cube-admin/courses/ml200'
    );
    (lab1.querySelector('[data-action=open]') as HTMLButtonElement).click();
    expect(opened).toEqual([
      ['filebrowser:go-to-path', { path: 'course/ai101/lab1' }]
    ]);
  });

  it('submits, says so and reads the list again', async () => {
    const after = JSON.parse(JSON.stringify(DATA)) as MyCourses;
    after.courses[0].handouts[1].submission = {
      at: NOW,
      late: false,
      how: 'submit',
      files: 2,
      models: 1,
      runs: 1
    };
    const { seen } = server((method, url) =>
      method === 'POST'
        ? {
            status: 201,
            body: {
              student: 'stu1',
              at: NOW,
              late: false,
              how: 'submit',
              files: [{ path: 'a.ipynb' }, { path: 'b.py' }],
              models: [{ from: {}, to: {} }],
              runs: [{ kind: 'pipeline', id: 'r1', name: 'p', status: 'ok' }]
            }
          }
        : { status: 200, body: after }
    );
    await settle(panel);
    await panel.submit('ai101', 'lab1');
    await settle(panel);
    expect(seen).toEqual([
      'POST courses/ai101/handouts/lab1/submit',
      'GET courses/mine'
    ]);
    expect(q('.cube-CoursePanel-message').textContent).toMatch(
      /^Submitted lab1 at .*: 2 files\. With it: 1 model, 1 run\.$/
    );
    expect(
      q('.cube-Handout[data-handout="lab1"] [data-field=status]').textContent
    ).toMatch(/\(2 files\) · With it: 1 model, 1 run$/);
  });

  it('shows an error with its detail and lets the student try again', async () => {
    server(() => ({
      status: 400,
      body: {
        error: 'stu1 has no folder course/ai101/lab1',
        detail: 'Work in the handed-out folder.'
      }
    }));
    await settle(panel);
    await panel.submit('ai101', 'lab1');
    await settle(panel);
    expect(panel.node.textContent).toContain(
      'stu1 has no folder course/ai101/lab1'
    );
    expect(panel.node.textContent).toContain('Work in the handed-out folder.');
    const button = q(
      '.cube-Handout[data-handout="lab1"] [data-action=submit]'
    ) as HTMLButtonElement;
    expect(button.disabled).toBe(false);
    expect(panel.node.querySelector('.cube-CoursePanel-message')).toBeNull();
  });
});

describe('setupCourses', () => {
  it('adds nothing outside the hub', () => {
    const added: unknown[] = [];
    const sidebar = { addPanel: (...a: unknown[]) => added.push(a) };
    const app = { commands: { addCommand: jest.fn() } };
    const got = setupCourses(app as any, sidebar as any, nullTranslator, null, {
      hub: false,
      user: 'alice',
      courses: []
    });
    expect(got).toBeNull();
    expect(added).toEqual([]);
    expect(app.commands.addCommand).not.toHaveBeenCalled();
  });

  it('adds the panel and its commands on the hub', () => {
    const added: unknown[] = [];
    const sidebar = { addPanel: (...a: unknown[]) => added.push(a) };
    const app = { commands: { addCommand: jest.fn(), execute: jest.fn() } };
    const got = setupCourses(
      app as any,
      sidebar as any,
      nullTranslator,
      null,
      DATA
    );
    expect(got).toBeInstanceOf(CoursePanel);
    expect(added).toHaveLength(1);
    expect(app.commands.addCommand.mock.calls.map(c => c[0])).toEqual([
      'cube-lab:show-courses',
      'cube-lab:submit-handout'
    ]);
    got?.dispose();
  });
});
