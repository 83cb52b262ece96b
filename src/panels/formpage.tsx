/**
 * The frame of a form in a main-area tab (training launch, tuning
 * experiment, labeling dataset / project): a title and an intro above the
 * form, per-field errors cleared as the fields change, and a submit that
 * checks the form, calls the server and shows what went wrong.
 */
import { ReactWidget } from '@jupyterlab/apputils';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { describeError, Project, whoami } from '../api';

export type ErrorText = { error: string; detail: string };

/** What a form's check gives: the request to send, or the fields' errors. */
export interface IChecked<Field extends string, Request> {
  request: Request | null;
  errors: Partial<Record<Field, string>>;
}

/** One form's values and the errors of its fields. */
export class FormState<Form, Field extends string> {
  constructor(public value: Form) {}

  errors: Partial<Record<Field, string>> = {};

  /** Take `patch` in and forget the errors of the fields it changes. */
  change(patch: Partial<Form>): void {
    this.value = { ...this.value, ...patch };
    for (const key of Object.keys(patch) as Field[]) {
      delete this.errors[key];
    }
  }
}

/** The props every form of a form page takes. */
export interface IFormProps<Form, Field extends string> {
  form: Form;
  errors: Partial<Record<Field, string>>;
  /** The server's answer to the last submit ({error, detail}). */
  submitError: ErrorText | null;
  busy: boolean;
  projects: Project[];
  trans: TranslationBundle;
  onChange: (patch: Partial<Form>) => void;
  onSubmit: () => void;
  onCancel: () => void;
}

/**
 * A form page: `title.label` as its heading, `intro()` below it, then
 * `renderForm()`. The user's projects are read once (`identified` sees who
 * the user is); without them the personal project is used.
 */
export abstract class FormPage extends ReactWidget {
  constructor(options: FormPage.IOptions) {
    super();
    this.addClass('cube-FormPage');
    this.addClass(options.className);
    this.trans = options.translator.load('cube_lab');
    this.closeTab = options.close;
    whoami()
      .then(me => {
        this.projects = me.projects;
        this.identified(me.user);
        this.update();
      })
      .catch(() => {
        // without the projects, the personal project is used
      });
  }

  /** The text under the heading. */
  protected abstract intro(): string;

  /** The form (and what goes with it). */
  protected abstract renderForm(): JSX.Element;

  /** Called once the user's name and projects are known. */
  protected identified(user: string): void {
    // nothing by default
  }

  protected render(): JSX.Element {
    return (
      <div className="cube-FormPage-body">
        <h2 className="cube-FormPage-title">{this.title.label}</h2>
        <p className="cube-FormPage-intro">{this.intro()}</p>
        {this.renderForm()}
      </div>
    );
  }

  /** The props of the form that shows `state`; `submit` sends it. */
  protected formProps<Form, Field extends string>(
    state: FormState<Form, Field>,
    submit: () => Promise<void>
  ): IFormProps<Form, Field> {
    return {
      form: state.value,
      errors: state.errors,
      submitError: this.submitError,
      busy: this.busy,
      projects: this.projects,
      trans: this.trans,
      onChange: patch => {
        state.change(patch);
        this.update();
      },
      onSubmit: () => void submit(),
      onCancel: this.closeTab
    };
  }

  /**
   * Check `state` with `check`; when it passes, send the request with
   * `send` and hand the server's answer to `done`. A failure shows in the
   * form; the form is busy meanwhile.
   */
  protected async submit<Form, Field extends string, Request, Result>(
    state: FormState<Form, Field>,
    check: (form: Form, trans: TranslationBundle) => IChecked<Field, Request>,
    send: (request: Request) => Promise<Result>,
    done: (result: Result) => void
  ): Promise<void> {
    const { request, errors } = check(state.value, this.trans);
    state.errors = errors;
    this.submitError = null;
    if (!request) {
      this.update();
      return;
    }
    this.busy = true;
    this.update();
    try {
      const result = await send(request);
      this.busy = false;
      done(result);
    } catch (err) {
      this.submitError = describeError(err);
    } finally {
      this.busy = false;
      if (!this.isDisposed) {
        this.update();
      }
    }
  }

  protected readonly trans: TranslationBundle;
  protected readonly closeTab: () => void;
  protected projects: Project[] = [];
  protected submitError: ErrorText | null = null;
  protected busy = false;
}

export namespace FormPage {
  export interface IOptions {
    translator: ITranslator;
    /** The page's own CSS class, next to `cube-FormPage`. */
    className: string;
    /** Close the tab. */
    close: () => void;
  }
}
