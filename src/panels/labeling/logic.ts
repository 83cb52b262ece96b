/**
 * The labeling panel's forms (-> the requests they send), progress bars and
 * which export formats fit which task type.
 */
import type {
  CreateDatasetRequest,
  CreateLabelingRequest,
  ExportFormat,
  LabelingProgress,
  LabelingProject,
  LabelingTaskType,
  LabelSpec
} from '../../api';
import { identity, ITrans } from '../../validate';
import { RESERVED_KEYS } from './keys';

/** The server's default palette, so the form previews the colours it gets. */
export const PALETTE = [
  '#e6194b',
  '#3cb44b',
  '#4363d8',
  '#f58231',
  '#911eb4',
  '#42d4f4',
  '#f032e6',
  '#bfef45',
  '#fabed4',
  '#469990',
  '#dcbeff',
  '#9a6324'
];

export const TASK_TYPES: LabelingTaskType[] = [
  'image-class',
  'image-bbox',
  'text-class',
  'text-ner'
];

export function taskTypeLabel(type: string): string {
  switch (type) {
    case 'image-class':
      return 'Image classification';
    case 'image-bbox':
      return 'Object detection (boxes)';
    case 'text-class':
      return 'Text classification';
    case 'text-ner':
      return 'Named entities (spans)';
  }
  return type;
}

/** The dataset kind a task type labels. */
export function datasetKindFor(type: LabelingTaskType): 'images' | 'texts' {
  return type.startsWith('image') ? 'images' : 'texts';
}

/** Export formats that make sense for a task type, the usual one first. */
export function exportFormats(type: LabelingTaskType): ExportFormat[] {
  switch (type) {
    case 'image-bbox':
      return ['coco', 'yolo', 'labelstudio', 'jsonl'];
    case 'image-class':
      return ['coco', 'labelstudio', 'csv', 'jsonl'];
    default:
      return ['jsonl', 'csv', 'labelstudio'];
  }
}

export const FORMAT_TITLES: Record<ExportFormat, string> = {
  coco: 'COCO JSON',
  yolo: 'YOLO (txt + data.yaml)',
  labelstudio: 'Label Studio JSON',
  csv: 'CSV',
  jsonl: 'JSON Lines'
};

/* ------------------------------------------------------------------------ */
/* New dataset                                                               */
/* ------------------------------------------------------------------------ */

export interface IDatasetForm {
  project: string;
  name: string;
  path: string;
  textField: string;
}

export type DatasetField = keyof IDatasetForm;

export function emptyDatasetForm(project = ''): IDatasetForm {
  return { project, name: '', path: '', textField: '' };
}

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

function checkName(name: string, trans: ITrans): string | null {
  if (!name) {
    return trans.__('Give it a name.');
  }
  if (!NAME_RE.test(name)) {
    return trans.__(
      'Letters, digits, ".", "_" and "-" only, starting with a letter or digit.'
    );
  }
  return null;
}

/** A name from the last part of a path: "data/Flowers 2/" -> "flowers-2". */
export function nameFromPath(path: string): string {
  const last =
    path
      .replace(/[\\/]+$/, '')
      .split(/[\\/]/)
      .pop() ?? '';
  return last
    .replace(/\.(csv|jsonl)$/i, '')
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+|-+$/g, '')
    .slice(0, 100);
}

export function datasetFormToRequest(
  form: IDatasetForm,
  trans: ITrans = identity
): {
  request: CreateDatasetRequest | null;
  errors: Partial<Record<DatasetField, string>>;
} {
  const errors: Partial<Record<DatasetField, string>> = {};
  const name = form.name.trim();
  const path = form.path.trim();
  const nameError = checkName(name, trans);
  if (nameError) {
    errors.name = nameError;
  }
  if (!path) {
    errors.path = trans.__(
      'A folder of images, or a .csv / .jsonl file of texts.'
    );
  }
  if (Object.keys(errors).length) {
    return { request: null, errors };
  }
  const request: CreateDatasetRequest = { name, path };
  if (form.project) {
    request.project = form.project;
  }
  if (/\.(csv|jsonl)$/i.test(path)) {
    request.kind = 'texts';
    if (form.textField.trim()) {
      request.text_field = form.textField.trim();
    }
  }
  return { request, errors };
}

/* ------------------------------------------------------------------------ */
/* New labeling project                                                      */
/* ------------------------------------------------------------------------ */

export interface IProjectForm {
  project: string;
  name: string;
  dataset: string;
  type: LabelingTaskType;
  /** "cat, dog" or one per line; "cat=c" sets a hotkey. */
  labels: string;
  multiLabel: boolean;
  review: boolean;
  instructions: string;
}

export type ProjectField = keyof IProjectForm;

export function emptyProjectForm(project = ''): IProjectForm {
  return {
    project,
    name: '',
    dataset: '',
    type: 'image-bbox',
    labels: '',
    multiLabel: false,
    review: true,
    instructions: ''
  };
}

/**
 * Read the label list: comma or newline separated; `name=key` picks the
 * hotkey, else 1..9 in order; colours from the palette.
 */
export function parseLabels(
  text: string,
  trans: ITrans = identity
): {
  labels: LabelSpec[];
  problems: string[];
} {
  const problems: string[] = [];
  const labels: LabelSpec[] = [];
  const parts = text
    .split(/[\n,]/)
    .map(p => p.trim())
    .filter(Boolean);
  const taken = new Set<string>();
  for (const part of parts) {
    const eq = part.lastIndexOf('=');
    const name = (eq > 0 ? part.slice(0, eq) : part).trim();
    const key =
      eq > 0
        ? part
            .slice(eq + 1)
            .trim()
            .toLowerCase()
        : '';
    if (labels.some(l => l.name === name)) {
      problems.push(trans.__('"%1" is listed twice.', name));
      continue;
    }
    if (key && (key.length !== 1 || RESERVED_KEYS.has(key))) {
      problems.push(
        trans.__(
          'Hotkey "%1" of "%2": use one character other than %3.',
          key,
          name,
          [...RESERVED_KEYS].join(', ')
        )
      );
    }
    if (key && taken.has(key)) {
      problems.push(trans.__('Hotkey "%1" is used twice.', key));
    }
    if (key) {
      taken.add(key);
    }
    labels.push({
      name,
      hotkey: key,
      color: PALETTE[labels.length % PALETTE.length]
    });
  }
  // Labels without a hotkey get the first free digit.
  let digit = 1;
  for (const label of labels) {
    if (label.hotkey) {
      continue;
    }
    while (digit <= 9 && taken.has(String(digit))) {
      digit++;
    }
    if (digit <= 9) {
      label.hotkey = String(digit);
      taken.add(label.hotkey);
    }
  }
  return { labels, problems };
}

export function projectFormToRequest(
  form: IProjectForm,
  trans: ITrans = identity
): {
  request: CreateLabelingRequest | null;
  errors: Partial<Record<ProjectField, string>>;
} {
  const errors: Partial<Record<ProjectField, string>> = {};
  const name = form.name.trim();
  const nameError = checkName(name, trans);
  if (nameError) {
    errors.name = nameError;
  }
  if (!form.dataset) {
    errors.dataset = trans.__('Pick the dataset to label (create one first).');
  }
  const { labels, problems } = parseLabels(form.labels, trans);
  if (!labels.length) {
    errors.labels = trans.__('List the labels, e.g. "cat, dog".');
  } else if (problems.length) {
    errors.labels = problems.join(' ');
  }
  if (Object.keys(errors).length) {
    return { request: null, errors };
  }
  const request: CreateLabelingRequest = {
    name,
    dataset: form.dataset,
    type: form.type,
    labels,
    multi_label: form.type.endsWith('-class') ? form.multiLabel : false,
    review: form.review
  };
  if (form.project) {
    request.project = form.project;
  }
  if (form.instructions.trim()) {
    request.instructions = form.instructions.trim();
  }
  return { request, errors };
}

/* ------------------------------------------------------------------------ */
/* Progress                                                                  */
/* ------------------------------------------------------------------------ */

export interface ProgressSegment {
  status: 'accepted' | 'submitted' | 'assigned' | 'rejected' | 'new';
  count: number;
  /** Percent of the total (0..100). */
  percent: number;
}

/** The stacked bar: done first, then in review, in queues, untouched. */
export function progressSegments(
  p: LabelingProgress | undefined
): ProgressSegment[] {
  if (!p || p.total <= 0) {
    return [];
  }
  const order: ProgressSegment['status'][] = [
    'accepted',
    'submitted',
    'rejected',
    'assigned',
    'new'
  ];
  return order
    .map(status => ({
      status,
      count: p[status] ?? 0,
      percent: ((p[status] ?? 0) / p.total) * 100
    }))
    .filter(s => s.count > 0);
}

/** Labeled tasks (submitted or accepted) out of all. */
export function doneCount(p: LabelingProgress | undefined): number {
  return p ? (p.submitted ?? 0) + (p.accepted ?? 0) : 0;
}

export function donePercent(p: LabelingProgress | undefined): number {
  return p && p.total > 0 ? Math.round((doneCount(p) / p.total) * 100) : 0;
}

/** Rows of the per-label table, most used first, every label listed. */
export function labelRows(
  project: Pick<LabelingProject, 'labels'>,
  p: LabelingProgress | undefined
): { name: string; color: string; count: number; percent: number }[] {
  const counts = p?.by_label ?? {};
  const max = Math.max(1, ...Object.values(counts));
  const rows = project.labels.map(l => ({
    name: l.name,
    color: l.color,
    count: counts[l.name] ?? 0,
    percent: ((counts[l.name] ?? 0) / max) * 100
  }));
  return rows.sort((a, b) => b.count - a.count);
}

/** Assign form -> request; users are checked names. */
export function assignRequest(
  users: string[],
  mode: 'round_robin' | 'batch',
  batchSize: string,
  trans: ITrans = identity
): {
  request: {
    users: string[];
    mode: 'round_robin' | 'batch';
    batch_size?: number;
  } | null;
  error: string | null;
} {
  if (!users.length) {
    return { request: null, error: trans.__('Pick at least one annotator.') };
  }
  if (mode === 'batch') {
    const n = Number(batchSize);
    if (!Number.isInteger(n) || n < 1) {
      return {
        request: null,
        error: trans.__(
          'The batch size is a whole number of tasks (1 or more).'
        )
      };
    }
    return { request: { users, mode, batch_size: n }, error: null };
  }
  return { request: { users, mode }, error: null };
}
