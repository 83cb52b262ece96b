/**
 * The labeling forms, in a main-area tab: "New dataset" (a folder of images
 * or a CSV / JSONL of texts) and "New labeling project" (dataset, task type,
 * labels with colours and hotkeys, multi-label, review, instructions).
 */
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { ErrorBox } from '../errorbox';
import { Field } from '../field';
import { FormPage, FormState, IFormProps } from '../formpage';
import {
  createDataset,
  createLabelingProject,
  Dataset,
  describeError,
  LabelingProject,
  listDatasets,
  Project
} from '../../api';
import {
  datasetFormToRequest,
  datasetKindFor,
  DatasetField,
  emptyDatasetForm,
  emptyProjectForm,
  IDatasetForm,
  IProjectForm,
  nameFromPath,
  parseLabels,
  ProjectField,
  projectFormToRequest,
  TASK_TYPES,
  taskTypeLabel
} from './logic';

export type LabelingFormMode = 'dataset' | 'project';

/**
 * The tab of the two labeling forms. A new dataset leads to the project
 * form on it; a new project opens in its own tab (`created`).
 */
export class LabelingFormView extends FormPage {
  constructor(options: LabelingFormView.IOptions) {
    super({ ...options, className: 'cube-LFormView' });
    this._created = options.created;
    this._datasetCreated = options.datasetCreated;
    this._currentFolder = options.currentFolder;
    this.showForm(options.mode);
    void this._loadDatasets();
  }

  get mode(): LabelingFormMode {
    return this._mode;
  }

  /** Show one of the forms; what was typed in the other one stays. */
  showForm(mode: LabelingFormMode): void {
    this._mode = mode;
    this.submitError = null;
    this._datasetForm.errors = {};
    this._projectForm.errors = {};
    this.title.label =
      mode === 'dataset'
        ? this.trans.__('New dataset')
        : this.trans.__('New labeling project');
    this.title.caption =
      mode === 'dataset'
        ? this.trans.__(
            'Register a folder of images or a CSV / JSONL of texts as a dataset'
          )
        : this.trans.__('Start labeling a dataset, alone or with your team');
    if (mode === 'project') {
      void this._loadDatasets();
    }
    this.update();
  }

  protected identified(user: string): void {
    this._me = user;
    const project = this._defaultProject();
    this._datasetForm.value.project ||= project;
    this._projectForm.value.project ||= project;
  }

  protected intro(): string {
    return this._mode === 'dataset'
      ? this.trans.__(
          'A dataset is a folder of images (searched recursively) or a CSV / JSONL file of texts. Next, a labeling project on it: classes, boxes or entity spans.'
        )
      : this.trans.__(
          'Labels get hotkeys 1–9 in the order given. With review on, submitted tasks wait for a reviewer before they count as done.'
        );
  }

  protected renderForm(): JSX.Element {
    if (this._mode === 'dataset') {
      return (
        <DatasetForm
          {...this.formProps(this._datasetForm, () => this._createDataset())}
          currentFolder={this._currentFolder}
        />
      );
    }
    return (
      <>
        <ProjectForm
          {...this.formProps(this._projectForm, () => this._createProject())}
          datasets={this._datasets}
        />
        <p className="cube-FormPage-aside">
          <button
            type="button"
            className="cube-TLink"
            onClick={() => this.showForm('dataset')}
          >
            {this.trans.__('Register another dataset first…')}
          </button>
        </p>
      </>
    );
  }

  private _defaultProject(): string {
    return this._me || this.projects[0]?.name || '';
  }

  private async _loadDatasets(): Promise<void> {
    try {
      this._datasets = (await listDatasets()).datasets;
      this.update();
    } catch (err) {
      this.submitError = describeError(err);
      this.update();
    }
  }

  private _createDataset(): Promise<void> {
    return this.submit(
      this._datasetForm,
      datasetFormToRequest,
      createDataset,
      dataset => {
        this._datasets = [
          dataset,
          ...this._datasets.filter(d => d.id !== dataset.id)
        ];
        this._datasetForm.value = emptyDatasetForm(
          this._datasetForm.value.project
        );
        // Next step: a labeling project on it.
        const previous = this._projectForm.value;
        this._projectForm.value = {
          ...previous,
          project: dataset.project,
          dataset: dataset.name,
          type:
            dataset.kind === 'images'
              ? previous.type.startsWith('image')
                ? previous.type
                : 'image-bbox'
              : previous.type.startsWith('text')
                ? previous.type
                : 'text-class',
          name: previous.name || `${dataset.name}-labels`
        };
        this.showForm('project');
        this._datasetCreated(dataset);
      }
    );
  }

  private _createProject(): Promise<void> {
    return this.submit(
      this._projectForm,
      projectFormToRequest,
      createLabelingProject,
      created => {
        this._projectForm.value = emptyProjectForm(created.project);
        this._created(created);
      }
    );
  }

  private _created: (project: LabelingProject) => void;
  private _datasetCreated: (dataset: Dataset) => void;
  private _currentFolder: () => string | null;
  private _mode: LabelingFormMode = 'dataset';
  private _me = '';
  private _datasets: Dataset[] = [];
  private _datasetForm = new FormState<IDatasetForm, DatasetField>(
    emptyDatasetForm()
  );
  private _projectForm = new FormState<IProjectForm, ProjectField>(
    emptyProjectForm()
  );
}

export namespace LabelingFormView {
  export interface IOptions {
    translator: ITranslator;
    mode: LabelingFormMode;
    /** Called with a project the server created. */
    created: (project: LabelingProject) => void;
    /** Called with a dataset the server registered. */
    datasetCreated: (dataset: Dataset) => void;
    /** Close the tab. */
    close: () => void;
    /** The folder selected in the file browser. */
    currentFolder: () => string | null;
  }
}

function ProjectSelect(props: {
  value: string;
  projects: Project[];
  disabled: boolean;
  onChange: (value: string) => void;
  trans: TranslationBundle;
}): JSX.Element | null {
  if (props.projects.length < 2) {
    return null;
  }
  return (
    <Field label={props.trans.__('Project')} name="project">
      <select
        className="cube-TField-input"
        name="project"
        value={props.value}
        disabled={props.disabled}
        onChange={e => props.onChange(e.currentTarget.value)}
      >
        {props.projects.map(p => (
          <option key={p.name} value={p.name}>
            {p.name}
            {p.kind === 'personal' ? ` (${props.trans.__('personal')})` : ''}
          </option>
        ))}
      </select>
    </Field>
  );
}

export function DatasetForm(
  props: IFormProps<IDatasetForm, DatasetField> & {
    currentFolder: () => string | null;
  }
): JSX.Element {
  const { form, errors, trans } = props;
  const texts = /\.(csv|jsonl)$/i.test(form.path.trim());
  return (
    <form
      className="cube-TForm cube-LForm"
      noValidate
      aria-label={trans.__('New dataset')}
      onSubmit={e => {
        e.preventDefault();
        props.onSubmit();
      }}
    >
      <ProjectSelect
        value={form.project}
        projects={props.projects}
        disabled={props.busy}
        onChange={project => props.onChange({ project })}
        trans={trans}
      />
      <Field
        label={trans.__('Folder or file')}
        name="path"
        error={errors.path}
        hint={trans.__(
          'A folder of images (searched recursively) or a .csv / .jsonl of texts, relative to the file browser root.'
        )}
      >
        <span className="cube-TPick">
          <input
            className={`cube-TField-input${errors.path ? ' cube-mod-invalid' : ''}`}
            name="path"
            value={form.path}
            placeholder="data/flowers"
            disabled={props.busy}
            spellCheck={false}
            onChange={e => {
              const path = e.currentTarget.value;
              const patch: Partial<IDatasetForm> = { path };
              // Name follows the path until it is typed by hand.
              if (!form.name || form.name === nameFromPath(form.path)) {
                patch.name = nameFromPath(path);
              }
              props.onChange(patch);
            }}
          />
          <button
            type="button"
            className="cube-TLink"
            disabled={props.busy}
            title={trans.__('The folder selected in the file browser')}
            onClick={() => {
              const folder = props.currentFolder();
              if (folder !== null) {
                props.onChange({
                  path: folder,
                  name: form.name || nameFromPath(folder)
                });
              }
            }}
          >
            {trans.__('Use current')}
          </button>
        </span>
      </Field>
      <Field label={trans.__('Name')} name="name" error={errors.name}>
        <input
          className={`cube-TField-input${errors.name ? ' cube-mod-invalid' : ''}`}
          name="name"
          value={form.name}
          placeholder="flowers"
          disabled={props.busy}
          spellCheck={false}
          onChange={e => props.onChange({ name: e.currentTarget.value })}
        />
      </Field>
      {texts ? (
        <Field
          label={trans.__('Text column')}
          name="textField"
          hint={trans.__(
            'The column (CSV) or key (JSONL) with the text; "text" when empty.'
          )}
        >
          <input
            className="cube-TField-input"
            name="textField"
            value={form.textField}
            placeholder="text"
            disabled={props.busy}
            onChange={e => props.onChange({ textField: e.currentTarget.value })}
          />
        </Field>
      ) : null}
      {props.submitError ? <ErrorBox error={props.submitError} /> : null}
      <div className="cube-TForm-actions">
        <button
          type="button"
          className="cube-Button"
          onClick={props.onCancel}
          disabled={props.busy}
        >
          {trans.__('Cancel')}
        </button>
        <button
          type="submit"
          className="cube-Button cube-mod-primary"
          disabled={props.busy}
        >
          {props.busy ? (
            <span className="cube-TBusy">
              <span className="cube-Spinner" /> {trans.__('Scanning…')}
            </span>
          ) : (
            trans.__('Create dataset')
          )}
        </button>
      </div>
    </form>
  );
}

export function ProjectForm(
  props: IFormProps<IProjectForm, ProjectField> & { datasets: Dataset[] }
): JSX.Element {
  const { form, errors, trans } = props;
  const kind = datasetKindFor(form.type);
  const datasets = props.datasets.filter(
    d => d.kind === kind && (!form.project || d.project === form.project)
  );
  const preview = React.useMemo(
    () => parseLabels(form.labels, trans),
    [form.labels, trans]
  );
  const classTask = form.type.endsWith('-class');
  return (
    <form
      className="cube-TForm cube-LForm"
      noValidate
      aria-label={trans.__('New labeling project')}
      onSubmit={e => {
        e.preventDefault();
        props.onSubmit();
      }}
    >
      <ProjectSelect
        value={form.project}
        projects={props.projects}
        disabled={props.busy}
        onChange={project => props.onChange({ project, dataset: '' })}
        trans={trans}
      />
      <Field label={trans.__('Task')} name="type">
        <select
          className="cube-TField-input"
          name="type"
          value={form.type}
          disabled={props.busy}
          onChange={e => {
            const type = e.currentTarget.value as IProjectForm['type'];
            const patch: Partial<IProjectForm> = { type };
            if (datasetKindFor(type) !== kind) {
              patch.dataset = '';
            }
            props.onChange(patch);
          }}
        >
          {TASK_TYPES.map(t => (
            <option key={t} value={t}>
              {trans.__(taskTypeLabel(t))}
            </option>
          ))}
        </select>
      </Field>
      <Field
        label={trans.__('Dataset')}
        name="dataset"
        error={errors.dataset}
        hint={
          datasets.length
            ? undefined
            : kind === 'images'
              ? trans.__(
                  'No image dataset yet: create one from a folder first.'
                )
              : trans.__(
                  'No text dataset yet: create one from a CSV or JSONL file first.'
                )
        }
      >
        <select
          className={`cube-TField-input${errors.dataset ? ' cube-mod-invalid' : ''}`}
          name="dataset"
          value={form.dataset}
          disabled={props.busy}
          onChange={e => {
            const dataset = e.currentTarget.value;
            props.onChange(
              form.name ? { dataset } : { dataset, name: `${dataset}-labels` }
            );
          }}
        >
          <option value="">{trans.__('— pick a dataset —')}</option>
          {datasets.map(d => (
            <option key={`${d.project}/${d.name}`} value={d.name}>
              {d.name} ({d.item_count})
            </option>
          ))}
        </select>
      </Field>
      <Field label={trans.__('Name')} name="name" error={errors.name}>
        <input
          className={`cube-TField-input${errors.name ? ' cube-mod-invalid' : ''}`}
          name="name"
          value={form.name}
          placeholder="pets"
          disabled={props.busy}
          spellCheck={false}
          onChange={e => props.onChange({ name: e.currentTarget.value })}
        />
      </Field>
      <Field
        label={trans.__('Labels')}
        name="labels"
        error={errors.labels}
        hint={trans.__(
          'Comma or newline separated; "name=key" sets a hotkey, else 1-9.'
        )}
      >
        <input
          className={`cube-TField-input${errors.labels ? ' cube-mod-invalid' : ''}`}
          name="labels"
          value={form.labels}
          placeholder="cat, dog, bird"
          disabled={props.busy}
          spellCheck={false}
          onChange={e => props.onChange({ labels: e.currentTarget.value })}
        />
      </Field>
      {preview.labels.length ? (
        <div className="cube-LPreview" aria-label={trans.__('Label preview')}>
          {preview.labels.map(l => (
            <span
              key={l.name}
              className="cube-LPreview-label"
              style={{ '--cube-label-color': l.color } as React.CSSProperties}
            >
              <span className="cube-LLabel-swatch" />
              {l.name}
              {l.hotkey ? <kbd className="cube-LKey">{l.hotkey}</kbd> : null}
            </span>
          ))}
        </div>
      ) : null}
      <div className="cube-LForm-checks">
        {classTask ? (
          <label className="cube-Check">
            <input
              type="checkbox"
              name="multiLabel"
              checked={form.multiLabel}
              disabled={props.busy}
              onChange={e =>
                props.onChange({ multiLabel: e.currentTarget.checked })
              }
            />
            {trans.__('Several labels per item')}
          </label>
        ) : null}
        <label className="cube-Check">
          <input
            type="checkbox"
            name="review"
            checked={form.review}
            disabled={props.busy}
            onChange={e => props.onChange({ review: e.currentTarget.checked })}
          />
          {trans.__('Review submitted tasks')}
        </label>
      </div>
      <Field label={trans.__('Instructions')} name="instructions">
        <textarea
          className="cube-TField-input"
          name="instructions"
          rows={3}
          value={form.instructions}
          placeholder={trans.__('What to label and how (shown to annotators)')}
          disabled={props.busy}
          onChange={e =>
            props.onChange({ instructions: e.currentTarget.value })
          }
        />
      </Field>
      {props.submitError ? <ErrorBox error={props.submitError} /> : null}
      <div className="cube-TForm-actions">
        <button
          type="button"
          className="cube-Button"
          onClick={props.onCancel}
          disabled={props.busy}
        >
          {trans.__('Cancel')}
        </button>
        <button
          type="submit"
          className="cube-Button cube-mod-primary"
          disabled={props.busy}
        >
          {props.busy ? (
            <span className="cube-TBusy">
              <span className="cube-Spinner" /> {trans.__('Creating…')}
            </span>
          ) : (
            trans.__('Create project')
          )}
        </button>
      </div>
    </form>
  );
}
