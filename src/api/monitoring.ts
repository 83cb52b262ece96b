/**
 * Monitoring: the resource series of a training job or a pipeline run, what
 * runs now (`/resources`), and a project's alert rules with their delivery
 * log (`cube_lab/handlers/metrics.py`, `alerts.py`).
 */
import { ServerConnection } from '@jupyterlab/services';

import { encodePath, queryString, requestAPI } from './request';

/** One device row of a sample: a GPU or a MIG instance. */
export interface GpuRow {
  uuid: string;
  name: string;
  parent: string | null;
  memory_bytes: number | null;
  util_percent: number | null;
  pids?: number[];
  processes?: number;
}

export interface ResourceLatest {
  cpu_percent: number | null;
  rss_bytes: number | null;
  procs: number | null;
  gpus: GpuRow[];
}

/** A sampled object's bounded series; `fields` names each point's columns. */
export interface ResourceSeries {
  kind: string | null;
  id: string | null;
  node: string | null;
  running: boolean;
  interval_s: number | null;
  started_at: number | null;
  updated_at: number | null;
  gpu: boolean;
  latest: ResourceLatest | null;
  peak: Record<string, number | null>;
  fields: string[];
  points: (number | null)[][];
}

export interface JobResources extends ResourceSeries {
  job_id: string;
  status: string;
}

export interface RunResources {
  run_id: string;
  status: string;
  nodes: Record<string, ResourceSeries>;
}

/** A live object of `GET /resources`. */
export interface LiveObject extends ResourceLatest {
  kind: 'training' | 'pipeline' | 'trial' | string;
  id: string;
  node: string;
  name: string;
  path: string | null;
  project: string;
  user: string;
  ranks?: number;
  gpus_requested: number;
  updated_at: number | null;
  started_at: number | null;
}

export interface ProjectUse {
  project: string;
  objects: number;
  gpus_in_use: number;
  gpu_quota: number | null;
  quota: Record<string, unknown> | null;
  usage: Record<string, number> | null;
  gpu_hours_month: number | null;
  /** The group's GPU-hours a month, `null` without one. */
  gpu_hours_limit: number | null;
}

export interface ServerTotals {
  cpu_percent: number;
  cpu_count: number;
  memory_used_bytes: number;
  memory_total_bytes: number;
  gpus: GpuRow[];
  time: number;
}

export interface ResourcesNow {
  all: boolean;
  admin: boolean;
  objects: LiveObject[];
  projects: ProjectUse[];
  server: ServerTotals;
}

export function trainingJobResources(
  jobId: string,
  settings?: ServerConnection.ISettings
): Promise<JobResources> {
  return requestAPI<JobResources>(
    encodePath('training', 'jobs', jobId, 'resources'),
    {},
    settings
  );
}

export function pipelineRunResources(
  runId: string,
  settings?: ServerConnection.ISettings
): Promise<RunResources> {
  return requestAPI<RunResources>(
    encodePath('pipelines', 'runs', runId, 'resources'),
    {},
    settings
  );
}

/** What runs now; `all` (admins): everyone's. */
export function resourcesNow(
  all = false,
  settings?: ServerConnection.ISettings
): Promise<ResourcesNow> {
  return requestAPI<ResourcesNow>(
    `resources${all ? queryString({ all: 1 }) : ''}`,
    {},
    settings
  );
}

/* Alert rules -------------------------------------------------------------- */

export type ChannelType =
  'webhook' | 'wecom' | 'dingtalk' | 'feishu' | 'slack' | 'email';

/** A channel as the server answers it: `url` as scheme and host, secrets as dots. */
export interface AlertChannel {
  type: ChannelType;
  url?: string;
  secret?: string;
  host?: string;
  port?: number;
  sender?: string;
  to?: string[];
  starttls?: boolean;
  username?: string;
  password?: string;
}

export interface AlertRule {
  name: string;
  project: string;
  owner: string;
  events: string[];
  duration_s: number | null;
  threshold: number | null;
  /** quota.usage: the quota dimension watched (any, gpus, gpu_hours, ...). */
  resource?: string | null;
  channel: AlertChannel;
  enabled: boolean;
  created_at: string;
  updated_at: string;
}

export interface AlertRuleRequest {
  name: string;
  events: string[];
  duration_s?: number | null;
  threshold?: number | null;
  /** quota.usage: the percentage of the quota it fires at. */
  threshold_pct?: number;
  resource?: string;
  channel: AlertChannel;
  enabled?: boolean;
}

export interface AlertDelivery {
  at: string;
  event: string;
  object: string;
  ok: boolean;
  attempts: number;
  status: number | null;
  error: string;
}

function rulesPath(project: string, ...rest: string[]): string {
  return encodePath('projects', project, 'alert-rules', ...rest);
}

export async function listAlertRules(
  project: string,
  settings?: ServerConnection.ISettings
): Promise<AlertRule[]> {
  const found = await requestAPI<{ rules: AlertRule[] }>(
    rulesPath(project),
    {},
    settings
  );
  return found.rules;
}

export function createAlertRule(
  project: string,
  body: AlertRuleRequest,
  settings?: ServerConnection.ISettings
): Promise<AlertRule> {
  return requestAPI<AlertRule>(
    rulesPath(project),
    { method: 'POST', body },
    settings
  );
}

export function updateAlertRule(
  project: string,
  name: string,
  body: Partial<AlertRuleRequest>,
  settings?: ServerConnection.ISettings
): Promise<AlertRule> {
  return requestAPI<AlertRule>(
    rulesPath(project, name),
    { method: 'PATCH', body },
    settings
  );
}

export function deleteAlertRule(
  project: string,
  name: string,
  settings?: ServerConnection.ISettings
): Promise<void> {
  return requestAPI<void>(
    rulesPath(project, name),
    { method: 'DELETE' },
    settings
  );
}

/** Send a test message now; the answer is the delivery. */
export function testAlertRule(
  project: string,
  name: string,
  settings?: ServerConnection.ISettings
): Promise<AlertDelivery> {
  return requestAPI<AlertDelivery>(
    rulesPath(project, name, 'test'),
    { method: 'POST' },
    settings
  );
}

export async function alertDeliveries(
  project: string,
  name: string,
  limit = 50,
  settings?: ServerConnection.ISettings
): Promise<AlertDelivery[]> {
  const found = await requestAPI<{ deliveries: AlertDelivery[] }>(
    `${rulesPath(project, name, 'deliveries')}${queryString({ limit })}`,
    {},
    settings
  );
  return found.deliveries;
}
