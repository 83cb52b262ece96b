/**
 * One labeling project in the main area: progress (stacked bar, per person,
 * per label), assigning tasks to members, pre-labels from a registered
 * model, exports (each becomes a dataset version with a download link) and
 * the dataset's versions.
 */
import { Dialog, ReactWidget, showDialog } from '@jupyterlab/apputils';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { copyIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Poll } from '@lumino/polling';
import * as React from 'react';

import {
  assignLabelingTasks,
  Dataset,
  datasetVersionDownloadUrl,
  deleteLabelingProject,
  describeError,
  ExportAnswer,
  ExportFormat,
  exportLabels,
  getDataset,
  getLabelingProject,
  LabelingProject,
  listModels,
  Model,
  prelabelTasks,
  Project,
  serverUrl,
  whoami
} from '../../api';
import { formatRelativeTime } from '../../format';
import { ErrorBox } from '../errorbox';
import { copyText, loadSnippet } from './export';
import {
  assignRequest,
  doneCount,
  donePercent,
  exportFormats,
  FORMAT_TITLES,
  labelRows,
  progressSegments,
  taskTypeLabel
} from './logic';
import { LabelingPanel, ProgressBar } from './panel';

const POLL_MS = 5000;

type ErrorText = { error: string; detail: string };

export class LabelingProjectView extends ReactWidget {
  constructor(options: LabelingProjectView.IOptions) {
    super();
    this.addClass('cube-LProjectView');
    this.project = options.project;
    this.name = options.name;
    this._trans = options.translator.load('cube_lab');
    this._open = options.open;
    this._changed = options.changed;
    this._trainFrom = options.trainFrom;
    this._poll = new Poll({
      auto: false,
      factory: () => this._fetch(),
      frequency: { interval: POLL_MS, backoff: true, max: 60 * 1000 },
      name: `cube-lab:labeling:${options.project}/${options.name}`,
      standby: () => !this.isVisible || 'when-hidden'
    });
  }

  readonly project: string;
  readonly name: string;

  refresh(): Promise<void> {
    return this._poll.refresh();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._poll.dispose();
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (!this._started) {
      this._started = true;
      void this._poll.start();
    }
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    if (this._started) {
      void this._poll.refresh();
    }
  }

  protected render(): JSX.Element {
    const trans = this._trans;
    const p = this._proj;
    if (!p) {
      return (
        <div className="cube-LDetail">
          {this._loadError ? (
            <ErrorBox className="cube-LError" error={this._loadError} />
          ) : (
            <div className="cube-Loading">
              <span className="cube-Spinner" />{' '}
              {trans.__('Loading the labeling project…')}
            </div>
          )}
        </div>
      );
    }
    const progress = p.progress;
    const toReview = p.review && progress ? progress.submitted : 0;
    return (
      <div className="cube-LDetail" data-labeling={p.name}>
        <header className="cube-TJobHead">
          <div className="cube-TJobHead-title">
            <h2>{p.name}</h2>
            <span className="cube-TMuted">
              {trans.__(taskTypeLabel(p.type))}
              {p.multi_label ? ` · ${trans.__('multi-label')}` : ''} ·{' '}
              {trans.__('dataset %1', p.dataset)}
              {' · '}
              {trans.__('by %1', p.owner)}
            </span>
          </div>
          <div className="cube-TJobHead-actions">
            <button
              className="cube-Button cube-mod-primary cube-LStart"
              onClick={() => this._open(p, 'annotate')}
              title={trans.__('Label the tasks of your queue')}
            >
              {trans.__('Start labeling')}
            </button>
            {p.review ? (
              <button
                className="cube-Button"
                disabled={!toReview}
                onClick={() => this._open(p, 'review')}
                title={trans.__('Accept or reject submitted tasks')}
              >
                {trans.__('Review (%1)', toReview)}
              </button>
            ) : null}
            <button
              className="cube-Button cube-DDanger"
              onClick={() => void this._delete()}
              title={trans.__(
                'Delete this labeling project and its annotations'
              )}
            >
              {trans.__('Delete')}
            </button>
          </div>
        </header>
        {this._error ? (
          <ErrorBox
            className="cube-LError"
            error={this._error}
            dismissLabel={this._trans.__('Dismiss')}
            dismiss={() => {
              this._error = null;
              this.update();
            }}
          />
        ) : null}
        <div className="cube-LGrid">
          <section className="cube-TSection cube-LCard">
            <h3>{trans.__('Progress')}</h3>
            {progress ? (
              <>
                <div className="cube-LBig">
                  <span className="cube-LBig-number">
                    {donePercent(progress)}%
                  </span>
                  <span className="cube-TMuted">
                    {trans.__(
                      '%1 of %2 tasks labeled',
                      doneCount(progress),
                      progress.total
                    )}
                    {progress.prelabeled
                      ? ` · ${trans.__('%1 pre-labeled', progress.prelabeled)}`
                      : ''}
                  </span>
                </div>
                <ProgressBar progress={progress} trans={trans} />
                <ul className="cube-LLegend">
                  {progressSegments(progress).map(s => (
                    <li key={s.status}>
                      <span
                        className={`cube-LLegend-dot cube-LProgress-${s.status}`}
                      />
                      {trans.__(s.status)}{' '}
                      <span className="cube-num">{s.count}</span>
                    </li>
                  ))}
                </ul>
                <h4>{trans.__('Per person')}</h4>
                {Object.keys(progress.by_user).length ? (
                  <table className="cube-Table cube-LUsers">
                    <thead>
                      <tr>
                        <th>{trans.__('Annotator')}</th>
                        <th className="cube-num">{trans.__('Assigned')}</th>
                        <th className="cube-num">{trans.__('Submitted')}</th>
                        <th className="cube-num">{trans.__('Accepted')}</th>
                        <th className="cube-num">{trans.__('Rejected')}</th>
                      </tr>
                    </thead>
                    <tbody>
                      {Object.entries(progress.by_user).map(([user, u]) => (
                        <tr key={user} data-user={user}>
                          <td>{user}</td>
                          <td className="cube-num">{u.assigned}</td>
                          <td className="cube-num">{u.submitted}</td>
                          <td className="cube-num">{u.accepted}</td>
                          <td className="cube-num">{u.rejected}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                ) : (
                  <div className="cube-TMuted">
                    {trans.__('No task assigned yet.')}
                  </div>
                )}
              </>
            ) : null}
          </section>
          <section className="cube-TSection cube-LCard">
            <h3>{trans.__('Per label')}</h3>
            <ul className="cube-LLabelBars">
              {labelRows(p, progress).map(row => (
                <li key={row.name} data-label={row.name}>
                  <span className="cube-LLabelBars-name">
                    <span
                      className="cube-LLabel-swatch"
                      style={{ background: row.color }}
                    />
                    {row.name}
                  </span>
                  <span className="cube-LLabelBars-bar">
                    <span
                      style={{
                        width: `${row.percent}%`,
                        background: row.color
                      }}
                    />
                  </span>
                  <span className="cube-num">{row.count}</span>
                </li>
              ))}
            </ul>
            {p.instructions ? (
              <details className="cube-LInstructions">
                <summary>{trans.__('Instructions')}</summary>
                <div className="cube-LInstructions-text">{p.instructions}</div>
              </details>
            ) : null}
          </section>
          {this._assignCard(p)}
          {this._exportCard(p)}
          {this._prelabelCard(p)}
          {this._versionsCard()}
        </div>
      </div>
    );
  }

  private _assignCard(p: LabelingProject): JSX.Element {
    const trans = this._trans;
    const members = this._members();
    return (
      <section className="cube-TSection cube-LCard cube-LAssign">
        <h3>{trans.__('Assign tasks')}</h3>
        <div className="cube-TMuted">
          {trans.__(
            '%1 tasks in the pool. Annotators also take tasks from the pool when their queue is empty.',
            p.progress?.new ?? 0
          )}
        </div>
        <div
          className="cube-LUsersPick"
          role="group"
          aria-label={trans.__('Annotators')}
        >
          {members.map(user => (
            <label key={user} className="cube-Check">
              <input
                type="checkbox"
                name="assign-user"
                value={user}
                checked={this._assignUsers.has(user)}
                onChange={e => {
                  if (e.currentTarget.checked) {
                    this._assignUsers.add(user);
                  } else {
                    this._assignUsers.delete(user);
                  }
                  this.update();
                }}
              />
              {user}
            </label>
          ))}
        </div>
        <div className="cube-LRow">
          <select
            className="cube-TField-input"
            name="assign-mode"
            value={this._assignMode}
            onChange={e => {
              this._assignMode = e.currentTarget.value as
                'round_robin' | 'batch';
              this.update();
            }}
          >
            <option value="round_robin">
              {trans.__('Round robin (all of the pool)')}
            </option>
            <option value="batch">{trans.__('Batches of')}</option>
          </select>
          {this._assignMode === 'batch' ? (
            <input
              className="cube-TField-input cube-LNarrow"
              name="batch-size"
              type="number"
              min={1}
              value={this._batchSize}
              onChange={e => {
                this._batchSize = e.currentTarget.value;
                this.update();
              }}
            />
          ) : null}
          <button
            className="cube-Button"
            disabled={this._busy === 'assign'}
            onClick={() => void this._assign()}
          >
            {this._busy === 'assign' ? (
              <span className="cube-Spinner" />
            ) : (
              trans.__('Assign')
            )}
          </button>
        </div>
        {this._assigned ? (
          <div className="cube-LDone-note" role="status">
            {Object.keys(this._assigned).length
              ? Object.entries(this._assigned)
                  .map(([u, n]) => trans.__('%1: %2 tasks', u, n))
                  .join(' · ')
              : trans.__('No task left in the pool.')}
          </div>
        ) : null}
      </section>
    );
  }

  private _exportCard(p: LabelingProject): JSX.Element {
    const trans = this._trans;
    const formats = exportFormats(p.type);
    const format = formats.includes(this._format) ? this._format : formats[0];
    const answer = this._exported;
    return (
      <section className="cube-TSection cube-LCard cube-LExport">
        <h3>{trans.__('Export')}</h3>
        <div className="cube-TMuted">
          {trans.__(
            'Writes a new version of dataset %1 that pipelines and training jobs can use.',
            p.dataset
          )}
        </div>
        <div className="cube-LRow">
          <select
            className="cube-TField-input"
            name="export-format"
            aria-label={trans.__('Format')}
            value={format}
            onChange={e => {
              this._format = e.currentTarget.value as ExportFormat;
              this.update();
            }}
          >
            {formats.map(f => (
              <option key={f} value={f}>
                {FORMAT_TITLES[f]}
              </option>
            ))}
          </select>
          <select
            className="cube-TField-input"
            name="export-only"
            aria-label={trans.__('Which tasks')}
            value={this._only}
            onChange={e => {
              this._only = e.currentTarget.value as
                '' | 'accepted' | 'submitted';
              this.update();
            }}
          >
            <option value="">{trans.__('submitted and accepted')}</option>
            <option value="accepted">{trans.__('accepted only')}</option>
          </select>
          <button
            className="cube-Button cube-mod-primary cube-LExport-go"
            disabled={this._busy === 'export'}
            onClick={() => void this._export(format)}
          >
            {this._busy === 'export' ? (
              <span className="cube-Spinner" />
            ) : (
              trans.__('Export')
            )}
          </button>
        </div>
        {answer ? (
          <div
            className="cube-LExported"
            role="status"
            data-version={answer.version.version}
          >
            <div className="cube-LExported-head">
              <span>
                {trans.__(
                  '%1 version %2 · %3 · %4 items',
                  answer.dataset,
                  answer.version.version,
                  FORMAT_TITLES[answer.version.format as ExportFormat] ??
                    answer.version.format,
                  answer.version.item_count
                )}
              </span>
              <a
                className="cube-Link cube-LDownload"
                href={serverUrl(answer.download_url)}
                download
              >
                {trans.__('Download')}
              </a>
            </div>
            <CopyBlock
              className="cube-LPath"
              label={trans.__('Path on the server')}
              text={answer.version.path}
              copyTitle={trans.__('Copy the full path')}
              trans={trans}
            />
            <CopyBlock
              className="cube-LSnippet"
              label={trans.__('Load it in a notebook')}
              text={loadSnippet({
                dataset: answer.dataset,
                version: answer.version.version,
                format: answer.version.format,
                project: this.project,
                personalProject: this._me
              })}
              copyTitle={trans.__('Copy the Python code')}
              trans={trans}
            />
            {this._trainFrom ? (
              <button
                className="cube-Button cube-LTrainFrom"
                title={trans.__(
                  'Open the training form with this version in $CUBE_LAB_DATASET'
                )}
                onClick={() =>
                  this._trainFrom!({
                    project: this.project,
                    dataset: answer.dataset,
                    version: answer.version.version,
                    path: answer.version.path
                  })
                }
              >
                {trans.__('Train from these labels')}
              </button>
            ) : null}
          </div>
        ) : null}
      </section>
    );
  }

  private _prelabelCard(p: LabelingProject): JSX.Element {
    const trans = this._trans;
    return (
      <section className="cube-TSection cube-LCard cube-LPrelabel">
        <h3>{trans.__('Pre-label with a model')}</h3>
        <div className="cube-TMuted">
          {trans.__(
            'A registered model proposes labels; annotators accept or correct them. What the model said is kept apart.'
          )}
        </div>
        <div className="cube-LRow">
          <select
            className="cube-TField-input"
            name="prelabel-model"
            aria-label={trans.__('Model')}
            value={this._model}
            onFocus={() => this._loadModels()}
            onChange={e => {
              this._model = e.currentTarget.value;
              this.update();
            }}
          >
            <option value="">
              {this._models === null
                ? trans.__('— models —')
                : trans.__('— pick a model —')}
            </option>
            {(this._models ?? []).map(m => (
              <option key={m.name} value={m.name}>
                {m.name}
                {m.latest_version ? ` (v${m.latest_version})` : ''}
              </option>
            ))}
          </select>
          <input
            className="cube-TField-input cube-LNarrow"
            name="prelabel-version"
            aria-label={trans.__('Version')}
            placeholder={trans.__('latest')}
            value={this._modelVersion}
            onChange={e => {
              this._modelVersion = e.currentTarget.value;
              this.update();
            }}
          />
        </div>
        <div className="cube-LRow">
          <label className="cube-LInline">
            {trans.__('Threshold')}
            <input
              className="cube-TField-input cube-LNarrow"
              name="prelabel-threshold"
              type="number"
              min={0}
              max={1}
              step={0.05}
              value={this._threshold}
              onChange={e => {
                this._threshold = e.currentTarget.value;
                this.update();
              }}
            />
          </label>
          <label className="cube-LInline">
            {trans.__('Tasks')}
            <input
              className="cube-TField-input cube-LNarrow"
              name="prelabel-limit"
              type="number"
              min={1}
              placeholder={trans.__('all')}
              value={this._limit}
              onChange={e => {
                this._limit = e.currentTarget.value;
                this.update();
              }}
            />
          </label>
          <button
            className="cube-Button"
            disabled={!this._model || this._busy === 'prelabel'}
            onClick={() => void this._prelabel()}
          >
            {this._busy === 'prelabel' ? (
              <span className="cube-Spinner" />
            ) : (
              trans.__('Pre-label')
            )}
          </button>
        </div>
        {this._models !== null && !this._models.length ? (
          <div className="cube-TMuted">
            {trans.__('No model registered in project %1 yet.', p.project)}
          </div>
        ) : null}
        {this._prelabeled !== null ? (
          <div className="cube-LDone-note" role="status">
            {trans.__('%1 tasks pre-labeled.', this._prelabeled)}
          </div>
        ) : null}
      </section>
    );
  }

  private _versionsCard(): JSX.Element | null {
    const trans = this._trans;
    const versions = this._dataset?.versions ?? [];
    if (!versions.length) {
      return null;
    }
    return (
      <section className="cube-TSection cube-LCard cube-LVersions">
        <h3>{trans.__('Dataset versions')}</h3>
        <table className="cube-Table">
          <tbody>
            {[...versions].reverse().map(v => (
              <tr key={v.version} data-version={v.version}>
                <td>v{v.version}</td>
                <td>{FORMAT_TITLES[v.format as ExportFormat] ?? v.format}</td>
                <td className="cube-num">
                  {trans._n('%1 item', '%1 items', v.item_count)}
                </td>
                <td className="cube-TMuted">
                  {formatRelativeTime(v.created_at)}
                </td>
                <td className="cube-LVersions-actions">
                  <CopyButton
                    text={v.path}
                    label={trans.__('Copy path')}
                    title={trans.__('Copy the full path: %1', v.path)}
                    trans={trans}
                  />{' '}
                  <a
                    className="cube-Link"
                    href={datasetVersionDownloadUrl(
                      this._dataset!.project,
                      this._dataset!.name,
                      v.version
                    )}
                    download
                  >
                    {trans.__('Download')}
                  </a>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    );
  }

  /** Members of the labeling project's cube-lab project (the user alone for a personal one). */
  private _members(): string[] {
    const proj = this._projects.find(p => p.name === this.project);
    const names = proj ? proj.members.map(m => m.username) : [];
    if (!names.length && this._me) {
      names.push(this._me);
    }
    return names;
  }

  private async _fetch(): Promise<void> {
    try {
      if (!this._me) {
        const me = await whoami();
        this._me = me.user;
        this._projects = me.projects;
        if (!this._assignUsers.size) {
          this._members().forEach(u => this._assignUsers.add(u));
        }
      }
      this._proj = await getLabelingProject(this.project, this.name);
      this._loadError = null;
      if (!this._dataset || this._datasetStale) {
        this._datasetStale = false;
        this._dataset = await getDataset(
          this.project,
          this._proj.dataset
        ).catch(() => null);
      }
    } catch (err) {
      if (!this._proj) {
        this._loadError = describeError(err);
      }
      throw err;
    } finally {
      this.update();
    }
  }

  private _loadModels(): void {
    if (this._models !== null || this._modelsLoading) {
      return;
    }
    this._modelsLoading = true;
    listModels({ project: this.project, limit: 200 })
      .then(list => {
        this._models = list.models;
      })
      .catch(err => {
        this._models = [];
        this._error = describeError(err);
      })
      .finally(() => {
        this._modelsLoading = false;
        this.update();
      });
  }

  private async _assign(): Promise<void> {
    const { request, error } = assignRequest(
      [...this._assignUsers],
      this._assignMode,
      this._batchSize,
      this._trans
    );
    if (!request) {
      this._error = { error: error ?? '', detail: '' };
      this.update();
      return;
    }
    await this._run('assign', async () => {
      this._assigned = (
        await assignLabelingTasks(this.project, this.name, request)
      ).assigned;
    });
  }

  private async _export(format: ExportFormat): Promise<void> {
    await this._run('export', async () => {
      this._exported = await exportLabels(this.project, this.name, {
        format,
        ...(this._only ? { only: this._only } : {})
      });
      this._datasetStale = true;
    });
  }

  private async _prelabel(): Promise<void> {
    const version = this._modelVersion.trim()
      ? Number(this._modelVersion)
      : undefined;
    const threshold = Number(this._threshold);
    const limit = this._limit.trim() ? Number(this._limit) : undefined;
    if (
      (version !== undefined && (!Number.isInteger(version) || version < 1)) ||
      !(threshold >= 0 && threshold <= 1) ||
      (limit !== undefined && (!Number.isInteger(limit) || limit < 1))
    ) {
      this._error = {
        error: this._trans.__('Check the pre-label settings'),
        detail: this._trans.__(
          'Version and tasks are whole numbers (1 or more), the threshold is between 0 and 1.'
        )
      };
      this.update();
      return;
    }
    await this._run('prelabel', async () => {
      const answer = await prelabelTasks(this.project, this.name, {
        model: this._model,
        threshold,
        ...(version !== undefined ? { version } : {}),
        ...(limit !== undefined ? { limit } : {})
      });
      this._prelabeled = answer.prelabeled;
    });
  }

  private async _run(
    what: 'assign' | 'export' | 'prelabel',
    job: () => Promise<void>
  ): Promise<void> {
    this._busy = what;
    this._error = null;
    this.update();
    try {
      await job();
      this._changed();
      void this.refresh();
    } catch (err) {
      this._error = describeError(err);
    } finally {
      this._busy = null;
      this.update();
    }
  }

  private async _delete(): Promise<void> {
    const trans = this._trans;
    const answer = await showDialog({
      title: trans.__('Delete labeling project %1?', this.name),
      body: trans.__(
        'Its tasks and annotations are deleted; the dataset and its exported versions stay.'
      ),
      buttons: [
        Dialog.cancelButton(),
        Dialog.warnButton({ label: trans.__('Delete') })
      ]
    });
    if (!answer.button.accept) {
      return;
    }
    try {
      await deleteLabelingProject(this.project, this.name);
      this._changed();
      this.dispose();
    } catch (err) {
      this._error = describeError(err);
      this.update();
    }
  }

  private _trans: TranslationBundle;
  private _open: (
    p: Pick<LabelingProject, 'project' | 'name'>,
    mode: LabelingPanel.OpenMode
  ) => void;
  private _changed: () => void;
  private _poll: Poll;
  private _started = false;
  private _me = '';
  private _projects: Project[] = [];
  private _proj: LabelingProject | null = null;
  private _dataset: Dataset | null = null;
  private _datasetStale = false;
  private _loadError: ErrorText | null = null;
  private _error: ErrorText | null = null;
  private _busy: 'assign' | 'export' | 'prelabel' | null = null;
  private _assignUsers = new Set<string>();
  private _assignMode: 'round_robin' | 'batch' = 'round_robin';
  private _batchSize = '50';
  private _assigned: Record<string, number> | null = null;
  private _format: ExportFormat = 'coco';
  private _only: '' | 'accepted' | 'submitted' = '';
  private _exported: ExportAnswer | null = null;
  private _trainFrom?: (data: ITrainingData) => void;
  private _models: Model[] | null = null;
  private _modelsLoading = false;
  private _model = '';
  private _modelVersion = '';
  private _threshold = '0.5';
  private _limit = '';
  private _prelabeled: number | null = null;
}

export namespace LabelingProjectView {
  export interface IOptions {
    project: string;
    name: string;
    translator: ITranslator;
    open: (
      p: Pick<LabelingProject, 'project' | 'name'>,
      mode: LabelingPanel.OpenMode
    ) => void;
    changed: () => void;
    /** Open the training launch form with an exported version as its data. */
    trainFrom?: (data: ITrainingData) => void;
  }
}

/** A button that copies `text` and says so for a moment. */
function CopyButton(props: {
  text: string;
  label: string;
  title: string;
  trans: TranslationBundle;
}): JSX.Element {
  const [copied, setCopied] = React.useState(false);
  React.useEffect(() => {
    if (!copied) {
      return;
    }
    const timer = window.setTimeout(() => setCopied(false), 2000);
    return () => window.clearTimeout(timer);
  }, [copied]);
  return (
    <button
      type="button"
      className={`cube-LCopy${copied ? ' cube-mod-copied' : ''}`}
      title={props.title}
      aria-label={props.title}
      onClick={() => void copyText(props.text).then(() => setCopied(true))}
    >
      <copyIcon.react tag="span" elementSize="normal" />
      <span>{copied ? props.trans.__('Copied') : props.label}</span>
    </button>
  );
}

/** Text shown whole (monospace, wrapped) under a label, with a copy button. */
function CopyBlock(props: {
  className: string;
  label: string;
  text: string;
  copyTitle: string;
  trans: TranslationBundle;
}): JSX.Element {
  return (
    <div className="cube-LCopyBlock">
      <div className="cube-LCopyBlock-head">
        <span className="cube-LCopyBlock-label">{props.label}</span>
        <CopyButton
          text={props.text}
          label={props.trans.__('Copy')}
          title={props.copyTitle}
          trans={props.trans}
        />
      </div>
      <pre className={`cube-LCopyBlock-text ${props.className}`}>
        {props.text}
      </pre>
    </div>
  );
}

/** What "Train from these labels" hands to the training form. */
export interface ITrainingData {
  project: string;
  dataset: string;
  version: number;
  path: string;
}
