/**
 * A node's results in the side pane: images, CSV files as a table (first
 * rows), JSON metrics as name/value rows, and number series (a JSON series
 * or an ECharts line/bar option) as a small SVG chart. No chart library:
 * the bundle stays small and the chart uses the theme's colours.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import {
  describeError,
  nodeResults,
  ResultFile,
  resultText,
  resultUrl
} from '../../api';

type Json = any;

/** How many CSV rows the table shows. */
export const CSV_ROWS = 20;
/** Bigger text results are not fetched to render (a link is shown). */
export const MAX_RENDER_BYTES = 2 * 1024 * 1024;

export interface ICsvTable {
  header: string[];
  rows: string[][];
  /** More rows followed those kept. */
  truncated: boolean;
}

/** Parse CSV (RFC 4180 quoting; comma, or tab for .tsv) up to `maxRows` rows. */
export function parseCsv(
  text: string,
  maxRows = CSV_ROWS,
  delimiter = ','
): ICsvTable {
  const records: string[][] = [];
  let field = '';
  let record: string[] = [];
  let quoted = false;
  let i = 0;
  const endRecord = () => {
    record.push(field);
    field = '';
    if (!(record.length === 1 && record[0] === '')) {
      records.push(record);
    }
    record = [];
  };
  // One record more than asked: it says whether the table was cut.
  while (i < text.length && records.length <= maxRows + 1) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else {
          quoted = false;
        }
      } else {
        field += c;
      }
    } else if (c === '"' && field === '') {
      quoted = true;
    } else if (c === delimiter) {
      record.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') {
        i++;
      }
      endRecord();
    } else {
      field += c;
    }
    i++;
  }
  if (i >= text.length && (field !== '' || record.length)) {
    endRecord();
  }
  const [header = [], ...rest] = records;
  return {
    header,
    rows: rest.slice(0, maxRows),
    truncated: rest.length > maxRows || i < text.length
  };
}

export interface IMetric {
  name: string;
  value: string;
}

function isScalar(value: unknown): boolean {
  return (
    value === null || ['string', 'number', 'boolean'].includes(typeof value)
  );
}

function showScalar(value: Json): string {
  if (typeof value === 'number' && !Number.isInteger(value)) {
    return String(Number(value.toPrecision(6)));
  }
  return String(value);
}

/** Name/value rows for the scalars of a JSON object (nested names joined by "."). */
export function metricsOf(value: Json, limit = 50): IMetric[] {
  const out: IMetric[] = [];
  const walk = (v: Json, prefix: string, depth: number) => {
    if (out.length >= limit) {
      return;
    }
    if (isScalar(v)) {
      out.push({ name: prefix || 'value', value: showScalar(v) });
      return;
    }
    if (depth > 3 || Array.isArray(v) || typeof v !== 'object') {
      return;
    }
    for (const [k, child] of Object.entries(v)) {
      walk(child, prefix ? `${prefix}.${k}` : k, depth + 1);
    }
  };
  walk(value, '', 0);
  return out;
}

export interface ISeries {
  name: string;
  values: number[];
}

export interface IChart {
  kind: 'line' | 'bar';
  /** Labels of the x axis (indexes when absent). */
  x: string[];
  series: ISeries[];
}

function numbers(value: unknown): number[] | null {
  if (!Array.isArray(value) || value.length < 2) {
    return null;
  }
  const out: number[] = [];
  for (const item of value) {
    // ECharts also allows [x, y] pairs and {value} objects.
    const n = Array.isArray(item)
      ? item[1]
      : item && typeof item === 'object'
        ? (item as { value?: unknown }).value
        : item;
    if (typeof n !== 'number' || !Number.isFinite(n)) {
      return null;
    }
    out.push(n);
  }
  return out;
}

/**
 * A chart from JSON: an ECharts option (`series[].data` of type line or bar,
 * `xAxis.data`), a list of numbers, or an object of number lists
 * (`{"loss": [...], "accuracy": [...]}`). Null when there is none.
 */
export function chartOf(value: Json): IChart | null {
  if (Array.isArray(value)) {
    const values = numbers(value);
    return values
      ? { kind: 'line', x: [], series: [{ name: 'value', values }] }
      : null;
  }
  if (!value || typeof value !== 'object') {
    return null;
  }
  if (value.series !== undefined) {
    const list = Array.isArray(value.series) ? value.series : [value.series];
    const series: ISeries[] = [];
    let kind: IChart['kind'] = 'line';
    list.forEach((s: Json, i: number) => {
      const values = s && numbers(s.data);
      if (values && (s.type === 'line' || s.type === 'bar' || !s.type)) {
        series.push({ name: String(s.name ?? `series ${i + 1}`), values });
        if (s.type === 'bar') {
          kind = 'bar';
        }
      }
    });
    const axis = Array.isArray(value.xAxis) ? value.xAxis[0] : value.xAxis;
    const x = Array.isArray(axis?.data) ? axis.data.map(String) : [];
    return series.length ? { kind, x, series } : null;
  }
  const series: ISeries[] = [];
  for (const [name, v] of Object.entries(value)) {
    const values = numbers(v);
    if (values) {
      series.push({ name, values });
    }
  }
  return series.length ? { kind: 'line', x: [], series } : null;
}

const CHART_W = 240;
const CHART_H = 120;
const PAD = { left: 34, right: 6, top: 6, bottom: 16 };

function tick(n: number): string {
  const a = Math.abs(n);
  if (a !== 0 && (a >= 1e5 || a < 1e-3)) {
    return n.toExponential(1);
  }
  return String(Number(n.toPrecision(3)));
}

/** A small SVG line or bar chart. */
export function SvgChart(props: { chart: IChart; title: string }): JSX.Element {
  const { chart } = props;
  const all = chart.series.flatMap(s => s.values);
  let lo = Math.min(...all);
  let hi = Math.max(...all);
  if (chart.kind === 'bar') {
    lo = Math.min(0, lo);
    hi = Math.max(0, hi);
  }
  if (lo === hi) {
    lo -= 1;
    hi += 1;
  }
  const count = Math.max(...chart.series.map(s => s.values.length));
  const w = CHART_W - PAD.left - PAD.right;
  const h = CHART_H - PAD.top - PAD.bottom;
  const y = (v: number) => PAD.top + h - ((v - lo) / (hi - lo)) * h;
  const x = (i: number) =>
    PAD.left + (count > 1 ? (i / (count - 1)) * w : w / 2);
  const slot = w / Math.max(1, count) / Math.max(1, chart.series.length);
  return (
    <figure className="cube-Chart">
      <svg
        viewBox={`0 0 ${CHART_W} ${CHART_H}`}
        role="img"
        aria-label={props.title}
        className="cube-Chart-svg"
      >
        <line
          className="cube-Chart-axis"
          x1={PAD.left}
          x2={PAD.left}
          y1={PAD.top}
          y2={PAD.top + h}
        />
        <line
          className="cube-Chart-axis"
          x1={PAD.left}
          x2={PAD.left + w}
          y1={PAD.top + h}
          y2={PAD.top + h}
        />
        <text className="cube-Chart-tick" x={PAD.left - 3} y={PAD.top + 8}>
          {tick(hi)}
        </text>
        <text className="cube-Chart-tick" x={PAD.left - 3} y={PAD.top + h}>
          {tick(lo)}
        </text>
        <text
          className="cube-Chart-tick cube-mod-x"
          x={PAD.left}
          y={CHART_H - 3}
        >
          {chart.x[0] ?? '0'}
        </text>
        <text
          className="cube-Chart-tick cube-mod-xEnd"
          x={PAD.left + w}
          y={CHART_H - 3}
        >
          {chart.x[count - 1] ?? String(count - 1)}
        </text>
        {chart.series.map((s, k) =>
          chart.kind === 'bar' ? (
            <g key={s.name} className={`cube-Chart-series cube-mod-s${k % 4}`}>
              {s.values.map((v, i) => (
                <rect
                  key={i}
                  x={PAD.left + (i * chart.series.length + k) * slot + 1}
                  width={Math.max(1, slot - 2)}
                  y={Math.min(y(v), y(0))}
                  height={Math.abs(y(v) - y(0))}
                />
              ))}
            </g>
          ) : (
            <polyline
              key={s.name}
              className={`cube-Chart-series cube-mod-s${k % 4}`}
              points={s.values.map((v, i) => `${x(i)},${y(v)}`).join(' ')}
            />
          )
        )}
      </svg>
      {chart.series.length > 1 || chart.series[0].name !== 'value' ? (
        <figcaption className="cube-Chart-legend">
          {chart.series.map((s, k) => (
            <span key={s.name} className={`cube-mod-s${k % 4}`}>
              {s.name}: {tick(s.values[s.values.length - 1])}
            </span>
          ))}
        </figcaption>
      ) : null}
    </figure>
  );
}

function CsvTable(props: {
  table: ICsvTable;
  trans: TranslationBundle;
}): JSX.Element {
  const { table, trans } = props;
  return (
    <div className="cube-ResultTable-wrap">
      <table className="cube-ResultTable">
        <thead>
          <tr>
            {table.header.map((h, i) => (
              <th key={i}>{h}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {table.rows.map((row, r) => (
            <tr key={r}>
              {table.header.map((_, c) => (
                <td key={c}>{row[c] ?? ''}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      {table.truncated ? (
        <div className="cube-Muted">
          {trans.__('First %1 rows', table.rows.length)}
        </div>
      ) : null}
    </div>
  );
}

/** What a text result renders as, once fetched. */
type Rendered =
  | { type: 'table'; table: ICsvTable }
  | { type: 'json'; metrics: IMetric[]; chart: IChart | null }
  | { type: 'none' };

export function renderText(file: ResultFile, text: string): Rendered {
  if (file.kind === 'table') {
    const tsv = file.name.toLowerCase().endsWith('.tsv');
    const table = parseCsv(text, CSV_ROWS, tsv ? '\t' : ',');
    return table.header.length ? { type: 'table', table } : { type: 'none' };
  }
  let value: Json;
  try {
    value = JSON.parse(text);
  } catch {
    return { type: 'none' };
  }
  const chart = chartOf(value);
  // An ECharts option's own fields are not metrics; lists are charted, not listed.
  const metrics = file.kind === 'echarts' ? [] : metricsOf(value);
  return metrics.length || chart
    ? { type: 'json', metrics, chart }
    : { type: 'none' };
}

function TextResult(props: {
  runId: string;
  nodeId: string;
  file: ResultFile;
  trans: TranslationBundle;
}): JSX.Element | null {
  const { runId, nodeId, file, trans } = props;
  const [rendered, setRendered] = React.useState<Rendered | null>(null);
  const [error, setError] = React.useState('');
  React.useEffect(() => {
    let stopped = false;
    resultText(runId, nodeId, file.path, MAX_RENDER_BYTES)
      .then(text => !stopped && setRendered(renderText(file, text)))
      .catch(err => !stopped && setError(describeError(err).error));
    return () => {
      stopped = true;
    };
  }, [runId, nodeId, file.path, file.size_bytes]);
  if (error) {
    return <span className="cube-Field-error">{error}</span>;
  }
  if (!rendered || rendered.type === 'none') {
    return null;
  }
  if (rendered.type === 'table') {
    return <CsvTable table={rendered.table} trans={trans} />;
  }
  return (
    <>
      {rendered.chart ? (
        <SvgChart chart={rendered.chart} title={file.name} />
      ) : null}
      {rendered.metrics.length ? (
        <table className="cube-Metrics">
          <tbody>
            {rendered.metrics.map(m => (
              <tr key={m.name}>
                <th>{m.name}</th>
                <td>{m.value}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </>
  );
}

const TEXT_KINDS = ['table', 'json', 'echarts'];

/** A node's result files, each rendered by kind (refetched when the node ends). */
export function NodeResults(props: {
  runId: string;
  nodeId: string;
  finished: boolean;
  trans: TranslationBundle;
}): JSX.Element | null {
  const { runId, nodeId, trans } = props;
  const [results, setResults] = React.useState<ResultFile[]>([]);
  React.useEffect(() => {
    let stopped = false;
    nodeResults(runId, nodeId)
      .then(r => !stopped && setResults(r.results))
      .catch(() => !stopped && setResults([]));
    return () => {
      stopped = true;
    };
  }, [runId, nodeId, props.finished]);
  if (!results.length) {
    return null;
  }
  return (
    <div className="cube-NodeResults" aria-label={trans.__('Results')}>
      <div className="cube-NodeLog-head">{trans.__('Results')}</div>
      {results.map(r => {
        const url = resultUrl(runId, nodeId, r.path);
        return (
          <div
            className="cube-NodeResults-item"
            key={r.path}
            data-kind={r.kind}
          >
            <a
              className="cube-NodeResults-name"
              href={url}
              target="_blank"
              rel="noopener noreferrer"
              title={trans.__('Open %1 in a new tab', r.name)}
            >
              {r.name}
            </a>
            {r.kind === 'image' ? (
              <img src={url} alt={r.name} className="cube-NodeResults-image" />
            ) : null}
            {TEXT_KINDS.includes(r.kind) && r.size_bytes <= MAX_RENDER_BYTES ? (
              <TextResult
                runId={runId}
                nodeId={nodeId}
                file={r}
                trans={trans}
              />
            ) : null}
          </div>
        );
      })}
    </div>
  );
}
