/**
 * The experiment view's two SVG charts, dependency-free and themed by
 * JupyterLab CSS variables: every trial's intermediate results on shared
 * axes, and a parallel-coordinates plot of parameters against the metric.
 */
import * as React from 'react';

import type { TuningTrial } from '../../api';
import { formatNumber } from '../training/logic';
import {
  curvesGeometry,
  IBox,
  parallelGeometry,
  qualityColor,
  seriesColor
} from './logic';

const CURVES_BOX: IBox = {
  width: 440,
  height: 200,
  left: 46,
  right: 30,
  top: 10,
  bottom: 24
};

export function CurvesChart(props: {
  trials: TuningTrial[];
  bestId: string | null;
  selected: string | null;
  metric: string;
  onPick: (trial: TuningTrial) => void;
}): JSX.Element {
  const { trials } = props;
  const g = curvesGeometry(
    trials.map(t => ({ id: t.id, values: t.intermediate })),
    CURVES_BOX
  );
  const color = new Map(trials.map(t => [t.id, seriesColor(t.seq)]));
  const bySeq = new Map(trials.map(t => [t.id, t]));
  const bottom = CURVES_BOX.height - CURVES_BOX.bottom;
  const emphasised = props.selected ?? props.bestId;
  // Draw the emphasised line last so it stays on top.
  const lines = [...g.lines].sort(
    (a, b) => Number(a.id === emphasised) - Number(b.id === emphasised)
  );
  return (
    <figure className="cube-TuChart cube-TuCurves">
      <figcaption className="cube-TChart-title">
        <span className="cube-TChart-name">
          {props.metric} · intermediate results
        </span>
        <span className="cube-TChart-muted">
          {g.lines.length} / {trials.length}
        </span>
      </figcaption>
      <svg
        className="cube-TChart-svg"
        viewBox={`0 0 ${CURVES_BOX.width} ${CURVES_BOX.height}`}
        role="img"
        aria-label={`intermediate results of ${g.lines.length} trials`}
      >
        {g.yTicks.map(t => (
          <g key={`y${t.value}`}>
            <line
              className="cube-TChart-grid"
              x1={CURVES_BOX.left}
              x2={CURVES_BOX.width - CURVES_BOX.right}
              y1={t.pos}
              y2={t.pos}
            />
            <text
              className="cube-TChart-tick"
              x={CURVES_BOX.left - 4}
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
          x1={CURVES_BOX.left}
          x2={CURVES_BOX.width - CURVES_BOX.right}
          y1={bottom}
          y2={bottom}
        />
        {g.xTicks.map(t => (
          <text
            key={`x${t.value}`}
            className="cube-TChart-tick"
            x={t.pos}
            y={bottom + 14}
            textAnchor="middle"
          >
            {t.value}
          </text>
        ))}
        {lines.map(l => {
          const strong = l.id === emphasised;
          const trial = bySeq.get(l.id)!;
          return (
            <g
              key={l.id}
              className={`cube-TuCurve${strong ? ' cube-mod-strong' : ''}`}
              data-trial={l.id}
              onClick={() => props.onPick(trial)}
            >
              <title>{`#${trial.seq}`}</title>
              <path d={l.path} stroke={color.get(l.id)} />
              <circle
                cx={l.last.x}
                cy={l.last.y}
                r={strong ? 3.5 : 2.5}
                fill={color.get(l.id)}
              />
              {strong ? (
                <text
                  className="cube-TuCurve-label"
                  x={l.last.x + 5}
                  y={l.last.y}
                  dominantBaseline="middle"
                >
                  #{trial.seq}
                </text>
              ) : null}
            </g>
          );
        })}
      </svg>
    </figure>
  );
}

export function ParallelCoordinates(props: {
  trials: TuningTrial[];
  params: string[];
  searchSpace: Record<string, unknown>;
  mode: 'maximize' | 'minimize';
  metric: string;
  selected: string | null;
  onPick: (trial: TuningTrial) => void;
}): JSX.Element {
  const width = Math.max(440, 130 * (props.params.length + 1));
  const box: IBox = {
    width,
    height: 230,
    left: 60,
    right: 70,
    top: 24,
    bottom: 16
  };
  const g = parallelGeometry(
    props.trials,
    props.params,
    props.searchSpace,
    props.mode,
    box
  );
  const byId = new Map(props.trials.map(t => [t.id, t]));
  return (
    <figure className="cube-TuChart cube-TuParallel">
      <figcaption className="cube-TChart-title">
        <span className="cube-TChart-name">parameters → {props.metric}</span>
        <span className="cube-TuLegend">
          <span>{props.mode === 'maximize' ? 'low' : 'high'}</span>
          <span className="cube-TuLegend-ramp" />
          <span>{props.mode === 'maximize' ? 'high' : 'low'}</span>
        </span>
      </figcaption>
      <svg
        className="cube-TChart-svg"
        viewBox={`0 0 ${box.width} ${box.height}`}
        role="img"
        aria-label={`parallel coordinates of ${g.lines.length} finished trials`}
      >
        {g.lines.map(l => {
          const strong = l.best || l.id === props.selected;
          return (
            <polyline
              key={l.id}
              data-trial={l.id}
              className={`cube-TuPcLine${l.best ? ' cube-mod-best' : ''}${l.id === props.selected ? ' cube-mod-selected' : ''}`}
              points={l.points}
              stroke={qualityColor(l.quality)}
              strokeWidth={strong ? 3 : 1.5}
              onClick={() => props.onPick(byId.get(l.id)!)}
            >
              <title>{`#${byId.get(l.id)?.seq}: ${formatNumber(byId.get(l.id)?.final ?? NaN)}`}</title>
            </polyline>
          );
        })}
        {g.axes.map(a => (
          <g key={a.name} className="cube-TuAxis" data-axis={a.name}>
            <line
              className="cube-TChart-axis"
              x1={a.x}
              x2={a.x}
              y1={box.top}
              y2={box.height - box.bottom}
            />
            <text
              className="cube-TuAxis-name"
              x={a.x}
              y={box.top - 10}
              textAnchor="middle"
            >
              {a.name === '__metric__' ? props.metric : a.name}
            </text>
            {a.ticks.map(t => (
              <text
                key={`${t.label}@${t.y}`}
                className="cube-TChart-tick cube-TuAxis-tick"
                x={a.name === '__metric__' ? a.x + 4 : a.x - 4}
                y={t.y}
                textAnchor={a.name === '__metric__' ? 'start' : 'end'}
                dominantBaseline="middle"
              >
                {t.label.length > 10 ? `${t.label.slice(0, 9)}…` : t.label}
              </text>
            ))}
          </g>
        ))}
      </svg>
    </figure>
  );
}
