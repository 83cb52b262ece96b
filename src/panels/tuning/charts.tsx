/**
 * The experiment view's two SVG charts, dependency-free and themed by
 * JupyterLab CSS variables: every trial's intermediate results on shared
 * axes, and a parallel-coordinates plot of parameters against the metric.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { TuningTrial } from '../../api';
import { formatNumber } from '../training/logic';
import {
  curvesGeometry,
  IBox,
  parallelBox,
  parallelGeometry,
  qualityColor,
  seriesColor,
  tickLabel
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
  trans: TranslationBundle;
}): JSX.Element {
  const { trials, trans } = props;
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
          {trans.__('%1 · intermediate results', props.metric)}
        </span>
        <span className="cube-TChart-muted">
          {g.lines.length} / {trials.length}
        </span>
      </figcaption>
      <svg
        className="cube-TChart-svg"
        viewBox={`0 0 ${CURVES_BOX.width} ${CURVES_BOX.height}`}
        role="img"
        aria-label={trans.__(
          'intermediate results of %1 trials',
          g.lines.length
        )}
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
  trans: TranslationBundle;
}): JSX.Element {
  const { trans } = props;
  const base: IBox = {
    width: Math.max(440, 130 * (props.params.length + 1)),
    height: 230,
    left: 60,
    right: 70,
    top: 24,
    bottom: 16
  };
  const axisName = (name: string) =>
    name === '__metric__' ? props.metric : name;
  const first = parallelGeometry(
    props.trials,
    props.params,
    props.searchSpace,
    props.mode,
    base
  );
  // Room for every label: wider margins and spacing where they need it.
  const box = parallelBox(
    first.axes.map(a => ({ name: axisName(a.name), ticks: a.ticks })),
    base
  );
  const g =
    box.width === base.width &&
    box.left === base.left &&
    box.right === base.right
      ? first
      : parallelGeometry(
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
        <span className="cube-TChart-name">
          {trans.__('parameters → %1', props.metric)}
        </span>
        <span className="cube-TuLegend">
          <span>
            {props.mode === 'maximize' ? trans.__('low') : trans.__('high')}
          </span>
          <span className="cube-TuLegend-ramp" />
          <span>
            {props.mode === 'maximize' ? trans.__('high') : trans.__('low')}
          </span>
        </span>
      </figcaption>
      <svg
        className="cube-TChart-svg"
        viewBox={`0 0 ${box.width} ${box.height}`}
        // A plot widened for long labels scrolls rather than shrinks them.
        style={
          box.width > base.width
            ? { minWidth: `${Math.round(box.width * 0.8)}px` }
            : undefined
        }
        role="img"
        aria-label={trans.__(
          'parallel coordinates of %1 finished trials',
          g.lines.length
        )}
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
              {axisName(a.name)}
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
                {tickLabel(t.label) !== t.label ? (
                  <title>{t.label}</title>
                ) : null}
                {tickLabel(t.label)}
              </text>
            ))}
          </g>
        ))}
      </svg>
    </figure>
  );
}
