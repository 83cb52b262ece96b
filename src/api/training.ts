/**
 * Distributed training jobs (cube_lab/handlers/training.py): submit, follow,
 * stop, rerun, and register a checkpoint as a model version.
 */
import { ServerConnection } from '@jupyterlab/services';

import type { LineageDataset, ModelVersion } from './models';
import {
  encodePath,
  JSONValue,
  LogChunk,
  queryString,
  requestAPI
} from './request';

/* -------------------------------------------------------------------------- */
/* Training                                                                   */
/* -------------------------------------------------------------------------- */

export type TrainingFramework =
  'pytorch' | 'deepspeed' | 'tensorflow' | 'mpi' | 'plain';

export type TrainingStatus =
  'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'interrupted';

/** What each worker asks for; GPU types are keys of the accelerator table. */
export interface TrainingResources {
  cpu?: string;
  memory?: string;
  gpus?: number;
  gpu_type?: string;
  gpu_memory_mib?: number;
  gpu_cores_percent?: number;
}

/** `POST /training/jobs`: exactly one of `script` or `command`. */
export interface TrainingJobRequest {
  framework?: TrainingFramework;
  script?: string;
  command?: string[];
  args?: string[];
  env?: Record<string, string>;
  /** Relative to the server root; script paths are relative to it. */
  working_dir?: string;
  workers?: number;
  nproc_per_worker?: number;
  resources?: TrainingResources;
  retries?: number;
  timeout_s?: number;
  project?: string;
  name?: string;
  image?: string;
  backend?: 'local' | 'kubernetes';
  output_dir?: string;
  /** The cluster object (default: by framework). */
  kind?: 'pytorchjob' | 'tfjob' | 'mpijob' | 'trainjob';
}

/** Where a Kubernetes job's object is. */
export interface TrainingCluster {
  namespace: string;
  kind: string;
  name: string;
  server?: string;
}

export interface TrainingJob {
  id: string;
  name: string;
  project: string;
  owner: string;
  framework: TrainingFramework;
  backend: 'local' | 'kubernetes';
  status: TrainingStatus;
  workers: number;
  nproc_per_worker: number;
  /** CUDA_VISIBLE_DEVICES given to the job. */
  gpus: number[];
  attempts: number;
  exit_code: number | null;
  error: string | null;
  working_dir: string | null;
  output_dir: string | null;
  last_checkpoint: string | null;
  command: string;
  spec: Record<string, JSONValue>;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  duration_s: number | null;
  /** Kubernetes jobs: where the job object is. */
  cluster?: TrainingCluster | null;
  /**
   * The dataset versions it was given ($CUBE_LAB_DATASET); a model registered
   * from the job carries them in its lineage.
   */
  datasets?: LineageDataset[];
}

/** Series per metric: `[step, value]` pairs of the lowest rank that reported. */
export interface TrainingMetrics {
  job_id: string;
  source: 'report' | 'log' | 'none';
  series: Record<string, [number, number][]>;
  last: Record<string, number>;
  last_checkpoint: string | null;
}

export interface RegisterFromJobRequest {
  name: string;
  /** Relative to the server root (default: the job's last checkpoint). */
  path?: string;
  project?: string;
  description?: string;
}

/** True while a training job may still change. */
export function isJobActive(job: Pick<TrainingJob, 'status'>): boolean {
  return job.status === 'queued' || job.status === 'running';
}

function jobPath(jobId: string, ...rest: string[]): string {
  return encodePath('training', 'jobs', jobId, ...rest);
}

export function listTrainingJobs(
  options: { project?: string; limit?: number } = {},
  settings?: ServerConnection.ISettings
): Promise<{ jobs: TrainingJob[] }> {
  const query = queryString({
    project: options.project,
    limit: options.limit
  });
  return requestAPI<{ jobs: TrainingJob[] }>(
    `training/jobs${query}`,
    {},
    settings
  );
}

export function submitTrainingJob(
  body: TrainingJobRequest,
  settings?: ServerConnection.ISettings
): Promise<TrainingJob> {
  return requestAPI<TrainingJob>(
    'training/jobs',
    { method: 'POST', body },
    settings
  );
}

export function getTrainingJob(
  jobId: string,
  settings?: ServerConnection.ISettings
): Promise<TrainingJob> {
  return requestAPI<TrainingJob>(jobPath(jobId), {}, settings);
}

export function stopTrainingJob(
  jobId: string,
  settings?: ServerConnection.ISettings
): Promise<TrainingJob> {
  return requestAPI<TrainingJob>(
    jobPath(jobId, 'stop'),
    { method: 'POST' },
    settings
  );
}

/** Submit a new job with the same spec and working directory. */
export function rerunTrainingJob(
  jobId: string,
  settings?: ServerConnection.ISettings
): Promise<TrainingJob> {
  return requestAPI<TrainingJob>(
    jobPath(jobId, 'rerun'),
    { method: 'POST' },
    settings
  );
}

/** Every rank's output (`[rank N] ` prefixed) from `offset`; call again to follow. */
export function trainingJobLog(
  jobId: string,
  offset = 0,
  settings?: ServerConnection.ISettings
): Promise<LogChunk> {
  return requestAPI<LogChunk>(
    `${jobPath(jobId, 'log')}${queryString({ offset })}`,
    {},
    settings
  );
}

export function trainingJobMetrics(
  jobId: string,
  settings?: ServerConnection.ISettings
): Promise<TrainingMetrics> {
  return requestAPI<TrainingMetrics>(jobPath(jobId, 'metrics'), {}, settings);
}

/** Register the job's last checkpoint (or `path`) as a model version. */
export function registerModelFromJob(
  jobId: string,
  body: RegisterFromJobRequest,
  settings?: ServerConnection.ISettings
): Promise<ModelVersion> {
  return requestAPI<ModelVersion>(
    jobPath(jobId, 'register'),
    { method: 'POST', body },
    settings
  );
}
