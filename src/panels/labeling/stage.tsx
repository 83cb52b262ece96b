/**
 * What the annotator draws: the image with its boxes (an SVG over the
 * zoomed / panned <img>, boxes kept in image pixels and drawn in screen
 * pixels so lines stay thin at any zoom) and the text with its entity spans.
 * Stateless: the annotator owns the state and the pointer logic.
 */
import * as React from 'react';

import type { BoxAnnotation, LabelSpec, SpanAnnotation } from '../../api';
import { handleCursor, handlePoints, Rect, toViewport, View } from './geometry';
import { segmentText } from './result';

/** Side of a resize handle, in screen pixels. */
export const HANDLE_PX = 8;

export interface IImageStageProps {
  taskId: number;
  src: string;
  /** The image's size in pixels (null until known). */
  size: { width: number; height: number } | null;
  view: View;
  boxes: BoxAnnotation[];
  suggestions: BoxAnnotation[];
  /** The box being drawn (image pixels). */
  ghost: Rect | null;
  ghostLabel: string;
  selected: number | null;
  colors: Map<string, string>;
  editable: boolean;
  /** Draw mode: crosshair, a drag draws a box. */
  boxMode: boolean;
  panning: boolean;
  showBoxes: boolean;
  label: string;
  viewportRef: (el: HTMLDivElement | null) => void;
  imageRef: (el: HTMLImageElement | null) => void;
  onImageLoad: (el: HTMLImageElement) => void;
  onPointerDown: (e: React.PointerEvent<SVGSVGElement>) => void;
  onPointerMove: (e: React.PointerEvent<SVGSVGElement>) => void;
  onPointerUp: (e: React.PointerEvent<SVGSVGElement>) => void;
}

function screenRect(view: View, r: Rect) {
  const a = toViewport(view, { x: r.x, y: r.y });
  return { x: a.x, y: a.y, w: r.w * view.scale, h: r.h * view.scale };
}

function BoxShape(props: {
  box: BoxAnnotation;
  index: number;
  view: View;
  color: string;
  kind: 'box' | 'suggestion';
  selected: boolean;
  editable: boolean;
}): JSX.Element {
  const { box, view, color } = props;
  const r = screenRect(view, box);
  const suggestion = props.kind === 'suggestion';
  const tag =
    suggestion && typeof box.score === 'number'
      ? `${box.label} ${Math.round(box.score * 100)}%`
      : box.label;
  const data = suggestion
    ? { 'data-suggestion': props.index }
    : { 'data-box': props.index };
  return (
    <g
      className={`cube-LBox${suggestion ? ' cube-mod-suggestion' : ''}${props.selected ? ' cube-mod-selected' : ''}`}
      data-label={box.label}
      data-x={box.x}
      data-y={box.y}
      data-w={box.w}
      data-h={box.h}
      {...data}
    >
      <rect
        className="cube-LBox-rect"
        x={r.x}
        y={r.y}
        width={Math.max(1, r.w)}
        height={Math.max(1, r.h)}
        style={{ stroke: color, fill: color }}
      />
      <g
        className="cube-LBox-tag"
        transform={`translate(${r.x} ${Math.max(0, r.y - 16)})`}
      >
        <rect
          width={Math.max(24, tag.length * 6.6 + 8)}
          height={15}
          rx={2}
          style={{
            fill: suggestion ? 'var(--jp-layout-color1)' : color,
            stroke: color
          }}
        />
        <text x={4} y={11} style={suggestion ? { fill: color } : undefined}>
          {suggestion ? '? ' : ''}
          {tag}
        </text>
      </g>
      {props.selected && props.editable
        ? handlePoints(box).map(({ handle, at }) => {
            const p = toViewport(view, at);
            return (
              <rect
                key={handle}
                className="cube-LHandle"
                data-handle={handle}
                x={p.x - HANDLE_PX / 2}
                y={p.y - HANDLE_PX / 2}
                width={HANDLE_PX}
                height={HANDLE_PX}
                style={{ cursor: handleCursor(handle), stroke: color }}
              />
            );
          })
        : null}
    </g>
  );
}

export function ImageStage(props: IImageStageProps): JSX.Element {
  const { view, size } = props;
  const cursor = props.panning
    ? 'grabbing'
    : props.boxMode && props.editable
      ? 'crosshair'
      : 'grab';
  return (
    <div className="cube-LViewport" ref={props.viewportRef}>
      <img
        key={props.taskId}
        ref={props.imageRef}
        className="cube-LImage"
        src={props.src}
        alt={props.label}
        draggable={false}
        data-task={props.taskId}
        onLoad={e => props.onImageLoad(e.currentTarget)}
        style={{
          width: size ? `${size.width}px` : undefined,
          height: size ? `${size.height}px` : undefined,
          transform: `translate(${view.tx}px, ${view.ty}px) scale(${view.scale})`,
          imageRendering: view.scale >= 3 ? 'pixelated' : undefined,
          visibility: size ? 'visible' : 'hidden'
        }}
      />
      <svg
        className="cube-LOverlay"
        style={{ cursor }}
        onPointerDown={props.onPointerDown}
        onPointerMove={props.onPointerMove}
        onPointerUp={props.onPointerUp}
        onPointerCancel={props.onPointerUp}
        onContextMenu={e => e.preventDefault()}
        aria-label={props.label}
      >
        {size ? (
          <rect
            className="cube-LFrame"
            {...(() => {
              const r = screenRect(view, {
                x: 0,
                y: 0,
                w: size.width,
                h: size.height
              });
              return { x: r.x, y: r.y, width: r.w, height: r.h };
            })()}
          />
        ) : null}
        {props.showBoxes
          ? props.suggestions.map((box, i) => (
              <BoxShape
                key={`s${i}`}
                box={box}
                index={i}
                view={view}
                color={props.colors.get(box.label) ?? 'var(--jp-brand-color1)'}
                kind="suggestion"
                selected={false}
                editable={props.editable}
              />
            ))
          : null}
        {props.boxes.map((box, i) => (
          <BoxShape
            key={`b${i}`}
            box={box}
            index={i}
            view={view}
            color={props.colors.get(box.label) ?? 'var(--jp-brand-color1)'}
            kind="box"
            selected={props.selected === i}
            editable={props.editable}
          />
        ))}
        {props.ghost
          ? (() => {
              const r = screenRect(view, props.ghost);
              const color =
                props.colors.get(props.ghostLabel) ?? 'var(--jp-brand-color1)';
              return (
                <rect
                  className="cube-LGhost"
                  x={r.x}
                  y={r.y}
                  width={r.w}
                  height={r.h}
                  style={{ stroke: color, fill: color }}
                />
              );
            })()
          : null}
      </svg>
    </div>
  );
}

export interface ITextStageProps {
  text: string;
  spans: SpanAnnotation[];
  suggestions: SpanAnnotation[];
  selected: number | null;
  colors: Map<string, string>;
  /** Class tasks show the text only; NER tasks show and select spans. */
  spansShown: boolean;
  textRef: (el: HTMLDivElement | null) => void;
  onMouseUp: () => void;
  onSpanClick: (index: number) => void;
  onSuggestionClick: (index: number) => void;
}

export function TextStage(props: ITextStageProps): JSX.Element {
  const segments = props.spansShown
    ? segmentText(props.text, props.spans, props.suggestions)
    : [
        {
          start: 0,
          end: props.text.length,
          text: props.text,
          span: null,
          suggestion: null
        }
      ];
  return (
    <div className="cube-LTextWrap">
      <div
        className="cube-LText"
        ref={props.textRef}
        onMouseUp={props.onMouseUp}
      >
        {segments.map(seg => {
          if (seg.span !== null) {
            const span = props.spans[seg.span];
            const color =
              props.colors.get(span.label) ?? 'var(--jp-brand-color1)';
            const index = seg.span;
            return (
              <mark
                key={seg.start}
                className={`cube-LSpan${props.selected === index ? ' cube-mod-selected' : ''}`}
                data-start={seg.start}
                data-span={index}
                data-label={span.label}
                style={{
                  borderColor: color,
                  background: `color-mix(in srgb, ${color} 22%, transparent)`
                }}
                onMouseDown={e => {
                  // A click on a span selects it instead of starting a text selection.
                  if (e.detail === 1 && !e.shiftKey) {
                    e.preventDefault();
                    props.onSpanClick(index);
                  }
                }}
              >
                {seg.text}
              </mark>
            );
          }
          if (seg.suggestion !== null) {
            const s = props.suggestions[seg.suggestion];
            const color = props.colors.get(s.label) ?? 'var(--jp-brand-color1)';
            const index = seg.suggestion;
            return (
              <mark
                key={seg.start}
                className="cube-LSpan cube-mod-suggestion"
                data-start={seg.start}
                data-suggestion={index}
                data-label={`${s.label}?`}
                style={{ borderColor: color }}
                title={
                  typeof s.score === 'number'
                    ? `${s.label} ${Math.round(s.score * 100)}%`
                    : s.label
                }
                onMouseDown={e => {
                  e.preventDefault();
                  props.onSuggestionClick(index);
                }}
              >
                {seg.text}
              </mark>
            );
          }
          return (
            <span key={seg.start} data-start={seg.start}>
              {seg.text}
            </span>
          );
        })}
      </div>
    </div>
  );
}

/** The colour of each label. */
export function labelColors(labels: LabelSpec[]): Map<string, string> {
  return new Map(labels.map(l => [l.name, l.color]));
}

/**
 * The character offset in the stage's text of a DOM selection end point:
 * segments carry `data-start`, their only child is the text.
 */
export function textOffset(
  root: HTMLElement,
  node: Node,
  offset: number
): number | null {
  if (!root.contains(node)) {
    return null;
  }
  if (node === root) {
    // Between segments: the start of the segment at `offset`, else the end.
    const child = root.childNodes[offset] as HTMLElement | undefined;
    if (child && child.dataset && child.dataset.start !== undefined) {
      return Number(child.dataset.start);
    }
    return (root.textContent ?? '').length;
  }
  const el = (
    node.nodeType === Node.TEXT_NODE ? node.parentElement : (node as Element)
  )?.closest('[data-start]') as HTMLElement | null;
  if (!el || !root.contains(el)) {
    return null;
  }
  const start = Number(el.dataset.start);
  if (node.nodeType === Node.TEXT_NODE) {
    return start + offset;
  }
  return offset === 0 ? start : start + (el.textContent ?? '').length;
}
