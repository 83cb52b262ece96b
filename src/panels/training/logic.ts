/**
 * The pure logic of the Training panel, kept apart from React so it is unit
 * tested: the launch form -> request mapping, the per-rank log buffer and the
 * chart scaling.
 */
import type {
  TrainingFramework,
  TrainingJob,
  TrainingJobRequest
} from '../../api';
import { identity, ITrans } from '../../validate';

/* -------------------------------------------------------------------------- */
/* Launch form                                                                */
/* -------------------------------------------------------------------------- */

export const FRAMEWORKS: TrainingFramework[] = [
  'pytorch',
  'deepspeed',
  'tensorflow',
  'mpi',
  'plain'
];

/** What the launch form holds: text as typed, checked on submit. */
export interface ILaunchForm {
  framework: TrainingFramework;
  /** The script, relative to the server root (as the file browser names it). */
  script: string;
  /** The script's arguments, as a shell would split them. */
  args: string;
  workers: string;
  nproc: string;
  /** GPUs per worker. */
  gpus: string;
  gpuType: string;
  /** `KEY=value` lines. */
  env: string;
  project: string;
  name: string;
}

/** The environment variable a job launched from a dataset version reads its data from. */
export const DATASET_ENV = 'CUBE_LAB_DATASET';

/**
 * The launch form for a dataset version ("Train from these labels"): the
 * version's folder in $CUBE_LAB_DATASET, the job named after it, in its project.
 */
export function dataForm(data: {
  project: string;
  dataset: string;
  version: number;
  path: string;
}): Partial<ILaunchForm> {
  return {
    env: `${DATASET_ENV}=${data.path}`,
    project: data.project,
    name: `${data.dataset}-v${data.version}`
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
  };
}

export function emptyForm(): ILaunchForm {
  return {
    framework: 'pytorch',
    script: '',
    args: '',
    workers: '1',
    nproc: '1',
    gpus: '0',
    gpuType: 'nvidia-gpu',
    env: '',
    project: '',
    name: ''
  };
}

export type FormField = keyof ILaunchForm;

export interface IFormResult {
  /** Set when there is no error. */
  request: TrainingJobRequest | null;
  /** field -> what is wrong with it. */
  errors: Partial<Record<FormField, string>>;
}

/**
 * Split a command line the way a POSIX shell does for words: whitespace
 * separates, single quotes keep everything, double quotes keep all but `\"`
 * and `\\`, a backslash outside quotes escapes the next character.
 *
 * @throws Error on an unclosed quote.
 */
export function splitArgs(text: string): string[] {
  const out: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote === "'") {
      if (c === "'") {
        quote = null;
      } else {
        word += c;
      }
    } else if (quote === '"') {
      if (c === '"') {
        quote = null;
      } else if (c === '\\' && (text[i + 1] === '"' || text[i + 1] === '\\')) {
        word += text[++i];
      } else {
        word += c;
      }
    } else if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < text.length) {
      word += text[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) {
        out.push(word);
        word = '';
        inWord = false;
      }
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote) {
    throw new Error(
      quote === '"' ? 'unclosed double quote' : 'unclosed single quote'
    );
  }
  if (inWord) {
    out.push(word);
  }
  return out;
}

/** Quote words so that `splitArgs` gives them back (for showing a spec). */
export function joinArgs(words: string[]): string {
  return words
    .map(w =>
      w === ''
        ? "''"
        : /^[\w@%+=:,./-]+$/.test(w)
          ? w
          : `'${w.replace(/'/g, `'\\''`)}'`
    )
    .join(' ');
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Parse `KEY=value` lines (blank lines and `#` comments skipped).
 *
 * @returns the variables and, per bad line, a message naming it.
 */
export function parseEnv(
  text: string,
  trans: ITrans = identity
): {
  env: Record<string, string>;
  errors: string[];
} {
  const env: Record<string, string> = {};
  const errors: string[] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) {
      return;
    }
    const eq = line.indexOf('=');
    const key = eq < 0 ? line : line.slice(0, eq).trim();
    if (eq < 0) {
      errors.push(
        trans.__('line %1: "%2" has no "=" (write KEY=value)', index + 1, line)
      );
    } else if (!ENV_NAME.test(key)) {
      errors.push(
        trans.__(
          'line %1: "%2" is not a variable name (letters, digits, _)',
          index + 1,
          key
        )
      );
    } else {
      env[key] = line.slice(eq + 1).trim();
    }
  });
  return { env, errors };
}

/** `text` as a whole number from `low` to `high`, or null. */
export function wholeNumber(
  text: string,
  low: number,
  high: number
): number | null {
  const t = text.trim();
  if (!/^\d+$/.test(t)) {
    return null;
  }
  const n = Number(t);
  return n >= low && n <= high ? n : null;
}

/** A path as typed, relative to the server root (a leading "/" is the root). */
export function rootPath(text: string): string {
  return text.trim().replace(/^\/+/, '');
}

/** Whether a `/`-separated path climbs out of its root (has a ".."). */
export function leavesRoot(path: string): boolean {
  return path.split('/').includes('..');
}

/** The folder of a `/`-separated path ('' for the root). */
export function dirname(path: string): string {
  const i = path.lastIndexOf('/');
  return i < 0 ? '' : path.slice(0, i);
}

export function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/**
 * Check the form and map it to a `POST /training/jobs` body.
 *
 * The job runs in the script's folder (so the script's relative paths work
 * as they do when run by hand there): `working_dir` is that folder and
 * `script` the file name.
 */
export function formToRequest(
  form: ILaunchForm,
  trans: ITrans = identity
): IFormResult {
  const errors: Partial<Record<FormField, string>> = {};
  const script = rootPath(form.script);
  if (!script) {
    errors.script = trans.__(
      'Pick the script to run (a file under the server root).'
    );
  } else if (script.endsWith('/')) {
    errors.script = trans.__('This is a folder: pick a file.');
  } else if (leavesRoot(script)) {
    errors.script = trans.__(
      'Give a path under the server root, without "..".'
    );
  }
  let args: string[] = [];
  try {
    args = splitArgs(form.args);
  } catch (err) {
    errors.args = trans.__('Arguments: %1.', trans.__((err as Error).message));
  }
  const workers = wholeNumber(form.workers, 1, 1024);
  if (workers === null) {
    errors.workers = trans.__('Workers: a whole number from 1.');
  }
  const nproc = wholeNumber(form.nproc, 1, 1024);
  if (nproc === null) {
    errors.nproc = trans.__('Processes per worker: a whole number from 1.');
  }
  const gpus = form.gpus.trim() === '' ? 0 : wholeNumber(form.gpus, 0, 64);
  if (gpus === null) {
    errors.gpus = trans.__('GPUs: a whole number from 0 to 64.');
  }
  const gpuType = form.gpuType.trim();
  if (gpus && !gpuType) {
    errors.gpuType = trans.__(
      'Name the GPU type (a key of the accelerator table).'
    );
  }
  const env = parseEnv(form.env, trans);
  if (env.errors.length) {
    errors.env = env.errors.join('\n');
  }
  if (Object.keys(errors).length) {
    return { request: null, errors };
  }
  const request: TrainingJobRequest = {
    framework: form.framework,
    script: basename(script),
    workers: workers!,
    nproc_per_worker: nproc!
  };
  const dir = dirname(script);
  if (dir) {
    request.working_dir = dir;
  }
  if (args.length) {
    request.args = args;
  }
  if (gpus) {
    request.resources = { gpus, gpu_type: gpuType };
  }
  if (Object.keys(env.env).length) {
    request.env = env.env;
  }
  if (form.project.trim()) {
    request.project = form.project.trim();
  }
  if (form.name.trim()) {
    request.name = form.name.trim();
  }
  return { request, errors };
}

/** The form a job was launched with (to launch a changed copy). */
export function jobToForm(job: TrainingJob): ILaunchForm {
  const spec = job.spec as Record<string, any>;
  const form = emptyForm();
  form.framework = job.framework;
  const script = typeof spec.script === 'string' ? spec.script : '';
  const dir = typeof spec.working_dir === 'string' ? spec.working_dir : '';
  form.script = dir && !script.startsWith('/') ? `${dir}/${script}` : script;
  form.args = joinArgs(Array.isArray(spec.args) ? spec.args.map(String) : []);
  form.workers = String(job.workers);
  form.nproc = String(job.nproc_per_worker);
  const res = (spec.resources ?? {}) as Record<string, any>;
  form.gpus = String(res.gpus ?? 0);
  form.gpuType = typeof res.gpu_type === 'string' ? res.gpu_type : 'nvidia-gpu';
  const env = (spec.env ?? {}) as Record<string, string>;
  form.env = Object.entries(env)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');
  form.project = job.project;
  form.name = job.name;
  return form;
}

/* -------------------------------------------------------------------------- */
/* Logs                                                                       */
/* -------------------------------------------------------------------------- */

/** `[rank 3] ` as the launcher writes it (and torchrun's `[rank3]:`). */
const RANK_PREFIX = /^\[rank ?(\d+)\]:?\s?/;

export interface ILogLine {
  /** null: a line of the launcher, not of a rank. */
  rank: number | null;
  text: string;
}

/** Which lines to show: every line, one rank's, or the launcher's own. */
export type RankFilter = 'all' | 'launcher' | number;

export function parseLine(raw: string): ILogLine {
  const m = RANK_PREFIX.exec(raw);
  const rest = (m ? raw.slice(m[0].length) : raw).replace(/\r$/, '');
  // A progress bar redraws with \r: what is on screen is the last part.
  const text = rest.slice(rest.lastIndexOf('\r') + 1);
  return { rank: m ? Number(m[1]) : null, text };
}

/**
 * The job's log as lines tagged by rank, fed with the pieces the log route
 * answers. A piece may end mid-line: that part waits for the next piece.
 * Only the last `maxLines` lines are kept.
 */
export class RankedLog {
  constructor(readonly maxLines = 5000) {}

  /** Add the next piece of the log. */
  append(text: string): void {
    if (!text) {
      return;
    }
    const parts = (this._pending + text).split('\n');
    this._pending = parts.pop() ?? '';
    for (const part of parts) {
      this._push(parseLine(part));
    }
    if (this._lines.length > this.maxLines) {
      const extra = this._lines.length - this.maxLines;
      this._lines.splice(0, extra);
      this.dropped += extra;
    }
  }

  /** The lines, the unfinished last one included. */
  get lines(): ILogLine[] {
    return this._pending
      ? [...this._lines, parseLine(this._pending)]
      : this._lines;
  }

  /** The ranks seen so far, lowest first. */
  get ranks(): number[] {
    return Array.from(this._ranks).sort((a, b) => a - b);
  }

  /** Whether the launcher wrote lines of its own. */
  get hasLauncherLines(): boolean {
    return this.lines.some(l => l.rank === null && l.text.trim() !== '');
  }

  /** Lines dropped from the start to keep `maxLines`. */
  dropped = 0;

  filter(which: RankFilter): ILogLine[] {
    const lines = this.lines;
    if (which === 'all') {
      return lines;
    }
    const rank = which === 'launcher' ? null : which;
    return lines.filter(l => l.rank === rank);
  }

  /** The lines as text, with a rank prefix when several ranks are shown. */
  text(which: RankFilter): string {
    const lines = this.filter(which);
    const prefix = which === 'all' && this._ranks.size > 0;
    return lines
      .map(l => (prefix && l.rank !== null ? `[${l.rank}] ${l.text}` : l.text))
      .join('\n');
  }

  clear(): void {
    this._lines = [];
    this._pending = '';
    this._ranks.clear();
    this.dropped = 0;
  }

  private _push(line: ILogLine): void {
    if (line.rank !== null) {
      this._ranks.add(line.rank);
    }
    this._lines.push(line);
  }

  private _lines: ILogLine[] = [];
  private _pending = '';
  private _ranks = new Set<number>();
}

/** `SomeError: message` (also inside parentheses, as `python -m` writes it). */
const ERROR_LINE =
  /(?:^|[\s(])((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception))(?::\s*([^\n]*?))?\)?\s*$/;

/** Errors that only say another process failed (torchrun's summary). */
const WRAPPER_ERRORS = /(^|\.)(ChildFailedError|CalledProcessError)$/;

/**
 * What a failed job's log says went wrong: the last `SomeError: message`
 * line (a traceback's last line), preferring a rank's own error over the
 * launcher's "a child failed" summary. null when the log names no error.
 */
export function failureReason(lines: readonly ILogLine[]): string | null {
  let wrapper: string | null = null;
  for (let i = lines.length - 1; i >= 0; i--) {
    const text = lines[i].text.trim();
    const m = ERROR_LINE.exec(text);
    if (!m) {
      continue;
    }
    const name = m[1];
    const message = (m[2] ?? '').trim();
    const reason = message ? `${name}: ${message}` : name;
    if (WRAPPER_ERRORS.test(name)) {
      wrapper = wrapper ?? reason;
      continue;
    }
    return reason;
  }
  return wrapper;
}

/* -------------------------------------------------------------------------- */
/* Charts                                                                     */
/* -------------------------------------------------------------------------- */

/**
 * About `count` round tick values covering [min, max] (steps of 1, 2 or 5
 * times a power of ten, whichever is nearest). A flat range is widened so it still has ticks.
 */
export function niceTicks(min: number, max: number, count = 4): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) {
    return [];
  }
  if (min > max) {
    [min, max] = [max, min];
  }
  if (min === max) {
    const pad = min === 0 ? 1 : Math.abs(min) * 0.1;
    min -= pad;
    max += pad;
  }
  const raw = (max - min) / Math.max(1, count);
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const unit = raw / power;
  // Round to 1, 2, 5 or 10 at the geometric midpoints between them.
  const step =
    (unit < Math.SQRT2
      ? 1
      : unit < Math.sqrt(10)
        ? 2
        : unit < Math.sqrt(50)
          ? 5
          : 10) * power;
  const first = Math.floor(min / step) * step;
  const ticks: number[] = [];
  for (let v = first; v <= max + step * 1e-9; v += step) {
    ticks.push(Number(v.toPrecision(12)));
  }
  if (ticks[ticks.length - 1] < max) {
    ticks.push(Number((ticks[ticks.length - 1] + step).toPrecision(12)));
  }
  return ticks;
}

/** A short label for a tick or value: 0.001234 -> 0.00123, 12000 -> 12k. */
export function formatNumber(v: number): string {
  if (!Number.isFinite(v)) {
    return String(v);
  }
  const a = Math.abs(v);
  if (a >= 1e6) {
    return `${Number((v / 1e6).toPrecision(3))}M`;
  }
  if (a >= 1e4) {
    return `${Number((v / 1e3).toPrecision(3))}k`;
  }
  if (a !== 0 && a < 1e-3) {
    return v.toExponential(1);
  }
  return String(Number(v.toPrecision(3)));
}

export interface IChartBox {
  width: number;
  height: number;
  left: number;
  right: number;
  top: number;
  bottom: number;
}

export interface IChartGeometry {
  /** The SVG path of the line ('' without points). */
  path: string;
  /** Dots for series too short to read as a line. */
  dots: { x: number; y: number }[];
  xTicks: { value: number; pos: number }[];
  yTicks: { value: number; pos: number }[];
  last: { step: number; value: number; x: number; y: number } | null;
}

/**
 * Lay out a `[step, value]` series in a box: the y axis spans the nice ticks
 * around the values, the x axis the steps. Non-finite values are skipped.
 */
export function chartGeometry(
  series: [number, number][],
  box: IChartBox
): IChartGeometry {
  const points = series
    .filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y))
    .sort((a, b) => a[0] - b[0]);
  const empty: IChartGeometry = {
    path: '',
    dots: [],
    xTicks: [],
    yTicks: [],
    last: null
  };
  if (!points.length) {
    return empty;
  }
  const xs = points.map(p => p[0]);
  const ys = points.map(p => p[1]);
  const yTickValues = niceTicks(Math.min(...ys), Math.max(...ys), 3);
  let xMin = xs[0];
  let xMax = xs[xs.length - 1];
  if (xMin === xMax) {
    xMin -= 1;
    xMax += 1;
  }
  const yMin = yTickValues[0];
  const yMax = yTickValues[yTickValues.length - 1];
  const plotW = box.width - box.left - box.right;
  const plotH = box.height - box.top - box.bottom;
  const sx = (x: number) => box.left + ((x - xMin) / (xMax - xMin)) * plotW;
  const sy = (y: number) =>
    box.top + plotH - ((y - yMin) / (yMax - yMin)) * plotH;
  const round = (n: number) => Math.round(n * 10) / 10;
  const path = points
    .map(([x, y], i) => `${i ? 'L' : 'M'}${round(sx(x))},${round(sy(y))}`)
    .join('');
  const xTickValues = niceTicks(xMin, xMax, 4).filter(
    v => v >= xMin - 1e-9 && v <= xMax + 1e-9
  );
  const [lx, ly] = points[points.length - 1];
  return {
    path,
    dots:
      points.length <= 2
        ? points.map(([x, y]) => ({ x: round(sx(x)), y: round(sy(y)) }))
        : [],
    xTicks: xTickValues.map(v => ({ value: v, pos: round(sx(v)) })),
    yTicks: yTickValues.map(v => ({ value: v, pos: round(sy(v)) })),
    last: { step: lx, value: ly, x: round(sx(lx)), y: round(sy(ly)) }
  };
}

/**
 * Metric names in chart order: losses first, then accuracies, then the rest
 * alphabetically (so the two charts people look for come first).
 */
export function orderMetrics(names: string[]): string[] {
  const rank = (n: string) =>
    /loss/i.test(n) ? 0 : /acc|f1|precision|recall|auc|map/i.test(n) ? 1 : 2;
  return [...names].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/* -------------------------------------------------------------------------- */
/* Display                                                                    */
/* -------------------------------------------------------------------------- */

/** 3.2 -> "3.2 s", 75 -> "1 min 15 s", 3700 -> "1 h 1 min". */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) {
    return '';
  }
  if (seconds < 10) {
    return `${Math.max(0, seconds).toFixed(1)} s`;
  }
  if (seconds < 60) {
    return `${Math.round(seconds)} s`;
  }
  const s = Math.round(seconds);
  if (s < 3600) {
    const rest = s % 60;
    return rest ? `${Math.floor(s / 60)} min ${rest} s` : `${s / 60} min`;
  }
  const min = Math.floor((s % 3600) / 60);
  return min ? `${Math.floor(s / 3600)} h ${min} min` : `${s / 3600} h`;
}

/** "2 × 4 processes" style size of a job. */
export function jobSize(
  job: Pick<TrainingJob, 'workers' | 'nproc_per_worker'>
): string {
  return job.workers > 1
    ? `${job.workers} × ${job.nproc_per_worker}`
    : String(job.nproc_per_worker);
}
