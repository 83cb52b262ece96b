/**
 * Hyperparameter tuning (cube_lab/handlers/tuning.py): NNI experiments, their
 * trials and logs, and registering a trial's model.
 */
import { ServerConnection } from '@jupyterlab/services';

import type { ModelVersion } from './models';
import {
  encodePath,
  JSONValue,
  LogChunk,
  queryString,
  requestAPI
} from './request';

/* -------------------------------------------------------------------------- */
/* Tuning                                                                     */
/* -------------------------------------------------------------------------- */

export type TuningExperimentStatus =
  'queued' | 'running' | 'done' | 'failed' | 'stopped' | 'interrupted';

export type TuningTrialStatus =
  | 'waiting'
  | 'running'
  | 'succeeded'
  | 'failed'
  | 'early_stopped'
  | 'cancelled';

/** `GET /tuning/algorithms`: what the experiment form offers. */
export interface TuningAlgorithms {
  tuners: string[];
  assessors: string[];
  /** _type -> what _value must be. */
  search_space_types: Record<string, string>;
  example: Record<string, JSONValue>;
}

export interface TuningTrial {
  id: string;
  seq: number;
  parameters: Record<string, JSONValue>;
  status: TuningTrialStatus;
  intermediate: number[];
  final: number | null;
  exit_code: number | null;
  error: string | null;
  started_at: string | null;
  finished_at: string | null;
  duration_s: number | null;
}

/** The stored spec of an experiment (cube_lab/tuning/spec.py ExperimentSpec). */
export interface TuningSpec {
  name: string;
  search_space: Record<string, JSONValue>;
  trial_command: string;
  /** Absolute. */
  code_dir: string;
  concurrency: number;
  max_trials: number;
  max_duration_s: number | null;
  tuner: { name: string; class_args: Record<string, JSONValue> };
  assessor: { name: string; class_args: Record<string, JSONValue> } | null;
  metric: string;
  mode: 'maximize' | 'minimize';
  project: string | null;
}

export interface TuningExperiment {
  id: string;
  name: string;
  project: string;
  owner: string;
  status: TuningExperimentStatus;
  error: string | null;
  spec: TuningSpec;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  trial_count: number;
  best: TuningTrial | null;
  /** Only in `GET /tuning/experiments/{id}` (null in the list). */
  trials: TuningTrial[] | null;
}

/** `POST /tuning/experiments`: an NNI v2 config; relative paths start at `folder`. */
export interface CreateExperimentRequest {
  config: Record<string, JSONValue>;
  /** Under the server root. */
  folder?: string;
  project?: string;
}

function experimentPath(id: string, ...rest: string[]): string {
  return encodePath('tuning', 'experiments', id, ...rest);
}

export function tuningAlgorithms(
  settings?: ServerConnection.ISettings
): Promise<TuningAlgorithms> {
  return requestAPI<TuningAlgorithms>('tuning/algorithms', {}, settings);
}

export function listExperiments(
  options: { project?: string; limit?: number } = {},
  settings?: ServerConnection.ISettings
): Promise<{ experiments: TuningExperiment[] }> {
  return requestAPI<{ experiments: TuningExperiment[] }>(
    `tuning/experiments${queryString({ project: options.project, limit: options.limit })}`,
    {},
    settings
  );
}

export function createExperiment(
  body: CreateExperimentRequest,
  settings?: ServerConnection.ISettings
): Promise<TuningExperiment> {
  return requestAPI<TuningExperiment>(
    'tuning/experiments',
    { method: 'POST', body },
    settings
  );
}

export function getExperiment(
  id: string,
  settings?: ServerConnection.ISettings
): Promise<TuningExperiment> {
  return requestAPI<TuningExperiment>(experimentPath(id), {}, settings);
}

export function stopExperiment(
  id: string,
  settings?: ServerConnection.ISettings
): Promise<TuningExperiment> {
  return requestAPI<TuningExperiment>(
    experimentPath(id, 'stop'),
    { method: 'POST' },
    settings
  );
}

export function resumeExperiment(
  id: string,
  settings?: ServerConnection.ISettings
): Promise<TuningExperiment> {
  return requestAPI<TuningExperiment>(
    experimentPath(id, 'resume'),
    { method: 'POST' },
    settings
  );
}

/** A trial's output from `offset`; call again with the returned offset to follow. */
/** `POST /tuning/experiments/{id}/register`: a trial's saved model (default: the best). */
export function registerTrialModel(
  id: string,
  body: { name: string; trial?: string; path?: string; project?: string },
  settings?: ServerConnection.ISettings
): Promise<ModelVersion> {
  return requestAPI<ModelVersion>(
    `${experimentPath(id)}/register`,
    { method: 'POST', body: JSON.stringify(body) },
    settings
  );
}

export function trialLog(
  id: string,
  trialId: string,
  offset = 0,
  settings?: ServerConnection.ISettings
): Promise<LogChunk> {
  return requestAPI<LogChunk>(
    `${experimentPath(id, 'trials', trialId, 'log')}${queryString({ offset })}`,
    {},
    settings
  );
}
