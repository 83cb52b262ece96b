/**
 * "Register as model": the dialog opened from the file browser context menu.
 */
import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import {
  describeError,
  ModelVersion,
  Project,
  registerModel,
  WhoAmI
} from '../../api';
import { suggestModelName, validateModelName } from '../../validate';

export interface IRegisterValues {
  name: string;
  project: string;
  description: string;
  flavor: string;
}

/** Show a "Registering…" notice when the server takes longer than this. */
const PENDING_NOTICE_MS = 1000;

export const FLAVORS = [
  'sklearn',
  'pytorch',
  'transformers',
  'onnx',
  'generic'
];

/** The project a new model goes to by default: my personal project. */
export function defaultProject(me: WhoAmI): string {
  const personal = me.projects.find(
    p => p.kind === 'personal' && p.name === me.user
  );
  return (
    personal?.name ??
    me.projects.find(p => p.kind === 'personal')?.name ??
    me.projects[0]?.name ??
    me.user
  );
}

/**
 * The dialog body: name (validated as you type), project, flavor and
 * description, plus the last error from the server.
 */
export class RegisterForm
  extends Widget
  implements Dialog.IBodyWidget<IRegisterValues>
{
  constructor(options: RegisterForm.IOptions) {
    super();
    const { trans, values, projects, path, isDirectory } = options;
    this._trans = trans;
    this.addClass('cube-RegisterForm');

    const form = document.createElement('form');
    form.className = 'cube-Form';
    form.addEventListener('submit', e => e.preventDefault());

    // What gets registered: the name, then the folder it is in.
    const what = document.createElement('div');
    what.className = 'cube-Form-path';
    what.title = path;
    const kind = document.createElement('span');
    kind.className = 'cube-Form-label';
    kind.textContent = isDirectory ? trans.__('Folder') : trans.__('File');
    const code = document.createElement('code');
    code.textContent = path.split('/').pop() ?? path;
    code.title = path;
    what.append(kind, ' ', code);
    const slash = path.lastIndexOf('/');
    if (slash > 0) {
      const dir = document.createElement('div');
      dir.className = 'cube-Path-dir';
      const bdi = document.createElement('bdi');
      bdi.textContent = trans.__('in %1', path.slice(0, slash));
      dir.appendChild(bdi);
      what.appendChild(dir);
    }
    form.appendChild(what);

    if (options.error) {
      const box = document.createElement('div');
      box.className = 'cube-Error';
      box.setAttribute('role', 'alert');
      const title = document.createElement('div');
      title.className = 'cube-Error-title';
      title.textContent = options.error.error;
      box.appendChild(title);
      if (options.error.detail) {
        const detail = document.createElement('pre');
        detail.className = 'cube-Error-detail';
        detail.textContent = options.error.detail;
        box.appendChild(detail);
      }
      form.appendChild(box);
    }

    // Name
    this._name = document.createElement('input');
    this._name.type = 'text';
    this._name.name = 'name';
    this._name.className = 'jp-mod-styled cube-Form-input';
    this._name.value = values.name;
    this._name.autocomplete = 'off';
    this._name.spellcheck = false;
    this._name.maxLength = 128;
    this._name.required = true;
    this._nameHint = document.createElement('div');
    this._nameHint.className = 'cube-Form-hint';
    this._nameHint.setAttribute('aria-live', 'polite');
    this._name.addEventListener('input', () => this._validate());
    form.appendChild(
      this._field(trans.__('Model name'), this._name, this._nameHint)
    );

    // Project
    this._project = document.createElement('select');
    this._project.name = 'project';
    this._project.className = 'jp-mod-styled cube-Form-input';
    for (const p of projects) {
      const option = document.createElement('option');
      option.value = p.name;
      option.textContent =
        p.kind === 'personal' ? trans.__('%1 (personal)', p.name) : p.name;
      this._project.appendChild(option);
    }
    if (!projects.some(p => p.name === values.project) && values.project) {
      const option = document.createElement('option');
      option.value = values.project;
      option.textContent = values.project;
      this._project.appendChild(option);
    }
    this._project.value = values.project;
    form.appendChild(this._field(trans.__('Project'), this._project));

    // Flavor
    this._flavor = document.createElement('select');
    this._flavor.name = 'flavor';
    this._flavor.className = 'jp-mod-styled cube-Form-input';
    const auto = document.createElement('option');
    auto.value = '';
    auto.textContent = trans.__('Detect from the file');
    this._flavor.appendChild(auto);
    for (const f of FLAVORS) {
      const option = document.createElement('option');
      option.value = f;
      option.textContent = f;
      this._flavor.appendChild(option);
    }
    this._flavor.value = values.flavor;
    form.appendChild(this._field(trans.__('Flavor'), this._flavor));

    // Description
    this._description = document.createElement('textarea');
    this._description.name = 'description';
    this._description.className = 'jp-mod-styled cube-Form-input';
    this._description.rows = 3;
    this._description.placeholder = trans.__(
      'Optional: what changed, data used…'
    );
    this._description.value = values.description;
    form.appendChild(this._field(trans.__('Description'), this._description));

    const note = document.createElement('p');
    note.className = 'cube-Form-note';
    note.textContent = trans.__(
      'A model name that exists in the project gets a new version.'
    );
    form.appendChild(note);

    this.node.appendChild(form);
    this._validate();
  }

  getValue(): IRegisterValues {
    return {
      name: this._name.value.trim(),
      project: this._project.value,
      description: this._description.value.trim(),
      flavor: this._flavor.value
    };
  }

  private _field(
    label: string,
    input: HTMLElement,
    hint?: HTMLElement
  ): HTMLElement {
    const wrap = document.createElement('label');
    wrap.className = 'cube-Form-field';
    const text = document.createElement('span');
    text.className = 'cube-Form-label';
    text.textContent = label;
    wrap.append(text, input);
    if (hint) {
      wrap.appendChild(hint);
    }
    return wrap;
  }

  private _validate(): void {
    const problem = validateModelName(this._name.value.trim(), this._trans);
    this._name.classList.toggle('cube-mod-invalid', !!problem);
    this._name.setAttribute('aria-invalid', problem ? 'true' : 'false');
    this._nameHint.textContent =
      problem ??
      this._trans.__(
        'Letters, digits, ".", "_" and "-"; up to 128 characters.'
      );
    this._nameHint.classList.toggle('cube-mod-error', !!problem);
  }

  private _trans: TranslationBundle;
  private _name: HTMLInputElement;
  private _nameHint: HTMLElement;
  private _project: HTMLSelectElement;
  private _flavor: HTMLSelectElement;
  private _description: HTMLTextAreaElement;
}

export namespace RegisterForm {
  export interface IOptions {
    trans: TranslationBundle;
    path: string;
    isDirectory: boolean;
    projects: Project[];
    values: IRegisterValues;
    error?: { error: string; detail: string } | null;
  }
}

/**
 * Ask for the model name (and project...) and register `path`. The dialog
 * comes back with the problem shown until the registration succeeds or
 * the user cancels.
 *
 * @returns the new version, or null when cancelled.
 */
export async function registerPathAsModel(options: {
  path: string;
  isDirectory: boolean;
  me: WhoAmI;
  trans: TranslationBundle;
}): Promise<ModelVersion | null> {
  const { path, isDirectory, me, trans } = options;
  let values: IRegisterValues = {
    name: suggestModelName(path),
    project: defaultProject(me),
    description: '',
    flavor: ''
  };
  let error: { error: string; detail: string } | null = null;

  for (;;) {
    const result = await showDialog<IRegisterValues>({
      title: trans.__('Register as model'),
      body: new RegisterForm({
        trans,
        path,
        isDirectory,
        projects: me.projects,
        values,
        error
      }),
      buttons: [
        Dialog.cancelButton({ label: trans.__('Cancel') }),
        Dialog.okButton({ label: trans.__('Register') })
      ],
      focusNodeSelector: 'input[name="name"]'
    });
    if (!result.button.accept || !result.value) {
      return null;
    }
    values = result.value;
    const problem = validateModelName(values.name, trans);
    if (problem) {
      error = { error: problem, detail: '' };
      continue;
    }

    // Big folders take a while to copy: say so when it is not instant.
    // (Emitting and updating a toast at once can lose the update.)
    let pending: string | null = null;
    const timer = window.setTimeout(() => {
      pending = Notification.emit(
        trans.__('Registering %1 as %2…', path, values.name),
        'in-progress',
        { autoClose: false }
      );
    }, PENDING_NOTICE_MS);
    try {
      const version = await registerModel({
        name: values.name,
        path,
        project: values.project || undefined,
        flavor: values.flavor || undefined,
        description: values.description || undefined
      });
      window.clearTimeout(timer);
      const message = trans.__(
        'Registered %1 version %2 in project %3.',
        version.model,
        version.version,
        version.project
      );
      if (pending) {
        Notification.update({
          id: pending,
          message,
          type: 'success',
          autoClose: 5000
        });
      } else {
        Notification.success(message, { autoClose: 5000 });
      }
      return version;
    } catch (reason) {
      window.clearTimeout(timer);
      if (pending) {
        Notification.dismiss(pending);
      }
      error = describeError(reason);
    }
  }
}
