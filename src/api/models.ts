/**
 * The model registry (cube_lab/handlers/models.py): models, versions,
 * aliases, comparisons and artifact downloads.
 */
import { ServerConnection } from '@jupyterlab/services';

import {
  apiUrl,
  encodePath,
  JSONValue,
  queryString,
  requestAPI,
  serverSettings
} from './request';

export type ModelFlavor =
  'sklearn' | 'pytorch' | 'transformers' | 'onnx' | 'generic';

export type ArtifactFormat = 'mlflow' | 'file' | 'directory';

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
  /** Course material: only its owner (or an admin) changes it. */
  read_only?: boolean;
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

function modelPath(project: string, name: string, ...rest: VersionRef[]) {
  return encodePath('projects', project, 'models', name, ...rest);
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
