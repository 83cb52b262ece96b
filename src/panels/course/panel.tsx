/**
 * The "Course" side panel: the hand-outs of this student's courses, their
 * deadline and state, and Submit; for teachers and assistants a link to the
 * hub's course page.
 */
import { Dialog, ReactWidget, showDialog } from '@jupyterlab/apputils';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { Message } from '@lumino/messaging';
import * as React from 'react';

import { ErrorBox } from '../errorbox';
import type { ErrorText } from '../formpage';
import {
  Course,
  describeError,
  Handout,
  myCourses,
  MyCourses,
  submitHandout
} from '../../api';
import { uiLanguage } from '../../locale';
import {
  canSubmit,
  deadlineText,
  extrasText,
  formatEpoch,
  isOverdue,
  isStaff,
  materialRef,
  sortCourses,
  sortHandouts,
  statusText
} from './logic';

export class CoursePanel extends ReactWidget {
  constructor(options: CoursePanel.IOptions) {
    super();
    this.addClass('cube-CoursePanel');
    this._trans = options.translator.load('cube_lab');
    this._execute = options.commands;
    this._confirm = options.confirm ?? (o => this._defaultConfirm(o));
    this._data = options.initial ?? null;
    this.title.label = this._trans.__('Course');
    this.title.caption = this._trans.__('Your courses and hand-outs');
  }

  /** Read `courses/mine` again. */
  async refresh(): Promise<void> {
    try {
      this._data = await myCourses();
      this._error = null;
    } catch (err) {
      this._error = describeError(err);
    }
    this.update();
  }

  /** Submit a hand-out after confirming. Resolves when done. */
  async submit(course: string, handout: string): Promise<void> {
    const trans = this._trans;
    const h = this._find(course, handout);
    const late = h ? isOverdue(h) : false;
    const folder = h?.folder ?? `course/${course}/${handout}`;
    const ok = await this._confirm({ course, handout, folder, late });
    if (!ok) {
      return;
    }
    const key = `${course}/${handout}`;
    this._busy.add(key);
    this._message = null;
    this._error = null;
    this.update();
    try {
      const r = await submitHandout(course, handout);
      const at = formatEpoch(r.at, uiLanguage());
      const n = Array.isArray(r.files) ? r.files.length : 0;
      this._message = r.late
        ? this._trans._n(
            'Submitted %2 at %3: %1 file, marked late.',
            'Submitted %2 at %3: %1 files, marked late.',
            n,
            handout,
            at
          )
        : this._trans._n(
            'Submitted %2 at %3: %1 file.',
            'Submitted %2 at %3: %1 files.',
            n,
            handout,
            at
          );
      const extras = extrasText(
        r.models?.length ?? 0,
        r.runs?.length ?? 0,
        trans
      );
      if (extras) {
        this._message = trans.__('%1 %2.', this._message, extras);
      }
      this._busy.delete(key);
      await this.refresh();
    } catch (err) {
      this._busy.delete(key);
      this._error = describeError(err);
      this.update();
    }
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    if (!this._started) {
      this._started = true;
      if (!this._data) {
        void this.refresh();
      }
    }
  }

  private _find(course: string, handout: string): Handout | undefined {
    return this._data?.courses
      .find(c => c.name === course)
      ?.handouts.find(h => h.name === handout);
  }

  private async _defaultConfirm(o: CoursePanel.IConfirm): Promise<boolean> {
    const trans = this._trans;
    const body = o.late
      ? trans.__(
          'Your folder %1 is copied to the teacher now. The deadline has passed: this submission will be marked late.',
          o.folder
        )
      : trans.__(
          'Your folder %1 is copied to the teacher now. You can submit again until the deadline; the last submission counts.',
          o.folder
        );
    const result = await showDialog({
      title: trans.__('Submit %1?', o.handout),
      body,
      buttons: [
        Dialog.cancelButton({ label: trans.__('Cancel') }),
        Dialog.okButton({ label: trans.__('Submit') })
      ]
    });
    return result.button.accept;
  }

  render(): JSX.Element {
    const trans = this._trans;
    const data = this._data;
    return (
      <div className="cube-CoursePanel-body">
        <div className="cube-CoursePanel-toolbar">
          <button
            className="jp-Button jp-mod-minimal cube-CoursePanel-refresh"
            data-action="refresh"
            title={trans.__('Refresh')}
            onClick={() => void this.refresh()}
          >
            {trans.__('Refresh')}
          </button>
        </div>
        {this._message ? (
          <div className="cube-CoursePanel-message" role="status">
            {this._message}
          </div>
        ) : null}
        {this._error ? (
          <ErrorBox
            error={this._error}
            dismiss={() => {
              this._error = null;
              this.update();
            }}
            dismissLabel={trans.__('Dismiss')}
          />
        ) : null}
        {!data ? (
          <div className="cube-CoursePanel-empty">
            <span className="cube-Spinner" /> {trans.__('Loading…')}
          </div>
        ) : data.courses.length === 0 ? (
          <div className="cube-CoursePanel-empty">
            {trans.__('You are in no course.')}
          </div>
        ) : (
          sortCourses(data.courses).map(c => this._renderCourse(c, trans))
        )}
      </div>
    );
  }

  private _renderCourse(c: Course, trans: TranslationBundle): JSX.Element {
    return (
      <div className="cube-Course" data-course={c.name} key={c.name}>
        <div className="cube-Course-name">{c.name}</div>
        {isStaff(c) ? (
          <div className="cube-Course-staff">
            <a href={c.page} target="_blank" rel="noopener noreferrer">
              {trans.__('Open the course page')}
            </a>
          </div>
        ) : c.handouts.length === 0 ? (
          <div className="cube-CoursePanel-empty">
            {trans.__('No hand-outs yet.')}
          </div>
        ) : (
          sortHandouts(c.handouts).map(h => this._renderHandout(c, h, trans))
        )}
      </div>
    );
  }

  private _renderHandout(
    c: Course,
    h: Handout,
    trans: TranslationBundle
  ): JSX.Element {
    const lang = uiLanguage();
    const overdue = isOverdue(h);
    const busy = this._busy.has(`${c.name}/${h.name}`);
    return (
      <div
        className={`cube-Handout${overdue ? ' cube-mod-overdue' : ''}`}
        data-handout={h.name}
        key={h.name}
      >
        <div className="cube-Handout-name">{h.name}</div>
        <div className="cube-Handout-deadline" data-field="deadline">
          {deadlineText(h, trans, lang)}
          {overdue ? (
            <span className="cube-Handout-overdue">
              {' · '}
              {trans.__('Overdue')}
            </span>
          ) : null}
        </div>
        <div className="cube-Handout-status" data-field="status">
          {statusText(h, trans, lang)}
          {h.submission
            ? this._extras(h.submission.models ?? 0, h.submission.runs ?? 0)
            : null}
        </div>
        {this._renderMaterial(h, trans)}
        {canSubmit(h) ? (
          <div className="cube-Handout-actions">
            <button
              className="jp-mod-styled cube-Handout-open"
              data-action="open"
              onClick={() =>
                void this._execute('filebrowser:go-to-path', {
                  path: h.folder ?? ''
                })
              }
            >
              {trans.__('Open folder')}
            </button>
            <button
              className="jp-mod-styled jp-mod-accept"
              data-action="submit"
              disabled={busy}
              onClick={() => void this.submit(c.name, h.name)}
            >
              {busy ? (
                <>
                  <span className="cube-Spinner" /> {trans.__('Submitting…')}
                </>
              ) : (
                trans.__('Submit')
              )}
            </button>
          </div>
        ) : null}
      </div>
    );
  }

  private _extras(models: number, runs: number): JSX.Element | null {
    const text = extrasText(models, runs, this._trans);
    return text ? (
      <span className="cube-Handout-extras">
        {' · '}
        {text}
      </span>
    ) : null;
  }

  /** The models and datasets handed out with it, read-only in the course. */
  private _renderMaterial(
    h: Handout,
    trans: TranslationBundle
  ): JSX.Element | null {
    const items = [
      ...(h.models ?? []).map(m => ({ kind: trans.__('Model'), m })),
      ...(h.datasets ?? []).map(m => ({ kind: trans.__('Dataset'), m }))
    ];
    if (!items.length) {
      return null;
    }
    return (
      <ul
        className="cube-Handout-material"
        title={trans.__(
          "Read-only in the course's project: the Models panel lists the models; cube_lab.datasets.load(NAME, project=...) reads a dataset."
        )}
      >
        {items.map(({ kind, m }) => (
          <li key={`${kind}:${materialRef(m)}`} data-material={materialRef(m)}>
            <span className="cube-Handout-materialKind">{kind}</span>{' '}
            <code>{materialRef(m)}</code>
          </li>
        ))}
      </ul>
    );
  }

  private _trans: TranslationBundle;
  private _execute: CoursePanel.Commands;
  private _confirm: (o: CoursePanel.IConfirm) => Promise<boolean>;
  private _data: MyCourses | null;
  private _error: ErrorText | null = null;
  private _message: string | null = null;
  private _busy = new Set<string>();
  private _started = false;
}

export namespace CoursePanel {
  export type Commands = (id: string, args: Record<string, string>) => unknown;

  export interface IConfirm {
    course: string;
    handout: string;
    folder: string;
    late: boolean;
  }

  export interface IOptions {
    translator: ITranslator;
    /** Run a JupyterLab command (e.g. `app.commands.execute`). */
    commands: Commands;
    /** The answer of `courses/mine` read at activation. */
    initial?: MyCourses;
    /** Ask before submitting (default: a JupyterLab dialog). */
    confirm?: (o: IConfirm) => Promise<boolean>;
  }
}
