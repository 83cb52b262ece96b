/**
 * The list of the "Training" side panel: the jobs (status, size, start,
 * duration; open, stop, re-run). The launch form opens in a main-area tab.
 * Polls while visible.
 */
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { addIcon, buildIcon, refreshIcon } from '@jupyterlab/ui-components';
import * as React from 'react';

import { ErrorBox } from '../errorbox';
import { EmptyState } from '../empty';
import {
  describeError,
  isJobActive,
  listTrainingJobs,
  rerunTrainingJob,
  stopTrainingJob,
  TrainingJob
} from '../../api';
import { ICubeSettings } from '../../tokens';
import { PolledSection } from '../section';
import { statusLabel } from '../tuning/logic';
import { formatDuration, jobSize } from './logic';
import { uiLanguage } from '../../locale';

/** Poll faster while a job of the list runs, so its status follows. */
const ACTIVE_INTERVAL_MS = 2000;

export class TrainingPanel extends PolledSection {
  constructor(options: TrainingPanel.IOptions) {
    super({
      ...options,
      pollName: 'cube-lab:training',
      fastIntervalMs: ACTIVE_INTERVAL_MS
    });
    this.addClass('cube-TrainingPanel');
    this._openJob = options.openJob;
    this._newJob = options.newJob;
    this.title.label = this.trans.__('Training');
    this.title.caption = this.trans.__('Distributed training jobs');

    this.addButton('new', addIcon, this.trans.__('Launch training'), () =>
      this._newJob()
    );
    if (options.finetune) {
      const finetune = options.finetune;
      this.addButton('finetune', buildIcon, this.trans.__('Fine-tune'), () =>
        finetune()
      );
    }
    this.addButton(
      'refresh',
      refreshIcon,
      this.trans.__('Refresh training jobs'),
      () => void this.refresh()
    );
  }

  /** The jobs of the last fetch, newest first. */
  get jobs(): TrainingJob[] {
    return this._jobs;
  }

  protected render(): JSX.Element {
    const trans = this.trans;
    return (
      <div className="cube-Training">
        {this._error ? <ErrorBox error={this._error} /> : null}
        {!this._loaded ? (
          <div className="cube-Loading">
            <span className="cube-Spinner" /> {trans.__('Loading jobs…')}
          </div>
        ) : this._jobs.length ? (
          <JobList
            jobs={this._jobs}
            trans={trans}
            pending={this._pending}
            open={job => this._openJob(job)}
            stop={job => void this._act(job, 'stop')}
            rerun={job => void this._act(job, 'rerun')}
          />
        ) : this._error ? null : (
          <EmptyState
            title={trans.__('No training jobs yet')}
            text={trans.__(
              'Launch a script on several processes with torchrun, DeepSpeed, TensorFlow or MPI; its logs and metrics show here.'
            )}
            action={{
              label: trans.__('Launch training'),
              run: () => this._newJob()
            }}
            notebook="%cube_train --nproc 2 train.py"
            terminal="cube-lab train --nproc 2 train.py"
            trans={trans}
          />
        )}
      </div>
    );
  }

  protected changing(): boolean {
    return this._jobs.some(isJobActive);
  }

  protected async fetch(): Promise<void> {
    try {
      this._jobs = (await listTrainingJobs({ limit: 100 })).jobs;
      this._error = null;
    } catch (err) {
      this._error = describeError(err);
      throw err;
    } finally {
      this._loaded = true;
    }
  }

  private async _act(job: TrainingJob, what: 'stop' | 'rerun'): Promise<void> {
    this._pending.add(job.id);
    this.update();
    try {
      if (what === 'stop') {
        await stopTrainingJob(job.id);
      } else {
        this._openJob(await rerunTrainingJob(job.id));
      }
      this._error = null;
    } catch (err) {
      this._error = describeError(err);
    } finally {
      this._pending.delete(job.id);
      void this.refresh();
    }
  }

  private _openJob: (job: TrainingJob) => void;
  private _newJob: () => void;
  private _jobs: TrainingJob[] = [];
  private _loaded = false;
  private _error: { error: string; detail: string } | null = null;
  private _pending = new Set<string>();
}

export namespace TrainingPanel {
  export interface IOptions {
    settings: ICubeSettings;
    translator: ITranslator;
    /** Open the job's detail view in the main area. */
    openJob: (job: TrainingJob) => void;
    /** Open the launch form. */
    newJob: () => void;
    /** Open the fine-tune form. */
    finetune?: () => void;
  }
}

/** A status badge with the status in words (the class keeps the raw one). */
export function StatusBadge(props: {
  status: string;
  trans: TranslationBundle;
}): JSX.Element {
  return (
    <span
      className={`cube-TBadge cube-TBadge-${props.status}`}
      data-status={props.status}
    >
      {props.status === 'running' ? (
        <span className="cube-TBadge-pulse" />
      ) : null}
      {statusLabel(props.status, props.trans)}
    </span>
  );
}

function startTime(job: TrainingJob): string {
  const at = job.started_at ?? job.created_at;
  return at
    ? new Date(at).toLocaleString(uiLanguage(), {
        month: 'short',
        day: 'numeric',
        hour: '2-digit',
        minute: '2-digit'
      })
    : '';
}

function JobList(props: {
  jobs: TrainingJob[];
  trans: TranslationBundle;
  pending: Set<string>;
  open: (job: TrainingJob) => void;
  stop: (job: TrainingJob) => void;
  rerun: (job: TrainingJob) => void;
}): JSX.Element {
  const { trans } = props;
  return (
    <ul className="cube-TJobs" aria-label={trans.__('Training jobs')}>
      {props.jobs.map(job => (
        <li key={job.id} className="cube-TJob" data-job={job.id}>
          <button
            className="cube-TJob-main"
            onClick={() => props.open(job)}
            title={trans.__('Open job %1 (%2)', job.id, job.command)}
          >
            <span className="cube-TJob-line">
              <span className="cube-TJob-name">{job.name}</span>
              <StatusBadge status={job.status} trans={trans} />
            </span>
            <span className="cube-TJob-meta">
              {job.framework} · {trans.__('%1 proc', jobSize(job))}
              {job.gpus.length
                ? ` · ${trans.__('%1 GPU', job.gpus.length)}`
                : ''}
              {' · '}
              {startTime(job)}
              {job.duration_s !== null
                ? ` · ${formatDuration(job.duration_s)}`
                : ''}
            </span>
          </button>
          <span className="cube-TJob-actions">
            {props.pending.has(job.id) ? (
              <span className="cube-Spinner" />
            ) : isJobActive(job) ? (
              <button
                className="cube-TLink"
                onClick={() => props.stop(job)}
                title={trans.__('Stop every process of the job')}
              >
                {trans.__('Stop')}
              </button>
            ) : (
              <button
                className="cube-TLink"
                onClick={() => props.rerun(job)}
                title={trans.__('Run again with the same spec')}
              >
                {trans.__('Re-run')}
              </button>
            )}
          </span>
        </li>
      ))}
    </ul>
  );
}
