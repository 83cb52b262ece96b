/**
 * The "New tuning experiment" tab: search space (JSON, checked as it is
 * typed), trial command and code folder, tuner / assessor, objective and
 * budget.
 */
import { ITranslator } from '@jupyterlab/translation';
import * as React from 'react';

import { ErrorBox } from '../errorbox';
import { Field } from '../field';
import { FormPage, FormState, IFormProps } from '../formpage';
import {
  createExperiment,
  describeError,
  tuningAlgorithms,
  TuningAlgorithms,
  TuningExperiment
} from '../../api';
import {
  checkSpaceText,
  emptyExperimentForm,
  ExperimentField,
  formToExperiment,
  IExperimentForm
} from './logic';

/**
 * The new-experiment form in a main-area tab. A started experiment opens in
 * its own tab (`started`).
 */
export class ExperimentFormView extends FormPage {
  constructor(options: ExperimentFormView.IOptions) {
    super({ ...options, className: 'cube-TuFormView' });
    this._started = options.started;
    this._currentFolder = options.currentFolder;
    this._state = new FormState({ ...emptyExperimentForm(), ...options.fill });
    this.title.label = this.trans.__('New tuning experiment');
    this.title.caption = this.trans.__(
      'Search hyperparameters with NNI tuners'
    );
    tuningAlgorithms()
      .then(a => {
        this._algorithms = a;
        this.update();
      })
      .catch(err => {
        this.submitError = describeError(err);
        this.update();
      });
  }

  /** What the form holds now. */
  get form(): IExperimentForm {
    return this._state.value;
  }

  /** Fill some fields. */
  fill(patch: Partial<IExperimentForm>): void {
    this._state.value = { ...this._state.value, ...patch };
    this._state.errors = {};
    this.submitError = null;
    this.update();
  }

  protected intro(): string {
    return this.trans.__(
      'Runs your NNI trial code unchanged, several trials at a time, with the tuner picking the next parameters; the trials, their curves and the best one show in the experiment’s tab.'
    );
  }

  protected renderForm(): JSX.Element {
    return (
      <ExperimentForm
        {...this.formProps(this._state, () =>
          this.submit(this._state, formToExperiment, createExperiment, exp =>
            this._started(exp)
          )
        )}
        algorithms={this._algorithms}
        currentFolder={this._currentFolder}
      />
    );
  }

  private _started: (exp: TuningExperiment) => void;
  private _currentFolder: () => string | null;
  private _algorithms: TuningAlgorithms | null = null;
  private _state: FormState<IExperimentForm, ExperimentField>;
}

export namespace ExperimentFormView {
  export interface IOptions {
    translator: ITranslator;
    fill?: Partial<IExperimentForm>;
    /** Called with the experiment the server started. */
    started: (exp: TuningExperiment) => void;
    /** Close the tab. */
    close: () => void;
    /** The folder of the file open in the editor or selected in the browser. */
    currentFolder: () => string | null;
  }
}

export interface IExperimentFormProps extends IFormProps<
  IExperimentForm,
  ExperimentField
> {
  algorithms: TuningAlgorithms | null;
  /** The folder of the file open in the editor or selected in the browser. */
  currentFolder: () => string | null;
}

export function ExperimentForm(props: IExperimentFormProps): JSX.Element {
  const { form, errors, trans, algorithms } = props;
  const [note, setNote] = React.useState('');
  const live = React.useMemo(
    () => checkSpaceText(form.searchSpace, trans),
    [form.searchSpace, trans]
  );
  const input = (
    name: ExperimentField,
    extra: React.InputHTMLAttributes<HTMLInputElement> = {}
  ) => (
    <input
      className={`cube-TField-input${errors[name] ? ' cube-mod-invalid' : ''}`}
      name={name}
      value={form[name]}
      onChange={e => props.onChange({ [name]: e.target.value })}
      disabled={props.busy}
      spellCheck={false}
      {...extra}
    />
  );
  const useCurrent = () => {
    const folder = props.currentFolder();
    if (folder !== null) {
      props.onChange({ folder });
      setNote('');
    } else {
      setNote(
        trans.__(
          'Open the trial script in the editor or select it in the file browser first.'
        )
      );
    }
  };
  const typed = form.searchSpace.trim() !== '';
  const spaceBad = typed && live.problems.length > 0;
  const params = live.space ? Object.keys(live.space).length : 0;
  return (
    <form
      className="cube-TForm cube-TuForm"
      noValidate
      aria-label={trans.__('New experiment')}
      onSubmit={e => {
        e.preventDefault();
        props.onSubmit();
      }}
    >
      <div className="cube-TField" data-field="searchSpace">
        <span className="cube-TuSpace-head">
          <span className="cube-TField-label">{trans.__('Search space')}</span>
          <button
            type="button"
            className="cube-TLink"
            disabled={props.busy || !algorithms}
            onClick={() =>
              algorithms &&
              props.onChange({
                searchSpace: JSON.stringify(algorithms.example, null, 2)
              })
            }
            title={trans.__('Replace the text with an example search space')}
          >
            {trans.__('Insert example')}
          </button>
        </span>
        <textarea
          className={`cube-TField-input cube-TField-code cube-TuSpace${spaceBad || errors.searchSpace ? ' cube-mod-invalid' : ''}`}
          name="searchSpace"
          aria-label={trans.__('Search space')}
          rows={8}
          spellCheck={false}
          placeholder={
            '{\n  "lr": {"_type": "loguniform", "_value": [0.0001, 0.1]}\n}'
          }
          value={form.searchSpace}
          disabled={props.busy}
          onChange={e => props.onChange({ searchSpace: e.target.value })}
        />
        {typed || errors.searchSpace ? (
          live.problems.length ? (
            <ul className="cube-TuProblems" role="alert">
              {live.problems.map(p => (
                <li key={p.path + p.message}>{p.message}</li>
              ))}
            </ul>
          ) : (
            <span className="cube-TField-hint cube-TuSpace-ok">
              ✓ {trans._n('%1 parameter', '%1 parameters', params)}
            </span>
          )
        ) : (
          <span className="cube-TField-hint">
            {trans.__('NNI format: name → {"_type", "_value"}.')}
          </span>
        )}
      </div>
      <Field
        label={trans.__('Trial command')}
        name="trialCommand"
        error={errors.trialCommand}
      >
        {input('trialCommand', { placeholder: 'python3 trial.py' })}
      </Field>
      <Field
        label={trans.__('Code folder')}
        name="folder"
        error={errors.folder || note}
        hint={trans.__('Under the server root; the command runs there.')}
      >
        {input('folder', { placeholder: trans.__('(server root)') })}
      </Field>
      <div className="cube-TPick">
        <button
          type="button"
          className="cube-TLink"
          onClick={useCurrent}
          disabled={props.busy}
          title={trans.__(
            'The folder of the file open in the editor or selected in the file browser'
          )}
        >
          {trans.__('Use the current file’s folder')}
        </button>
      </div>
      <div className="cube-TForm-grid">
        <Field label={trans.__('Tuner')} name="tuner">
          <select
            className="cube-TField-input"
            name="tuner"
            value={form.tuner}
            disabled={props.busy}
            onChange={e => props.onChange({ tuner: e.target.value })}
          >
            {(algorithms?.tuners ?? [form.tuner]).map(t => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </Field>
        <Field label={trans.__('Assessor')} name="assessor">
          <select
            className="cube-TField-input"
            name="assessor"
            value={form.assessor}
            disabled={props.busy}
            onChange={e => props.onChange({ assessor: e.target.value })}
          >
            <option value="">{trans.__('(none)')}</option>
            {(algorithms?.assessors ?? []).map(a => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </Field>
        <Field label={trans.__('Metric')} name="metric" error={errors.metric}>
          {input('metric', {
            title: trans.__(
              'The key of a dict result to optimise; "default" for a plain number'
            )
          })}
        </Field>
        <Field label={trans.__('Goal')} name="mode">
          <select
            className="cube-TField-input"
            name="mode"
            value={form.mode}
            disabled={props.busy}
            onChange={e =>
              props.onChange({
                mode: e.target.value as IExperimentForm['mode']
              })
            }
          >
            <option value="maximize">{trans.__('maximize')}</option>
            <option value="minimize">{trans.__('minimize')}</option>
          </select>
        </Field>
        <Field
          label={trans.__('Max trials')}
          name="maxTrials"
          error={errors.maxTrials}
        >
          {input('maxTrials', { type: 'number', min: 1 })}
        </Field>
        <Field
          label={trans.__('Concurrency')}
          name="concurrency"
          error={errors.concurrency}
        >
          {input('concurrency', { type: 'number', min: 1 })}
        </Field>
        <Field
          label={trans.__('Max duration')}
          name="maxDuration"
          error={errors.maxDuration}
        >
          {input('maxDuration', { placeholder: trans.__('e.g. 30m') })}
        </Field>
        <Field label={trans.__('Project')} name="project">
          <select
            className="cube-TField-input"
            name="project"
            value={form.project}
            disabled={props.busy}
            onChange={e => props.onChange({ project: e.target.value })}
          >
            <option value="">{trans.__('(personal)')}</option>
            {props.projects.map(p => (
              <option key={p.name} value={p.name}>
                {p.name}
              </option>
            ))}
          </select>
        </Field>
      </div>
      <Field label={trans.__('Name')} name="name">
        {input('name', { placeholder: trans.__('code folder name') })}
      </Field>
      {props.submitError ? <ErrorBox error={props.submitError} /> : null}
      <div className="cube-TForm-actions">
        <button
          type="submit"
          className="cube-Button cube-mod-primary"
          disabled={props.busy}
        >
          {props.busy ? (
            <span className="cube-TBusy">
              <span className="cube-Spinner" /> {trans.__('Starting…')}
            </span>
          ) : (
            trans.__('Start')
          )}
        </button>
        <button
          type="button"
          className="cube-Button"
          onClick={props.onCancel}
          disabled={props.busy}
        >
          {trans.__('Close')}
        </button>
      </div>
    </form>
  );
}
