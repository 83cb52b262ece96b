/**
 * Pure logic of the deployments panel (no DOM, no network), unit-tested in
 * src/__tests__/deployments.spec.ts: Prometheus text to counters, counters to
 * rates, test requests built from a model's OIP v2 metadata, and the deploy
 * dialog's form to the requests it sends.
 */
import type { Deployment, DeployRequest, TrafficAction } from '../../api';
import { identity, ITrans } from '../../validate';

/* -------------------------------------------------------------------------- */
/* Metrics                                                                    */
/* -------------------------------------------------------------------------- */

export interface ISample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE_RE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/;
const LABEL_RE = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The samples of a Prometheus text exposition (comments skipped). */
export function parsePrometheus(text: string): ISample[] {
  const out: ISample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) {
      continue;
    }
    const m = SAMPLE_RE.exec(line);
    if (!m) {
      continue;
    }
    const labels: Record<string, string> = {};
    if (m[3]) {
      for (const l of m[3].matchAll(LABEL_RE)) {
        labels[l[1]] = l[2].replace(/\\n/g, '\n').replace(/\\(["\\])/g, '$1');
      }
    }
    const value =
      m[4] === '+Inf' ? Infinity : m[4] === '-Inf' ? -Infinity : Number(m[4]);
    if (!Number.isNaN(value)) {
      out.push({ name: m[1], labels, value });
    }
  }
  return out;
}

/** The router's counters at one moment, summed over the serving versions. */
export interface ICounters {
  /** Seconds (client clock) when they were read. */
  at: number;
  requests: number;
  errors: number;
  latencySum: number;
  latencyCount: number;
  /** Cumulative histogram: [upper bound in seconds, count], ascending. */
  buckets: [number, number][];
  /** Requests per version (for the traffic split actually served). */
  byVersion: Record<string, number>;
}

const PREFIX = 'cube_serving_';

/** Sum the primary (not shadow) counters of `cube_serving_*` over versions. */
export function readCounters(text: string, at: number): ICounters {
  const c: ICounters = {
    at,
    requests: 0,
    errors: 0,
    latencySum: 0,
    latencyCount: 0,
    buckets: [],
    byVersion: {}
  };
  const buckets = new Map<number, number>();
  for (const s of parsePrometheus(text)) {
    if (!s.name.startsWith(PREFIX) || s.name.startsWith(PREFIX + 'shadow_')) {
      continue;
    }
    const what = s.name.slice(PREFIX.length);
    if (what === 'requests_total') {
      c.requests += s.value;
      const v = s.labels.version ?? '';
      c.byVersion[v] = (c.byVersion[v] ?? 0) + s.value;
    } else if (what === 'request_errors_total') {
      c.errors += s.value;
    } else if (what === 'request_duration_seconds_sum') {
      c.latencySum += s.value;
    } else if (what === 'request_duration_seconds_count') {
      c.latencyCount += s.value;
    } else if (what === 'request_duration_seconds_bucket') {
      const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
      if (!Number.isNaN(le)) {
        buckets.set(le, (buckets.get(le) ?? 0) + s.value);
      }
    }
  }
  c.buckets = Array.from(buckets.entries()).sort((a, b) => a[0] - b[0]);
  return c;
}

/** What happened between two reads. */
export interface IRates {
  at: number;
  /** Requests per second. */
  qps: number;
  /** Error answers (4xx/5xx) per second. */
  errorsPerSec: number;
  /** Share of answers that were errors, 0..1 (0 with no requests). */
  errorRatio: number;
  /** Mean latency in ms; null with no requests in the interval. */
  meanMs: number | null;
  p50Ms: number | null;
  p99Ms: number | null;
}

/**
 * The `q` quantile (0..1) of the observations in a cumulative histogram,
 * interpolated linearly inside the bucket, as Prometheus' histogram_quantile.
 */
export function histogramQuantile(
  q: number,
  buckets: [number, number][]
): number | null {
  if (!buckets.length) {
    return null;
  }
  const total = buckets[buckets.length - 1][1];
  if (total <= 0) {
    return null;
  }
  const rank = q * total;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const [bound, count] of buckets) {
    if (count >= rank) {
      if (bound === Infinity) {
        // beyond the last finite bound: the best answer is that bound
        return lowerBound;
      }
      const inBucket = count - lowerCount;
      if (inBucket <= 0) {
        return bound;
      }
      return (
        lowerBound + ((bound - lowerBound) * (rank - lowerCount)) / inBucket
      );
    }
    lowerBound = bound;
    lowerCount = count;
  }
  return lowerBound;
}

/**
 * Rates between two reads. A counter that went down means the router
 * restarted (a version switch keeps it, an undeploy + deploy does not):
 * the new values then count from zero.
 */
export function computeRates(prev: ICounters, next: ICounters): IRates {
  const dt = next.at - prev.at;
  const reset = next.requests < prev.requests;
  const base = reset
    ? {
        ...prev,
        requests: 0,
        errors: 0,
        latencySum: 0,
        latencyCount: 0,
        buckets: []
      }
    : prev;
  const requests = next.requests - base.requests;
  const errors = Math.max(0, next.errors - base.errors);
  const count = next.latencyCount - base.latencyCount;
  const sum = next.latencySum - base.latencySum;
  const before = new Map(base.buckets);
  const delta: [number, number][] = next.buckets.map(([le, n]) => [
    le,
    Math.max(0, n - (before.get(le) ?? 0))
  ]);
  const p50 = count > 0 ? histogramQuantile(0.5, delta) : null;
  const p99 = count > 0 ? histogramQuantile(0.99, delta) : null;
  return {
    at: next.at,
    qps: dt > 0 ? requests / dt : 0,
    errorsPerSec: dt > 0 ? errors / dt : 0,
    errorRatio: requests > 0 ? errors / requests : 0,
    meanMs: count > 0 ? (sum / count) * 1000 : null,
    p50Ms: p50 === null ? null : p50 * 1000,
    p99Ms: p99 === null ? null : p99 * 1000
  };
}

/** A bounded series of rates (the charts' points), oldest first. */
export class RateHistory {
  constructor(readonly capacity = 90) {}

  get points(): readonly IRates[] {
    return this._points;
  }

  get last(): ICounters | null {
    return this._last;
  }

  /** Add a read; the first one only sets the baseline. */
  push(counters: ICounters): IRates | null {
    const prev = this._last;
    this._last = counters;
    if (!prev) {
      this._start = counters.at;
      return null;
    }
    const rates = computeRates(prev, counters);
    this._points.push(rates);
    if (this._points.length > this.capacity) {
      this._points.splice(0, this._points.length - this.capacity);
    }
    return rates;
  }

  /** [seconds since the first read, value] for a chart; nulls are skipped. */
  series(pick: (r: IRates) => number | null): [number, number][] {
    const out: [number, number][] = [];
    for (const r of this._points) {
      const v = pick(r);
      if (v !== null && Number.isFinite(v)) {
        out.push([Math.round((r.at - this._start) * 10) / 10, v]);
      }
    }
    return out;
  }

  private _points: IRates[] = [];
  private _last: ICounters | null = null;
  private _start = 0;
}

/* -------------------------------------------------------------------------- */
/* Test requests                                                              */
/* -------------------------------------------------------------------------- */

/** One tensor of a model's OIP v2 metadata. */
export interface ITensorMeta {
  name: string;
  datatype: string;
  shape: number[];
}

/** Features per row when the metadata does not say (-1). */
const UNKNOWN_WIDTH = 4;
/** Rows in the example request. */
const EXAMPLE_ROWS = 2;

/** The `inputs` of `GET /v2/models/{name}`, checked; [] when absent or odd. */
export function metadataInputs(metadata: unknown): ITensorMeta[] {
  if (!metadata || typeof metadata !== 'object') {
    return [];
  }
  const inputs = (metadata as { inputs?: unknown }).inputs;
  if (!Array.isArray(inputs)) {
    return [];
  }
  return inputs
    .filter(
      (t): t is ITensorMeta =>
        !!t &&
        typeof t === 'object' &&
        typeof t.name === 'string' &&
        typeof t.datatype === 'string' &&
        Array.isArray(t.shape)
    )
    .map(t => ({
      name: t.name,
      datatype: t.datatype.toUpperCase(),
      shape: t.shape.map((d: unknown) => (typeof d === 'number' ? d : -1))
    }));
}

/** `count` example values of an OIP v2 datatype. */
export function exampleValues(
  datatype: string,
  count: number
): (number | string | boolean)[] {
  const out: (number | string | boolean)[] = [];
  for (let i = 0; i < count; i++) {
    if (datatype === 'BYTES') {
      out.push(i % 2 ? 'another example' : 'an example text');
    } else if (datatype === 'BOOL') {
      out.push(i % 2 === 0);
    } else if (/^U?INT/.test(datatype)) {
      out.push(i % 5);
    } else {
      // small distinct decimals, so rows differ
      out.push(
        Math.round((0.5 + (i % 7) * 0.7 + Math.floor(i / 7) * 0.3) * 100) / 100
      );
    }
  }
  return out;
}

/** The concrete shape of a 2-row example: -1 batch -> 2, other -1 -> a guess. */
export function exampleShape(shape: number[]): number[] {
  if (!shape.length) {
    return [EXAMPLE_ROWS];
  }
  return shape.map((d, i) =>
    d >= 0 ? d : i === 0 ? EXAMPLE_ROWS : UNKNOWN_WIDTH
  );
}

export interface IExampleRequest {
  inputs: {
    name: string;
    shape: number[];
    datatype: string;
    data: (number | string | boolean)[];
  }[];
}

/**
 * A 2-row OIP v2 inference request for the model's declared inputs; with no
 * metadata, one FP64 tensor of 2 rows x 4 features.
 */
export function buildExampleRequest(inputs: ITensorMeta[]): IExampleRequest {
  const declared: ITensorMeta[] = inputs.length
    ? inputs
    : [{ name: 'input-0', datatype: 'FP64', shape: [-1, -1] }];
  return {
    inputs: declared.map(t => {
      const shape = exampleShape(t.shape);
      const size = shape.reduce((a, b) => a * b, 1);
      return {
        name: t.name,
        shape,
        datatype: t.datatype,
        data: exampleValues(t.datatype, size)
      };
    })
  };
}

/**
 * JSON indented by 2, but arrays of plain values on one line, so tensors'
 * `data` and `shape` stay readable: `"shape": [2, 4]`.
 */
export function prettyJson(value: unknown, indent = ''): string {
  const inner = indent + '  ';
  if (Array.isArray(value)) {
    if (value.every(v => v === null || typeof v !== 'object')) {
      return `[${value.map(v => JSON.stringify(v) ?? 'null').join(', ')}]`;
    }
    const items = value.map(v => inner + prettyJson(v, inner));
    return items.length ? `[\n${items.join(',\n')}\n${indent}]` : '[]';
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${inner}${JSON.stringify(k)}: ${prettyJson(v, inner)}`);
    return entries.length ? `{\n${entries.join(',\n')}\n${indent}}` : '{}';
  }
  return JSON.stringify(value) ?? 'null';
}

/** The example as the editor shows it. */
export function exampleText(inputs: ITensorMeta[]): string {
  return prettyJson(buildExampleRequest(inputs));
}

export type ParsedBody =
  { ok: true; body: Record<string, unknown> } | { ok: false; error: string };

/** The editor's text as a request body (a JSON object), or why not. */
export function parseRequestBody(
  text: string,
  trans: ITrans = identity
): ParsedBody {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return {
      ok: false,
      error: trans.__(
        'Not valid JSON: %1',
        err instanceof Error ? err.message : String(err)
      )
    };
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    return {
      ok: false,
      error: trans.__(
        'The request must be a JSON object, e.g. {"inputs": [...]}.'
      )
    };
  }
  return { ok: true, body: value as Record<string, unknown> };
}

/** A short summary of an OIP v2 answer: "predict: [0, 2]". */
export function summarizeAnswer(body: unknown): string | null {
  if (!body || typeof body !== 'object') {
    return null;
  }
  const outputs = (body as { outputs?: unknown }).outputs;
  if (!Array.isArray(outputs)) {
    return null;
  }
  const parts: string[] = [];
  for (const o of outputs) {
    if (o && typeof o === 'object' && Array.isArray(o.data)) {
      const data = o.data.slice(0, 8).map((v: unknown) => JSON.stringify(v));
      const more = o.data.length > 8 ? ', …' : '';
      parts.push(`${String(o.name ?? 'output')}: [${data.join(', ')}${more}]`);
    }
  }
  return parts.length ? parts.join('  ') : null;
}

/* -------------------------------------------------------------------------- */
/* The deploy dialog                                                          */
/* -------------------------------------------------------------------------- */

/** What to do when a deployment of that name already runs. */
export type DeployMode = 'new' | 'switch' | 'canary';

/**
 * What the replicas run: `auto` lets the server choose by the version's
 * flavor (a causal LM folder or a peft adapter: `llm`, else `oip`); `llm` is
 * OpenAI's API under /v1 on the transformers engine; `oip` the OIP v2 server.
 */
export type DeployRuntime = 'auto' | 'llm' | 'oip';

export const DEPLOY_RUNTIMES: readonly DeployRuntime[] = ['auto', 'llm', 'oip'];

/** The runtime the dialog starts with: `llm` for the flavors only it serves. */
export function defaultRuntime(flavor?: string | null): DeployRuntime {
  return flavor === 'peft' ? 'llm' : 'auto';
}

/** True when the deployment may serve a language model (batching is the engine's). */
export function mayBeLlm(
  runtime: DeployRuntime,
  flavor?: string | null
): boolean {
  if (runtime === 'llm') {
    return true;
  }
  if (runtime === 'oip') {
    return false;
  }
  return (
    flavor === undefined ||
    flavor === null ||
    flavor === 'transformers' ||
    flavor === 'peft'
  );
}

export interface IDeployForm {
  name: string;
  replicas: string;
  port: string;
  mode: DeployMode;
  percent: string;
  /** Adaptive batching (64 rows a call). */
  batching: boolean;
  /** Percent of requests to keep with their answers ('' or 0: none). */
  samples: string;
  runtime: DeployRuntime;
}

export type DeployField = 'name' | 'replicas' | 'port' | 'percent' | 'samples';

/** Rows a batched model call takes at most, when the dialog turns batching on. */
export const BATCH_ROWS = 64;

export type DeployPlan =
  | { kind: 'deploy'; request: DeployRequest }
  | { kind: 'traffic'; project: string; name: string; change: TrafficAction };

export interface IDeployPlanResult {
  plan: DeployPlan | null;
  errors: Partial<Record<DeployField, string>>;
}

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The dialog's defaults for a model version. */
export function defaultDeployForm(
  model: string,
  flavor?: string | null
): IDeployForm {
  return {
    runtime: defaultRuntime(flavor),
    name: model,
    replicas: '1',
    port: '',
    mode: 'new',
    percent: '10',
    batching: false,
    samples: ''
  };
}

/** The running deployment a new deploy under `name` would collide with. */
export function findActive(
  deployments: Deployment[],
  project: string,
  name: string
): Deployment | null {
  return (
    deployments.find(
      d =>
        d.project === project &&
        d.name === name &&
        (d.status === 'running' ||
          d.status === 'updating' ||
          d.status === 'starting')
    ) ?? null
  );
}

/**
 * Map the dialog to what it sends: a new deployment (POST /deployments), or
 * when `existing` runs under that name, a version switch or a canary.
 */
export function planDeploy(
  form: IDeployForm,
  target: { project: string; model: string; version: number },
  existing: Deployment | null,
  trans: ITrans = identity
): IDeployPlanResult {
  const errors: Partial<Record<DeployField, string>> = {};
  const name = form.name.trim();
  if (!name) {
    errors.name = trans.__('A deployment needs a name.');
  } else if (!NAME_RE.test(name)) {
    errors.name = trans.__(
      'Use 1-128 letters, digits, ".", "_" or "-", starting with a letter or digit.'
    );
  }
  if (existing && form.mode !== 'new') {
    if (existing.model !== target.model) {
      errors.name = trans.__(
        '"%1" serves model %2; pick another name.',
        name,
        existing.model
      );
    } else if (existing.version === target.version) {
      errors.name = trans.__('"%1" already serves v%2.', name, target.version);
    }
    let percent = 0;
    if (form.mode === 'canary') {
      percent = Number(form.percent);
      if (
        !form.percent.trim() ||
        !Number.isFinite(percent) ||
        percent <= 0 ||
        percent >= 100
      ) {
        errors.percent = trans.__(
          'A canary takes more than 0 and less than 100 percent.'
        );
      }
    }
    if (Object.keys(errors).length) {
      return { plan: null, errors };
    }
    const change: TrafficAction =
      form.mode === 'switch'
        ? { action: 'switch', version: target.version }
        : { action: 'canary', version: target.version, percent };
    return {
      plan: {
        kind: 'traffic',
        project: existing.project,
        name: existing.name,
        change
      },
      errors
    };
  }
  if (existing) {
    errors.name = trans.__(
      '"%1" is already running v%2: switch, canary, or pick another name.',
      name,
      existing.version
    );
  }
  const replicas = Number(form.replicas);
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 16) {
    errors.replicas = trans.__('Replicas: a whole number from 1 to 16.');
  }
  let port: number | undefined = undefined;
  if (form.port.trim()) {
    port = Number(form.port);
    if (!Number.isInteger(port) || port < 1024 || port > 65535) {
      errors.port = trans.__(
        'Port: a whole number from 1024 to 65535, or empty for any free port.'
      );
    }
  }
  const samples = form.samples.trim() ? Number(form.samples) : 0;
  if (!Number.isFinite(samples) || samples < 0 || samples > 100) {
    errors.samples = trans.__(
      'Samples: a percent from 0 to 100, or empty for none.'
    );
  }
  if (Object.keys(errors).length) {
    return { plan: null, errors };
  }
  const request: DeployRequest = {
    model: `${target.model}:${target.version}`,
    project: target.project,
    replicas
  };
  if (form.runtime !== 'auto') {
    request.runtime = form.runtime;
  }
  // an LLM engine batches requests itself (continuous batching)
  if (form.batching && form.runtime !== 'llm') {
    request.batch_max_rows = BATCH_ROWS;
  }
  if (samples > 0) {
    request.samples_percent = samples;
  }
  if (name !== target.model) {
    request.name = name;
  }
  if (port !== undefined) {
    request.port = port;
  }
  return { plan: { kind: 'deploy', request }, errors };
}

/* -------------------------------------------------------------------------- */
/* Display                                                                    */
/* -------------------------------------------------------------------------- */

/** "v3 90% · v4 10% (canary)" style parts of a traffic table. */
export function describeTraffic(d: Pick<Deployment, 'traffic'>): {
  version: number;
  weight: number;
  role: 'primary' | 'canary' | 'shadow';
}[] {
  return d.traffic.map((t, i) => ({
    version: t.version,
    weight: t.shadow ? 0 : t.weight,
    role: t.shadow ? 'shadow' : i === 0 ? 'primary' : 'canary'
  }));
}

/** The canary's percent, or null when there is none. */
export function canaryPercent(d: Pick<Deployment, 'traffic'>): number | null {
  const c = d.traffic.find((t, i) => i > 0 && !t.shadow);
  return c ? c.weight : null;
}

/** A rate or latency for the summary line. */
export function formatRate(value: number | null, unit: string): string {
  if (value === null || !Number.isFinite(value)) {
    return '–';
  }
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${value.toFixed(digits)} ${unit}`;
}

/* -------------------------------------------------------------------------- */
/* Undeploy and remove                                                        */
/* -------------------------------------------------------------------------- */

/**
 * The statuses a DELETE removes (kills what is left, gives the quota back,
 * deletes the record and log); on an active deployment it only stops it.
 */
export const REMOVABLE_STATUSES: readonly string[] = [
  'failed',
  'dead',
  'stopped'
];

/** True when DELETE removes the deployment rather than stopping it. */
export function isRemovable(d: Pick<Deployment, 'status'>): boolean {
  return REMOVABLE_STATUSES.includes(d.status);
}

/**
 * What the list and the view offer on a deployment: "undeploy" (stop) while
 * it is starting, running or updating; "remove" once it failed, died or was
 * stopped; nothing once removed (or for a status this client does not know).
 */
export function endAction(
  d: Pick<Deployment, 'status'>
): 'undeploy' | 'remove' | null {
  if (
    d.status === 'starting' ||
    d.status === 'running' ||
    d.status === 'updating'
  ) {
    return 'undeploy';
  }
  return isRemovable(d) ? 'remove' : null;
}

/** The list without the deployment `gone` (same project and name). */
export function withoutDeployment(
  list: Deployment[],
  gone: Pick<Deployment, 'project' | 'name'>
): Deployment[] {
  return list.filter(d => d.project !== gone.project || d.name !== gone.name);
}
