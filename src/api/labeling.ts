/**
 * Datasets and labeling (cube_lab/handlers/labeling.py): datasets and their
 * versions, labeling projects, the task queue, review, prelabels, exports.
 */
import { ServerConnection } from '@jupyterlab/services';

import {
  apiUrl,
  encodePath,
  JSONValue,
  queryString,
  requestAPI
} from './request';

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
