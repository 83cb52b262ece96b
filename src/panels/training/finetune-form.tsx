/**
 * The "Fine-tune" tab: a causal LM fine-tuned with TRL and PEFT as a
 * training job (`POST /finetune/jobs`): method, base model (a folder or a
 * registered transformers version), data, LoRA / full, quantization,
 * precision, the hyperparameters; "Estimate memory" asks
 * `POST /finetune/estimate` what one process needs, "Start" launches it and
 * the job opens in its tab.
 */
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { ErrorBox } from '../errorbox';
import { Field } from '../field';
import { FormPage, FormState, IFormProps } from '../formpage';
import { listDatasets, listModels, listVersions, TrainingJob } from '../../api';
import { formatBytes } from '../../format';
import {
  baseVersions,
  DATA_FORMATS,
  datasetRefs,
  emptyFinetuneForm,
  ESTIMATE_PARTS,
  estimateFinetune,
  FinetuneField,
  finetuneToRequest,
  IFinetuneEstimate,
  IFinetuneForm,
  IPreviewRecord,
  METHODS,
  PRECISIONS,
  previewFinetune,
  QUANTIZATIONS,
  submitFinetune,
  TEMPLATES
} from './finetune-logic';

/** A registered base: its NAME:VERSION and its project. */
interface IBase {
  ref: string;
  project: string;
}

/**
 * The fine-tune form in a main-area tab. It keeps what was typed while the
 * tab is open; a started job opens in its own tab (`launched`).
 */
export class FinetuneFormView extends FormPage {
  constructor(options: FinetuneFormView.IOptions) {
    super({ ...options, className: 'cube-FinetuneView' });
    this._launched = options.launched;
    this._state = new FormState({ ...emptyFinetuneForm(), ...options.fill });
    this.title.label = this.trans.__('Fine-tune');
    this.title.caption = this.trans.__(
      'Fine-tune a language model with LoRA or in full'
    );
    void this._loadBases();
    void this._loadDatasets();
  }

  /** What the form holds now. */
  get form(): IFinetuneForm {
    return this._state.value;
  }

  /** Fill some fields. */
  fill(patch: Partial<IFinetuneForm>): void {
    this._state.value = { ...this._state.value, ...patch };
    this._state.errors = {};
    this.submitError = null;
    this._estimate = null;
    this.update();
  }

  protected intro(): string {
    return this.trans.__(
      'Fine-tunes a causal language model with TRL and PEFT as a training job: its log and loss chart open in a tab, and the trained adapter or model can be registered from there.'
    );
  }

  protected renderForm(): JSX.Element {
    const props = this.formProps(this._state, () => this._run('start'));
    return (
      <FinetuneForm
        {...props}
        onChange={patch => {
          this._estimate = null;
          this._preview = null;
          props.onChange(patch);
        }}
        action={this._action}
        bases={this._bases}
        datasets={this._datasets}
        estimate={this._estimate}
        onEstimate={() => void this._run('estimate')}
        preview={this._preview}
        onPreview={() => void this._run('preview')}
      />
    );
  }

  private async _run(action: Action): Promise<void> {
    this._action = action;
    this._estimate = null;
    this._preview = null;
    if (action === 'start') {
      await this.submit(this._state, finetuneToRequest, submitFinetune, job =>
        this._launched(job)
      );
    } else if (action === 'preview') {
      await this.submit(
        this._state,
        finetuneToRequest,
        body => previewFinetune(body),
        found => {
          this._preview = found.records;
        }
      );
    } else {
      await this.submit(
        this._state,
        finetuneToRequest,
        estimateFinetune,
        found => {
          this._estimate = found;
        }
      );
    }
  }

  /** The registered text datasets and their versions, for the data picker. */
  private async _loadDatasets(): Promise<void> {
    try {
      this._datasets = datasetRefs((await listDatasets()).datasets);
      this.update();
    } catch {
      // no datasets: a file is given
    }
  }

  /** The registered transformers versions, the bases of the picker. */
  private async _loadBases(): Promise<void> {
    try {
      const models = (await listModels({ limit: 200 })).models.filter(
        m => m.flavor === 'transformers'
      );
      const lists = await Promise.all(
        models.map(m => listVersions(m.project, m.name))
      );
      this._bases = lists.flatMap((list, i) =>
        baseVersions(list.versions).map(ref => ({
          ref,
          project: models[i].project
        }))
      );
      this.update();
    } catch {
      // no registered bases: a folder is given
    }
  }

  private _launched: (job: TrainingJob) => void;
  private _state: FormState<IFinetuneForm, FinetuneField>;
  private _bases: IBase[] = [];
  private _estimate: IFinetuneEstimate | null = null;
  private _datasets: { ref: string; project: string }[] = [];
  private _preview: IPreviewRecord[] | null = null;
  private _action: Action = 'start';
}

export namespace FinetuneFormView {
  export interface IOptions {
    translator: ITranslator;
    /** The first values of the fields. */
    fill?: Partial<IFinetuneForm>;
    /** Called with the job the server started. */
    launched: (job: TrainingJob) => void;
    /** Close the tab. */
    close: () => void;
  }
}

export interface IFinetuneFormProps extends IFormProps<
  IFinetuneForm,
  FinetuneField
> {
  /** Which button the form is busy with. */
  action: Action;
  bases: IBase[];
  /** The registered datasets (NAME or NAME:VERSION) the data can come from. */
  datasets: { ref: string; project: string }[];
  estimate: IFinetuneEstimate | null;
  onEstimate: () => void;
  preview: IPreviewRecord[] | null;
  onPreview: () => void;
}

type Action = 'start' | 'estimate' | 'preview';

export function FinetuneForm(props: IFinetuneFormProps): JSX.Element {
  const { form, errors, trans } = props;
  const input = (
    name: FinetuneField,
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
  const select = <K extends FinetuneField>(
    name: K,
    options: readonly { value: string; label: string }[],
    extra: React.SelectHTMLAttributes<HTMLSelectElement> = {}
  ) => (
    <select
      className={`cube-TField-input${errors[name] ? ' cube-mod-invalid' : ''}`}
      name={name}
      value={form[name]}
      disabled={props.busy}
      onChange={e =>
        props.onChange({ [name]: e.target.value } as Partial<IFinetuneForm>)
      }
      {...extra}
    >
      {options.map(o => (
        <option key={o.value} value={o.value}>
          {o.label}
        </option>
      ))}
    </select>
  );
  const lora = form.finetuningType === 'lora';
  const busy = (action: Action, text: string) =>
    props.busy && props.action === action ? (
      <span className="cube-TBusy">
        <span className="cube-Spinner" /> {text}
      </span>
    ) : null;
  return (
    <form
      className="cube-TForm cube-FinetuneForm"
      noValidate
      aria-label={trans.__('New fine-tune')}
      onSubmit={e => {
        e.preventDefault();
        props.onSubmit();
      }}
    >
      <div className="cube-TForm-grid">
        <Field label={trans.__('Name')} name="name">
          {input('name', { placeholder: trans.__('e.g. my-adapter') })}
        </Field>
        <Field label={trans.__('Method')} name="method">
          {select(
            'method',
            METHODS.map(m => ({ value: m, label: methodLabel(m, trans) }))
          )}
        </Field>
      </div>
      <Field
        label={trans.__('Base model')}
        name={form.baseKind === 'registered' ? 'modelVersion' : 'modelFolder'}
        error={errors.modelVersion || errors.modelFolder}
      >
        <span className="cube-FinetuneBase">
          <select
            className="cube-TField-input"
            name="base"
            aria-label={trans.__('Base model')}
            value={form.baseKind === 'registered' ? form.modelVersion : ''}
            disabled={props.busy}
            onChange={e => {
              const base = props.bases.find(b => b.ref === e.target.value);
              props.onChange(
                base
                  ? {
                      baseKind: 'registered',
                      modelVersion: base.ref,
                      project: base.project
                    }
                  : { baseKind: 'folder', modelVersion: '' }
              );
            }}
          >
            <option value="">{trans.__('A folder…')}</option>
            {props.bases.map(b => (
              <option key={`${b.project}/${b.ref}`} value={b.ref}>
                {b.ref}
              </option>
            ))}
          </select>
          {form.baseKind === 'folder'
            ? input('modelFolder', {
                placeholder: trans.__('models/base (a Hugging Face folder)'),
                'aria-label': trans.__('Base model folder')
              })
            : null}
        </span>
      </Field>
      <div className="cube-FinetuneData">
        <Field
          label={trans.__('Data')}
          name={form.dataKind === 'dataset' ? 'dataset' : 'data'}
          error={errors.dataset || errors.data}
          hint={
            form.dataKind === 'file'
              ? trans.__('A file relative to the server root.')
              : undefined
          }
        >
          <span className="cube-FinetuneBase">
            <select
              className="cube-TField-input"
              name="dataSource"
              aria-label={trans.__('Data source')}
              value={form.dataKind === 'dataset' ? form.dataset : ''}
              disabled={props.busy}
              onChange={e => {
                const picked = props.datasets.find(
                  d => d.ref === e.target.value
                );
                props.onChange(
                  picked
                    ? {
                        dataKind: 'dataset',
                        dataset: picked.ref,
                        project: picked.project
                      }
                    : { dataKind: 'file', dataset: '' }
                );
              }}
            >
              <option value="">{trans.__('A file…')}</option>
              {props.datasets.map(d => (
                <option key={`${d.project}/${d.ref}`} value={d.ref}>
                  {trans.__('dataset %1', d.ref)}
                </option>
              ))}
            </select>
            {form.dataKind === 'file'
              ? input('data', {
                  placeholder: 'data/train.jsonl',
                  'aria-label': trans.__('Data file')
                })
              : null}
          </span>
        </Field>
        <Field label={trans.__('Format')} name="dataFormat">
          {select(
            'dataFormat',
            DATA_FORMATS.map(f => ({
              value: f,
              label: f === 'auto' ? trans.__('auto (detect)') : f
            }))
          )}
        </Field>
        <Field label={trans.__('Chat template')} name="template">
          {select(
            'template',
            TEMPLATES.map(t => ({
              value: t,
              label: t === 'auto' ? trans.__("the tokenizer's") : t
            }))
          )}
        </Field>
      </div>
      <div className="cube-TForm-grid">
        <Field label={trans.__('Finetuning type')} name="finetuningType">
          {select('finetuningType', [
            { value: 'lora', label: trans.__('LoRA') },
            { value: 'full', label: trans.__('Full') }
          ])}
        </Field>
        <Field
          label={trans.__('Quantization')}
          name="quantization"
          error={errors.quantization}
        >
          {select(
            'quantization',
            QUANTIZATIONS.map(q => ({
              value: q,
              label:
                q === 'none'
                  ? trans.__('None')
                  : trans.__('%1-bit (QLoRA, CUDA)', q)
            }))
          )}
        </Field>
        <Field label={trans.__('Precision')} name="precision">
          {select(
            'precision',
            PRECISIONS.map(p => ({ value: p, label: p }))
          )}
        </Field>
      </div>
      {lora ? (
        <div className="cube-TForm-grid">
          <Field
            label={trans.__('LoRA rank')}
            name="loraRank"
            error={errors.loraRank}
          >
            {input('loraRank', { type: 'number', min: 1 })}
          </Field>
          <Field
            label={trans.__('LoRA alpha')}
            name="loraAlpha"
            error={errors.loraAlpha}
          >
            {input('loraAlpha', { type: 'number', min: 1 })}
          </Field>
          <Field
            label={trans.__('LoRA target')}
            name="loraTarget"
            error={errors.loraTarget}
          >
            {input('loraTarget', {
              placeholder: 'all',
              title: trans.__('"all", or module names: q_proj, v_proj')
            })}
          </Field>
        </div>
      ) : null}
      <div className="cube-TForm-grid">
        <Field
          label={trans.__('Cutoff length')}
          name="cutoffLen"
          error={errors.cutoffLen}
        >
          {input('cutoffLen', { type: 'number', min: 8 })}
        </Field>
        <Field
          label={trans.__('Batch size / device')}
          name="batchSize"
          error={errors.batchSize}
        >
          {input('batchSize', { type: 'number', min: 1 })}
        </Field>
        <Field
          label={trans.__('Gradient accumulation')}
          name="gradientAccumulation"
          error={errors.gradientAccumulation}
        >
          {input('gradientAccumulation', { type: 'number', min: 1 })}
        </Field>
        <Field
          label={trans.__('Learning rate')}
          name="learningRate"
          error={errors.learningRate}
        >
          {input('learningRate', { inputMode: 'decimal' })}
        </Field>
        <Field
          label={trans.__('Max steps')}
          name="maxSteps"
          error={errors.maxSteps}
        >
          {input('maxSteps', {
            type: 'number',
            min: 1,
            placeholder: trans.__('(epochs)')
          })}
        </Field>
        <Field label={trans.__('Epochs')} name="epochs" error={errors.epochs}>
          {input('epochs', {
            inputMode: 'decimal',
            disabled: props.busy || !!form.maxSteps.trim()
          })}
        </Field>
        <Field label={trans.__('Processes')} name="nproc" error={errors.nproc}>
          {input('nproc', { type: 'number', min: 1 })}
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
      {props.submitError ? <ErrorBox error={props.submitError} /> : null}
      {props.preview ? (
        <PreviewView records={props.preview} trans={trans} />
      ) : null}
      {props.estimate ? (
        <EstimateView
          estimate={props.estimate}
          nproc={form.nproc}
          trans={trans}
        />
      ) : null}
      <div className="cube-TForm-actions">
        <button
          type="submit"
          className="cube-Button cube-mod-primary"
          disabled={props.busy}
        >
          {busy('start', trans.__('Starting…')) ?? trans.__('Start')}
        </button>
        <button
          type="button"
          className="cube-Button"
          onClick={props.onEstimate}
          disabled={props.busy}
        >
          {busy('estimate', trans.__('Estimating…')) ??
            trans.__('Estimate memory')}
        </button>
        <button
          type="button"
          className="cube-Button"
          onClick={props.onPreview}
          disabled={props.busy}
          title={trans.__(
            'Show the first records as the model reads them, the trained tokens marked'
          )}
        >
          {busy('preview', trans.__('Rendering…')) ?? trans.__('Preview data')}
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

/** The first records through the chat template, the trained text marked. */
function PreviewView(props: {
  records: IPreviewRecord[];
  trans: TranslationBundle;
}): JSX.Element {
  const { records, trans } = props;
  return (
    <section
      className="cube-FinetunePreview"
      aria-label={trans.__('Data preview')}
    >
      <div className="cube-TField-hint">
        {trans.__(
          'Marked text is trained on; the rest is context the model reads.'
        )}
      </div>
      {records.length ? null : <p>{trans.__('The data has no records.')}</p>}
      {records.map((record, i) => (
        <figure key={i} className="cube-FinetunePreview-record">
          <figcaption>
            {trans.__(
              'Record %1: %2 of %3 tokens trained',
              i + 1,
              record.trained_tokens,
              record.tokens
            )}
          </figcaption>
          <pre>
            {record.segments.map((s, j) =>
              s.trained ? <mark key={j}>{s.text}</mark> : s.text
            )}
          </pre>
        </figure>
      ))}
    </section>
  );
}

/** The memory one process needs: the total, then its parts. */
function EstimateView(props: {
  estimate: IFinetuneEstimate;
  nproc: string;
  trans: TranslationBundle;
}): JSX.Element {
  const { estimate, trans } = props;
  const count = (n: number) => n.toLocaleString();
  return (
    <section
      className="cube-FinetuneEstimate"
      role="status"
      aria-label={trans.__('Memory estimate')}
    >
      <div className="cube-FinetuneEstimate-total">
        {trans.__('%1 per process', formatBytes(estimate.total_bytes))}
      </div>
      <div className="cube-FinetuneEstimate-params">
        {trans.__(
          '%1 parameters (%2), %3 trainable',
          count(estimate.parameters),
          estimate.dtype,
          count(estimate.trainable_parameters)
        )}
      </div>
      <table className="cube-FinetuneEstimate-parts">
        <tbody>
          {ESTIMATE_PARTS.filter(p => p in estimate.bytes).map(part => (
            <tr key={part} data-part={part}>
              <th scope="row">{partLabel(part, trans)}</th>
              <td>{formatBytes(estimate.bytes[part])}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {Number(props.nproc) > 1 ? (
        <div className="cube-TField-hint">
          {trans.__(
            'Each of the %1 processes holds all of it (data parallel).',
            props.nproc.trim()
          )}
        </div>
      ) : null}
    </section>
  );
}

function partLabel(part: string, trans: TranslationBundle): string {
  switch (part) {
    case 'weights':
      return trans.__('Weights');
    case 'gradients':
      return trans.__('Gradients');
    case 'optimizer':
      return trans.__('Optimizer state');
    case 'activations':
      return trans.__('Activations');
    case 'overhead':
      return trans.__('Overhead');
    default:
      return part;
  }
}

export function methodLabel(method: string, trans: TranslationBundle): string {
  switch (method) {
    case 'sft':
      return trans.__('SFT (supervised)');
    case 'pt':
      return trans.__('PT (continued pre-training)');
    case 'rm':
      return trans.__('RM (reward model)');
    case 'dpo':
      return trans.__('DPO (preference pairs)');
    case 'grpo':
      return trans.__('GRPO (reward function)');
    default:
      return method;
  }
}
