/**
 * Model serving (cube_lab/handlers/serving.py): deployments, traffic, logs,
 * metrics, request samples, access rules and API keys, test requests.
 */
import { ServerConnection } from '@jupyterlab/services';

import type { VersionRef } from './models';
import { encodePath, LogChunk, queryString, requestAPI } from './request';

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
  /** What the replicas run: `llm` (OpenAI's API under /v1) or `oip` (older servers send none). */
  runtime?: 'llm' | 'oip' | string;
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
  /** `llm` (OpenAI's API), `oip` (OIP v2); left out: chosen by the version's flavor. */
  runtime?: 'llm' | 'oip';
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
