/**
 * The pure logic of the Tuning panel, kept apart from React so it is unit
 * tested: search-space checks (the rules of cube_lab/tuning/searchspace.py),
 * the form -> NNI config mapping, trial sorting and the chart geometry
 * (intermediate curves, parallel coordinates).
 */
import type {
  JSONValue,
  TuningExperiment,
  TuningTrial,
  TuningTrialStatus
} from '../../api';
import { identity } from '../../validate';
import { formatNumber, niceTicks, splitArgs } from '../training/logic';
import { uiLanguage } from '../../locale';

/* -------------------------------------------------------------------------- */
/* Search space                                                               */
/* -------------------------------------------------------------------------- */

/** _type -> what _value must be (as the server says it). */
export const SHAPES: Record<string, string> = {
  choice: 'a non-empty list of options',
  randint: '[lower, upper] integers with lower < upper',
  uniform: '[low, high] with low < high',
  quniform: '[low, high, q] with low < high and q > 0',
  loguniform: '[low, high] with 0 < low < high',
  qloguniform: '[low, high, q] with 0 < low < high and q > 0',
  normal: '[mu, sigma] with sigma > 0',
  qnormal: '[mu, sigma, q] with sigma > 0 and q > 0',
  lognormal: '[mu, sigma] with sigma > 0',
  qlognormal: '[mu, sigma, q] with sigma > 0 and q > 0'
};

/** One bad entry: where (`searchSpace.lr`, `searchSpace.opt[1].lr`) and why. */
export interface ISpaceProblem {
  path: string;
  message: string;
}

export interface ISpaceCheck {
  /** The parsed space when the text is valid JSON of an object. */
  space: Record<string, unknown> | null;
  problems: ISpaceProblem[];
}

function numbers(value: unknown, count: number): number[] | null {
  if (!Array.isArray(value) || value.length !== count) {
    return null;
  }
  if (!value.every(v => typeof v === 'number' && Number.isFinite(v))) {
    return null;
  }
  return value as number[];
}

/** True when `value` is a valid `_value` for `kind` (a known _type). */
export function entryOk(kind: string, value: unknown): boolean {
  if (kind === 'choice') {
    return Array.isArray(value) && value.length > 0;
  }
  const q = kind.startsWith('q');
  if (kind === 'randint') {
    const n = numbers(value, 2);
    return !!n && n.every(Number.isInteger) && n[0] < n[1];
  }
  if (kind.endsWith('uniform')) {
    const n = numbers(value, q ? 3 : 2);
    if (!n || !(n[0] < n[1])) {
      return false;
    }
    if (kind.endsWith('loguniform') && n[0] <= 0) {
      return false;
    }
    return !q || n[2] > 0;
  }
  const n = numbers(value, q ? 3 : 2); // the normal family
  return !!n && n[1] > 0 && (!q || n[2] > 0);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Every bad entry of a parsed space (the server stops at the first). */
export function checkSpace(
  space: unknown,
  where = 'searchSpace',
  trans: ITrans = identity
): ISpaceProblem[] {
  if (!isObject(space) || !Object.keys(space).length) {
    return [
      {
        path: where,
        message: trans.__(
          '%1 must be a non-empty object of parameter -> {_type, _value}',
          where
        )
      }
    ];
  }
  const problems: ISpaceProblem[] = [];
  for (const [name, entry] of Object.entries(space)) {
    const at = `${where}.${name}`;
    if (!isObject(entry) || !('_type' in entry) || !('_value' in entry)) {
      problems.push({
        path: at,
        message: trans.__('%1 must be an object with _type and _value', at)
      });
      continue;
    }
    const kind = entry._type;
    const value = entry._value;
    if (typeof kind !== 'string' || !(kind in SHAPES)) {
      problems.push({
        path: at,
        message: trans.__(
          '%1: unknown _type %2; use one of %3',
          at,
          JSON.stringify(kind),
          Object.keys(SHAPES).join(', ')
        )
      });
      continue;
    }
    if (kind === 'choice' && Array.isArray(value)) {
      value.forEach((option, i) => {
        if (isObject(option) && '_name' in option) {
          const inner = { ...option };
          delete inner._name;
          if (Object.keys(inner).length) {
            problems.push(...checkSpace(inner, `${at}[${i}]`, trans));
          }
        }
      });
    }
    if (!entryOk(kind, value)) {
      problems.push({
        path: at,
        message: trans.__(
          '%1: %2 needs _value = %3',
          at,
          kind,
          trans.__(SHAPES[kind])
        )
      });
    }
  }
  return problems;
}

/** Parse the editor's text and check it. */
export function checkSpaceText(
  text: string,
  trans: ITrans = identity
): ISpaceCheck {
  if (!text.trim()) {
    return {
      space: null,
      problems: [
        { path: 'searchSpace', message: trans.__('Write the search space.') }
      ]
    };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return {
      space: null,
      problems: [
        {
          path: 'searchSpace',
          message: trans.__('Not valid JSON: %1', (err as Error).message)
        }
      ]
    };
  }
  const problems = checkSpace(parsed, 'searchSpace', trans);
  return {
    space: isObject(parsed) ? parsed : null,
    problems
  };
}

/* -------------------------------------------------------------------------- */
/* New-experiment form                                                        */
/* -------------------------------------------------------------------------- */

export interface IExperimentForm {
  name: string;
  searchSpace: string;
  trialCommand: string;
  /** Under the server root; relative paths of the config start here. */
  folder: string;
  tuner: string;
  /** '' for none. */
  assessor: string;
  metric: string;
  mode: 'maximize' | 'minimize';
  maxTrials: string;
  concurrency: string;
  /** e.g. 30m, 2h; '' for no limit. */
  maxDuration: string;
  project: string;
}

export type ExperimentField = keyof IExperimentForm;

export function emptyExperimentForm(): IExperimentForm {
  return {
    name: '',
    searchSpace: '',
    trialCommand: 'python3 trial.py',
    folder: '',
    tuner: 'TPE',
    assessor: '',
    metric: 'default',
    mode: 'maximize',
    maxTrials: '10',
    concurrency: '1',
    maxDuration: '',
    project: ''
  };
}

/** `POST /tuning/experiments` body. */
export interface IExperimentRequest {
  config: Record<string, JSONValue>;
  folder: string;
  project?: string;
}

function wholeNumber(text: string): number | null {
  const n = Number(text.trim());
  return text.trim() && Number.isInteger(n) && n >= 1 ? n : null;
}

/** The request, or per-field errors (checked here as the server would). */
export function formToExperiment(
  form: IExperimentForm,
  trans: ITrans = identity
): {
  request: IExperimentRequest | null;
  errors: Partial<Record<ExperimentField, string>>;
} {
  const errors: Partial<Record<ExperimentField, string>> = {};
  const space = checkSpaceText(form.searchSpace, trans);
  if (space.problems.length) {
    errors.searchSpace = space.problems.map(p => p.message).join('\n');
  }
  const command = form.trialCommand.trim();
  if (!command) {
    errors.trialCommand = trans.__('Give the command that runs one trial.');
  } else {
    try {
      splitArgs(command);
    } catch (err) {
      errors.trialCommand = trans.__((err as Error).message);
    }
  }
  const maxTrials = wholeNumber(form.maxTrials);
  if (maxTrials === null) {
    errors.maxTrials = trans.__('A whole number from 1.');
  }
  const concurrency = wholeNumber(form.concurrency);
  if (concurrency === null) {
    errors.concurrency = trans.__('A whole number from 1.');
  }
  const duration = form.maxDuration.trim();
  if (duration && !/^\d+(\.\d+)?\s*[smhd]$/.test(duration)) {
    errors.maxDuration = trans.__('A duration such as 90s, 30m, 2h or 1d.');
  }
  if (!form.metric.trim()) {
    errors.metric = trans.__('Name the metric (default: the number reported).');
  }
  if (Object.keys(errors).length) {
    return { request: null, errors };
  }
  const config: Record<string, JSONValue> = {
    searchSpace: space.space as Record<string, JSONValue>,
    trialCommand: command,
    trialCodeDirectory: '.',
    trialConcurrency: concurrency!,
    maxTrialNumber: maxTrials!,
    tuner: { name: form.tuner },
    objective: { metric: form.metric.trim(), mode: form.mode }
  };
  if (form.name.trim()) {
    config.experimentName = form.name.trim();
  }
  if (form.assessor) {
    config.assessor = { name: form.assessor };
  }
  if (duration) {
    config.maxExperimentDuration = duration.replace(/\s+/g, '');
  }
  const request: IExperimentRequest = {
    config,
    folder: form.folder.trim().replace(/^\/+|\/+$/g, '')
  };
  if (form.project) {
    request.project = form.project;
  }
  return { request, errors };
}

/* -------------------------------------------------------------------------- */
/* Trials                                                                     */
/* -------------------------------------------------------------------------- */

export const ACTIVE_TRIAL: TuningTrialStatus[] = ['waiting', 'running'];

/** Translates a message (a `TranslationBundle`, or a stand-in in tests). */
export interface ITrans {
  __(msgid: string, ...args: any[]): string;
}

/** A trial's or an experiment's status in words. */
export function statusLabel(status: string, trans: ITrans): string {
  switch (status) {
    case 'waiting':
      return trans.__('waiting');
    case 'queued':
      return trans.__('queued');
    case 'running':
      return trans.__('running');
    case 'succeeded':
      return trans.__('succeeded');
    case 'failed':
      return trans.__('failed');
    case 'early_stopped':
      return trans.__('early stopped');
    case 'cancelled':
      return trans.__('cancelled');
    case 'done':
      return trans.__('done');
    case 'stopped':
      return trans.__('stopped');
    case 'interrupted':
      return trans.__('interrupted');
    default:
      return status.replace(/_/g, ' ');
  }
}

/** Statuses in the order the summary lists them. */
const SUMMARY_ORDER = [
  'running',
  'waiting',
  'succeeded',
  'early_stopped',
  'failed',
  'cancelled'
];

/** "4 succeeded, 2 early stopped": how many trials are in each state. */
export function statusSummary(trials: TuningTrial[], trans: ITrans): string {
  const counts = new Map<string, number>();
  for (const t of trials) {
    counts.set(t.status, (counts.get(t.status) ?? 0) + 1);
  }
  const rank = (s: string) => {
    const i = SUMMARY_ORDER.indexOf(s);
    return i < 0 ? SUMMARY_ORDER.length : i;
  };
  return [...counts.entries()]
    .sort((a, b) => rank(a[0]) - rank(b[0]))
    .map(([s, n]) =>
      trans.__('%1 %2', n.toLocaleString(uiLanguage()), statusLabel(s, trans))
    )
    .join(', ');
}

export function isExperimentActive(
  exp: Pick<TuningExperiment, 'status'>
): boolean {
  return exp.status === 'queued' || exp.status === 'running';
}

/** The parameter names of all trials, in first-seen order. */
export function parameterNames(trials: TuningTrial[]): string[] {
  const names: string[] = [];
  for (const t of trials) {
    for (const k of Object.keys(t.parameters ?? {})) {
      if (!names.includes(k)) {
        names.push(k);
      }
    }
  }
  return names;
}

/** A sortable column: a fixed one or `param:<name>`. */
export type SortKey =
  'seq' | 'status' | 'intermediate' | 'final' | 'duration' | `param:${string}`;

export interface ISort {
  key: SortKey;
  descending: boolean;
}

function sortValue(t: TuningTrial, key: SortKey): unknown {
  switch (key) {
    case 'seq':
      return t.seq;
    case 'status':
      return t.status;
    case 'intermediate':
      return t.intermediate.length;
    case 'final':
      return t.final;
    case 'duration':
      return t.duration_s;
    default:
      return t.parameters?.[key.slice('param:'.length)];
  }
}

function compareValues(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') {
    return a - b;
  }
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

/**
 * Trials sorted by a column; trials without a value (no final metric yet)
 * always go last, ties keep trial order.
 */
export function sortTrials(trials: TuningTrial[], sort: ISort): TuningTrial[] {
  const missing = (v: unknown) =>
    v === null || v === undefined || (typeof v === 'number' && isNaN(v));
  return [...trials].sort((x, y) => {
    const a = sortValue(x, sort.key);
    const b = sortValue(y, sort.key);
    if (missing(a) || missing(b)) {
      return missing(a) === missing(b) ? x.seq - y.seq : missing(a) ? 1 : -1;
    }
    const c = compareValues(a, b);
    return (sort.descending ? -c : c) || x.seq - y.seq;
  });
}

/** Click on a header: same column flips, a new one starts ascending (metrics: best first). */
export function nextSort(
  current: ISort,
  key: SortKey,
  mode: 'maximize' | 'minimize'
): ISort {
  if (current.key === key) {
    return { key, descending: !current.descending };
  }
  return { key, descending: key === 'final' ? mode === 'maximize' : false };
}

/** The best finished trial's id for the mode (null when none has a metric). */
export function bestTrialId(
  trials: TuningTrial[],
  mode: 'maximize' | 'minimize'
): string | null {
  let best: TuningTrial | null = null;
  for (const t of trials) {
    if (t.final === null || t.final === undefined || !isFinite(t.final)) {
      continue;
    }
    if (
      !best ||
      (mode === 'maximize' ? t.final > best.final! : t.final < best.final!)
    ) {
      best = t;
    }
  }
  return best ? best.id : null;
}

/** A parameter value for a table cell. */
export function formatValue(v: unknown): string {
  if (typeof v === 'number') {
    return formatNumber(v);
  }
  if (v === null || v === undefined) {
    return '';
  }
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/**
 * A `cube-lab train` command line that runs the trial script once with these
 * parameters as `--name value` arguments (the NNI habit of argparse defaults
 * overridden by the tuner's parameters).
 */
export function trainCommand(
  trialCommand: string,
  codeDir: string,
  parameters: Record<string, JSONValue>
): string {
  let words: string[];
  try {
    words = splitArgs(trialCommand);
  } catch {
    words = trialCommand.split(/\s+/);
  }
  const script = words.findIndex(w => /\.py$/.test(w));
  const rest = script >= 0 ? words.slice(script) : words;
  const quote = (w: string) =>
    /^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`;
  const args = Object.entries(parameters).flatMap(([k, v]) => [
    `--${k}`,
    typeof v === 'string' ? v : JSON.stringify(v)
  ]);
  const framework = script >= 0 ? '' : '--framework plain ';
  return `cube-lab train ${framework}--workdir ${quote(codeDir)} ${[...rest, ...args].map(quote).join(' ')}`;
}

/* -------------------------------------------------------------------------- */
/* Charts                                                                     */
/* -------------------------------------------------------------------------- */

export interface IBox {
  width: number;
  height: number;
  left: number;
  right: number;
  top: number;
  bottom: number;
}

export interface ITick {
  value: number;
  pos: number;
}

export interface ICurvesGeometry {
  lines: { id: string; path: string; last: { x: number; y: number } }[];
  xTicks: ITick[];
  yTicks: ITick[];
}

const round = (n: number) => Math.round(n * 10) / 10;

/** One polyline per trial over the report index (1, 2, …) on shared axes. */
export function curvesGeometry(
  series: { id: string; values: number[] }[],
  box: IBox
): ICurvesGeometry {
  const finite = series.map(s => ({
    id: s.id,
    values: s.values.filter(v => Number.isFinite(v))
  }));
  const all = finite.flatMap(s => s.values);
  if (!all.length) {
    return { lines: [], xTicks: [], yTicks: [] };
  }
  const yTicks = niceTicks(Math.min(...all), Math.max(...all), 3);
  const yMin = yTicks[0];
  const yMax = yTicks[yTicks.length - 1];
  const steps = Math.max(2, ...finite.map(s => s.values.length));
  const plotW = box.width - box.left - box.right;
  const plotH = box.height - box.top - box.bottom;
  const sx = (i: number) => box.left + ((i - 1) / (steps - 1)) * plotW;
  const sy = (y: number) =>
    box.top + plotH - ((y - yMin) / (yMax - yMin || 1)) * plotH;
  const lines = finite
    .filter(s => s.values.length)
    .map(s => {
      const path = s.values
        .map((v, i) => `${i ? 'L' : 'M'}${round(sx(i + 1))},${round(sy(v))}`)
        .join('');
      const n = s.values.length;
      return {
        id: s.id,
        path,
        last: { x: round(sx(n)), y: round(sy(s.values[n - 1])) }
      };
    });
  const xTicks = niceTicks(1, steps, 4)
    .filter(v => v >= 1 && v <= steps && Number.isInteger(v))
    .map(v => ({ value: v, pos: round(sx(v)) }));
  return {
    lines,
    xTicks,
    yTicks: yTicks.map(v => ({ value: v, pos: round(sy(v)) }))
  };
}

/** One vertical axis of the parallel-coordinates plot. */
export interface IAxis {
  name: string;
  kind: 'numeric' | 'categorical';
  x: number;
  /** Ticks (numeric) or the categories (categorical), with their y. */
  ticks: { label: string; y: number }[];
  /** A value -> y (null when the value is missing). */
  scale: (v: unknown) => number | null;
}

export interface IParallelGeometry {
  axes: IAxis[];
  lines: {
    id: string;
    points: string;
    /** 0 (worst) .. 1 (best) for the colour. */
    quality: number;
    best: boolean;
  }[];
}

/** Stable category key of any JSON value. */
function category(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/**
 * Parallel coordinates: one axis per parameter then one for the metric;
 * numeric axes scale linearly min..max (bottom..top), categorical ones
 * (strings, objects, or `choice` parameters) space their values evenly.
 * One polyline per finished trial.
 */
/** Tick labels longer than this are cut in the middle (the full one is the tooltip). */
export const MAX_TICK_CHARS = 24;

/** A tick label as drawn: whole up to `max` characters, else "start…end". */
export function tickLabel(label: string, max = MAX_TICK_CHARS): string {
  const chars = Array.from(label);
  if (chars.length <= max) {
    return label;
  }
  const head = Math.ceil((max - 1) / 2);
  const tail = max - 1 - head;
  return `${chars.slice(0, head).join('')}…${chars.slice(chars.length - tail).join('')}`;
}

/** About how wide text is in the charts' SVG units (9 px ticks, 10 px names). */
function textWidth(text: string, px: number): number {
  return Array.from(text).length * px * 0.6;
}

/**
 * The box of a parallel-coordinates plot wide enough for its labels: tick
 * labels sit left of their axis (right of the metric's, the last), so the
 * margins and the spacing between axes grow with the longest label and the
 * axis names; nothing is drawn over its neighbour or cut at the edge.
 */
export function parallelBox(
  axes: { name: string; ticks: { label: string }[] }[],
  base: IBox,
  minSpacing = 130
): IBox {
  const tickW = axes.map(a =>
    Math.max(0, ...a.ticks.map(t => textWidth(tickLabel(t.label), 9)))
  );
  const nameW = axes.map(a => textWidth(a.name, 10));
  const n = axes.length;
  const last = n - 1;
  let left = base.left;
  let right = base.right;
  let spacing = minSpacing;
  if (n) {
    left = Math.max(left, tickW[0] + 8, nameW[0] / 2 + 4);
    right = Math.max(right, tickW[last] + 8, nameW[last] / 2 + 4);
  }
  for (let i = 1; i < n; i++) {
    const ticks = i === last ? 0 : tickW[i];
    spacing = Math.max(spacing, ticks + 14, (nameW[i - 1] + nameW[i]) / 2 + 12);
  }
  const width = Math.ceil(left + right + spacing * Math.max(0, n - 1));
  return {
    ...base,
    left: Math.ceil(left),
    right: Math.ceil(right),
    width: Math.max(base.width, width)
  };
}

export function parallelGeometry(
  trials: TuningTrial[],
  params: string[],
  searchSpace: Record<string, unknown>,
  mode: 'maximize' | 'minimize',
  box: IBox
): IParallelGeometry {
  const done = trials.filter(
    t => t.final !== null && t.final !== undefined && isFinite(t.final)
  );
  const names = [...params, '__metric__'];
  const plotW = box.width - box.left - box.right;
  const top = box.top;
  const bottom = box.height - box.bottom;
  const value = (t: TuningTrial, name: string): unknown =>
    name === '__metric__' ? t.final : t.parameters?.[name];
  const axes: IAxis[] = names.map((name, i) => {
    const x = round(
      box.left + (names.length > 1 ? (i / (names.length - 1)) * plotW : 0)
    );
    const values = (done.length ? done : trials)
      .map(t => value(t, name))
      .filter(v => v !== undefined && v !== null);
    const entry = searchSpace[name] as { _type?: string; _value?: unknown };
    const isChoice = entry?._type === 'choice';
    const numeric = !isChoice && values.every(v => typeof v === 'number');
    if (numeric) {
      const nums = values as number[];
      let lo = nums.length ? Math.min(...nums) : 0;
      let hi = nums.length ? Math.max(...nums) : 1;
      if (lo === hi) {
        lo -= Math.abs(lo) * 0.1 || 1;
        hi += Math.abs(hi) * 0.1 || 1;
      }
      const sy = (v: number) =>
        bottom - ((v - lo) / (hi - lo)) * (bottom - top);
      const ticks = niceTicks(lo, hi, 3)
        .filter(v => v >= lo - 1e-12 && v <= hi + 1e-12)
        .map(v => ({ label: formatNumber(v), y: round(sy(v)) }));
      return {
        name,
        kind: 'numeric',
        x,
        ticks,
        scale: v => (typeof v === 'number' && isFinite(v) ? round(sy(v)) : null)
      };
    }
    // Categories: the choice's options in their order, then any others seen.
    const cats: string[] = [];
    const options = isChoice && Array.isArray(entry._value) ? entry._value : [];
    for (const v of [...options, ...values]) {
      const c = category(v);
      if (!cats.includes(c)) {
        cats.push(c);
      }
    }
    const pos = (i: number) =>
      cats.length === 1
        ? (top + bottom) / 2
        : bottom - (i / (cats.length - 1)) * (bottom - top);
    return {
      name,
      kind: 'categorical',
      x,
      ticks: cats.map((c, i) => ({ label: c, y: round(pos(i)) })),
      scale: v => {
        const i = cats.indexOf(category(v));
        return v === undefined || v === null || i < 0 ? null : round(pos(i));
      }
    };
  });
  const finals = done.map(t => t.final!);
  const lo = Math.min(...finals);
  const hi = Math.max(...finals);
  const bestId = bestTrialId(done, mode);
  const lines = done.map(t => {
    const pts = axes
      .map(a => {
        const y = a.scale(value(t, a.name));
        return y === null ? null : `${a.x},${y}`;
      })
      .filter(p => p !== null);
    const q = hi === lo ? 1 : (t.final! - lo) / (hi - lo);
    return {
      id: t.id,
      points: pts.join(' '),
      quality: mode === 'maximize' ? q : 1 - q,
      best: t.id === bestId
    };
  });
  // The best last, so it is drawn on top.
  lines.sort(
    (a, b) => Number(a.best) - Number(b.best) || a.quality - b.quality
  );
  return { axes, lines };
}

/** A colour from bad (0) to good (1), theme-independent enough for both. */
export function qualityColor(q: number): string {
  const t = Math.min(1, Math.max(0, q));
  // hue 10 (red-orange) .. 150 (green-teal)
  return `hsl(${Math.round(10 + t * 140)}, 65%, 48%)`;
}

/** A stable colour per trial index for the curve chart. */
export function seriesColor(i: number): string {
  return `hsl(${Math.round((i * 137.508) % 360)}, 60%, 50%)`;
}
