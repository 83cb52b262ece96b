/**
 * The "Launch training" tab: framework, script (from the file browser),
 * arguments, workers x processes, GPUs, environment, project.
 */
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { ErrorBox } from '../errorbox';
import { Field } from '../field';
import { FormPage, FormState, IFormProps } from '../formpage';
import { submitTrainingJob, TrainingJob } from '../../api';
import {
  emptyForm,
  FormField,
  formToRequest,
  FRAMEWORKS,
  ILaunchForm
} from './logic';

/**
 * The launch form in a main-area tab. It keeps what was typed while the tab
 * is open; a launched job opens in its own tab (`launched`).
 */
export class LaunchFormView extends FormPage {
  constructor(options: LaunchFormView.IOptions) {
    super({ ...options, className: 'cube-TLaunchView' });
    this._launched = options.launched;
    this._pickCurrent = options.pickCurrent;
    this._browse = options.browse;
    this._state = new FormState({ ...emptyForm(), ...options.fill });
    this.title.label = this.trans.__('Launch training');
    this.title.caption = this.trans.__(
      'Launch a script on several processes or machines'
    );
  }

  /** What the form holds now. */
  get form(): ILaunchForm {
    return this._state.value;
  }

  /** Fill some fields (a script, a copy of a job, a dataset version). */
  fill(patch: Partial<ILaunchForm>): void {
    this._state.value = { ...this._state.value, ...patch };
    this._state.errors = {};
    this.submitError = null;
    this.update();
  }

  /** Focus the script field. */
  focusScript(): void {
    requestAnimationFrame(() => {
      this.node
        .querySelector<HTMLInputElement>('.cube-TForm input[name="script"]')
        ?.focus();
    });
  }

  protected intro(): string {
    return this.trans.__(
      'Runs the script on workers × processes with torchrun, DeepSpeed, TensorFlow or MPI; its logs and metrics open in a tab. The job saves what it wants to keep under $CUBE_OUTPUT_DIR.'
    );
  }

  protected renderForm(): JSX.Element {
    return (
      <LaunchForm
        {...this.formProps(this._state, () =>
          this.submit(this._state, formToRequest, submitTrainingJob, job =>
            this._launched(job)
          )
        )}
        pickCurrent={this._pickCurrent}
        browse={this._browse}
      />
    );
  }

  private _launched: (job: TrainingJob) => void;
  private _pickCurrent: () => string | null;
  private _browse: () => Promise<string | null>;
  private _state: FormState<ILaunchForm, FormField>;
}

export namespace LaunchFormView {
  export interface IOptions {
    translator: ITranslator;
    /** The first values of the fields. */
    fill?: Partial<ILaunchForm>;
    /** Called with the job the server started. */
    launched: (job: TrainingJob) => void;
    /** Close the tab. */
    close: () => void;
    pickCurrent: () => string | null;
    browse: () => Promise<string | null>;
  }
}

export interface ILaunchFormProps extends IFormProps<ILaunchForm, FormField> {
  /** The file open in the main area, or selected in the file browser. */
  pickCurrent: () => string | null;
  /** A file dialog; null when cancelled. */
  browse: () => Promise<string | null>;
}

export function LaunchForm(props: ILaunchFormProps): JSX.Element {
  const { form, errors, trans } = props;
  const [note, setNote] = React.useState('');
  const input = (
    name: keyof ILaunchForm,
    extra: React.InputHTMLAttributes<HTMLInputElement> = {}
  ) => (
    <input
      className={`cube-TField-input${errors[name] ? ' cube-mod-invalid' : ''}`}
      name={name}
      value={form[name]}
      onChange={e => props.onChange({ [name]: e.target.value })}
      disabled={props.busy}
      {...extra}
    />
  );
  const useCurrent = () => {
    const path = props.pickCurrent();
    if (path) {
      props.onChange({ script: path });
      setNote('');
    } else {
      setNote(
        trans.__(
          'Open the script in the editor or select it in the file browser first.'
        )
      );
    }
  };
  const browse = async () => {
    const path = await props.browse();
    if (path) {
      props.onChange({ script: path });
      setNote('');
    }
  };
  const gpus = Number(form.gpus) > 0;
  return (
    <form
      className="cube-TForm"
      noValidate
      aria-label={trans.__('New training job')}
      onSubmit={e => {
        e.preventDefault();
        props.onSubmit();
      }}
    >
      <Field label={trans.__('Framework')} name="framework">
        <select
          className="cube-TField-input"
          name="framework"
          value={form.framework}
          disabled={props.busy}
          onChange={e =>
            props.onChange({
              framework: e.target.value as ILaunchForm['framework']
            })
          }
        >
          {FRAMEWORKS.map(f => (
            <option key={f} value={f}>
              {frameworkLabel(f, trans)}
            </option>
          ))}
        </select>
      </Field>
      <Field
        label={trans.__('Script')}
        name="script"
        error={errors.script || note}
        hint={trans.__(
          "Save the model under $CUBE_OUTPUT_DIR (the job's output folder) so that 'Register the last checkpoint' finds it."
        )}
      >
        {input('script', {
          placeholder: trans.__('folder/train.py'),
          spellCheck: false,
          title: trans.__('The job runs in the script’s folder.')
        })}
      </Field>
      <div className="cube-TPick">
        <button
          type="button"
          className="cube-TLink"
          onClick={useCurrent}
          disabled={props.busy}
          title={trans.__(
            'Use the file open in the editor or selected in the file browser'
          )}
        >
          {trans.__('Use current file')}
        </button>
        <button
          type="button"
          className="cube-TLink"
          onClick={() => void browse()}
          disabled={props.busy}
          title={trans.__('Pick the script in a file dialog')}
        >
          {trans.__('Browse…')}
        </button>
      </div>
      <Field label={trans.__('Arguments')} name="args" error={errors.args}>
        {input('args', { placeholder: '--epochs 3', spellCheck: false })}
      </Field>
      <div className="cube-TForm-grid">
        <Field
          label={trans.__('Workers')}
          name="workers"
          error={errors.workers}
        >
          {input('workers', { type: 'number', min: 1 })}
        </Field>
        <Field
          label={trans.__('Processes / worker')}
          name="nproc"
          error={errors.nproc}
        >
          {input('nproc', { type: 'number', min: 1 })}
        </Field>
        <Field
          label={trans.__('GPUs / worker')}
          name="gpus"
          error={errors.gpus}
        >
          {input('gpus', { type: 'number', min: 0 })}
        </Field>
        <Field
          label={trans.__('GPU type')}
          name="gpuType"
          error={errors.gpuType}
        >
          {input('gpuType', {
            disabled: props.busy || !gpus,
            spellCheck: false,
            title: trans.__(
              'A key of the accelerator table: nvidia-gpu, nvidia-mig-1g.10gb, hami-vgpu, ascend-910b…'
            )
          })}
        </Field>
      </div>
      <details className="cube-TForm-more" open={!!(errors.env || form.env)}>
        <summary>{trans.__('Environment, project, name')}</summary>
        <Field
          label={trans.__('Environment variables')}
          name="env"
          error={errors.env}
          hint={trans.__('One KEY=value a line.')}
        >
          <textarea
            className={`cube-TField-input cube-TField-code${errors.env ? ' cube-mod-invalid' : ''}`}
            name="env"
            rows={3}
            spellCheck={false}
            placeholder="OMP_NUM_THREADS=1"
            value={form.env}
            disabled={props.busy}
            onChange={e => props.onChange({ env: e.target.value })}
          />
        </Field>
        <div className="cube-TForm-grid">
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
          <Field label={trans.__('Name')} name="name">
            {input('name', { placeholder: trans.__('script name') })}
          </Field>
        </div>
      </details>
      {props.submitError ? <ErrorBox error={props.submitError} /> : null}
      <div className="cube-TForm-actions">
        <button
          type="submit"
          className="cube-Button cube-mod-primary"
          disabled={props.busy}
        >
          {props.busy ? (
            <span className="cube-TBusy">
              <span className="cube-Spinner" /> {trans.__('Launching…')}
            </span>
          ) : (
            trans.__('Launch')
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

export function frameworkLabel(
  framework: string,
  trans: TranslationBundle
): string {
  switch (framework) {
    case 'pytorch':
      return trans.__('PyTorch DDP (torchrun)');
    case 'deepspeed':
      return trans.__('DeepSpeed');
    case 'tensorflow':
      return trans.__('TensorFlow (MultiWorkerMirrored)');
    case 'mpi':
      return trans.__('MPI / Horovod (mpirun)');
    case 'plain':
      return trans.__('Plain command (one per rank)');
    default:
      return framework;
  }
}
