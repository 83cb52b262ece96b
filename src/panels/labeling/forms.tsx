/**
 * The sidebar's two forms: "New dataset" (a folder of images or a CSV /
 * JSONL of texts) and "New labeling project" (dataset, task type, labels
 * with colours and hotkeys, multi-label, review, instructions).
 */
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { ErrorBox } from '../errorbox';
import { Field } from '../field';
import type { Dataset, Project } from '../../api';
import {
  datasetKindFor,
  DatasetField,
  IDatasetForm,
  IProjectForm,
  nameFromPath,
  parseLabels,
  ProjectField,
  TASK_TYPES,
  taskTypeLabel
} from './logic';

type ErrorText = { error: string; detail: string };

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

export function DatasetForm(props: {
  form: IDatasetForm;
  errors: Partial<Record<DatasetField, string>>;
  submitError: ErrorText | null;
  busy: boolean;
  projects: Project[];
  trans: TranslationBundle;
  onChange: (patch: Partial<IDatasetForm>) => void;
  onSubmit: () => void;
  onCancel: () => void;
  currentFolder: () => string | null;
}): JSX.Element {
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
      <div className="cube-LForm-title">{trans.__('New dataset')}</div>
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

export function ProjectForm(props: {
  form: IProjectForm;
  errors: Partial<Record<ProjectField, string>>;
  submitError: ErrorText | null;
  busy: boolean;
  projects: Project[];
  datasets: Dataset[];
  trans: TranslationBundle;
  onChange: (patch: Partial<IProjectForm>) => void;
  onSubmit: () => void;
  onCancel: () => void;
}): JSX.Element {
  const { form, errors, trans } = props;
  const kind = datasetKindFor(form.type);
  const datasets = props.datasets.filter(
    d => d.kind === kind && (!form.project || d.project === form.project)
  );
  const preview = React.useMemo(() => parseLabels(form.labels), [form.labels]);
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
      <div className="cube-LForm-title">{trans.__('New labeling project')}</div>
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
