/**
 * A small dependency-free SVG line chart for one metric series. It scales
 * with its container (fixed aspect ratio) and takes its colours from
 * JupyterLab CSS variables, so it follows the theme.
 */
import * as React from 'react';

import { chartGeometry, formatNumber, IChartBox } from './logic';

const BOX: IChartBox = {
  width: 320,
  height: 150,
  left: 42,
  right: 12,
  top: 10,
  bottom: 22
};

export function LineChart(props: {
  name: string;
  series: [number, number][];
  /** Label of the x axis (e.g. "step"). */
  xLabel: string;
}): JSX.Element {
  const g = chartGeometry(props.series, BOX);
  const bottom = BOX.height - BOX.bottom;
  return (
    <figure className="cube-TChart" data-metric={props.name}>
      <figcaption className="cube-TChart-title">
        <span className="cube-TChart-name">{props.name}</span>
        {g.last ? (
          <span className="cube-TChart-last">
            {formatNumber(g.last.value)}
            <span className="cube-TChart-muted">
              {' '}
              @ {props.xLabel} {formatNumber(g.last.step)}
            </span>
          </span>
        ) : null}
      </figcaption>
      <svg
        className="cube-TChart-svg"
        viewBox={`0 0 ${BOX.width} ${BOX.height}`}
        role="img"
        aria-label={`${props.name}: ${props.series.length} points`}
      >
        {g.yTicks.map(t => (
          <g key={`y${t.value}`}>
            <line
              className="cube-TChart-grid"
              x1={BOX.left}
              x2={BOX.width - BOX.right}
              y1={t.pos}
              y2={t.pos}
            />
            <text
              className="cube-TChart-tick"
              x={BOX.left - 4}
              y={t.pos}
              textAnchor="end"
              dominantBaseline="middle"
            >
              {formatNumber(t.value)}
            </text>
          </g>
        ))}
        <line
          className="cube-TChart-axis"
          x1={BOX.left}
          x2={BOX.width - BOX.right}
          y1={bottom}
          y2={bottom}
        />
        {g.xTicks.map(t => (
          <text
            key={`x${t.value}`}
            className="cube-TChart-tick"
            x={t.pos}
            y={bottom + 13}
            textAnchor="middle"
          >
            {formatNumber(t.value)}
          </text>
        ))}
        {g.path ? <path className="cube-TChart-line" d={g.path} /> : null}
        {g.dots.map((d, i) => (
          <circle
            key={i}
            className="cube-TChart-dot"
            cx={d.x}
            cy={d.y}
            r={2.5}
          />
        ))}
        {g.last ? (
          <circle
            className="cube-TChart-dot"
            cx={g.last.x}
            cy={g.last.y}
            r={2.5}
          />
        ) : null}
      </svg>
    </figure>
  );
}
