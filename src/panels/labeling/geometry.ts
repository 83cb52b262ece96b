/**
 * Box geometry and the zoom / pan view of the annotator. Boxes live in image
 * pixels (origin top-left); the view maps them to the viewport:
 * screen = image * scale + (tx, ty).
 */

export interface Point {
  x: number;
  y: number;
}

export interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface Size {
  width: number;
  height: number;
}

/** Zoom and pan: a point p of the image is shown at p * scale + t. */
export interface View {
  scale: number;
  tx: number;
  ty: number;
}

export type Handle = 'n' | 's' | 'e' | 'w' | 'ne' | 'nw' | 'se' | 'sw';

export const HANDLES: Handle[] = ['nw', 'n', 'ne', 'e', 'se', 's', 'sw', 'w'];

/** Zoom limits relative to the image's own pixels. */
export const MIN_SCALE = 0.02;
export const MAX_SCALE = 40;

/** Smallest box kept after drawing, in image pixels. */
export const MIN_BOX = 1;

function clamp(value: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, value));
}

/** The box spanned by two corners, whichever way the mouse was dragged. */
export function normalizeRect(a: Point, b: Point): Rect {
  return {
    x: Math.min(a.x, b.x),
    y: Math.min(a.y, b.y),
    w: Math.abs(b.x - a.x),
    h: Math.abs(b.y - a.y)
  };
}

/** Cut a box to the image (what sticks out is dropped). */
export function clampRect(rect: Rect, size: Size): Rect {
  const x0 = clamp(rect.x, 0, size.width);
  const y0 = clamp(rect.y, 0, size.height);
  const x1 = clamp(rect.x + rect.w, 0, size.width);
  const y1 = clamp(rect.y + rect.h, 0, size.height);
  return { x: x0, y: y0, w: Math.max(0, x1 - x0), h: Math.max(0, y1 - y0) };
}

/**
 * Snap a box to whole pixels inside the image, at least MIN_BOX wide and
 * high; null when the box is empty (a click, or all outside the image).
 */
export function finishRect(rect: Rect, size: Size): Rect | null {
  const c = clampRect(rect, size);
  let x0 = Math.round(c.x);
  let y0 = Math.round(c.y);
  let x1 = Math.round(c.x + c.w);
  let y1 = Math.round(c.y + c.h);
  if (x1 - x0 < MIN_BOX || y1 - y0 < MIN_BOX) {
    return null;
  }
  x0 = clamp(x0, 0, size.width - MIN_BOX);
  y0 = clamp(y0, 0, size.height - MIN_BOX);
  x1 = clamp(x1, x0 + MIN_BOX, size.width);
  y1 = clamp(y1, y0 + MIN_BOX, size.height);
  return { x: x0, y: y0, w: x1 - x0, h: y1 - y0 };
}

/** Move a box by (dx, dy) without leaving the image (it stops at the edge). */
export function moveRect(rect: Rect, dx: number, dy: number, size: Size): Rect {
  return {
    x: clamp(rect.x + dx, 0, Math.max(0, size.width - rect.w)),
    y: clamp(rect.y + dy, 0, Math.max(0, size.height - rect.h)),
    w: rect.w,
    h: rect.h
  };
}

/**
 * Resize the box `start` by dragging `handle` to `to` (image pixels). The
 * opposite edges stay where they were; dragging past them flips the box.
 */
export function resizeRect(
  start: Rect,
  handle: Handle,
  to: Point,
  size: Size
): Rect {
  const p = { x: clamp(to.x, 0, size.width), y: clamp(to.y, 0, size.height) };
  let x0 = start.x;
  let y0 = start.y;
  let x1 = start.x + start.w;
  let y1 = start.y + start.h;
  if (handle.includes('w')) {
    x0 = p.x;
  }
  if (handle.includes('e')) {
    x1 = p.x;
  }
  if (handle.includes('n')) {
    y0 = p.y;
  }
  if (handle.includes('s')) {
    y1 = p.y;
  }
  return normalizeRect({ x: x0, y: y0 }, { x: x1, y: y1 });
}

/** Where each resize handle of a box sits (image pixels). */
export function handlePoints(rect: Rect): { handle: Handle; at: Point }[] {
  const cx = rect.x + rect.w / 2;
  const cy = rect.y + rect.h / 2;
  const r = rect.x + rect.w;
  const b = rect.y + rect.h;
  const at: Record<Handle, Point> = {
    nw: { x: rect.x, y: rect.y },
    n: { x: cx, y: rect.y },
    ne: { x: r, y: rect.y },
    e: { x: r, y: cy },
    se: { x: r, y: b },
    s: { x: cx, y: b },
    sw: { x: rect.x, y: b },
    w: { x: rect.x, y: cy }
  };
  return HANDLES.map(handle => ({ handle, at: at[handle] }));
}

/** The handle under `p` within `tolerance` image pixels, if any. */
export function hitHandle(
  rect: Rect,
  p: Point,
  tolerance: number
): Handle | null {
  for (const { handle, at } of handlePoints(rect)) {
    if (
      Math.abs(at.x - p.x) <= tolerance &&
      Math.abs(at.y - p.y) <= tolerance
    ) {
      return handle;
    }
  }
  return null;
}

/** True when `p` lies inside the box (edges included). */
export function containsPoint(rect: Rect, p: Point): boolean {
  return (
    p.x >= rect.x &&
    p.x <= rect.x + rect.w &&
    p.y >= rect.y &&
    p.y <= rect.y + rect.h
  );
}

/** The index of the top-most (last drawn, then smallest) box under `p`, or -1. */
export function hitBox(rects: Rect[], p: Point): number {
  let best = -1;
  for (let i = rects.length - 1; i >= 0; i--) {
    if (containsPoint(rects[i], p)) {
      if (best < 0 || rects[i].w * rects[i].h < rects[best].w * rects[best].h) {
        best = i;
      }
    }
  }
  return best;
}

/** The CSS cursor for a handle. */
export function handleCursor(handle: Handle): string {
  return `${handle}-resize`;
}

/* ------------------------------------------------------------------------ */
/* View: zoom and pan                                                        */
/* ------------------------------------------------------------------------ */

/** Show the whole image centred in the viewport, with a margin. */
export function fitView(image: Size, viewport: Size, margin = 16): View {
  if (image.width <= 0 || image.height <= 0) {
    return { scale: 1, tx: 0, ty: 0 };
  }
  const room = {
    width: Math.max(1, viewport.width - 2 * margin),
    height: Math.max(1, viewport.height - 2 * margin)
  };
  const scale = clamp(
    Math.min(room.width / image.width, room.height / image.height),
    MIN_SCALE,
    MAX_SCALE
  );
  return {
    scale,
    tx: (viewport.width - image.width * scale) / 2,
    ty: (viewport.height - image.height * scale) / 2
  };
}

/** Viewport pixels (relative to the viewport's top-left) to image pixels. */
export function toImage(view: View, p: Point): Point {
  return { x: (p.x - view.tx) / view.scale, y: (p.y - view.ty) / view.scale };
}

/** Image pixels to viewport pixels. */
export function toViewport(view: View, p: Point): Point {
  return { x: p.x * view.scale + view.tx, y: p.y * view.scale + view.ty };
}

/**
 * Zoom by `factor` keeping the image point under `at` (viewport pixels)
 * where it is, the way maps zoom under the mouse.
 */
export function zoomAt(view: View, factor: number, at: Point): View {
  const scale = clamp(view.scale * factor, MIN_SCALE, MAX_SCALE);
  const k = scale / view.scale;
  return {
    scale,
    tx: at.x - (at.x - view.tx) * k,
    ty: at.y - (at.y - view.ty) * k
  };
}

/** The zoom factor of one wheel event: smooth for trackpads, ~10% a notch. */
export function wheelFactor(deltaY: number, deltaMode = 0): number {
  // deltaMode 1 = lines, 2 = pages: bring both to pixels first.
  const pixels =
    deltaMode === 1 ? deltaY * 16 : deltaMode === 2 ? deltaY * 400 : deltaY;
  return Math.exp(-clamp(pixels, -300, 300) * 0.001);
}

export function panBy(view: View, dx: number, dy: number): View {
  return { scale: view.scale, tx: view.tx + dx, ty: view.ty + dy };
}
