/**
 * The resource strip: small live charts of an object's CPU, memory and (when
 * it uses any) GPU, polled from its resources endpoint while it runs. No GPU:
 * no GPU charts, no error.
 */
import * as React from 'react';

import { describeError, ResourceSeries } from '../../api';
import { formatBytes } from '../../format';
import { ITrans } from '../../validate';
import { Column, formatPercent, seriesColumns, sparkPath } from './logic';

const WIDTH = 160;
const HEIGHT = 36;
/** How often a running object's series is read. */
export const STRIP_INTERVAL_MS = 2000;

function Spark(props: {
  name: string;
  label: string;
  value: string;
  column: Column;
  floor?: number;
}): JSX.Element {
  const path = sparkPath(props.column, WIDTH, HEIGHT, props.floor ?? 0);
  return (
    <figure className="cube-RSpark" data-figure={props.name}>
      <figcaption>
        <span className="cube-RSpark-label">{props.label}</span>
        <span className="cube-RSpark-value">{props.value}</span>
      </figcaption>
      <svg
        viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
        preserveAspectRatio="none"
        role="img"
        aria-label={`${props.label}: ${props.value}`}
        data-points={props.column.length}
      >
        {path ? (
          <path className="cube-RSpark-line" d={path} fill="none" />
        ) : null}
      </svg>
    </figure>
  );
}

/** The charts of one series. */
export function ResourceCharts(props: {
  series: ResourceSeries | null;
  trans: ITrans;
}): JSX.Element {
  const { series, trans } = props;
  const cols = seriesColumns(series);
  const latest = series?.latest ?? null;
  const gpuMemory = latest?.gpus?.reduce(
    (n, g) => n + (g.memory_bytes ?? 0),
    0
  );
  const gpuUtil = latest?.gpus?.length
    ? latest.gpus.reduce((n, g) => n + (g.util_percent ?? 0), 0)
    : null;
  const last = (c: Column) => (c.length ? c[c.length - 1][1] : null);
  return (
    <div className="cube-RCharts">
      <Spark
        name="cpu"
        label={trans.__('CPU')}
        value={formatPercent(latest?.cpu_percent ?? last(cols.cpu))}
        column={cols.cpu}
        floor={100}
      />
      <Spark
        name="memory"
        label={trans.__('Memory')}
        value={formatBytes(latest?.rss_bytes ?? last(cols.rss))}
        column={cols.rss}
      />
      {cols.hasGpu ? (
        <>
          <Spark
            name="gpu-util"
            label={trans.__('GPU')}
            value={formatPercent(gpuUtil ?? last(cols.gpuUtil))}
            column={cols.gpuUtil}
            floor={100}
          />
          <Spark
            name="gpu-memory"
            label={trans.__('GPU memory')}
            value={formatBytes(gpuMemory ?? last(cols.gpuMemory))}
            column={cols.gpuMemory}
          />
        </>
      ) : null}
    </div>
  );
}

/**
 * Reads `load()` now and, while `active`, every `STRIP_INTERVAL_MS`; shows
 * the charts (or a short note while there is no sample yet).
 */
export function ResourceStrip(props: {
  /** What identifies the object: a change starts over. */
  objectKey: string;
  load: () => Promise<ResourceSeries | null>;
  active: boolean;
  trans: ITrans;
}): JSX.Element {
  const { trans } = props;
  const [series, setSeries] = React.useState<ResourceSeries | null>(null);
  const [error, setError] = React.useState<string>('');
  const load = React.useRef(props.load);
  load.current = props.load;
  React.useEffect(() => {
    let stopped = false;
    let timer = 0;
    const tick = async () => {
      try {
        const found = await load.current();
        if (!stopped) {
          setSeries(found);
          setError('');
        }
      } catch (err) {
        if (!stopped) {
          setError(describeError(err).error);
        }
      }
      if (!stopped && props.active) {
        timer = window.setTimeout(() => void tick(), STRIP_INTERVAL_MS);
      }
    };
    void tick();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
    };
  }, [props.objectKey, props.active]);
  const hasPoints = !!series && series.points.length > 0;
  return (
    <section
      className="cube-RStrip"
      data-running={series?.running ? 'true' : 'false'}
      aria-label={trans.__('Resources')}
    >
      <h3>{trans.__('Resources')}</h3>
      {hasPoints ? (
        <ResourceCharts series={series} trans={trans} />
      ) : (
        <p className="cube-TMuted">
          {props.active
            ? trans.__('Waiting for the first sample…')
            : trans.__('No resource samples were kept for this one.')}
        </p>
      )}
      {error ? <p className="cube-RStrip-error">{error}</p> : null}
    </section>
  );
}
