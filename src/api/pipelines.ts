/**
 * Pipelines (cube_lab/handlers/pipelines.py): validation, templates and node
 * kinds, runs and their logs and results, KFP compilation and schedules.
 */
import { ServerConnection } from '@jupyterlab/services';

import {
  apiUrl,
  encodePath,
  errorFromResponse,
  JSONValue,
  LogChunk,
  queryString,
  requestAPI,
  serverSettings
} from './request';

/* -------------------------------------------------------------------------- */
/* Pipelines                                                                  */
/* -------------------------------------------------------------------------- */

/** One validation finding; `node_id` is null for pipeline-level problems. */
export interface PipelineProblem {
  node_id: string | null;
  node_label?: string | null;
  field: string;
  message: string;
}

export interface ValidateResult {
  valid: boolean;
  name: string;
  nodes: number;
  migrated_from: number | null;
  problems: PipelineProblem[];
}

/** A JSON schema, as much of it as the editor reads. */
export interface JSONSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  default?: JSONValue;
  enum?: JSONValue[];
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  items?: JSONSchema;
  required?: string[];
  properties?: Record<string, JSONSchema>;
  [key: string]: unknown;
}

export interface TemplateOutput {
  name: string;
  parameter: string;
  description: string;
}

export interface JobTemplate {
  name: string;
  display_name: string;
  category: string;
  description: string;
  image: string | null;
  parameters: JSONSchema;
  outputs: TemplateOutput[];
}

export interface TemplateList {
  templates: JobTemplate[];
  errors: { path: string; problems: string[] }[];
}

export interface NodeKind {
  op: string;
  name: string;
  display_name: string;
  /** For a plug-in kind (fine-tune, kb-ingest...): the form of its parameters. */
  schema?: JSONSchema | null;
  /** For an Elyra catalog component (`name` "catalog"): what its catalog says. */
  component?: CatalogComponent;
}

/** One input of a catalog component (a KFP component YAML input). */
export interface CatalogComponentInput {
  name: string;
  /** The key in the node's component_parameters (as Elyra names it). */
  ref: string;
  type: string;
  json_type: 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array';
  default: unknown;
  optional: boolean;
  description: string;
  /** An inputPath: takes a parent node's output file. */
  path: boolean;
}

/** A component of an Elyra component catalog, as `pipelines/node-kinds` lists it. */
export interface CatalogComponent {
  op: string;
  name: string;
  description: string;
  /** The catalog's display name (the palette category). */
  catalog: string;
  image: string;
  inputs: CatalogComponentInput[];
  outputs: { name: string; ref: string; type: string; description: string }[];
  default_parameters: Record<string, { widget: string; value: unknown }>;
}

export type NodeRunStatus =
  | 'pending'
  | 'running'
  | 'succeeded'
  | 'failed'
  | 'cancelled'
  | 'skipped'
  | 'cached'
  | 'reused'
  | 'interrupted';

export type RunStatus =
  'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'interrupted';

export interface NodeRun {
  id: string;
  label: string;
  kind: string;
  status: NodeRunStatus;
  attempts: number;
  exit_code: number | null;
  started_at: string | null;
  finished_at: string | null;
  duration_s: number | null;
  values?: Record<string, JSONValue>;
  outputs?: string[];
  reused_from?: string | null;
  error: string | null;
}

export interface PipelineRun {
  id: string;
  project: string;
  pipeline: string;
  pipeline_path: string;
  status: RunStatus;
  trigger: 'manual' | 'cli' | 'schedule' | string;
  owner: string;
  options: Record<string, JSONValue>;
  error: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  duration_s: number | null;
  counts: Record<string, number>;
  nodes: NodeRun[] | null;
}

export interface StartRunRequest {
  /** The .pipeline file, relative to the server root. */
  path: string;
  params?: Record<string, JSONValue>;
  /** Run only this node (id or label). */
  only?: string;
  /** Run this node and everything downstream. */
  from?: string;
  cache?: boolean;
  parallelism?: number;
  project?: string;
}

export interface ResultFile {
  name: string;
  path: string;
  kind: 'image' | 'table' | 'json' | 'echarts' | 'notebook' | 'text' | 'file';
  size_bytes: number;
}

/** True while a run may still change. */
export function isRunActive(run: Pick<PipelineRun, 'status'>): boolean {
  return run.status === 'queued' || run.status === 'running';
}

export function validatePipeline(
  path: string,
  settings?: ServerConnection.ISettings
): Promise<ValidateResult> {
  return requestAPI<ValidateResult>(
    'pipelines/validate',
    { method: 'POST', body: { path } },
    settings
  );
}

export function listTemplates(
  settings?: ServerConnection.ISettings
): Promise<TemplateList> {
  return requestAPI<TemplateList>('pipelines/templates', {}, settings);
}

export function listNodeKinds(
  settings?: ServerConnection.ISettings
): Promise<{ node_kinds: NodeKind[] }> {
  return requestAPI<{ node_kinds: NodeKind[] }>(
    'pipelines/node-kinds',
    {},
    settings
  );
}

export function startRun(
  body: StartRunRequest,
  settings?: ServerConnection.ISettings
): Promise<PipelineRun> {
  return requestAPI<PipelineRun>(
    'pipelines/runs',
    { method: 'POST', body },
    settings
  );
}

export function listRuns(
  options: { path?: string; project?: string; limit?: number } = {},
  settings?: ServerConnection.ISettings
): Promise<{ runs: PipelineRun[] }> {
  const query = queryString({
    path: options.path,
    project: options.project,
    limit: options.limit
  });
  return requestAPI<{ runs: PipelineRun[] }>(
    `pipelines/runs${query}`,
    {},
    settings
  );
}

export function getRun(
  runId: string,
  settings?: ServerConnection.ISettings
): Promise<PipelineRun> {
  return requestAPI<PipelineRun>(
    encodePath('pipelines', 'runs', runId),
    {},
    settings
  );
}

export function cancelRun(
  runId: string,
  settings?: ServerConnection.ISettings
): Promise<PipelineRun> {
  return requestAPI<PipelineRun>(
    encodePath('pipelines', 'runs', runId, 'cancel'),
    { method: 'POST' },
    settings
  );
}

export function nodeLog(
  runId: string,
  nodeId: string,
  offset = 0,
  settings?: ServerConnection.ISettings
): Promise<LogChunk> {
  return requestAPI<LogChunk>(
    `${encodePath('pipelines', 'runs', runId, 'nodes', nodeId, 'log')}${queryString({ offset })}`,
    {},
    settings
  );
}

export function nodeResults(
  runId: string,
  nodeId: string,
  settings?: ServerConnection.ISettings
): Promise<{ results: ResultFile[] }> {
  return requestAPI<{ results: ResultFile[] }>(
    encodePath('pipelines', 'runs', runId, 'nodes', nodeId, 'results'),
    {},
    settings
  );
}

/** The URL of one result file (token appended so plain links work). */
export function resultUrl(
  runId: string,
  nodeId: string,
  path: string,
  settings?: ServerConnection.ISettings
): string {
  const s = serverSettings(settings);
  const url = apiUrl(
    `${encodePath('pipelines', 'runs', runId, 'nodes', nodeId, 'results')}/${path
      .split('/')
      .map(encodeURIComponent)
      .join('/')}`,
    s
  );
  return s.token ? `${url}${queryString({ token: s.token })}` : url;
}

/* -------------------------------------------------------------------------- */
/* Pipelines: editor toolbar (compile, schedules) and node results            */
/* -------------------------------------------------------------------------- */

export interface CompiledPipeline {
  name: string;
  /** A file name for the download, e.g. `flow.yaml`. */
  filename: string;
  /** Kubeflow Pipelines v2 IR (PipelineSpec) YAML. */
  yaml: string;
  /** What the IR could not hold. */
  notes: string[];
}

/** Compile a saved `.pipeline` file (relative to the server root) to KFP IR. */
export function compilePipeline(
  path: string,
  settings?: ServerConnection.ISettings
): Promise<CompiledPipeline> {
  return requestAPI<CompiledPipeline>(
    'pipelines/compile',
    { method: 'POST', body: { path, target: 'kfp' } },
    settings
  );
}

export interface PipelineSchedule {
  id: number;
  project: string;
  name: string;
  /** The pipeline file on the server (absolute). */
  pipeline_path: string;
  cron: string;
  start_at: string;
  end_at: string | null;
  catchup: boolean;
  depends_on_past: boolean;
  max_active_runs: number;
  expire_after_s: number | null;
  params: Record<string, JSONValue>;
  enabled: boolean;
  last_fire_at: string | null;
  next_fire_at: string | null;
  last_error: string | null;
  owner: string;
}

export interface CreateScheduleRequest {
  path: string;
  cron: string;
  name?: string;
  project?: string;
  catchup?: boolean;
  depends_on_past?: boolean;
  max_active_runs?: number;
  params?: Record<string, JSONValue>;
}

/** The caller's schedules, only those of `path` when given. */
export function listSchedules(
  path?: string,
  settings?: ServerConnection.ISettings
): Promise<{ schedules: PipelineSchedule[] }> {
  return requestAPI<{ schedules: PipelineSchedule[] }>(
    `pipelines/schedules${queryString({ path })}`,
    {},
    settings
  );
}

export function createSchedule(
  body: CreateScheduleRequest,
  settings?: ServerConnection.ISettings
): Promise<PipelineSchedule> {
  return requestAPI<PipelineSchedule>(
    'pipelines/schedules',
    { method: 'POST', body },
    settings
  );
}

export function setScheduleEnabled(
  id: number,
  enabled: boolean,
  settings?: ServerConnection.ISettings
): Promise<PipelineSchedule> {
  return requestAPI<PipelineSchedule>(
    encodePath('pipelines', 'schedules', id),
    { method: 'PATCH', body: { enabled } },
    settings
  );
}

export async function deleteSchedule(
  id: number,
  settings?: ServerConnection.ISettings
): Promise<void> {
  await requestAPI<void>(
    encodePath('pipelines', 'schedules', id),
    { method: 'DELETE' },
    settings
  );
}

/** A result file's text (CSV, JSON), at most `maxBytes` of it. */
export async function resultText(
  runId: string,
  nodeId: string,
  path: string,
  maxBytes = 1024 * 1024,
  settings?: ServerConnection.ISettings
): Promise<string> {
  const s = serverSettings(settings);
  const response = await ServerConnection.makeRequest(
    resultUrl(runId, nodeId, path, s),
    {},
    s
  );
  if (!response.ok) {
    throw errorFromResponse(response.status, response.statusText, null);
  }
  const text = await response.text();
  return text.length > maxBytes ? text.slice(0, maxBytes) : text;
}
