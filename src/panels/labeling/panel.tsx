/**
 * The "Labeling" section of the cube-lab sidebar: labeling projects with
 * their progress, the datasets, and the forms to create both. Polls while
 * visible.
 */
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { addIcon, newFolderIcon, refreshIcon } from '@jupyterlab/ui-components';
import * as React from 'react';

import { ErrorBox } from '../errorbox';
import {
  createDataset,
  createLabelingProject,
  Dataset,
  describeError,
  LabelingProgress,
  LabelingProject,
  listDatasets,
  listLabelingProjects,
  Project,
  whoami
} from '../../api';
import { ICubeSettings } from '../../tokens';
import { PolledSection } from '../section';
import { DatasetForm, ProjectForm } from './forms';
import {
  DatasetField,
  datasetFormToRequest,
  doneCount,
  emptyDatasetForm,
  emptyProjectForm,
  IDatasetForm,
  IProjectForm,
  ProjectField,
  progressSegments,
  projectFormToRequest,
  taskTypeLabel
} from './logic';

type ErrorText = { error: string; detail: string };

export class LabelingPanel extends PolledSection {
  constructor(options: LabelingPanel.IOptions) {
    super({
      ...options,
      pollName: 'cube-lab:labeling'
    });
    this.addClass('cube-LabelingPanel');
    this._open = options.open;
    this._currentFolder = options.currentFolder;
    this.title.label = this.trans.__('Labeling');
    this.title.caption = this.trans.__('Datasets and labeling projects');
    this.addButton(
      'new-project',
      addIcon,
      this.trans.__('New labeling project'),
      () => this.showForm('project')
    );
    this.addButton(
      'new-dataset',
      newFolderIcon,
      this.trans.__('New dataset'),
      () => this.showForm('dataset')
    );
    this.addButton(
      'refresh',
      refreshIcon,
      this.trans.__('Refresh labeling projects'),
      () => void this.refresh()
    );
  }

  get projects(): LabelingProject[] {
    return this._projects;
  }

  get datasets(): Dataset[] {
    return this._datasets;
  }

  showForm(which: 'dataset' | 'project'): void {
    this._formOpen = which;
    this._submitError = null;
    this._datasetErrors = {};
    this._projectErrors = {};
    const project = this._defaultProject();
    if (which === 'dataset' && !this._datasetForm.project) {
      this._datasetForm.project = project;
    }
    if (which === 'project' && !this._projectForm.project) {
      this._projectForm.project = project;
    }
    this.makeRoom();
    this.update();
  }

  protected render(): JSX.Element {
    const trans = this.trans;
    const empty = !this._projects.length && !this._datasets.length;
    return (
      <div className="cube-Training cube-Labeling">
        {this._formOpen === 'dataset' ? (
          <DatasetForm
            form={this._datasetForm}
            errors={this._datasetErrors}
            submitError={this._submitError}
            busy={this._busy}
            projects={this._projectsOfUser}
            trans={trans}
            onChange={patch => {
              this._datasetForm = { ...this._datasetForm, ...patch };
              for (const key of Object.keys(patch) as DatasetField[]) {
                delete this._datasetErrors[key];
              }
              this.update();
            }}
            onSubmit={() => void this._createDataset()}
            onCancel={() => this._closeForm()}
            currentFolder={this._currentFolder}
          />
        ) : null}
        {this._formOpen === 'project' ? (
          <ProjectForm
            form={this._projectForm}
            errors={this._projectErrors}
            submitError={this._submitError}
            busy={this._busy}
            projects={this._projectsOfUser}
            datasets={this._datasets}
            trans={trans}
            onChange={patch => {
              this._projectForm = { ...this._projectForm, ...patch };
              for (const key of Object.keys(patch) as ProjectField[]) {
                delete this._projectErrors[key];
              }
              this.update();
            }}
            onSubmit={() => void this._createProject()}
            onCancel={() => this._closeForm()}
          />
        ) : null}
        {this._error ? <ErrorBox error={this._error} /> : null}
        {!this._loaded ? (
          <div className="cube-Loading">
            <span className="cube-Spinner" />{' '}
            {trans.__('Loading labeling projects…')}
          </div>
        ) : empty && !this._error ? (
          this._formOpen ? null : (
            <div className="cube-TEmpty">
              <p className="cube-TEmpty-title">
                {trans.__('Nothing to label yet')}
              </p>
              <p className="cube-TEmpty-text">
                {trans.__(
                  'Register a folder of images or a CSV / JSONL of texts as a dataset, then start a labeling project on it: classes, boxes or entity spans, with your team.'
                )}
              </p>
              <button
                className="cube-Button cube-mod-primary"
                onClick={() => this.showForm('dataset')}
              >
                {trans.__('New dataset')}
              </button>
              <p className="cube-TEmpty-text">
                {trans.__('or a terminal:')}{' '}
                <code>cube-lab dataset create NAME PATH</code>
              </p>
            </div>
          )
        ) : (
          <>
            <div className="cube-LList-head">
              <span>{trans.__('Labeling projects')}</span>
              {this._formOpen ? null : (
                <button
                  className="cube-TLink"
                  onClick={() => this.showForm('project')}
                >
                  {trans.__('New…')}
                </button>
              )}
            </div>
            {this._projects.length ? (
              <ul
                className="cube-TJobs cube-LProjects"
                aria-label={trans.__('Labeling projects')}
              >
                {this._projects.map(p => (
                  <ProjectItem
                    key={`${p.project}/${p.name}`}
                    p={p}
                    trans={trans}
                    open={mode => this._open(p, mode)}
                  />
                ))}
              </ul>
            ) : (
              <div className="cube-TMuted cube-LNone">
                {trans.__('No labeling project yet.')}
              </div>
            )}
            <div className="cube-LList-head">
              <span>{trans.__('Datasets')}</span>
              {this._formOpen ? null : (
                <button
                  className="cube-TLink"
                  onClick={() => this.showForm('dataset')}
                >
                  {trans.__('New…')}
                </button>
              )}
            </div>
            <ul
              className="cube-TJobs cube-LDatasets"
              aria-label={trans.__('Datasets')}
            >
              {this._datasets.map(d => (
                <li
                  key={`${d.project}/${d.name}`}
                  className="cube-TJob cube-LDataset"
                  data-dataset={d.name}
                >
                  <div className="cube-TJob-main" title={d.source}>
                    <span className="cube-TJob-line">
                      <span className="cube-TJob-name">{d.name}</span>
                      <span className="cube-TBadge">{d.kind}</span>
                    </span>
                    <span className="cube-TJob-meta">
                      {trans._n('%1 item', '%1 items', d.item_count)}
                      {d.versions?.length
                        ? ` · ${trans._n('%1 version', '%1 versions', d.versions.length)}`
                        : ''}
                      {d.project !== d.owner ? ` · ${d.project}` : ''}
                    </span>
                  </div>
                </li>
              ))}
            </ul>
          </>
        )}
      </div>
    );
  }

  private _defaultProject(): string {
    return this._me || this._projectsOfUser[0]?.name || '';
  }

  private _closeForm(): void {
    this._formOpen = null;
    this._submitError = null;
    this.update();
  }

  protected async fetch(): Promise<void> {
    try {
      if (!this._identity) {
        this._identity = whoami()
          .then(me => {
            this._me = me.user;
            this._projectsOfUser = me.projects;
          })
          .catch(() => {
            this._identity = null;
          });
      }
      const [projects, datasets] = await Promise.all([
        listLabelingProjects(),
        listDatasets()
      ]);
      this._projects = projects.projects;
      this._datasets = datasets.datasets;
      this._error = null;
    } catch (err) {
      this._error = describeError(err);
      throw err;
    } finally {
      this._loaded = true;
    }
  }

  private async _createDataset(): Promise<void> {
    const { request, errors } = datasetFormToRequest(this._datasetForm);
    this._datasetErrors = errors;
    this._submitError = null;
    if (!request) {
      this.update();
      return;
    }
    this._busy = true;
    this.update();
    try {
      const dataset = await createDataset(request);
      this._datasets = [
        dataset,
        ...this._datasets.filter(d => d.id !== dataset.id)
      ];
      this._datasetForm = emptyDatasetForm(this._datasetForm.project);
      // Next step: a labeling project on it.
      this._formOpen = 'project';
      this._projectForm = {
        ...this._projectForm,
        project: dataset.project,
        dataset: dataset.name,
        type:
          dataset.kind === 'images'
            ? this._projectForm.type.startsWith('image')
              ? this._projectForm.type
              : 'image-bbox'
            : this._projectForm.type.startsWith('text')
              ? this._projectForm.type
              : 'text-class',
        name: this._projectForm.name || `${dataset.name}-labels`
      };
      void this.refresh();
    } catch (err) {
      this._submitError = describeError(err);
    } finally {
      this._busy = false;
      this.update();
    }
  }

  private async _createProject(): Promise<void> {
    const { request, errors } = projectFormToRequest(this._projectForm);
    this._projectErrors = errors;
    this._submitError = null;
    if (!request) {
      this.update();
      return;
    }
    this._busy = true;
    this.update();
    try {
      const created = await createLabelingProject(request);
      this._formOpen = null;
      this._projectForm = emptyProjectForm(created.project);
      this._projects = [
        created,
        ...this._projects.filter(
          p => !(p.project === created.project && p.name === created.name)
        )
      ];
      this._open(created, 'project');
      void this.refresh();
    } catch (err) {
      this._submitError = describeError(err);
    } finally {
      this._busy = false;
      this.update();
    }
  }

  private _open: (p: LabelingProject, mode: LabelingPanel.OpenMode) => void;
  private _currentFolder: () => string | null;
  private _loaded = false;
  private _identity: Promise<void> | null = null;
  private _me = '';
  private _projectsOfUser: Project[] = [];
  private _projects: LabelingProject[] = [];
  private _datasets: Dataset[] = [];
  private _error: ErrorText | null = null;
  private _formOpen: 'dataset' | 'project' | null = null;
  private _datasetForm: IDatasetForm = emptyDatasetForm();
  private _projectForm: IProjectForm = emptyProjectForm();
  private _datasetErrors: Partial<Record<DatasetField, string>> = {};
  private _projectErrors: Partial<Record<ProjectField, string>> = {};
  private _submitError: ErrorText | null = null;
  private _busy = false;
}

export namespace LabelingPanel {
  export type OpenMode = 'project' | 'annotate' | 'review';

  export interface IOptions {
    settings: ICubeSettings;
    translator: ITranslator;
    /** Open a project's view, its annotator or its review. */
    open: (
      p: Pick<LabelingProject, 'project' | 'name'>,
      mode: OpenMode
    ) => void;
    /** The folder selected in the file browser. */
    currentFolder: () => string | null;
  }
}

/** A stacked bar: accepted, submitted, rejected, assigned, new. */
export function ProgressBar(props: {
  progress: LabelingProgress | undefined;
  trans: TranslationBundle;
}): JSX.Element | null {
  const { progress, trans } = props;
  const segments = progressSegments(progress);
  if (!progress) {
    return null;
  }
  const title = segments.map(s => `${s.status}: ${s.count}`).join(' · ');
  return (
    <span
      className="cube-LProgress"
      role="progressbar"
      aria-valuemin={0}
      aria-valuemax={progress.total}
      aria-valuenow={doneCount(progress)}
      aria-label={trans.__(
        '%1 of %2 labeled',
        doneCount(progress),
        progress.total
      )}
      title={title}
    >
      {segments.map(s => (
        <span
          key={s.status}
          className={`cube-LProgress-seg cube-LProgress-${s.status}`}
          style={{ width: `${s.percent}%` }}
        />
      ))}
    </span>
  );
}

function ProjectItem(props: {
  p: LabelingProject;
  trans: TranslationBundle;
  open: (mode: LabelingPanel.OpenMode) => void;
}): JSX.Element {
  const { p, trans } = props;
  const progress = p.progress;
  const toReview = p.review && progress ? progress.submitted : 0;
  return (
    <li className="cube-TJob cube-LProject" data-labeling={p.name}>
      <button
        className="cube-TJob-main"
        onClick={() => props.open('project')}
        title={trans.__('Open labeling project %1', p.name)}
      >
        <span className="cube-TJob-line">
          <span className="cube-TJob-name">{p.name}</span>
          <span className="cube-TMuted cube-LProject-count">
            {progress ? `${doneCount(progress)}/${progress.total}` : ''}
          </span>
        </span>
        <ProgressBar progress={progress} trans={trans} />
        <span className="cube-TJob-meta">
          {trans.__(taskTypeLabel(p.type))} · {p.dataset}
          {p.project !== p.owner ? ` · ${p.project}` : ''}
        </span>
      </button>
      <span className="cube-TJob-actions cube-LProject-actions">
        <button
          className="cube-TLink"
          onClick={() => props.open('annotate')}
          title={trans.__('Label the tasks of your queue')}
        >
          {trans.__('Label')}
        </button>
        {toReview ? (
          <button
            className="cube-TLink"
            onClick={() => props.open('review')}
            title={trans.__('%1 submitted tasks wait for review', toReview)}
          >
            {trans.__('Review')}
          </button>
        ) : null}
      </span>
    </li>
  );
}
