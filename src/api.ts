/**
 * The one typed client for the cube-lab REST API (`/cube/api/v1`).
 *
 * Every panel talks to the server through these functions; the contract is
 * documented in `docs/rest-api.md`.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { uiLanguage, uiTrans } from './locale';

import {
  IServiceSession,
  noteServiceAnswer,
  serviceSession
} from './service_session';

/** The URL prefix of the cube-lab REST API, relative to the server base URL. */
export const API_PREFIX = 'cube/api/v1';

/* -------------------------------------------------------------------------- */
/* Types                                                                      */
/* -------------------------------------------------------------------------- */

export type ProjectRole = 'owner' | 'member';

export interface ProjectMember {
  username: string;
  role: ProjectRole;
}

export interface Project {
  name: string;
  kind: 'personal' | 'team';
  description: string;
  role: ProjectRole;
  members: ProjectMember[];
  created_at: string;
}

export interface WhoAmI {
  user: string;
  backend: string;
  projects: Project[];
}

export type ModelFlavor =
  'sklearn' | 'pytorch' | 'transformers' | 'onnx' | 'generic';

export type ArtifactFormat = 'mlflow' | 'file' | 'directory';

/** A JSON value as stored in params and tags. */
export type JSONValue =
  string | number | boolean | null | JSONValue[] | { [key: string]: JSONValue };

/**
 * A dataset version a model was trained on (or a job was given in
 * `$CUBE_LAB_DATASET`). `version` null: the dataset as registered, before any
 * export; `project` and `path` may be null when the registering call did not
 * say.
 */
export interface LineageDataset {
  project: string | null;
  name: string;
  version: number | null;
  path: string | null;
}

export interface Lineage {
  source: string | null;
  pipeline_run_id: string | null;
  training_job_id: string | null;
  /** The dataset versions it was trained on (absent from older servers). */
  datasets?: LineageDataset[];
}

/** "pets v2" (or "pets" for a dataset used as registered, before any export). */
export function lineageDatasetLabel(
  d: Pick<LineageDataset, 'name' | 'version'>
): string {
  return d.version === null || d.version === undefined
    ? d.name
    : `${d.name} v${d.version}`;
}

export interface Model {
  id: string | number;
  project: string;
  name: string;
  description: string;
  owner: string;
  archived: boolean;
  created_at: string;
  updated_at: string;
  latest_version: number | null;
  version_count: number;
  flavor: string | null;
  /** alias -> version number */
  aliases: Record<string, number>;
}

export interface ModelVersion {
  id: string | number;
  project: string;
  model: string;
  version: number;
  flavor: ModelFlavor | string;
  format: ArtifactFormat | string;
  artifact_name: string;
  description: string;
  params: Record<string, JSONValue>;
  metrics: Record<string, number>;
  tags: Record<string, JSONValue>;
  aliases: string[];
  archived: boolean;
  lineage: Lineage;
  created_by: string;
  created_at: string;
  size_bytes: number;
  checksum: string;
}

/** `GET /projects/{p}/models/{name}`: a model with its versions (newest first). */
export interface ModelDetail extends Model {
  versions: ModelVersion[];
}

export interface ModelList {
  models: Model[];
  total: number;
  limit: number;
  offset: number;
}

export interface VersionList {
  versions: ModelVersion[];
}

export interface CompareResult {
  versions: ModelVersion[];
  metrics: string[];
  params: string[];
}

export interface RegisterModelRequest {
  name: string;
  /** Path relative to the Jupyter server root. */
  path: string;
  project?: string;
  flavor?: ModelFlavor | string;
  description?: string;
  params?: Record<string, JSONValue>;
  metrics?: Record<string, number>;
  tags?: Record<string, JSONValue>;
  aliases?: string[];
  source?: string;
  pipeline_run_id?: string;
  training_job_id?: string;
}

export interface ListModelsOptions {
  q?: string;
  project?: string;
  includeArchived?: boolean;
  limit?: number;
  offset?: number;
}

export interface PatchModelRequest {
  description?: string;
  archived?: boolean;
}

export interface PatchVersionRequest {
  description?: string;
  tags?: Record<string, JSONValue>;
  archived?: boolean;
}

/** A version reference: a number or an alias. */
export type VersionRef = number | string;

/* -------------------------------------------------------------------------- */
/* Errors                                                                     */
/* -------------------------------------------------------------------------- */

/**
 * An error answered by the cube-lab server (or a network failure, status 0).
 *
 * `error` says what is wrong, `detail` how to fix it or extra data.
 */
export class CubeApiError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly detail: unknown = null,
    readonly url = ''
  ) {
    super(error);
    this.name = 'CubeApiError';
  }

  /** `detail` as display text ('' when there is none). */
  get detailText(): string {
    return formatDetail(this.detail);
  }
}

/** Render an error `detail` (string, list or object) as text. */
export function formatDetail(detail: unknown): string {
  if (detail === null || detail === undefined || detail === '') {
    return '';
  }
  if (typeof detail === 'string') {
    return detail;
  }
  if (Array.isArray(detail) && detail.every(d => typeof d === 'string')) {
    return detail.join('\n');
  }
  try {
    return JSON.stringify(detail, null, 2);
  } catch {
    return String(detail);
  }
}

/** The `Accept-Language` asking for `language` first, then English. */
export function acceptLanguage(language: string): string {
  return language.startsWith('en') ? language : `${language}, en;q=0.5`;
}

/** Turn anything thrown into `{error, detail}` for display. */
export function describeError(err: unknown): { error: string; detail: string } {
  if (err instanceof CubeApiError) {
    return { error: err.error, detail: err.detailText };
  }
  if (err instanceof Error) {
    return { error: err.message, detail: '' };
  }
  return { error: String(err), detail: '' };
}

/* -------------------------------------------------------------------------- */
/* Transport                                                                  */
/* -------------------------------------------------------------------------- */

/** Encode each path segment and join them with `/`. */
export function encodePath(...segments: (string | number)[]): string {
  return segments.map(s => encodeURIComponent(String(s))).join('/');
}

/** Build a query string (with leading `?`), skipping undefined/null/'' values. */
export function queryString(
  params: Record<string, string | number | boolean | undefined | null>
): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === '') {
      continue;
    }
    parts.push(
      `${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`
    );
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

let defaultSettings: ServerConnection.ISettings | null = null;

function serverSettings(
  settings?: ServerConnection.ISettings
): ServerConnection.ISettings {
  if (settings) {
    return settings;
  }
  if (!defaultSettings) {
    defaultSettings = ServerConnection.makeSettings();
  }
  return defaultSettings;
}

/** The absolute URL of an API path (already encoded, may include a query). */
export function apiUrl(
  path: string,
  settings?: ServerConnection.ISettings
): string {
  return URLExt.join(serverSettings(settings).baseUrl, API_PREFIX, path);
}

/**
 * Call the cube-lab REST API.
 *
 * @param path - path under `/cube/api/v1`, segments already encoded
 *   (use `encodePath`), optionally followed by a query string.
 * @param init - fetch options; a plain object `body` is sent as JSON.
 * @returns the decoded JSON answer (`undefined` for 204 / empty bodies).
 * @throws CubeApiError on a non-2xx answer or a network failure.
 */
export async function requestAPI<T = unknown>(
  path = '',
  init: Omit<RequestInit, 'body'> & { body?: BodyInit | object | null } = {},
  settings?: ServerConnection.ISettings
): Promise<T> {
  const s = serverSettings(settings);
  const url = apiUrl(path, s);
  const { body, ...rest } = init;
  const request: RequestInit = { ...rest };
  // the server's error messages in JupyterLab's language (cube_lab/locale/messages.py)
  const headers: Record<string, string> = {
    'Accept-Language': acceptLanguage(uiLanguage())
  };
  if (body !== undefined && body !== null) {
    if (isPlainObject(body)) {
      request.body = JSON.stringify(body);
      headers['Content-Type'] = 'application/json';
    } else {
      request.body = body as BodyInit;
    }
  }
  request.headers = {
    ...headers,
    ...(init.headers as Record<string, string> | undefined)
  };

  let response: Response | null = null;
  const direct = settings ? null : await serviceSession();
  if (direct) {
    response = await requestService(direct, path, request);
  }
  try {
    response ??= await ServerConnection.makeRequest(url, request, s);
  } catch (reason) {
    const message =
      reason instanceof Error ? reason.message : String(reason ?? '');
    const trans = uiTrans();
    throw new CubeApiError(
      0,
      trans.__('Cannot reach the Jupyter server'),
      message || trans.__('Check that the server is running and try again.'),
      url
    );
  }

  const text = await response.text();
  let data: unknown = undefined;
  if (text.length > 0) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }

  if (!response.ok) {
    throw errorFromResponse(response.status, response.statusText, data, url);
  }
  return data as T;
}

/**
 * The same request sent to the cube-lab service straight (under the hub), or `null` when it
 * should go through the lab server after all: the service could not be reached, or it did
 * not take the session's cookie (its 401/403 then carries `WWW-Authenticate`: the cookie
 * expired or the XSRF token is stale; the next request opens a new session). Any other
 * answer, refusals included, is the service's, as the lab server would have passed it on.
 */
async function requestService(
  session: IServiceSession,
  path: string,
  request: RequestInit
): Promise<Response | null> {
  const headers = new Headers(request.headers);
  headers.set('X-XSRFToken', session.xsrf);
  try {
    const response = await fetch(URLExt.join(session.base, API_PREFIX, path), {
      ...request,
      headers,
      credentials: 'same-origin',
      cache: 'no-store'
    });
    const refused =
      (response.status === 401 || response.status === 403) &&
      response.headers.has('WWW-Authenticate');
    noteServiceAnswer(!refused);
    return refused ? null : response;
  } catch {
    noteServiceAnswer(false); // unreachable: through the lab server instead
    return null;
  }
}

/** Build a CubeApiError from a failed answer's status and decoded body. */
export function errorFromResponse(
  status: number,
  statusText: string,
  data: unknown,
  url = ''
): CubeApiError {
  if (isPlainObject(data)) {
    const body = data as Record<string, unknown>;
    const error =
      typeof body.error === 'string' && body.error
        ? body.error
        : typeof body.message === 'string' && body.message
          ? body.message
          : `${status} ${statusText}`.trim();
    const detail =
      body.detail !== undefined
        ? body.detail
        : typeof body.reason === 'string'
          ? body.reason
          : null;
    return new CubeApiError(status, error, detail, url);
  }
  const fallback =
    status === 404
      ? 'Not found: is the cube-lab server extension enabled?'
      : `${status} ${statusText}`.trim() || `HTTP ${status}`;
  const detail =
    typeof data === 'string' && data.length > 0 && !/^\s*</.test(data)
      ? data.slice(0, 2000)
      : null;
  return new CubeApiError(status, fallback, detail, url);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') {
    return false;
  }
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/* -------------------------------------------------------------------------- */
/* Endpoints                                                                  */
/* -------------------------------------------------------------------------- */

function modelPath(project: string, name: string, ...rest: VersionRef[]) {
  return encodePath('projects', project, 'models', name, ...rest);
}

export function whoami(settings?: ServerConnection.ISettings) {
  return requestAPI<WhoAmI>('whoami', {}, settings);
}

export function listProjects(settings?: ServerConnection.ISettings) {
  return requestAPI<{ projects: Project[] }>('projects', {}, settings);
}

export function listModels(
  options: ListModelsOptions = {},
  settings?: ServerConnection.ISettings
): Promise<ModelList> {
  const query = queryString({
    q: options.q?.trim(),
    project: options.project,
    include_archived: options.includeArchived ? 'true' : undefined,
    limit: options.limit,
    offset: options.offset
  });
  return requestAPI<ModelList>(`models${query}`, {}, settings);
}

export function getModel(
  project: string,
  name: string,
  settings?: ServerConnection.ISettings
): Promise<ModelDetail> {
  return requestAPI<ModelDetail>(modelPath(project, name), {}, settings);
}

export function listVersions(
  project: string,
  name: string,
  options: { includeArchived?: boolean } = {},
  settings?: ServerConnection.ISettings
): Promise<VersionList> {
  const query = queryString({
    include_archived: options.includeArchived ? 'true' : undefined
  });
  return requestAPI<VersionList>(
    `${modelPath(project, name, 'versions')}${query}`,
    {},
    settings
  );
}

export function getVersion(
  project: string,
  name: string,
  version: VersionRef,
  settings?: ServerConnection.ISettings
): Promise<ModelVersion> {
  return requestAPI<ModelVersion>(
    modelPath(project, name, 'versions', version),
    {},
    settings
  );
}

export function registerModel(
  body: RegisterModelRequest,
  settings?: ServerConnection.ISettings
): Promise<ModelVersion> {
  return requestAPI<ModelVersion>('models', { method: 'POST', body }, settings);
}

export function patchModel(
  project: string,
  name: string,
  body: PatchModelRequest,
  settings?: ServerConnection.ISettings
): Promise<Model> {
  return requestAPI<Model>(
    modelPath(project, name),
    { method: 'PATCH', body },
    settings
  );
}

export async function deleteModel(
  project: string,
  name: string,
  settings?: ServerConnection.ISettings
): Promise<void> {
  await requestAPI<void>(
    modelPath(project, name),
    { method: 'DELETE' },
    settings
  );
}

export function patchVersion(
  project: string,
  name: string,
  version: VersionRef,
  body: PatchVersionRequest,
  settings?: ServerConnection.ISettings
): Promise<ModelVersion> {
  return requestAPI<ModelVersion>(
    modelPath(project, name, 'versions', version),
    { method: 'PATCH', body },
    settings
  );
}

export async function deleteVersion(
  project: string,
  name: string,
  version: VersionRef,
  settings?: ServerConnection.ISettings
): Promise<void> {
  await requestAPI<void>(
    modelPath(project, name, 'versions', version),
    { method: 'DELETE' },
    settings
  );
}

export function compareVersions(
  project: string,
  name: string,
  versions: VersionRef[],
  settings?: ServerConnection.ISettings
): Promise<CompareResult> {
  const query = queryString({ versions: versions.join(',') });
  return requestAPI<CompareResult>(
    `${modelPath(project, name, 'compare')}${query}`,
    {},
    settings
  );
}

/**
 * Point `alias` at `version`.
 *
 * @param expectedVersion - if given (a number or null for "unset"), the
 *   server answers 409 when the alias no longer points there.
 */
export function setAlias(
  project: string,
  name: string,
  alias: string,
  version: number,
  expectedVersion?: number | null,
  settings?: ServerConnection.ISettings
): Promise<Model> {
  const body: { version: number; expected_version?: number | null } = {
    version
  };
  if (expectedVersion !== undefined) {
    body.expected_version = expectedVersion;
  }
  return requestAPI<Model>(
    modelPath(project, name, 'aliases', alias),
    { method: 'PUT', body },
    settings
  );
}

export function deleteAlias(
  project: string,
  name: string,
  alias: string,
  settings?: ServerConnection.ISettings
): Promise<Model> {
  return requestAPI<Model>(
    modelPath(project, name, 'aliases', alias),
    { method: 'DELETE' },
    settings
  );
}

/**
 * The URL that downloads a version's artifact (the file, or a zip of a folder).
 *
 * Browsers send the session cookie; the token is appended when the page
 * was opened with one so plain links work too.
 */
export function downloadUrl(
  project: string,
  name: string,
  version: VersionRef,
  settings?: ServerConnection.ISettings
): string {
  const s = serverSettings(settings);
  const url = apiUrl(
    modelPath(project, name, 'versions', version, 'download'),
    s
  );
  return s.token ? `${url}${queryString({ token: s.token })}` : url;
}

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

export interface LogChunk {
  text: string;
  offset: number;
  size: number;
  done: boolean;
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

/* ========================================================================== */
/* Serving (issue 8): deployments, traffic, logs, metrics, test requests       */
/* ========================================================================== */

/**
 * "removed" is only ever the answer of the DELETE that removed a failed,
 * dead or stopped deployment (its last state); it is then gone from the list.
 */
export type DeploymentStatus =
  | 'starting'
  | 'running'
  | 'updating'
  | 'stopped'
  | 'failed'
  | 'dead'
  | 'removed';

export interface TrafficShare {
  version: number;
  /** Percent of requests (0..100); a shadow's weight is not a share. */
  weight: number;
  shadow: boolean;
}

export interface Deployment {
  id: string;
  name: string;
  project: string;
  owner: string;
  model: string;
  /** The primary version. */
  version: number;
  backend: 'local' | 'kubernetes' | string;
  status: DeploymentStatus | string;
  replicas: number;
  /** Base URL: OIP v2 under /v2, plain JSON at /predict; null when not running. */
  endpoint: string | null;
  traffic: TrafficShare[];
  previous_version: number | null;
  /** Adaptive batching in the model servers, when on. */
  batching: { max_rows: number; wait_ms: number } | null;
  /** The share of requests kept with their answers (0: sampling is off). */
  samples_percent: number;
  processes: Record<string, unknown>[];
  error: string | null;
  created_at: string;
  updated_at: string;
  stopped_at: string | null;
  /** Who may call the endpoint (older servers send none: no key asked). */
  access?: DeploymentAccess;
}

/** A token bucket: `rps` requests a second, bursts of up to `burst`. */
export interface RateLimit {
  rps: number;
  burst: number;
  /** One bucket per key (requests without a key: one per client address). */
  per_key: boolean;
}

/** Who may call a deployment; its router enforces it. */
export interface DeploymentAccess {
  /** "required": callers send `Authorization: Bearer <key>`. */
  auth: 'required' | 'none';
  rate_limit: RateLimit | null;
  /** IP addresses / CIDR networks that may call (empty: any). */
  allow: string[];
  /** IP addresses / CIDR networks that may not call (wins over allow). */
  deny: string[];
}

/** What PUT .../access takes: fields left out keep their value. */
export interface AccessChanges {
  auth?: 'required' | 'none';
  rate_limit?: { rps: number; burst?: number; per_key?: boolean } | null;
  allow?: string[];
  deny?: string[];
}

export type KeyState = 'active' | 'expired' | 'revoked';

/** An API key as listed; `key` is only set in the answer that made it. */
export interface DeploymentKey {
  id: string;
  name: string;
  /** The key's first characters, to tell keys apart. */
  prefix: string;
  state: KeyState | string;
  created_by: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
  key: string | null;
}

export interface NewKeyRequest {
  name: string;
  expires_at?: string;
  expires_in_days?: number;
}

export interface DeployRequest {
  /** NAME[:VERSION|ALIAS], e.g. "iris:3". */
  model: string;
  name?: string;
  project?: string;
  replicas?: number;
  port?: number;
  /** Adaptive batching: up to this many rows a model call (0: off). */
  batch_max_rows?: number;
  /** Opt-in: keep this percent of requests with their answers. */
  samples_percent?: number;
  /** API keys required or not (default: the server's shape decides). */
  auth?: 'required' | 'none';
}

/** One sampled request with its answer (bodies cut at 4 KB). */
export interface RequestSample {
  ts: number;
  path: string;
  version: string;
  status: number;
  latency_ms: number;
  request: string;
  response: string;
}

export type TrafficAction =
  | { action: 'switch'; version: VersionRef }
  | { action: 'canary'; version: VersionRef; percent: number }
  | { action: 'shadow'; version: VersionRef }
  | { action: 'promote' }
  | { action: 'rollback' }
  | { action: 'split'; percent: number };

/** What the deployment answered to a passed-through request. */
export interface InferAnswer {
  status: number;
  /** The version that answered (X-Cube-Version). */
  version: string | null;
  body: unknown;
}

/** True while a deployment's processes should be running. */
export function isDeploymentActive(d: Pick<Deployment, 'status'>): boolean {
  return (
    d.status === 'starting' || d.status === 'running' || d.status === 'updating'
  );
}

function deploymentPath(project: string, name: string, ...rest: string[]) {
  return encodePath('projects', project, 'deployments', name, ...rest);
}

export function listDeployments(
  project?: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<{ deployments: Deployment[] }>(
    'deployments' + queryString({ project }),
    {},
    settings
  );
}

/** Deploy a model version; answers once every process is ready (seconds). */
export function deployModel(
  request: DeployRequest,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<Deployment>(
    'deployments',
    { method: 'POST', body: request },
    settings
  );
}

export function getDeployment(
  project: string,
  name: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<Deployment>(deploymentPath(project, name), {}, settings);
}

/** The sampling share and the latest sampled requests, oldest first. */
export function deploymentSamples(
  project: string,
  name: string,
  limit = 20,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<{ percent: number; samples: RequestSample[] }>(
    `${deploymentPath(project, name)}/samples?limit=${limit}`,
    {},
    settings
  );
}

/** Turn request sampling on (a percent of requests) or off (0). */
export function setDeploymentSamples(
  project: string,
  name: string,
  percent: number,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<Deployment>(
    `${deploymentPath(project, name)}/samples`,
    { method: 'PUT', body: { percent } },
    settings
  );
}

/**
 * DELETE the deployment: a running (starting, updating) one stops (the record
 * stays, status "stopped"); a failed, dead or stopped one is removed (what is
 * left of it killed, its quota given back, its record and log deleted) and
 * the answer is its last state with status "removed".
 */
export function undeploy(
  project: string,
  name: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<Deployment>(
    deploymentPath(project, name),
    { method: 'DELETE' },
    settings
  );
}

/** Undeploy and delete the record and its folder. */
export async function forgetDeployment(
  project: string,
  name: string,
  settings?: ServerConnection.ISettings
): Promise<void> {
  await requestAPI<void>(
    deploymentPath(project, name) + queryString({ forget: 'true' }),
    { method: 'DELETE' },
    settings
  );
}

export function changeTraffic(
  project: string,
  name: string,
  change: TrafficAction,
  settings?: ServerConnection.ISettings
) {
  const body =
    'version' in change
      ? { ...change, version: String(change.version) }
      : change;
  return requestAPI<Deployment>(
    deploymentPath(project, name, 'traffic'),
    { method: 'POST', body },
    settings
  );
}

export function deploymentLog(
  project: string,
  name: string,
  offset = 0,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<LogChunk>(
    deploymentPath(project, name, 'log') + queryString({ offset }),
    {},
    settings
  );
}

/** The Prometheus text exposition of the deployment's router. */
export function deploymentMetrics(
  project: string,
  name: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<string>(
    deploymentPath(project, name, 'metrics'),
    {},
    settings
  );
}

/** Send a test request through the server (the browser may not reach the port). */
export function inferDeployment(
  project: string,
  name: string,
  body: object,
  route: 'infer' | 'predict' = 'infer',
  settings?: ServerConnection.ISettings
) {
  return requestAPI<InferAnswer>(
    deploymentPath(project, name, 'infer') + queryString({ route }),
    { method: 'POST', body },
    settings
  );
}

/** Who may call the deployment. */
export function getDeploymentAccess(
  project: string,
  name: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<DeploymentAccess>(
    deploymentPath(project, name, 'access'),
    {},
    settings
  );
}

/** Change the access settings; the running router takes them at once. */
export function setDeploymentAccess(
  project: string,
  name: string,
  changes: AccessChanges,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<Deployment>(
    deploymentPath(project, name, 'access'),
    { method: 'PUT', body: changes },
    settings
  );
}

/** The deployment's API keys, newest first (never the keys themselves). */
export function listDeploymentKeys(
  project: string,
  name: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<{ keys: DeploymentKey[] }>(
    deploymentPath(project, name, 'keys'),
    {},
    settings
  );
}

/** Make an API key: the answer's `key` is shown this once. */
export function createDeploymentKey(
  project: string,
  name: string,
  request: NewKeyRequest,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<DeploymentKey>(
    deploymentPath(project, name, 'keys'),
    { method: 'POST', body: request },
    settings
  );
}

/** Revoke a key (by id): the deployment refuses it at once. */
export function revokeDeploymentKey(
  project: string,
  name: string,
  keyId: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<DeploymentKey>(
    deploymentPath(project, name, 'keys', keyId),
    { method: 'DELETE' },
    settings
  );
}

/** The served model's OIP v2 metadata (`GET /v2/models/{model}`), passed through. */
export function deploymentModelMetadata(
  project: string,
  name: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<InferAnswer>(
    deploymentPath(project, name, 'infer'),
    {},
    settings
  );
}

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

/* ========================================================================== */
/* Labeling (issue 9): datasets, labeling projects, the task queue, exports    */
/* ========================================================================== */

export type LabelingTaskType =
  'image-class' | 'image-bbox' | 'text-class' | 'text-ner';

export type LabelingTaskStatus =
  'new' | 'assigned' | 'submitted' | 'accepted' | 'rejected';

export type ExportFormat = 'coco' | 'yolo' | 'labelstudio' | 'csv' | 'jsonl';

export interface DatasetVersion {
  version: number;
  created_at: string;
  format: ExportFormat | string;
  /** The labeling project the export came from. */
  labeling: string;
  path: string;
  item_count: number;
}

export interface Dataset {
  id: number | string;
  project: string;
  name: string;
  kind: 'images' | 'texts';
  source: string;
  item_count: number;
  owner: string;
  created_at: string;
  versions?: DatasetVersion[];
}

export interface CreateDatasetRequest {
  name: string;
  /** Folder of images or a .csv / .jsonl of texts, relative to the server root. */
  path: string;
  project?: string;
  kind?: 'images' | 'texts';
  text_field?: string;
}

export interface LabelSpec {
  name: string;
  color: string;
  hotkey: string;
}

export interface LabelingUserProgress {
  assigned: number;
  submitted: number;
  accepted: number;
  rejected: number;
}

export interface LabelingProgress {
  total: number;
  new: number;
  assigned: number;
  submitted: number;
  accepted: number;
  rejected: number;
  prelabeled: number;
  by_user: Record<string, LabelingUserProgress>;
  by_label: Record<string, number>;
}

export interface LabelingProject {
  id: number | string;
  project: string;
  name: string;
  dataset: string;
  type: LabelingTaskType;
  multi_label: boolean;
  labels: LabelSpec[];
  instructions: string;
  review: boolean;
  owner: string;
  created_at: string;
  progress?: LabelingProgress;
}

export interface CreateLabelingRequest {
  name: string;
  dataset: string;
  type: LabelingTaskType;
  labels: (Partial<LabelSpec> & { name: string })[] | string[];
  project?: string;
  multi_label?: boolean;
  instructions?: string;
  review?: boolean;
}

/** A box in image pixels, origin top-left. */
export interface BoxAnnotation {
  label: string;
  x: number;
  y: number;
  w: number;
  h: number;
  score?: number;
}

/** Character offsets into the item text, `end` exclusive. */
export interface SpanAnnotation {
  label: string;
  start: number;
  end: number;
  text: string;
  score?: number;
}

/** One annotation; which key is used depends on the task type. */
export interface LabelingResult {
  labels?: string[];
  boxes?: BoxAnnotation[];
  spans?: SpanAnnotation[];
}

/** A model's proposal: the result's shape, with scores. */
export interface LabelingPrediction {
  labels?: (string | { label?: string; name?: string; score?: number })[];
  scores?: number[] | Record<string, number>;
  boxes?: BoxAnnotation[];
  spans?: SpanAnnotation[];
}

export interface LabelingItem {
  id: number;
  kind: 'image' | 'text';
  name: string;
  width?: number | null;
  height?: number | null;
  text?: string | null;
  meta?: Record<string, JSONValue> | null;
  /** Relative to the server base URL. */
  content_url: string;
}

export interface LabelingTask {
  id: number;
  index: number;
  status: LabelingTaskStatus;
  assignee: string | null;
  item: LabelingItem;
  result: LabelingResult | null;
  prediction: LabelingPrediction | null;
  prediction_model: string | null;
  review_comment: string | null;
  reviewer: string | null;
  updated_at: string;
}

export interface AssignRequest {
  users: string[];
  mode: 'round_robin' | 'batch';
  batch_size?: number;
}

export interface PrelabelRequest {
  model: string;
  version?: number;
  threshold?: number;
  limit?: number;
}

export interface ExportRequest {
  format: ExportFormat;
  only?: 'accepted' | 'submitted';
}

export interface ExportAnswer {
  dataset: string;
  version: DatasetVersion;
  download_url: string;
}

/** An absolute URL for a path the server gives relative to its base URL. */
export function serverUrl(
  relative: string,
  settings?: ServerConnection.ISettings
): string {
  if (/^https?:\/\//.test(relative)) {
    return relative;
  }
  const base = serverSettings(settings).baseUrl;
  const basePath = new URL(base, 'http://localhost').pathname;
  // Tolerate a path that already carries the base (e.g. /user/alice/cube/...).
  const path =
    basePath !== '/' && relative.startsWith(basePath)
      ? relative.slice(basePath.length)
      : relative.replace(/^\/+/, '');
  return URLExt.join(base, path);
}

function labelingPath(
  project: string,
  name: string,
  ...rest: (string | number)[]
) {
  return encodePath('projects', project, 'labeling', name, ...rest);
}

export function listDatasets(
  project?: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<{ datasets: Dataset[] }>(
    'datasets' + queryString({ project }),
    {},
    settings
  );
}

export function createDataset(
  body: CreateDatasetRequest,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<Dataset>('datasets', { method: 'POST', body }, settings);
}

/** A dataset with its versions (exports). */
export function getDataset(
  project: string,
  name: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<Dataset>(
    encodePath('projects', project, 'datasets', name),
    {},
    settings
  );
}

export function datasetVersionDownloadUrl(
  project: string,
  name: string,
  version: number,
  settings?: ServerConnection.ISettings
): string {
  return apiUrl(
    encodePath(
      'projects',
      project,
      'datasets',
      name,
      'versions',
      version,
      'download'
    ),
    settings
  );
}

export function listLabelingProjects(
  project?: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<{ projects: LabelingProject[] }>(
    'labeling' + queryString({ project }),
    {},
    settings
  );
}

export function createLabelingProject(
  body: CreateLabelingRequest,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<LabelingProject>(
    'labeling',
    { method: 'POST', body },
    settings
  );
}

/** A labeling project with its progress. */
export function getLabelingProject(
  project: string,
  name: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<LabelingProject>(labelingPath(project, name), {}, settings);
}

export async function deleteLabelingProject(
  project: string,
  name: string,
  settings?: ServerConnection.ISettings
): Promise<void> {
  await requestAPI<void>(
    labelingPath(project, name),
    { method: 'DELETE' },
    settings
  );
}

export function assignLabelingTasks(
  project: string,
  name: string,
  body: AssignRequest,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<{ assigned: Record<string, number> }>(
    labelingPath(project, name, 'assign'),
    { method: 'POST', body },
    settings
  );
}

/**
 * The caller's next task (after task `after` in id order when given), claimed
 * from the pool when the queue is empty; null when there is none (204).
 */
export async function nextLabelingTask(
  project: string,
  name: string,
  after?: number | null,
  settings?: ServerConnection.ISettings
): Promise<LabelingTask | null> {
  const body = after === undefined || after === null ? {} : { after };
  const task = await requestAPI<LabelingTask | undefined>(
    labelingPath(project, name, 'next'),
    { method: 'POST', body },
    settings
  );
  return task ?? null;
}

export function listLabelingTasks(
  project: string,
  name: string,
  options: {
    status?: LabelingTaskStatus;
    assignee?: string;
    limit?: number;
    offset?: number;
  } = {},
  settings?: ServerConnection.ISettings
) {
  return requestAPI<{ tasks: LabelingTask[]; total: number }>(
    labelingPath(project, name, 'tasks') + queryString({ ...options }),
    {},
    settings
  );
}

export function getLabelingTask(
  project: string,
  name: string,
  id: number,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<LabelingTask>(
    labelingPath(project, name, 'tasks', id),
    {},
    settings
  );
}

/** Save a draft (autosave) or, with `submit`, hand the task in. */
export function saveLabelingTask(
  project: string,
  name: string,
  id: number,
  result: LabelingResult,
  submit = false,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<LabelingTask>(
    labelingPath(project, name, 'tasks', id),
    { method: 'PUT', body: { result, submit } },
    settings
  );
}

export function reviewLabelingTask(
  project: string,
  name: string,
  id: number,
  decision: 'accept' | 'reject',
  comment = '',
  settings?: ServerConnection.ISettings
) {
  return requestAPI<LabelingTask>(
    labelingPath(project, name, 'tasks', id, 'review'),
    { method: 'POST', body: { decision, comment } },
    settings
  );
}

/** Store a registered model's proposals as task predictions. */
export function prelabelTasks(
  project: string,
  name: string,
  body: PrelabelRequest,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<{ prelabeled: number }>(
    labelingPath(project, name, 'prelabel'),
    { method: 'POST', body },
    settings
  );
}

/** Export the labels as a new version of the dataset. */
export function exportLabels(
  project: string,
  name: string,
  body: ExportRequest,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<ExportAnswer>(
    labelingPath(project, name, 'export'),
    { method: 'POST', body },
    settings
  );
}

export function importLabels(
  project: string,
  name: string,
  data: unknown[],
  settings?: ServerConnection.ISettings
) {
  return requestAPI<{ imported: number }>(
    labelingPath(project, name, 'import'),
    { method: 'POST', body: { format: 'labelstudio', data } },
    settings
  );
}
