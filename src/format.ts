/**
 * Display helpers: sizes, times, metric values.
 */

import { uiLanguage } from './locale';

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** Human readable size in binary units, e.g. 1536 -> "1.5 KiB". */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) {
    return '—';
  }
  if (bytes < 0) {
    return '—';
  }
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  if (unit === 0) {
    return `${value} B`;
  }
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  const text = value.toFixed(digits).replace(/\.?0+$/, '');
  return `${text} ${UNITS[unit]}`;
}

/**
 * Parse a server timestamp. Timestamps without a zone are UTC.
 *
 * @returns the date, or null when it cannot be parsed.
 */
export function parseTimestamp(value: string | null | undefined): Date | null {
  if (!value) {
    return null;
  }
  let text = value.trim();
  if (/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(text)) {
    text = `${text.replace(' ', 'T')}Z`;
  }
  const date = new Date(text);
  return isNaN(date.getTime()) ? null : date;
}

const STEPS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['second', 60],
  ['minute', 60],
  ['hour', 24],
  ['day', 30],
  ['month', 12],
  ['year', Number.POSITIVE_INFINITY]
];

/**
 * A relative time such as "5 minutes ago" or "yesterday".
 *
 * @param value - an ISO timestamp (UTC when it carries no zone)
 * @param now - the reference time (for tests)
 * @param locale - a BCP 47 locale; defaults to the page language
 */
export function formatRelativeTime(
  value: string | null | undefined,
  now: Date = new Date(),
  locale?: string
): string {
  const date = parseTimestamp(value);
  if (!date) {
    return '—';
  }
  let delta = (date.getTime() - now.getTime()) / 1000;
  if (Math.abs(delta) < 45) {
    return new Intl.RelativeTimeFormat(locale ?? pageLocale(), {
      numeric: 'auto'
    }).format(0, 'second');
  }
  const fmt = new Intl.RelativeTimeFormat(locale ?? pageLocale(), {
    numeric: 'auto'
  });
  for (const [unit, size] of STEPS) {
    if (Math.abs(delta) < size) {
      return fmt.format(Math.round(delta), unit);
    }
    delta /= size;
  }
  return fmt.format(Math.round(delta), 'year');
}

/** A full local date and time, for tooltips. */
export function formatDateTime(
  value: string | null | undefined,
  locale?: string
): string {
  const date = parseTimestamp(value);
  if (!date) {
    return '';
  }
  return date.toLocaleString(locale ?? pageLocale());
}

/** A metric value with at most 4 significant decimals. */
export function formatMetric(value: unknown): string {
  if (typeof value !== 'number') {
    return value === null || value === undefined ? '—' : String(value);
  }
  if (!Number.isFinite(value)) {
    return String(value);
  }
  if (Number.isInteger(value)) {
    return String(value);
  }
  const abs = Math.abs(value);
  if (abs !== 0 && (abs < 1e-4 || abs >= 1e9)) {
    return value.toExponential(3);
  }
  return String(Number(value.toPrecision(4)));
}

/** A param / tag value as text. */
export function formatValue(value: unknown): string {
  if (value === null || value === undefined) {
    return '—';
  }
  if (typeof value === 'string') {
    return value;
  }
  if (typeof value === 'number') {
    return formatMetric(value);
  }
  return JSON.stringify(value);
}

/** A shortened checksum, "sha256:0123456789ab…". */
export function shortChecksum(checksum: string | null | undefined): string {
  if (!checksum) {
    return '—';
  }
  const [algo, hex] = checksum.includes(':')
    ? checksum.split(':', 2)
    : ['', checksum];
  const short = hex.length > 12 ? `${hex.slice(0, 12)}…` : hex;
  return algo ? `${algo}:${short}` : short;
}

const LOWER_IS_BETTER = new Set([
  'loss',
  'error',
  'err',
  'mse',
  'mae',
  'rmse',
  'mape',
  'smape',
  'perplexity',
  'ppl',
  'latency',
  'time',
  'duration',
  'seconds',
  'ms',
  'wer',
  'cer',
  'fpr',
  'fnr'
]);

/** Whether a lower value of this metric is better (loss, error, latency...). */
export function lowerIsBetter(metric: string): boolean {
  const tokens = metric
    .replace(/([a-z])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  return tokens.some(t => LOWER_IS_BETTER.has(t) || t.endsWith('loss'));
}

function pageLocale(): string {
  return uiLanguage();
}
