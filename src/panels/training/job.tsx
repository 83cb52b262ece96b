/**
 * A training job in the main area: status and facts, stop / re-run /
 * register model, charts of its metrics and its log followed live, per rank.
 */
import { ReactWidget } from '@jupyterlab/apputils';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { Message } from '@lumino/messaging';
import { Poll } from '@lumino/polling';
import * as React from 'react';

import { ErrorBox } from '../errorbox';
import {
  describeError,
  getTrainingJob,
  isJobActive,
  LogChunk,
  ModelVersion,
  registerModelFromJob,
  rerunTrainingJob,
  stopTrainingJob,
  TrainingJob,
  trainingJobLog,
  trainingJobMetrics,
  trainingJobResources,
  TrainingMetrics
} from '../../api';
import { ResourceStrip } from '../resources/strip';
import { LineChart } from './chart';
import { frameworkLabel } from './form';
import {
  failureReason,
  formatDuration,
  jobSize,
  orderMetrics,
  RankedLog,
  RankFilter
} from './logic';
import { StatusBadge } from './panel';
import { uiLanguage } from '../../locale';

/** How often a running job is read (status, new log, metrics). */
const LIVE_INTERVAL_MS = 1000;
/** Log pieces read in one tick at most (64 KiB each), so a burst catches up. */
const MAX_CHUNKS_PER_TICK = 8;
const MAX_BACKOFF_MS = 60 * 1000;

type ErrorText = { error: string; detail: string };

export class TrainingJobView extends ReactWidget {
  constructor(options: TrainingJobView.IOptions) {
    super();
    this.addClass('cube-TJobView');
    this.jobId = options.jobId;
    this._trans = options.translator.load('cube_lab');
    this._openJob = options.openJob;
    this._editCopy = options.editCopy;
    this._openModel = options.openModel;
    this._poll = new Poll({
      auto: false,
      factory: () => this._tick(),
      frequency: {
        interval: LIVE_INTERVAL_MS,
        backoff: true,
        max: MAX_BACKOFF_MS
      },
      name: `cube-lab:training-job:${options.jobId}`,
      standby: () => !this.isVisible || 'when-hidden'
    });
  }

  readonly jobId: string;

  get job(): TrainingJob | null {
    return this._job;
  }

  /** Read the job, new log lines and metrics now. */
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
    if (this._started && (!this._job || isJobActive(this._job))) {
      void this._poll.refresh();
    }
  }

  protected render(): JSX.Element {
    return (
      <JobDetail
        job={this._job}
        loadError={this._loadError}
        log={this._log}
        logVersion={this._logVersion}
        logDone={this._logDone}
        metrics={this._metrics}
        rank={this._rank}
        setRank={rank => {
          this._rank = rank;
          this.update();
        }}
        busy={this._busy}
        actionError={this._actionError}
        registered={this._registered}
        trans={this._trans}
        stop={() => void this._action('stop')}
        rerun={() => void this._action('rerun')}
        editCopy={() => this._job && this._editCopy(this._job)}
        register={name => void this._register(name)}
        openModel={v => this._openModel(v)}
      />
    );
  }

  private async _tick(): Promise<void> {
    try {
      const job = await getTrainingJob(this.jobId);
      this._job = job;
      this.title.label = job.name;
      this.title.caption = this._trans.__(
        'Training job %1 (%2)',
        job.id,
        job.status
      );
      this._loadError = null;
      let chunk: LogChunk | null = null;
      for (let i = 0; i < MAX_CHUNKS_PER_TICK; i++) {
        chunk = await trainingJobLog(this.jobId, this._offset);
        if (chunk.text) {
          this._log.append(chunk.text);
          this._logVersion++;
        }
        this._offset = chunk.offset;
        if (chunk.offset >= chunk.size) {
          break;
        }
      }
      this._logDone = !!chunk?.done;
      this._metrics = await trainingJobMetrics(this.jobId);
      if (!isJobActive(job) && this._logDone) {
        // Nothing will change: read again only when asked (refresh, re-show).
        this._poll.frequency = {
          ...this._poll.frequency,
          interval: Poll.NEVER
        };
      } else if (this._poll.frequency.interval !== LIVE_INTERVAL_MS) {
        this._poll.frequency = {
          ...this._poll.frequency,
          interval: LIVE_INTERVAL_MS
        };
      }
    } catch (err) {
      this._loadError = describeError(err);
      throw err;
    } finally {
      this.update();
    }
  }

  private async _action(what: 'stop' | 'rerun'): Promise<void> {
    this._busy = what;
    this._actionError = null;
    this.update();
    try {
      if (what === 'stop') {
        this._job = await stopTrainingJob(this.jobId);
        this._poll.frequency = {
          ...this._poll.frequency,
          interval: LIVE_INTERVAL_MS
        };
        void this.refresh();
      } else {
        this._openJob(await rerunTrainingJob(this.jobId));
      }
    } catch (err) {
      this._actionError = describeError(err);
    } finally {
      this._busy = null;
      this.update();
    }
  }

  private async _register(name: string): Promise<void> {
    this._busy = 'register';
    this._actionError = null;
    this._registered = null;
    this.update();
    try {
      this._registered = await registerModelFromJob(this.jobId, { name });
    } catch (err) {
      this._actionError = describeError(err);
    } finally {
      this._busy = null;
      this.update();
    }
  }

  private _trans: TranslationBundle;
  private _openJob: (job: TrainingJob) => void;
  private _editCopy: (job: TrainingJob) => void;
  private _openModel: (version: ModelVersion) => void;
  private _poll: Poll;
  private _started = false;
  private _job: TrainingJob | null = null;
  private _loadError: ErrorText | null = null;
  private _log = new RankedLog();
  private _logVersion = 0;
  private _offset = 0;
  private _logDone = false;
  private _metrics: TrainingMetrics | null = null;
  private _rank: RankFilter = 'all';
  private _busy: 'stop' | 'rerun' | 'register' | null = null;
  private _actionError: ErrorText | null = null;
  private _registered: ModelVersion | null = null;
}

export namespace TrainingJobView {
  export interface IOptions {
    jobId: string;
    translator: ITranslator;
    /** Open another job (a re-run). */
    openJob: (job: TrainingJob) => void;
    /** Fill the launch form with this job's spec. */
    editCopy: (job: TrainingJob) => void;
    /** Show a registered model version. */
    openModel: (version: ModelVersion) => void;
  }
}

function when(at: string | null): string {
  return at
    ? new Date(at).toLocaleString(uiLanguage(), {
        month: 'short',
        day: 'numeric',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit'
      })
    : '';
}

function JobDetail(props: {
  job: TrainingJob | null;
  loadError: ErrorText | null;
  log: RankedLog;
  logVersion: number;
  logDone: boolean;
  metrics: TrainingMetrics | null;
  rank: RankFilter;
  setRank: (rank: RankFilter) => void;
  busy: 'stop' | 'rerun' | 'register' | null;
  actionError: ErrorText | null;
  registered: ModelVersion | null;
  trans: TranslationBundle;
  stop: () => void;
  rerun: () => void;
  editCopy: () => void;
  register: (name: string) => void;
  openModel: (version: ModelVersion) => void;
}): JSX.Element {
  const { job, trans } = props;
  if (!job) {
    return (
      <div className="cube-TJobDetail">
        {props.loadError ? (
          <ErrorBox error={props.loadError} />
        ) : (
          <div className="cube-Loading">
            <span className="cube-Spinner" /> {trans.__('Loading the job…')}
          </div>
        )}
      </div>
    );
  }
  const active = isJobActive(job);
  const facts: [string, string][] = [
    [trans.__('Framework'), frameworkLabel(job.framework, trans)],
    [
      trans.__('Processes'),
      job.workers > 1
        ? trans.__(
            '%1 (%2 workers × %3)',
            jobSize(job),
            job.workers,
            job.nproc_per_worker
          )
        : String(job.nproc_per_worker)
    ],
    [
      trans.__('GPUs'),
      job.gpus.length ? job.gpus.join(', ') : trans.__('none (CPU)')
    ],
    [trans.__('Project'), job.project],
    [trans.__('Started'), when(job.started_at) || trans.__('not yet')],
    [trans.__('Duration'), formatDuration(job.duration_s)],
    [trans.__('Attempts'), String(job.attempts)]
  ];
  if (job.backend !== 'local') {
    facts.push([
      trans.__('Backend'),
      job.cluster
        ? `${job.backend}: ${job.cluster.kind} ${job.cluster.namespace}/${job.cluster.name}`
        : job.backend
    ]);
  }
  if (job.exit_code !== null) {
    facts.push([trans.__('Exit code'), String(job.exit_code)]);
  }
  // What went wrong, from the log's last error line (a traceback's end).
  const reason = ['failed', 'interrupted'].includes(job.status)
    ? failureReason(props.log.lines)
    : null;
  const showLog = () =>
    document
      .getElementById(`cube-tlog-${job.id}`)
      ?.scrollIntoView({ behavior: 'smooth', block: 'start' });
  const folder = job.last_checkpoint
    ? [trans.__('Last checkpoint'), job.last_checkpoint]
    : job.output_dir
      ? [trans.__('Output folder'), job.output_dir]
      : null;
  return (
    <div className="cube-TJobDetail" data-job={job.id} data-status={job.status}>
      <header className="cube-TJobHead">
        <div className="cube-TJobHead-title">
          <h2>{job.name}</h2>
          <StatusBadge status={job.status} trans={trans} />
          <span className="cube-TMuted">{job.id}</span>
        </div>
        <div className="cube-TJobHead-actions">
          {active ? (
            <button
              className="cube-Button"
              onClick={props.stop}
              disabled={props.busy !== null}
              title={trans.__('Stop every process of the job')}
            >
              {props.busy === 'stop' ? (
                <span className="cube-TBusy">
                  <span className="cube-Spinner" /> {trans.__('Stopping…')}
                </span>
              ) : (
                trans.__('Stop')
              )}
            </button>
          ) : (
            <button
              className="cube-Button"
              onClick={props.rerun}
              disabled={props.busy !== null}
              title={trans.__('Run again with the same spec')}
            >
              {props.busy === 'rerun' ? (
                <span className="cube-TBusy">
                  <span className="cube-Spinner" /> {trans.__('Starting…')}
                </span>
              ) : (
                trans.__('Re-run')
              )}
            </button>
          )}
          <button
            className="cube-Button"
            onClick={props.editCopy}
            title={trans.__('Open the launch form filled with this job’s spec')}
          >
            {trans.__('Edit & launch…')}
          </button>
        </div>
      </header>
      <code className="cube-TJobCommand" title={job.working_dir ?? ''}>
        {job.command}
      </code>
      <dl className="cube-TFacts">
        {facts.map(([k, v]) => (
          <div key={k} className="cube-TFact">
            <dt>{k}</dt>
            <dd title={v}>{v}</dd>
          </div>
        ))}
        {folder ? (
          <div className="cube-TFact cube-TFact-wide">
            <dt>{folder[0]}</dt>
            <dd>
              <code>{folder[1]}</code>
            </dd>
          </div>
        ) : null}
      </dl>
      {job.error && job.status === 'cancelled' ? (
        <div className="cube-TNote" role="status">
          {job.error === 'stopped'
            ? trans.__('Stopped on request.')
            : job.error}
        </div>
      ) : job.error && job.status !== 'succeeded' ? (
        <ErrorBox
          className="cube-TJobFailure"
          error={{
            error:
              job.status === 'failed'
                ? trans.__('The job failed: %1', job.error)
                : job.error,
            // The record may already carry the log's error line.
            detail: reason && !job.error.includes(reason) ? reason : ''
          }}
          action={{
            label: trans.__('Read the log'),
            run: showLog
          }}
        />
      ) : null}
      {props.actionError ? <ErrorBox error={props.actionError} /> : null}
      {props.loadError ? <ErrorBox error={props.loadError} /> : null}
      {job.status === 'succeeded' ? (
        <RegisterForm
          job={job}
          busy={props.busy === 'register'}
          registered={props.registered}
          trans={trans}
          register={props.register}
          openModel={props.openModel}
        />
      ) : null}
      <ResourceStrip
        objectKey={`${job.id}:${job.attempts}`}
        load={() => trainingJobResources(job.id)}
        active={active}
        trans={trans}
      />
      <section className="cube-TSection">
        <h3>
          {trans.__('Metrics')}
          {props.metrics?.source === 'log' ? (
            <span className="cube-TMuted">
              {' '}
              {trans.__('(parsed from key=value log lines)')}
            </span>
          ) : null}
        </h3>
        <Charts
          metrics={props.metrics}
          job={job}
          reason={reason}
          showLog={showLog}
          trans={trans}
        />
      </section>
      <LogView
        job={job}
        log={props.log}
        version={props.logVersion}
        done={props.logDone}
        rank={props.rank}
        setRank={props.setRank}
        trans={trans}
      />
    </div>
  );
}

/** How to make a script report metrics (the empty charts' hint). */
function reportHint(trans: TranslationBundle): string {
  return trans.__(
    'Call cube_lab.report(step=..., loss=...) in the script, or print lines like "step=3 loss=0.12".'
  );
}

function Charts(props: {
  metrics: TrainingMetrics | null;
  job: TrainingJob;
  reason: string | null;
  showLog: () => void;
  trans: TranslationBundle;
}): JSX.Element {
  const { metrics, job, trans } = props;
  const names = metrics ? orderMetrics(Object.keys(metrics.series)) : [];
  if (!names.length) {
    if (metrics === null) {
      return (
        <p className="cube-TMuted cube-TCharts-empty">
          {trans.__('Loading metrics…')}
        </p>
      );
    }
    if (isJobActive(job)) {
      return (
        <p className="cube-TMuted cube-TCharts-empty">
          {trans.__('No metrics yet.')} {reportHint(trans)}
        </p>
      );
    }
    if (job.status !== 'succeeded') {
      // Not "reported no metrics": it never got that far. Say why, and where to read more.
      const what =
        job.status === 'failed'
          ? trans.__('The job failed before it reported any metrics.')
          : job.status === 'cancelled'
            ? trans.__('The job was stopped before it reported any metrics.')
            : trans.__(
                'The job was interrupted before it reported any metrics.'
              );
      return (
        <div
          className="cube-TCharts-empty cube-TCharts-failed"
          data-status={job.status}
        >
          <p>
            {what}{' '}
            {props.reason
              ? trans.__('Its log ends with:')
              : job.error
                ? trans.__('Reason: %1.', job.error)
                : ''}
          </p>
          {props.reason ? (
            <code className="cube-TCharts-reason">{props.reason}</code>
          ) : null}
          <p className="cube-TMuted">
            <button className="cube-TLink" onClick={props.showLog}>
              {trans.__('Read the whole log below')}
            </button>
            {job.status === 'failed'
              ? ` · ${trans.__('Fix it and press Re-run.')}`
              : ''}
          </p>
        </div>
      );
    }
    return (
      <p className="cube-TMuted cube-TCharts-empty">
        {trans.__('This job reported no metrics.')} {reportHint(trans)}
      </p>
    );
  }
  return (
    <div className="cube-TCharts">
      {names.map(name => (
        <LineChart
          key={name}
          name={name}
          series={metrics!.series[name]}
          xLabel={trans.__('step')}
        />
      ))}
    </div>
  );
}

function RegisterForm(props: {
  job: TrainingJob;
  busy: boolean;
  registered: ModelVersion | null;
  trans: TranslationBundle;
  register: (name: string) => void;
  openModel: (version: ModelVersion) => void;
}): JSX.Element {
  const { trans, registered } = props;
  const [name, setName] = React.useState(props.job.name);
  const valid = name.trim().length > 0;
  return (
    <form
      className="cube-TRegister"
      aria-label={trans.__('Register model')}
      onSubmit={e => {
        e.preventDefault();
        if (valid) {
          props.register(name.trim());
        }
      }}
    >
      <label
        className="cube-TRegister-label"
        htmlFor={`cube-treg-${props.job.id}`}
      >
        {trans.__('Register the last checkpoint as model')}
      </label>
      <input
        id={`cube-treg-${props.job.id}`}
        className="cube-TField-input"
        name="model-name"
        value={name}
        placeholder={trans.__('model name')}
        onChange={e => setName(e.target.value)}
        disabled={props.busy}
      />
      <button
        type="submit"
        className="cube-Button cube-mod-primary"
        disabled={props.busy || !valid}
      >
        {props.busy ? (
          <span className="cube-TBusy">
            <span className="cube-Spinner" /> {trans.__('Registering…')}
          </span>
        ) : (
          trans.__('Register')
        )}
      </button>
      {registered ? (
        <span className="cube-TRegister-done" role="status">
          {trans.__(
            'Registered %1 version %2.',
            registered.model,
            registered.version
          )}{' '}
          <button
            type="button"
            className="cube-TLink"
            onClick={() => props.openModel(registered)}
          >
            {trans.__('Open')}
          </button>
        </span>
      ) : null}
    </form>
  );
}

function LogView(props: {
  job: TrainingJob;
  log: RankedLog;
  version: number;
  done: boolean;
  rank: RankFilter;
  setRank: (rank: RankFilter) => void;
  trans: TranslationBundle;
}): JSX.Element {
  const { log, trans } = props;
  const pre = React.useRef<HTMLPreElement>(null);
  const [follow, setFollow] = React.useState(true);
  const total = props.job.workers * props.job.nproc_per_worker;
  const ranks = Array.from(
    new Set([
      ...Array.from({ length: Math.min(total, 64) }, (_, i) => i),
      ...log.ranks
    ])
  ).sort((a, b) => a - b);
  const text = log.text(props.rank);

  React.useLayoutEffect(() => {
    if (follow && pre.current) {
      pre.current.scrollTop = pre.current.scrollHeight;
    }
  }, [props.version, props.rank, follow]);

  const onScroll = () => {
    const el = pre.current;
    if (el) {
      const atEnd = el.scrollHeight - el.scrollTop - el.clientHeight < 8;
      if (atEnd !== follow) {
        setFollow(atEnd);
      }
    }
  };

  return (
    <section
      className="cube-TSection cube-TLog"
      id={`cube-tlog-${props.job.id}`}
    >
      <div className="cube-TLog-head">
        <h3>{trans.__('Log')}</h3>
        <label className="cube-TLog-filter">
          {trans.__('Show')}{' '}
          <select
            name="rank"
            value={String(props.rank)}
            onChange={e => {
              const v = e.target.value;
              props.setRank(v === 'all' || v === 'launcher' ? v : Number(v));
            }}
          >
            <option value="all">{trans.__('all ranks')}</option>
            {ranks.map(r => (
              <option key={r} value={String(r)}>
                {trans.__('rank %1', r)}
              </option>
            ))}
            {log.hasLauncherLines ? (
              <option value="launcher">{trans.__('launcher')}</option>
            ) : null}
          </select>
        </label>
        <label className="cube-TLog-follow">
          <input
            type="checkbox"
            checked={follow}
            onChange={e => setFollow(e.target.checked)}
          />{' '}
          {trans.__('Follow')}
        </label>
        <span className="cube-TMuted cube-TLog-state">
          {props.done ? (
            trans.__('complete')
          ) : (
            <span className="cube-TBusy">
              <span className="cube-Spinner" /> {trans.__('live')}
            </span>
          )}
        </span>
      </div>
      {log.dropped ? (
        <div className="cube-TMuted">
          {trans.__('%1 earlier lines not shown.', log.dropped)}
        </div>
      ) : null}
      <pre className="cube-TLog-text" ref={pre} onScroll={onScroll}>
        {text ||
          (props.done
            ? trans.__('(the job printed nothing)')
            : trans.__('Waiting for output…'))}
      </pre>
    </section>
  );
}
