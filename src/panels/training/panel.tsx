/**
 * The "Training" section of the cube-lab sidebar: the launch form and the
 * list of jobs (status, size, start, duration; open, stop, re-run). Polls
 * while visible.
 */
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { addIcon, refreshIcon } from '@jupyterlab/ui-components';
import * as React from 'react';

import { ErrorBox } from '../errorbox';
import {
  describeError,
  isJobActive,
  listTrainingJobs,
  Project,
  rerunTrainingJob,
  stopTrainingJob,
  submitTrainingJob,
  TrainingJob,
  whoami
} from '../../api';
import { ICubeSettings } from '../../tokens';
import { PolledSection } from '../section';
import { LaunchForm } from './form';
import {
  emptyForm,
  FormField,
  formatDuration,
  formToRequest,
  ILaunchForm,
  jobSize
} from './logic';

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
    this._pickCurrent = options.pickCurrent;
    this._browse = options.browse;
    this.title.label = this.trans.__('Training');
    this.title.caption = this.trans.__('Distributed training jobs');

    this.addButton('new', addIcon, this.trans.__('New training job'), () =>
      this.showForm()
    );
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

  /** Open the launch form, optionally filled (a script path, or a copy of a job). */
  showForm(fill: Partial<ILaunchForm> = {}): void {
    this._formOpen = true;
    this._form = { ...this._form, ...fill };
    this._errors = {};
    this._submitError = null;
    this.makeRoom();
    this.update();
    requestAnimationFrame(() => {
      this.node
        .querySelector<HTMLInputElement>('.cube-TForm input[name="script"]')
        ?.focus();
    });
  }

  protected render(): JSX.Element {
    const trans = this.trans;
    return (
      <div className="cube-Training">
        {this._formOpen ? (
          <LaunchForm
            form={this._form}
            errors={this._errors}
            submitError={this._submitError}
            busy={this._busy}
            projects={this._projects}
            trans={trans}
            onChange={patch => {
              this._form = { ...this._form, ...patch };
              for (const key of Object.keys(patch) as FormField[]) {
                delete this._errors[key];
              }
              this.update();
            }}
            onSubmit={() => void this._submit()}
            onCancel={() => {
              this._formOpen = false;
              this.update();
            }}
            pickCurrent={this._pickCurrent}
            browse={this._browse}
          />
        ) : null}
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
          <div className="cube-TEmpty">
            <p className="cube-TEmpty-title">
              {trans.__('No training jobs yet')}
            </p>
            <p className="cube-TEmpty-text">
              {trans.__(
                'Launch a script on several processes with torchrun, DeepSpeed, TensorFlow or MPI; its logs and metrics show here.'
              )}
            </p>
            {this._formOpen ? null : (
              <button
                className="cube-Button cube-mod-primary"
                onClick={() => this.showForm()}
              >
                {trans.__('New training job')}
              </button>
            )}
            <p className="cube-TEmpty-text">
              {trans.__('Or from a notebook:')}{' '}
              <code>%cube_train --nproc 2 train.py</code>
              <br />
              {trans.__('or a terminal:')}{' '}
              <code>cube-lab train --nproc 2 train.py</code>
            </p>
          </div>
        )}
      </div>
    );
  }

  protected changing(): boolean {
    return this._jobs.some(isJobActive);
  }

  protected async fetch(): Promise<void> {
    try {
      if (!this._identity) {
        this._identity = whoami()
          .then(me => {
            this._projects = me.projects;
          })
          .catch(() => {
            this._identity = null; // asked again with the next poll
          });
      }
      this._jobs = (await listTrainingJobs({ limit: 100 })).jobs;
      this._error = null;
    } catch (err) {
      this._error = describeError(err);
      throw err;
    } finally {
      this._loaded = true;
    }
  }

  private async _submit(): Promise<void> {
    const { request, errors } = formToRequest(this._form);
    this._errors = errors;
    this._submitError = null;
    if (!request) {
      this.update();
      return;
    }
    this._busy = true;
    this.update();
    try {
      const job = await submitTrainingJob(request);
      this._formOpen = false;
      this._jobs = [job, ...this._jobs.filter(j => j.id !== job.id)];
      this._openJob(job);
      void this.refresh();
    } catch (err) {
      this._submitError = describeError(err);
    } finally {
      this._busy = false;
      this.update();
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
  private _pickCurrent: () => string | null;
  private _browse: () => Promise<string | null>;
  private _identity: Promise<void> | null = null;
  private _projects: Project[] = [];
  private _jobs: TrainingJob[] = [];
  private _loaded = false;
  private _error: { error: string; detail: string } | null = null;
  private _pending = new Set<string>();
  private _formOpen = false;
  private _form: ILaunchForm = emptyForm();
  private _errors: Partial<Record<FormField, string>> = {};
  private _submitError: { error: string; detail: string } | null = null;
  private _busy = false;
}

export namespace TrainingPanel {
  export interface IOptions {
    settings: ICubeSettings;
    translator: ITranslator;
    /** Open the job's detail view in the main area. */
    openJob: (job: TrainingJob) => void;
    pickCurrent: () => string | null;
    browse: () => Promise<string | null>;
  }
}

export function StatusBadge(props: { status: string }): JSX.Element {
  return (
    <span className={`cube-TBadge cube-TBadge-${props.status}`}>
      {props.status === 'running' ? (
        <span className="cube-TBadge-pulse" />
      ) : null}
      {props.status}
    </span>
  );
}

function startTime(job: TrainingJob): string {
  const at = job.started_at ?? job.created_at;
  return at
    ? new Date(at).toLocaleString(undefined, {
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
              <StatusBadge status={job.status} />
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
