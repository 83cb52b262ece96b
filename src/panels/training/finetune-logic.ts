/**
 * The fine-tune form's pure logic: what the form holds, its check, and the
 * `POST /finetune/jobs` (and `/finetune/estimate`) body it maps to; the two
 * requests and the estimate's shape.
 */
import { requestAPI, TrainingJob } from '../../api';
import { identity, ITrans } from '../../validate';
import { leavesRoot, rootPath, wholeNumber } from './logic';

export const METHODS = ['sft', 'pt', 'rm', 'dpo', 'grpo'] as const;
export const DATA_FORMATS = [
  'auto',
  'alpaca',
  'sharegpt',
  'openai',
  'preference',
  'text'
] as const;
/** 'auto': the tokenizer's own; the rest: cube_lab/finetune/chat_templates.py's names. */
export const TEMPLATES = [
  'auto',
  'alpaca',
  'chatml',
  'default',
  'empty',
  'gemma',
  'llama2',
  'llama3',
  'mistral',
  'phi',
  'qwen',
  'vicuna'
] as const;
export const PRECISIONS = ['fp32', 'bf16', 'fp16'] as const;
export const QUANTIZATIONS = ['none', '4', '8'] as const;

export type FinetuneMethod = (typeof METHODS)[number];
export type DataFormat = (typeof DATA_FORMATS)[number];
export type ChatTemplate = (typeof TEMPLATES)[number];
export type Precision = (typeof PRECISIONS)[number];
export type Quantization = (typeof QUANTIZATIONS)[number];

/** What the fine-tune form holds: text as typed, checked on submit. */
export interface IFinetuneForm {
  name: string;
  method: FinetuneMethod;
  /** 'folder': `modelFolder` is the base; 'registered': `modelVersion` (NAME:VERSION). */
  baseKind: 'folder' | 'registered';
  modelFolder: string;
  modelVersion: string;
  /** 'file': `data` is the data; 'dataset': `dataset` (a registered dataset). */
  dataKind: 'file' | 'dataset';
  /** The data file, relative to the server root. */
  data: string;
  /** A registered dataset: NAME (its source) or NAME:VERSION. */
  dataset: string;
  dataFormat: DataFormat;
  /** The chat template conversations are rendered with. */
  template: ChatTemplate;
  finetuningType: 'lora' | 'full';
  loraRank: string;
  loraAlpha: string;
  /** "all" or a comma list of module names. */
  loraTarget: string;
  quantization: Quantization;
  precision: Precision;
  cutoffLen: string;
  batchSize: string;
  gradientAccumulation: string;
  learningRate: string;
  /** Blank: train for `epochs`. */
  maxSteps: string;
  epochs: string;
  nproc: string;
  project: string;
}

export type FinetuneField = keyof IFinetuneForm;

export function emptyFinetuneForm(): IFinetuneForm {
  return {
    name: '',
    method: 'sft',
    baseKind: 'folder',
    modelFolder: '',
    modelVersion: '',
    dataKind: 'file',
    data: '',
    dataset: '',
    dataFormat: 'auto',
    template: 'auto',
    finetuningType: 'lora',
    loraRank: '8',
    loraAlpha: '16',
    loraTarget: 'all',
    quantization: 'none',
    precision: 'fp32',
    cutoffLen: '1024',
    batchSize: '2',
    gradientAccumulation: '1',
    learningRate: '0.0001',
    maxSteps: '',
    epochs: '3',
    nproc: '1',
    project: ''
  };
}

/** The body of `POST /finetune/jobs` and `POST /finetune/estimate`. */
export interface IFinetuneRequest {
  config: Record<string, unknown>;
  folder: string;
  nproc: number;
  project?: string;
}

/** `POST /finetune/estimate`: the memory of one process. */
export interface IFinetuneEstimate {
  parameters: number;
  trainable_parameters: number;
  dtype: string;
  quantization_bit?: number | null;
  tokens_per_step?: number;
  bytes: Record<string, number>;
  total_bytes: number;
  total_gib: number;
}

/** `POST /finetune/preview`: a record as the model reads it. */
export interface IPreviewRecord {
  text: string;
  segments: { text: string; trained: boolean }[];
  tokens: number;
  trained_tokens: number;
}

/** The estimate's parts in the order they are shown. */
export const ESTIMATE_PARTS = [
  'weights',
  'gradients',
  'optimizer',
  'activations',
  'overhead'
] as const;

export function submitFinetune(body: IFinetuneRequest): Promise<TrainingJob> {
  return requestAPI<TrainingJob>('finetune/jobs', { method: 'POST', body });
}

export function estimateFinetune(
  body: IFinetuneRequest
): Promise<IFinetuneEstimate> {
  return requestAPI<IFinetuneEstimate>('finetune/estimate', {
    method: 'POST',
    body
  });
}

export function previewFinetune(
  body: IFinetuneRequest,
  n = 3
): Promise<{ records: IPreviewRecord[] }> {
  return requestAPI<{ records: IPreviewRecord[] }>('finetune/preview', {
    method: 'POST',
    body: { ...body, n }
  });
}

/** A positive decimal number (1e-4 too), or null. */
function positive(text: string, high: number): number | null {
  const t = text.trim();
  if (!/^(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(t)) {
    return null;
  }
  const n = Number(t);
  return n > 0 && n <= high ? n : null;
}

/** Check a path typed relative to the server root; the error, or null. */
function pathError(path: string, what: string, trans: ITrans): string | null {
  if (!path) {
    return what;
  }
  if (leavesRoot(path)) {
    return trans.__('Give a path under the server root, without "..".');
  }
  return null;
}

/**
 * Check the form and map it to the body of `POST /finetune/jobs`: paths are
 * relative to the server root (`folder` is the root).
 */
export function finetuneToRequest(
  form: IFinetuneForm,
  trans: ITrans = identity
): {
  request: IFinetuneRequest | null;
  errors: Partial<Record<FinetuneField, string>>;
} {
  const errors: Partial<Record<FinetuneField, string>> = {};
  const config: Record<string, unknown> = { method: form.method };
  if (form.baseKind === 'registered') {
    if (!form.modelVersion) {
      errors.modelVersion = trans.__(
        'Pick a registered transformers version, or give a folder.'
      );
    }
    config.model = form.modelVersion;
  } else {
    const folder = rootPath(form.modelFolder).replace(/\/+$/, '');
    const error = pathError(
      folder,
      trans.__('Give the base model’s folder (a Hugging Face folder).'),
      trans
    );
    if (error) {
      errors.modelFolder = error;
    }
    config.model = folder;
  }
  if (form.dataKind === 'dataset') {
    if (!form.dataset) {
      errors.dataset = trans.__('Pick a registered dataset, or give a file.');
    }
    config.data = { dataset: form.dataset, format: form.dataFormat };
  } else {
    const data = rootPath(form.data);
    const dataError = pathError(
      data,
      trans.__('Give the data file (JSON, JSONL, CSV or Parquet).'),
      trans
    );
    if (dataError) {
      errors.data = dataError;
    }
    config.data = { path: data, format: form.dataFormat };
  }
  if (form.template !== 'auto') {
    config.template = form.template;
  }
  config.finetuning_type = form.finetuningType;
  if (form.finetuningType === 'lora') {
    const rank = wholeNumber(form.loraRank, 1, 4096);
    if (rank === null) {
      errors.loraRank = trans.__('LoRA rank: a whole number from 1 to 4096.');
    }
    const alpha = wholeNumber(form.loraAlpha, 1, 65536);
    if (alpha === null) {
      errors.loraAlpha = trans.__('LoRA alpha: a whole number from 1.');
    }
    const target = form.loraTarget
      .split(',')
      .map(t => t.trim())
      .filter(Boolean);
    if (!target.length) {
      errors.loraTarget = trans.__(
        'Write "all" or module names separated by commas.'
      );
    }
    config.lora = {
      rank,
      alpha,
      target: target.length === 1 && target[0] === 'all' ? 'all' : target
    };
  }
  if (form.quantization !== 'none') {
    if (form.finetuningType !== 'lora') {
      errors.quantization = trans.__('Quantization needs LoRA.');
    }
    config.quantization_bit = Number(form.quantization);
  }
  if (form.precision === 'bf16') {
    config.bf16 = true;
  } else if (form.precision === 'fp16') {
    config.fp16 = true;
  }
  const numbers: [FinetuneField, string, number, string][] = [
    [
      'cutoffLen',
      'cutoff_len',
      1 << 20,
      trans.__('Cutoff length: a whole number from 8.')
    ],
    [
      'batchSize',
      'per_device_train_batch_size',
      65536,
      trans.__('Batch size: a whole number from 1.')
    ],
    [
      'gradientAccumulation',
      'gradient_accumulation_steps',
      65536,
      trans.__('Gradient accumulation: a whole number from 1.')
    ]
  ];
  for (const [field, key, high, message] of numbers) {
    const n = wholeNumber(form[field], field === 'cutoffLen' ? 8 : 1, high);
    if (n === null) {
      errors[field] = message;
    }
    config[key] = n;
  }
  const lr = positive(form.learningRate, 1);
  if (lr === null) {
    errors.learningRate = trans.__(
      'Learning rate: a number above 0, at most 1 (e.g. 1e-4).'
    );
  }
  config.learning_rate = lr;
  if (form.maxSteps.trim()) {
    const steps = wholeNumber(form.maxSteps, 1, 10 ** 9);
    if (steps === null) {
      errors.maxSteps = trans.__(
        'Max steps: a whole number from 1 (blank: train for the epochs).'
      );
    }
    config.max_steps = steps;
  } else {
    const epochs = positive(form.epochs, 1e6);
    if (epochs === null) {
      errors.epochs = trans.__('Epochs: a number above 0 (or give max steps).');
    }
    config.num_train_epochs = epochs;
  }
  const nproc = wholeNumber(form.nproc, 1, 256);
  if (nproc === null) {
    errors.nproc = trans.__('Processes: a whole number from 1 to 256.');
  }
  if (form.name.trim()) {
    config.name = form.name.trim();
  }
  if (Object.keys(errors).length) {
    return { request: null, errors };
  }
  const request: IFinetuneRequest = { config, folder: '', nproc: nproc! };
  if (form.project.trim()) {
    request.project = form.project.trim();
  }
  return { request, errors };
}

/** What the data picker offers: each text dataset (its source) and its versions. */
export function datasetRefs(
  datasets: {
    name: string;
    project: string;
    kind: string;
    versions?: { version: number }[];
  }[]
): { ref: string; project: string }[] {
  return datasets
    .filter(d => d.kind !== 'images')
    .flatMap(d => [
      { ref: d.name, project: d.project },
      ...(d.versions ?? []).map(v => ({
        ref: `${d.name}:${v.version}`,
        project: d.project
      }))
    ]);
}

/** The NAME:VERSION of the registered transformers versions (a base model). */
export function baseVersions(
  versions: {
    model: string;
    version: number;
    flavor: string;
    archived: boolean;
  }[]
): string[] {
  return versions
    .filter(v => v.flavor === 'transformers' && !v.archived)
    .map(v => `${v.model}:${v.version}`);
}

/** `path` relative to `root` ('' when it is not under it). */
function under(root: string, path: string): string {
  const base = root.replace(/\/+$/, '') + '/';
  return path.startsWith(base) ? path.slice(base.length) : '';
}

/**
 * The form filled from a fine-tune job (its `--config-json`), for "Edit &
 * launch"; null for a job that is no fine-tune. Paths outside the job's
 * folder are left blank.
 */
export function finetuneJobToForm(job: TrainingJob): IFinetuneForm | null {
  const args = job.spec.args;
  const at = Array.isArray(args) ? args.indexOf('--config-json') : -1;
  if (!Array.isArray(args) || at < 0 || typeof args[at + 1] !== 'string') {
    return null;
  }
  let c: Record<string, any>;
  try {
    c = JSON.parse(args[at + 1] as string);
  } catch {
    return null;
  }
  const form = emptyFinetuneForm();
  const text = (v: unknown, fallback: string) =>
    v === null || v === undefined ? fallback : String(v);
  const pick = <T extends string>(
    v: unknown,
    known: readonly T[],
    fallback: T
  ) => (known.includes(v as T) ? (v as T) : fallback);
  const root = job.working_dir ?? '';
  const ref = typeof c.base_ref === 'string' ? c.base_ref : '';
  if (ref) {
    const slash = ref.indexOf('/');
    form.baseKind = 'registered';
    form.modelVersion = ref.slice(slash + 1);
  } else {
    form.modelFolder = under(root, text(c.model, ''));
  }
  const data = c.data ?? {};
  const dataset = typeof c.dataset_ref === 'string' ? c.dataset_ref : '';
  if (dataset) {
    form.dataKind = 'dataset';
    form.dataset = dataset
      .slice(dataset.indexOf('/') + 1)
      .replace(/:source$/, '');
  } else {
    form.data = under(root, text(data.path, ''));
  }
  form.dataFormat = pick(data.format, DATA_FORMATS, 'auto');
  form.method = pick(c.method, METHODS, 'sft');
  form.template = pick(c.template, TEMPLATES, 'auto');
  form.finetuningType = c.finetuning_type === 'full' ? 'full' : 'lora';
  const lora = c.lora ?? {};
  form.loraRank = text(lora.rank, form.loraRank);
  form.loraAlpha = text(lora.alpha, form.loraAlpha);
  form.loraTarget = Array.isArray(lora.target)
    ? lora.target.join(', ')
    : text(lora.target, form.loraTarget);
  form.quantization = pick(
    text(c.quantization_bit, 'none'),
    QUANTIZATIONS,
    'none'
  );
  form.precision = c.bf16 ? 'bf16' : c.fp16 ? 'fp16' : 'fp32';
  form.cutoffLen = text(c.cutoff_len, form.cutoffLen);
  form.batchSize = text(c.per_device_train_batch_size, form.batchSize);
  form.gradientAccumulation = text(
    c.gradient_accumulation_steps,
    form.gradientAccumulation
  );
  form.learningRate = text(c.learning_rate, form.learningRate);
  form.maxSteps = c.max_steps > 0 ? String(c.max_steps) : '';
  form.epochs = text(c.num_train_epochs, form.epochs);
  form.nproc = String(job.nproc_per_worker || 1);
  form.name = text(c.name, '');
  form.project = job.project;
  return form;
}
