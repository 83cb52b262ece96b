/**
 * What the resource views show, as plain functions: a series' columns,
 * sparkline paths, the status-bar summary, quota text, and the alert-rule
 * form's checks.
 */
import type {
  AlertChannel,
  AlertRuleRequest,
  ChannelType,
  LiveObject,
  ProjectUse,
  ResourceSeries,
  ServerTotals
} from '../../api';
import { formatBytes } from '../../format';
import { identity, ITrans } from '../../validate';

/** One column of a series over time: `[unix seconds, value]`. */
export type Column = [number, number][];

export interface SeriesColumns {
  cpu: Column;
  rss: Column;
  gpuUtil: Column;
  gpuMemory: Column;
  /** Whether any point (or the latest sample) has GPU figures. */
  hasGpu: boolean;
}

/** The last `limit` points of each column (nulls dropped). */
export function seriesColumns(
  series: Pick<ResourceSeries, 'fields' | 'points' | 'gpu' | 'latest'> | null,
  limit = 120
): SeriesColumns {
  const out: SeriesColumns = {
    cpu: [],
    rss: [],
    gpuUtil: [],
    gpuMemory: [],
    hasGpu: false
  };
  if (!series || !Array.isArray(series.points)) {
    return out;
  }
  const at = (name: string) => series.fields.indexOf(name);
  const t = at('t');
  const cols: [keyof Omit<SeriesColumns, 'hasGpu'>, number][] = [
    ['cpu', at('cpu_percent')],
    ['rss', at('rss_bytes')],
    ['gpuUtil', at('gpu_util_percent')],
    ['gpuMemory', at('gpu_memory_bytes')]
  ];
  for (const point of series.points.slice(-limit)) {
    const time = t >= 0 ? point[t] : null;
    if (typeof time !== 'number') {
      continue;
    }
    for (const [name, index] of cols) {
      const value = index >= 0 ? point[index] : null;
      if (typeof value === 'number' && Number.isFinite(value)) {
        out[name].push([time, value]);
      }
    }
  }
  out.hasGpu =
    !!series.gpu ||
    out.gpuMemory.length > 0 ||
    out.gpuUtil.length > 0 ||
    !!series.latest?.gpus?.length;
  return out;
}

/**
 * An SVG path through the column, scaled to `width` x `height` (the y axis
 * from 0 to the larger of `floor` and the column's maximum).
 */
export function sparkPath(
  column: Column,
  width: number,
  height: number,
  floor = 0
): string {
  if (!column.length) {
    return '';
  }
  const t0 = column[0][0];
  const t1 = column[column.length - 1][0];
  const span = t1 - t0 || 1;
  const top = Math.max(floor, ...column.map(p => p[1])) || 1;
  return column
    .map(([time, value], i) => {
      const x = column.length === 1 ? width : ((time - t0) / span) * width;
      const y = height - (Math.max(value, 0) / top) * height;
      return `${i ? 'L' : 'M'}${x.toFixed(1)},${y.toFixed(1)}`;
    })
    .join(' ');
}

/** "150 %" (of one core); "—" when unknown. */
export function formatPercent(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) {
    return '—';
  }
  return `${value >= 100 ? Math.round(value) : value.toFixed(1)} %`;
}

export interface ServerSummary {
  cpu: string;
  memory: string;
  /** '' without GPUs. */
  gpus: string;
  title: string;
}

/** The status bar's text and its tooltip. */
export function serverSummary(
  totals: ServerTotals,
  trans: ITrans = identity
): ServerSummary {
  const cpu = trans.__('CPU %1', formatPercent(totals.cpu_percent));
  const memory = trans.__(
    'Mem %1 / %2',
    formatBytes(totals.memory_used_bytes),
    formatBytes(totals.memory_total_bytes)
  );
  const gpuMemory = totals.gpus.reduce((n, g) => n + (g.memory_bytes ?? 0), 0);
  const busy = totals.gpus.filter(g => (g.processes ?? 0) > 0).length;
  const gpus = totals.gpus.length
    ? trans.__(
        'GPU %1/%2 busy, %3',
        busy,
        totals.gpus.length,
        formatBytes(gpuMemory)
      )
    : '';
  const lines = [
    trans.__(
      'This server: CPU %1 of %2 cores',
      formatPercent(totals.cpu_percent),
      totals.cpu_count
    ),
    memory,
    ...totals.gpus.map(g =>
      trans.__(
        '%1 (%2): %3 in use by %4 processes',
        g.name,
        g.uuid,
        formatBytes(g.memory_bytes ?? 0),
        g.processes ?? 0
      )
    )
  ];
  return { cpu, memory, gpus, title: lines.join('\n') };
}

/** "2 of 4 GPUs in use · 3.5 of 100 GPU-hours this month" / "2 GPUs in use (no GPU quota)". */
export function quotaText(use: ProjectUse, trans: ITrans = identity): string {
  const held =
    use.gpu_quota === null
      ? trans.__('%1 GPUs in use (no GPU quota)', use.gpus_in_use)
      : trans.__(
          '%1 of %2 GPUs in use',
          use.gpus_in_use,
          formatQuantity(use.gpu_quota)
        );
  const limit = use.gpu_hours_limit ?? null;
  if (limit !== null) {
    const used = use.gpu_hours_month ?? 0;
    return `${held} · ${trans.__(
      '%1 of %2 GPU-hours this month',
      formatQuantity(used),
      formatQuantity(limit)
    )}`;
  }
  if (use.gpu_hours_month !== null) {
    return `${held} · ${trans.__('%1 GPU-hours this month', formatQuantity(use.gpu_hours_month))}`;
  }
  return held;
}

function formatQuantity(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

/** What a live object is called in the list. */
export function objectLabel(obj: LiveObject, trans: ITrans = identity): string {
  if (obj.kind === 'pipeline') {
    return trans.__('Run %1 · node %2', obj.name || obj.id, obj.node);
  }
  if (obj.kind === 'training') {
    return trans.__('Training job %1', obj.name || obj.id);
  }
  if (obj.kind === 'trial') {
    return trans.__(
      'Tuning experiment %1 · trial %2',
      obj.name || obj.id,
      obj.node
    );
  }
  if (obj.kind === 'kernel') {
    return obj.path
      ? trans.__('Notebook kernel · %1', obj.path)
      : trans.__('Kernel %1', obj.name || obj.id);
  }
  if (obj.kind === 'deployment') {
    return obj.node
      ? trans.__('Deployment %1 · replica %2', obj.name || obj.id, obj.node)
      : trans.__('Deployment %1', obj.name || obj.id);
  }
  return `${obj.kind} ${obj.name || obj.id}`;
}

/** What it holds: "CPU 150 % · 64 MiB · 2 ranks · GPU 1 GiB". */
export function holdsText(obj: LiveObject, trans: ITrans = identity): string {
  const parts = [
    trans.__('CPU %1', formatPercent(obj.cpu_percent)),
    formatBytes(obj.rss_bytes)
  ];
  if (obj.ranks && obj.ranks > 1) {
    parts.push(trans.__('%1 ranks', obj.ranks));
  }
  if (obj.gpus.length) {
    const memory = obj.gpus.reduce((n, g) => n + (g.memory_bytes ?? 0), 0);
    parts.push(trans.__('%1 GPUs, %2', obj.gpus.length, formatBytes(memory)));
  }
  return parts.join(' · ');
}

/* Alert rules ------------------------------------------------------------ */

export const CHANNEL_TYPES: ChannelType[] = [
  'webhook',
  'wecom',
  'dingtalk',
  'feishu',
  'slack',
  'email'
];

/** A project's quota use past a percentage (watched by the server). */
export const QUOTA_EVENT = 'quota.usage';

/** The events a rule may name (the server's `cube_lab/alerts/events.py`). */
export const ALERT_EVENTS: string[] = [
  ...['job', 'run', 'experiment'].flatMap(kind =>
    ['failed', 'succeeded', 'stopped', 'duration'].map(o => `${kind}.${o}`)
  ),
  'deployment.unhealthy',
  'deployment.error_rate',
  'deployment.p99',
  QUOTA_EVENT
];

/** The quota dimensions a quota.usage rule may watch (`resource`). */
export const QUOTA_RESOURCES = [
  'any',
  'gpus',
  'gpu_hours',
  'cpu',
  'memory',
  'servers',
  'jobs'
];

/** A quota dimension's name in the form. */
export function quotaResourceLabel(
  resource: string,
  trans: ITrans = identity
): string {
  switch (resource) {
    case 'any':
      return trans.__('Any quota');
    case 'gpus':
      return trans.__('GPUs');
    case 'gpu_hours':
      return trans.__('GPU-hours this month');
    case 'cpu':
      return trans.__('CPU');
    case 'memory':
      return trans.__('Memory');
    case 'servers':
      return trans.__('Servers');
    case 'jobs':
      return trans.__('Jobs');
    default:
      return resource;
  }
}

export const RULE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The fields of the "add a rule" form, all as typed. */
export interface IRuleForm {
  name: string;
  events: string[];
  durationMinutes: string;
  threshold: string;
  thresholdPct: string;
  quotaResource: string;
  type: ChannelType;
  url: string;
  secret: string;
  host: string;
  port: string;
  sender: string;
  to: string;
  username: string;
  password: string;
  starttls: boolean;
}

export function emptyRuleForm(): IRuleForm {
  return {
    name: '',
    events: ['job.failed', 'run.failed'],
    durationMinutes: '',
    threshold: '',
    thresholdPct: '80',
    quotaResource: 'any',
    type: 'webhook',
    url: '',
    secret: '',
    host: '',
    port: '25',
    sender: '',
    to: '',
    username: '',
    password: '',
    starttls: false
  };
}

/** Whether the channel type signs with a secret. */
export function hasSecret(type: ChannelType): boolean {
  return type === 'dingtalk' || type === 'feishu';
}

/** The request the form makes, or the first problem with it. */
export function ruleRequest(
  form: IRuleForm,
  trans: ITrans = identity
): { request: AlertRuleRequest } | { problem: string } {
  if (!RULE_NAME_PATTERN.test(form.name)) {
    return {
      problem: trans.__(
        'A rule name starts with a letter or digit and has letters, digits, ".", "_" or "-" only.'
      )
    };
  }
  if (!form.events.length) {
    return { problem: trans.__('Choose at least one event.') };
  }
  const request: AlertRuleRequest = {
    name: form.name,
    events: [...form.events],
    channel: { type: form.type },
    enabled: true
  };
  if (form.events.includes(QUOTA_EVENT)) {
    if (form.events.length > 1) {
      return {
        problem: trans.__(
          'A quota use rule names no other events: make another rule for them.'
        )
      };
    }
    const pct = Number(form.thresholdPct);
    if (!form.thresholdPct.trim() || !(pct > 0 && pct <= 1000)) {
      return {
        problem: trans.__(
          'A quota use rule needs a percentage above 0 and at most 1000.'
        )
      };
    }
    request.threshold_pct = pct;
    request.resource = form.quotaResource || 'any';
  }
  if (form.events.some(e => e.endsWith('.duration'))) {
    const minutes = Number(form.durationMinutes);
    if (!form.durationMinutes.trim() || !(minutes > 0)) {
      return {
        problem: trans.__('A duration event needs a limit in minutes above 0.')
      };
    }
    request.duration_s = minutes * 60;
  }
  const thresholds = form.events.filter(
    e => e === 'deployment.error_rate' || e === 'deployment.p99'
  );
  if (thresholds.length > 1) {
    return {
      problem: trans.__(
        'A rule names one threshold event at most (error rate or p99).'
      )
    };
  }
  if (thresholds.length) {
    const value = Number(form.threshold);
    if (!form.threshold.trim() || !(value > 0)) {
      return {
        problem: trans.__('A threshold event needs a threshold above 0.')
      };
    }
    request.threshold = value;
  }
  const channel: AlertChannel = { type: form.type };
  if (form.type === 'email') {
    const port = Number(form.port || '25');
    const to = form.to
      .split(/[,;\s]+/)
      .map(s => s.trim())
      .filter(Boolean);
    if (!form.host.trim()) {
      return { problem: trans.__('E-mail needs an SMTP host.') };
    }
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      return {
        problem: trans.__('The SMTP port is a number from 1 to 65535.')
      };
    }
    if (
      !form.sender.includes('@') ||
      !to.length ||
      to.some(a => !a.includes('@'))
    ) {
      return {
        problem: trans.__(
          'E-mail needs a sender and at least one recipient address.'
        )
      };
    }
    Object.assign(channel, {
      host: form.host.trim(),
      port,
      sender: form.sender.trim(),
      to,
      starttls: form.starttls
    });
    if (form.username) {
      channel.username = form.username;
      channel.password = form.password;
    }
  } else {
    if (!/^https?:\/\/\S+$/.test(form.url.trim())) {
      return {
        problem: trans.__('The webhook URL starts with http:// or https://.')
      };
    }
    channel.url = form.url.trim();
    if (hasSecret(form.type) && form.secret) {
      channel.secret = form.secret;
    }
  }
  request.channel = channel;
  return { request };
}

/** A channel as the list shows it (the server already masked it). */
export function channelText(channel: AlertChannel): string {
  if (channel.type === 'email') {
    return `${channel.sender ?? ''} → ${(channel.to ?? []).join(', ')} (${channel.host ?? ''})`;
  }
  return channel.url ?? '';
}
