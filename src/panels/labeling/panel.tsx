/**
 * The list of the "Labeling" side panel: labeling projects with their
 * progress, and the datasets. The forms to create both open in a main-area
 * tab. Polls while visible.
 */
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { addIcon, newFolderIcon, refreshIcon } from '@jupyterlab/ui-components';
import * as React from 'react';

import { ErrorBox } from '../errorbox';
import { EmptyState } from '../empty';
import {
  Dataset,
  describeError,
  LabelingProgress,
  LabelingProject,
  listDatasets,
  listLabelingProjects
} from '../../api';
import { ICubeSettings } from '../../tokens';
import { PolledSection } from '../section';
import type { LabelingFormMode } from './forms';
import { doneCount, progressSegments, taskTypeLabel } from './logic';

type ErrorText = { error: string; detail: string };

export class LabelingPanel extends PolledSection {
  constructor(options: LabelingPanel.IOptions) {
    super({
      ...options,
      pollName: 'cube-lab:labeling'
    });
    this.addClass('cube-LabelingPanel');
    this._open = options.open;
    this._newForm = options.newForm;
    this.title.label = this.trans.__('Labeling');
    this.title.caption = this.trans.__('Datasets and labeling projects');
    this.addButton(
      'new-project',
      addIcon,
      this.trans.__('New labeling project'),
      () => this._newForm('project')
    );
    this.addButton(
      'new-dataset',
      newFolderIcon,
      this.trans.__('New dataset'),
      () => this._newForm('dataset')
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

  protected render(): JSX.Element {
    const trans = this.trans;
    const empty = !this._projects.length && !this._datasets.length;
    return (
      <div className="cube-Training cube-Labeling">
        {this._error ? <ErrorBox error={this._error} /> : null}
        {!this._loaded ? (
          <div className="cube-Loading">
            <span className="cube-Spinner" />{' '}
            {trans.__('Loading labeling projects…')}
          </div>
        ) : empty && !this._error ? (
          <EmptyState
            title={trans.__('Nothing to label yet')}
            text={trans.__(
              'Register a folder of images or a CSV / JSONL of texts as a dataset, then start a labeling project on it: classes, boxes or entity spans, with your team.'
            )}
            action={{
              label: trans.__('New dataset'),
              run: () => this._newForm('dataset')
            }}
            terminal="cube-lab dataset create NAME PATH"
            trans={trans}
          />
        ) : (
          <>
            <div className="cube-LList-head">
              <span>{trans.__('Labeling projects')}</span>
              <button
                className="cube-TLink"
                onClick={() => this._newForm('project')}
                title={trans.__('New labeling project')}
              >
                {trans.__('New…')}
              </button>
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
              <button
                className="cube-TLink"
                onClick={() => this._newForm('dataset')}
                title={trans.__('New dataset')}
              >
                {trans.__('New…')}
              </button>
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

  protected async fetch(): Promise<void> {
    try {
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

  private _open: (p: LabelingProject, mode: LabelingPanel.OpenMode) => void;
  private _newForm: (mode: LabelingFormMode) => void;
  private _loaded = false;
  private _projects: LabelingProject[] = [];
  private _datasets: Dataset[] = [];
  private _error: ErrorText | null = null;
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
    /** Open the form to create a dataset or a labeling project. */
    newForm: (mode: LabelingFormMode) => void;
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
