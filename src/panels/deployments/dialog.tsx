/**
 * The "Deploy" dialog of a model version: name (default: the model's),
 * replicas and an optional port; when that name already serves the model,
 * a version switch or a canary instead. It stays open while the deployment
 * starts (seconds), showing progress, and closes with the running deployment.
 */
import { Dialog, ReactWidget } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { ErrorBox } from '../errorbox';
import { Field } from '../field';
import {
  changeTraffic,
  deployModel,
  Deployment,
  describeError,
  listDeployments
} from '../../api';
import {
  BATCH_ROWS,
  defaultDeployForm,
  DEPLOY_RUNTIMES,
  DeployField,
  DeployRuntime,
  findActive,
  IDeployForm,
  mayBeLlm,
  planDeploy
} from './logic';

type ErrorText = { error: string; detail: string };

export interface IDeployTarget {
  project: string;
  model: string;
  version: number;
  /** The version's flavor (transformers, peft, sklearn...), when known. */
  flavor?: string | null;
}

/** The runtime select's labels. */
function runtimeLabel(
  runtime: DeployRuntime,
  trans: TranslationBundle
): string {
  switch (runtime) {
    case 'llm':
      return trans.__('LLM: OpenAI-compatible API (/v1)');
    case 'oip':
      return trans.__('Open Inference Protocol v2 (REST)');
    default:
      return trans.__('Automatic (by the model)');
  }
}

/** The dialog's body: the form and the progress while the deployment starts. */
class DeployBody extends ReactWidget {
  constructor(
    readonly target: IDeployTarget,
    private _trans: TranslationBundle
  ) {
    super();
    this.addClass('cube-DDeployBody');
    this._form = defaultDeployForm(target.model, target.flavor);
    void listDeployments(target.project)
      .then(found => {
        this._deployments = found.deployments;
        const existing = this._existing();
        if (existing && existing.model === target.model) {
          this._form = {
            ...this._form,
            mode: existing.version === target.version ? 'new' : 'canary'
          };
          if (existing.version === target.version) {
            this._form.name = `${target.model}-v${target.version}`;
          }
        }
      })
      .catch(() => {
        this._deployments = []; // the server says so on submit
      })
      .finally(() => this.update());
  }

  get busy(): boolean {
    return this._busy;
  }

  /** Deploy (or switch / canary); the deployment once it serves, else null. */
  async submit(): Promise<Deployment | null> {
    if (this._busy) {
      return null;
    }
    const { plan, errors } = planDeploy(
      this._form,
      this.target,
      this._existing(),
      this._trans
    );
    this._errors = errors;
    this._error = null;
    if (!plan) {
      this.update();
      return null;
    }
    this._busy = true;
    this._started = Date.now();
    this._timer = window.setInterval(() => this.update(), 100);
    this.update();
    try {
      return plan.kind === 'deploy'
        ? await deployModel(plan.request)
        : await changeTraffic(plan.project, plan.name, plan.change);
    } catch (err) {
      this._error = describeError(err);
      return null;
    } finally {
      this._busy = false;
      window.clearInterval(this._timer);
      this.update();
    }
  }

  dispose(): void {
    window.clearInterval(this._timer);
    super.dispose();
  }

  protected render(): JSX.Element {
    const trans = this._trans;
    const { target } = this;
    const form = this._form;
    const existing = this._existing();
    const sameModel = existing && existing.model === target.model;
    const set = (patch: Partial<IDeployForm>) => {
      this._form = { ...this._form, ...patch };
      for (const k of Object.keys(patch)) {
        delete this._errors[k as DeployField];
      }
      this.update();
    };
    const traffic = sameModel && form.mode !== 'new';
    const llm = form.runtime === 'llm';
    const maybeLlm = mayBeLlm(form.runtime, target.flavor);
    const seconds = ((Date.now() - this._started) / 1000).toFixed(1);
    return (
      <form
        className="cube-DDeploy"
        onSubmit={e => e.preventDefault()}
        aria-busy={this._busy}
      >
        <p className="cube-DDeploy-what">
          {llm
            ? trans.__(
                'Serve %1 v%2 with an OpenAI-compatible API (chat, completions, streaming) on this machine.',
                target.model,
                target.version
              )
            : form.runtime === 'oip'
              ? trans.__(
                  'Serve %1 v%2 over the Open Inference Protocol (REST) on this machine.',
                  target.model,
                  target.version
                )
              : trans.__(
                  'Serve %1 v%2 on this machine: a language model with an OpenAI-compatible API, any other model over the Open Inference Protocol (REST).',
                  target.model,
                  target.version
                )}
        </p>
        <Field
          className="cube-DField"
          label={trans.__('Name')}
          error={this._errors.name}
          hint={
            existing
              ? trans.__(
                  '"%1" is running v%2 of %3.',
                  existing.name,
                  existing.version,
                  existing.model
                )
              : undefined
          }
        >
          <input
            className={`cube-TField-input${this._errors.name ? ' cube-mod-invalid' : ''}`}
            name="name"
            value={form.name}
            disabled={this._busy}
            onChange={e => set({ name: e.target.value, mode: 'new' })}
          />
        </Field>
        {sameModel && existing!.version !== target.version ? (
          <fieldset className="cube-DDeploy-modes" disabled={this._busy}>
            <legend>{trans.__('"%1" already runs', existing!.name)}</legend>
            <label>
              <input
                type="radio"
                name="mode"
                value="canary"
                checked={form.mode === 'canary'}
                onChange={() => set({ mode: 'canary' })}
              />
              {trans.__('Canary: send')}
              <input
                className={`cube-TField-input cube-DDeploy-percent${this._errors.percent ? ' cube-mod-invalid' : ''}`}
                name="percent"
                type="number"
                min={1}
                max={99}
                value={form.percent}
                onFocus={() => set({ mode: 'canary' })}
                onChange={e => set({ percent: e.target.value, mode: 'canary' })}
              />
              {trans.__(
                '% to v%1, the rest stays on v%2',
                target.version,
                existing!.version
              )}
            </label>
            <label>
              <input
                type="radio"
                name="mode"
                value="switch"
                checked={form.mode === 'switch'}
                onChange={() => set({ mode: 'switch' })}
              />
              {trans.__(
                'Switch: move all traffic to v%1 (no request dropped)',
                target.version
              )}
            </label>
            <label>
              <input
                type="radio"
                name="mode"
                value="new"
                checked={form.mode === 'new'}
                onChange={() =>
                  set({
                    mode: 'new',
                    name: `${target.model}-v${target.version}`
                  })
                }
              />
              {trans.__('A separate deployment under another name')}
            </label>
            {this._errors.percent ? (
              <div className="cube-TField-error">{this._errors.percent}</div>
            ) : null}
          </fieldset>
        ) : null}
        {traffic ? null : (
          <Field
            className="cube-DField"
            label={trans.__('Runtime')}
            hint={
              llm
                ? trans.__(
                    'A causal language model or a peft adapter; the engine batches concurrent requests itself.'
                  )
                : undefined
            }
          >
            <select
              className="cube-TField-input"
              name="runtime"
              value={form.runtime}
              disabled={this._busy}
              onChange={e => set({ runtime: e.target.value as DeployRuntime })}
            >
              {DEPLOY_RUNTIMES.map(r => (
                <option key={r} value={r}>
                  {runtimeLabel(r, trans)}
                </option>
              ))}
            </select>
          </Field>
        )}
        {traffic ? null : (
          <div className="cube-DDeploy-row">
            <Field
              className="cube-DField"
              label={trans.__('Replicas')}
              error={this._errors.replicas}
            >
              <input
                className={`cube-TField-input${this._errors.replicas ? ' cube-mod-invalid' : ''}`}
                name="replicas"
                type="number"
                min={1}
                max={16}
                value={form.replicas}
                disabled={this._busy}
                onChange={e => set({ replicas: e.target.value })}
              />
            </Field>
            <Field
              className="cube-DField"
              label={trans.__('Port (optional)')}
              error={this._errors.port}
            >
              <input
                className={`cube-TField-input${this._errors.port ? ' cube-mod-invalid' : ''}`}
                name="port"
                type="number"
                placeholder={trans.__('any free port')}
                value={form.port}
                disabled={this._busy}
                onChange={e => set({ port: e.target.value })}
              />
            </Field>
          </div>
        )}
        {traffic ? null : (
          <div className="cube-DDeploy-row">
            <label className="cube-DDeploy-check">
              <input
                type="checkbox"
                name="batching"
                checked={form.batching && !llm}
                disabled={this._busy || llm}
                onChange={e => set({ batching: e.target.checked })}
              />
              {llm
                ? trans.__('Continuous batching (the LLM engine)')
                : trans.__(
                    'Adaptive batching (up to %1 rows a call)',
                    BATCH_ROWS
                  )}
            </label>
            <Field
              className="cube-DField"
              label={trans.__('Keep request samples (%)')}
              error={this._errors.samples}
              hint={trans.__('Opt-in: requests and answers are stored.')}
            >
              <input
                className={`cube-TField-input${this._errors.samples ? ' cube-mod-invalid' : ''}`}
                name="samples"
                type="number"
                min={0}
                max={100}
                placeholder={trans.__('none')}
                value={form.samples}
                disabled={this._busy}
                onChange={e => set({ samples: e.target.value })}
              />
            </Field>
          </div>
        )}
        {this._busy ? (
          <div className="cube-DProgress" role="status">
            <span className="cube-Spinner" />
            <span>
              {traffic
                ? trans.__('Starting v%1 and moving traffic…', target.version)
                : maybeLlm
                  ? trans.__(
                      'Starting the model server (a language model loads its weights)…'
                    )
                  : trans.__('Starting the model server…')}
            </span>
            <span className="cube-TMuted">{trans.__('%1 s', seconds)}</span>
            <div className="cube-DProgress-bar" />
          </div>
        ) : null}
        {this._error ? <ErrorBox error={this._error} /> : null}
      </form>
    );
  }

  private _existing(): Deployment | null {
    return findActive(
      this._deployments,
      this.target.project,
      this._form.name.trim()
    );
  }

  private _form: IDeployForm;
  private _deployments: Deployment[] = [];
  private _errors: Partial<Record<DeployField, string>> = {};
  private _error: ErrorText | null = null;
  private _busy = false;
  private _started = 0;
  private _timer = 0;
}

/**
 * A dialog whose "Deploy" button does the work before closing: it stays
 * open (buttons disabled) until the deployment serves or fails.
 */
class DeployDialog extends Dialog<Deployment | null> {
  constructor(
    private _deployBody: DeployBody,
    trans: TranslationBundle
  ) {
    super({
      title: trans.__(
        'Deploy %1 v%2',
        _deployBody.target.model,
        _deployBody.target.version
      ),
      body: _deployBody,
      buttons: [
        Dialog.cancelButton({ label: trans.__('Cancel') }),
        Dialog.okButton({ label: trans.__('Deploy') })
      ],
      focusNodeSelector: 'input[name="name"]'
    });
    this.addClass('cube-DDeployDialog');
  }

  get deployment(): Deployment | null {
    return this._deployment;
  }

  resolve(index?: number): void {
    const i = index ?? 1;
    if (i !== 1 || this._deployment) {
      if (!this._deployBody.busy) {
        super.resolve(i);
      }
      return;
    }
    this._setButtons(false);
    void this._deployBody.submit().then(dep => {
      this._setButtons(true);
      if (dep) {
        this._deployment = dep;
        super.resolve(1);
      }
    });
  }

  reject(): void {
    if (!this._deployBody.busy) {
      super.reject();
    }
  }

  private _setButtons(enabled: boolean): void {
    this.node
      .querySelectorAll<HTMLButtonElement>('.jp-Dialog-footer button')
      .forEach(b => (b.disabled = !enabled));
  }

  private _deployment: Deployment | null = null;
}

/** Show the dialog; the running deployment, or null when cancelled. */
export async function showDeployDialog(
  target: IDeployTarget,
  trans: TranslationBundle
): Promise<Deployment | null> {
  const dialog = new DeployDialog(new DeployBody(target, trans), trans);
  const result = await dialog.launch();
  return result.button.accept ? dialog.deployment : null;
}
