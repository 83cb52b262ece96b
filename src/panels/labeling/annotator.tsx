/**
 * The annotator (main area): one task at a time from the user's queue,
 * keyboard first (1-9 labels, arrows, B box tool, Del, Ctrl-Z, Enter
 * submits, A takes the model's suggestions), zoom and pan on images, boxes
 * drawn / moved / resized in image pixels, entity spans from text
 * selections, autosave of drafts, the next task fetched (and its image
 * loaded) while the current one is shown. In review mode it walks the
 * submitted tasks with accept / reject and a comment.
 */
import { ReactWidget } from '@jupyterlab/apputils';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { Message } from '@lumino/messaging';
import * as React from 'react';

import { ErrorBox } from '../errorbox';
import {
  BoxAnnotation,
  CubeApiError,
  describeError,
  getLabelingProject,
  LabelingProject,
  LabelingTask,
  listLabelingTasks,
  nextLabelingTask,
  reviewLabelingTask,
  saveLabelingTask,
  serverUrl,
  whoami
} from '../../api';
import {
  finishRect,
  fitView,
  hitHandle,
  moveRect,
  normalizeRect,
  panBy,
  Point,
  Rect,
  resizeRect,
  Size,
  toImage,
  View,
  wheelFactor,
  zoomAt,
  Handle
} from './geometry';
import { UndoStack } from './history';
import {
  AnnotatorMode,
  hotkeyMap,
  hotkeyOf,
  keyAction,
  AnnotatorAction
} from './keys';
import { Autosaver, TaskQueue } from './queue';
import {
  acceptBox,
  acceptSuggestions,
  addSpan,
  countLabels,
  Draft,
  draftFromResult,
  emptyDraft,
  isClassType,
  isDraftEmpty,
  isImageType,
  openBoxSuggestions,
  openSpanSuggestions,
  serializeDraft,
  spanFromOffsets,
  suggestedLabels,
  toggleLabel
} from './result';
import { taskTypeLabel } from './logic';
import {
  HANDLE_PX,
  ImageStage,
  labelColors,
  TextStage,
  textOffset
} from './stage';

/** Screen pixels a drag must cover before it draws a box. */
const MIN_DRAW_PX = 3;

type ErrorText = { error: string; detail: string };

type Drag =
  | { kind: 'pan'; last: Point; pointerId: number }
  | { kind: 'draw'; anchor: Point; start: Point; pointerId: number }
  | {
      kind: 'move' | 'resize';
      index: number;
      start: Point;
      rect: Rect;
      handle: Handle | null;
      pushed: boolean;
      pointerId: number;
    };

type Selection = { kind: 'box' | 'span'; index: number } | null;

export class AnnotatorView extends ReactWidget {
  constructor(options: AnnotatorView.IOptions) {
    super();
    this.addClass('cube-LAnnotatorView');
    this.project = options.project;
    this.name = options.name;
    this.mode = options.mode;
    this._trans = options.translator.load('cube_lab');
    this._changed = options.changed ?? (() => undefined);
    this.node.tabIndex = -1;
    this._queue = new TaskQueue(
      { next: after => nextLabelingTask(this.project, this.name, after) },
      task => this._preload(task)
    );
    this._autosave = new Autosaver(async (id, result) => {
      this._saveState = 'saving';
      this.update();
      const saved = await saveLabelingTask(
        this.project,
        this.name,
        id,
        result,
        false
      );
      this._queue.replace(saved);
      if (this._task?.id === id) {
        this._task = saved;
      }
      this._saveState = this._autosave.pending ? 'unsaved' : 'saved';
      this.update();
    });
    this._autosave.onError = err => {
      this._saveState = 'error';
      this._error = describeError(err);
      this.update();
    };
  }

  readonly project: string;
  readonly name: string;
  readonly mode: AnnotatorMode;

  get task(): LabelingTask | null {
    return this._task;
  }

  /** Load the project and the first task again. */
  async refresh(): Promise<void> {
    await this._autosave.flush();
    await this._start();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    void this._autosave.flush();
    this._autosave.dispose();
    this._resize?.disconnect();
    this.node.removeEventListener('keydown', this._onKeyDown);
    this.node.removeEventListener('keyup', this._onKeyUp);
    this.node.removeEventListener('wheel', this._onWheel);
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this.node.addEventListener('keydown', this._onKeyDown);
    this.node.addEventListener('keyup', this._onKeyUp);
    this.node.addEventListener('wheel', this._onWheel, { passive: false });
    if (!this._started) {
      this._started = true;
      void this._start();
    }
  }

  protected onActivateRequest(msg: Message): void {
    super.onActivateRequest(msg);
    this.node.focus({ preventScroll: true });
  }

  /* ---------------------------------------------------------------------- */
  /* Loading and moving through the queue                                    */
  /* ---------------------------------------------------------------------- */

  private async _start(): Promise<void> {
    this._loading = true;
    this._error = null;
    this.update();
    try {
      const [proj, me] = await Promise.all([
        getLabelingProject(this.project, this.name),
        this._me ? Promise.resolve(null) : whoami()
      ]);
      this._proj = proj;
      if (me) {
        this._me = me.user;
      }
      this._keys = hotkeyMap(proj.labels);
      this._colors = labelColors(proj.labels);
      if (
        !this._activeLabel ||
        !proj.labels.some(l => l.name === this._activeLabel)
      ) {
        this._activeLabel = proj.labels[0]?.name ?? '';
      }
      this._boxMode = proj.type === 'image-bbox';
      if (this.mode === 'review') {
        await this._loadReview();
      } else {
        this._show(await this._queue.start());
      }
    } catch (err) {
      this._error = describeError(err);
    } finally {
      this._loading = false;
      this.update();
    }
  }

  private async _loadReview(): Promise<void> {
    const answer = await listLabelingTasks(this.project, this.name, {
      status: 'submitted',
      limit: 500
    });
    // Nobody reviews their own work.
    this._reviewList = answer.tasks.filter(t => t.assignee !== this._me);
    this._reviewPos = 0;
    this._show(this._reviewList[0] ?? null);
  }

  /** Show a task now (it is already fetched). */
  private _show(task: LabelingTask | null): void {
    this._task = task;
    this._draft = draftFromResult(task?.result);
    this._undo.clear();
    this._selection = null;
    this._drag = null;
    this._ghost = null;
    this._comment = '';
    this._rejecting = false;
    this._needsFit = true;
    this._imageSize =
      task?.item.width && task?.item.height
        ? { width: task.item.width, height: task.item.height }
        : null;
    if (task && this._proj) {
      this._autosave.saved(
        task.id,
        serializeDraft(this._proj.type, this._draft, this._imageSize)
      );
    }
    this._saveState = 'saved';
    if (this.mode === 'review') {
      const next = this._reviewList[this._reviewPos + 1];
      if (next) {
        this._preload(next);
      }
    }
    this.update();
  }

  private async _forward(): Promise<void> {
    this._markSwitch();
    void this._autosave.flush();
    if (this.mode === 'review') {
      if (this._reviewPos < this._reviewList.length - 1) {
        this._reviewPos++;
        this._show(this._reviewList[this._reviewPos]);
      } else {
        this._reviewPos = this._reviewList.length;
        this._show(null);
      }
      return;
    }
    try {
      const task = await this._queue.forward();
      this._show(task);
    } catch (err) {
      this._error = describeError(err);
      this.update();
    }
  }

  private _back(): void {
    this._markSwitch();
    void this._autosave.flush();
    if (this.mode === 'review') {
      if (this._reviewPos > 0) {
        this._reviewPos--;
        this._show(this._reviewList[this._reviewPos]);
      }
      return;
    }
    const task = this._queue.back();
    if (task) {
      this._show(task);
    }
  }

  /** Load a task's image in the background so showing it is instant. */
  private _preload(task: LabelingTask): void {
    if (task.item.kind !== 'image') {
      return;
    }
    const url = serverUrl(task.item.content_url);
    if (this._images.has(url)) {
      return;
    }
    const img = new Image();
    img.src = url;
    // Decoded ahead too, not only downloaded.
    img.decode().catch(() => undefined);
    this._images.set(url, img);
    // Keep a handful: enough for back / forward, not the whole dataset.
    if (this._images.size > 12) {
      const first = this._images.keys().next().value;
      if (first !== undefined) {
        this._images.delete(first);
      }
    }
  }

  private _markSwitch(): void {
    this._switchStart = performance.now();
  }

  /** Record how long the switch to this task took (read by the UI test). */
  private _shown(): void {
    if (this._switchStart === null || !this._task) {
      return;
    }
    const start = this._switchStart;
    this._switchStart = null;
    // Until the frame that shows it is painted (a task after the next frame).
    requestAnimationFrame(() =>
      setTimeout(() => {
        this.node.dataset.switchMs = (performance.now() - start).toFixed(1);
      }, 0)
    );
  }

  /* ---------------------------------------------------------------------- */
  /* Editing                                                                 */
  /* ---------------------------------------------------------------------- */

  private get _editable(): boolean {
    const t = this._task;
    return (
      this.mode === 'annotate' &&
      !!t &&
      t.status === 'assigned' &&
      (!this._me || !t.assignee || t.assignee === this._me)
    );
  }

  /** Replace the draft (undoable) and autosave it. */
  private _change(next: Draft, pushUndo = true): void {
    if (!this._editable || next === this._draft) {
      return;
    }
    if (pushUndo) {
      this._undo.push(this._draft);
    }
    this._draft = next;
    this._scheduleSave();
    this.update();
  }

  private _scheduleSave(): void {
    if (!this._task || !this._proj) {
      return;
    }
    this._autosave.schedule(
      this._task.id,
      serializeDraft(this._proj.type, this._draft, this._imageSize)
    );
    if (this._autosave.pending) {
      this._saveState = 'unsaved';
    } else if (this._saveState === 'unsaved') {
      // Changed back to what the server has: nothing to save.
      this._saveState = 'saved';
    }
  }

  private _pickLabel(label: string): void {
    const proj = this._proj;
    if (!proj) {
      return;
    }
    this._activeLabel = label;
    if (isClassType(proj.type)) {
      this._change(toggleLabel(this._draft, label, proj.multi_label));
      return;
    }
    // Text selected: a new span (before relabeling the selected one).
    if (proj.type === 'text-ner' && this._spanFromSelection(label)) {
      return;
    }
    const sel = this._selection;
    if (sel?.kind === 'box' && this._draft.boxes[sel.index]) {
      const boxes = this._draft.boxes.map((b, i) =>
        i === sel.index ? { ...b, label } : b
      );
      this._change({ ...this._draft, boxes });
      return;
    }
    if (sel?.kind === 'span' && this._draft.spans[sel.index]) {
      const spans = this._draft.spans.map((s, i) =>
        i === sel.index ? { ...s, label } : s
      );
      this._change({ ...this._draft, spans });
      return;
    }
    this.update();
  }

  private _deleteSelected(): void {
    const sel = this._selection;
    if (!sel) {
      return;
    }
    if (sel.kind === 'box') {
      this._change({
        ...this._draft,
        boxes: this._draft.boxes.filter((_, i) => i !== sel.index)
      });
    } else {
      this._change({
        ...this._draft,
        spans: this._draft.spans.filter((_, i) => i !== sel.index)
      });
    }
    this._selection = null;
    this.update();
  }

  private _undoRedo(redo: boolean): void {
    if (!this._editable) {
      return;
    }
    const state = redo
      ? this._undo.redo(this._draft)
      : this._undo.undo(this._draft);
    if (state) {
      this._draft = state;
      this._selection = null;
      this._scheduleSave();
      this.update();
    }
  }

  private _acceptAll(): void {
    const proj = this._proj;
    if (!proj || !this._task) {
      return;
    }
    this._change(
      acceptSuggestions(
        proj.type,
        this._draft,
        this._task.prediction,
        proj.multi_label,
        this._imageSize
      )
    );
  }

  private async _submit(): Promise<void> {
    const proj = this._proj;
    const task = this._task;
    if (!proj || !task) {
      return;
    }
    if (!this._editable) {
      // Already handed in: Enter just moves on.
      await this._forward();
      return;
    }
    if (isClassType(proj.type) && isDraftEmpty(proj.type, this._draft)) {
      this._error = {
        error: this._trans.__('Pick a label first'),
        detail: this._trans.__('Press its number key or click it, then Enter.')
      };
      this.update();
      return;
    }
    const result = serializeDraft(proj.type, this._draft, this._imageSize);
    this._autosave.drop(task.id);
    this._error = null;
    const saving = saveLabelingTask(
      this.project,
      this.name,
      task.id,
      result,
      true
    );
    // Shown as submitted at once; the next task does not wait for the save
    // when it is fetched already.
    this._queue.replace({ ...task, status: 'submitted', result });
    const done = saving.then(
      saved => {
        this._queue.replace(saved);
        if (this._task?.id === saved.id) {
          this._task = saved;
          this.update();
        }
        this._submitted++;
        this._changed();
        return true;
      },
      (err: unknown) => {
        this._queue.replace(task);
        this._error = {
          error: this._trans.__('Task %1 was not submitted', task.index + 1),
          detail: describeError(err).detail || describeError(err).error
        };
        if (err instanceof CubeApiError && err.status !== 409) {
          this._failed = task;
        }
        this.update();
        return false;
      }
    );
    if (!this._queue.hasAhead) {
      // The server picks the next one: it must know this one is done.
      if (!(await done)) {
        return;
      }
    }
    await this._forward();
  }

  private async _review(decision: 'accept' | 'reject'): Promise<void> {
    const task = this._task;
    if (!task || this.mode !== 'review') {
      return;
    }
    if (decision === 'reject' && !this._rejecting) {
      this._rejecting = true;
      this.update();
      return;
    }
    this._busy = true;
    this.update();
    try {
      await reviewLabelingTask(
        this.project,
        this.name,
        task.id,
        decision,
        this._comment.trim()
      );
      this._reviewed++;
      this._error = null;
      this._changed();
      // Out of the list: the next one takes its place.
      this._reviewList.splice(this._reviewPos, 1);
      this._markSwitch();
      this._show(this._reviewList[this._reviewPos] ?? null);
    } catch (err) {
      this._error = describeError(err);
    } finally {
      this._busy = false;
      this.update();
    }
  }

  private _spanFromSelection(label: string): boolean {
    const root = this._textEl;
    const text = this._task?.item.text ?? '';
    const sel = window.getSelection();
    if (!root || !sel || sel.rangeCount === 0 || sel.isCollapsed) {
      return false;
    }
    const range = sel.getRangeAt(0);
    const start = textOffset(root, range.startContainer, range.startOffset);
    const end = textOffset(root, range.endContainer, range.endOffset);
    if (start === null || end === null) {
      return false;
    }
    const span = spanFromOffsets(text, start, end, label);
    sel.removeAllRanges();
    if (!span) {
      return false;
    }
    const spans = addSpan(this._draft.spans, span);
    this._change({ ...this._draft, spans });
    this._selection = { kind: 'span', index: spans.indexOf(span) };
    this.update();
    return true;
  }

  /* ---------------------------------------------------------------------- */
  /* Keyboard, wheel, pointer                                                */
  /* ---------------------------------------------------------------------- */

  private _onKeyDown = (event: KeyboardEvent): void => {
    const target = event.target as HTMLElement | null;
    const typing =
      !!target &&
      (target.tagName === 'INPUT' ||
        target.tagName === 'TEXTAREA' ||
        target.tagName === 'SELECT' ||
        target.isContentEditable);
    if (typing) {
      if (
        this.mode === 'review' &&
        target!.tagName === 'TEXTAREA' &&
        event.key === 'Enter' &&
        (event.ctrlKey || event.metaKey)
      ) {
        event.preventDefault();
        event.stopPropagation();
        void this._review('reject');
      }
      return;
    }
    if (event.key === ' ') {
      // Space held: drag pans.
      this._spaceDown = true;
      event.preventDefault();
      event.stopPropagation();
      return;
    }
    const action = keyAction(event, this._keys, this.mode);
    if (!action) {
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    this._act(action);
  };

  private _onKeyUp = (event: KeyboardEvent): void => {
    if (event.key === ' ') {
      this._spaceDown = false;
    }
  };

  private _act(action: AnnotatorAction): void {
    switch (action.kind) {
      case 'label':
        this._pickLabel(action.label);
        break;
      case 'next':
        void this._forward();
        break;
      case 'previous':
        this._back();
        break;
      case 'submit':
        void this._submit();
        break;
      case 'box-tool':
        if (this._proj?.type === 'image-bbox') {
          this._boxMode = !this._boxMode;
          this.update();
        }
        break;
      case 'delete':
        this._deleteSelected();
        break;
      case 'undo':
        this._undoRedo(false);
        break;
      case 'redo':
        this._undoRedo(true);
        break;
      case 'accept-suggestions':
        this._acceptAll();
        break;
      case 'deselect':
        this._selection = null;
        this._ghost = null;
        this._drag = null;
        this._rejecting = false;
        this.update();
        break;
      case 'fit':
        this._needsFit = true;
        this.update();
        break;
      case 'review-accept':
        void this._review('accept');
        break;
      case 'review-reject':
        void this._review('reject');
        break;
    }
  }

  private _onWheel = (event: WheelEvent): void => {
    const viewport = this._viewportEl;
    if (!viewport || !viewport.contains(event.target as Node)) {
      return;
    }
    event.preventDefault();
    const r = viewport.getBoundingClientRect();
    this._view = zoomAt(
      this._view,
      wheelFactor(event.deltaY, event.deltaMode),
      {
        x: event.clientX - r.left,
        y: event.clientY - r.top
      }
    );
    this._fitted = false;
    this.update();
  };

  private _point(e: React.PointerEvent<SVGSVGElement>): Point {
    const r = e.currentTarget.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  }

  private _onPointerDown = (e: React.PointerEvent<SVGSVGElement>): void => {
    if (e.button !== 0 && e.button !== 1) {
      return;
    }
    this.node.focus({ preventScroll: true });
    const p = this._point(e);
    const ip = toImage(this._view, p);
    const size = this._imageSize;
    const el = (e.target as Element).closest(
      '[data-handle],[data-box],[data-suggestion]'
    );
    const editable = this._editable && this._proj?.type === 'image-bbox';
    let drag: Drag | null = null;
    if (e.button === 1 || this._spaceDown) {
      drag = { kind: 'pan', last: p, pointerId: e.pointerId };
    } else if (
      el?.hasAttribute('data-handle') &&
      editable &&
      this._selection?.kind === 'box'
    ) {
      const index = this._selection.index;
      drag = {
        kind: 'resize',
        index,
        start: ip,
        rect: this._draft.boxes[index],
        handle: el.getAttribute('data-handle') as Handle,
        pushed: false,
        pointerId: e.pointerId
      };
    } else if (el?.hasAttribute('data-box')) {
      const index = Number(el.getAttribute('data-box'));
      this._selection = { kind: 'box', index };
      this._activeLabel = this._draft.boxes[index]?.label ?? this._activeLabel;
      if (editable) {
        // Near a corner of the selected box: resize rather than move.
        const box = this._draft.boxes[index];
        const handle = hitHandle(box, ip, HANDLE_PX / 2 / this._view.scale);
        drag = {
          kind: handle ? 'resize' : 'move',
          index,
          start: ip,
          rect: box,
          handle,
          pushed: false,
          pointerId: e.pointerId
        };
      }
    } else if (el?.hasAttribute('data-suggestion') && editable && this._task) {
      const index = Number(el.getAttribute('data-suggestion'));
      const open = openBoxSuggestions(this._draft, this._task.prediction, size);
      if (open[index]) {
        const next = acceptBox(this._draft, open[index], size);
        this._change(next);
        this._selection = { kind: 'box', index: next.boxes.length - 1 };
      }
    } else if (editable && this._boxMode && size) {
      this._selection = null;
      const anchor = {
        x: Math.min(size.width, Math.max(0, ip.x)),
        y: Math.min(size.height, Math.max(0, ip.y))
      };
      drag = { kind: 'draw', anchor, start: p, pointerId: e.pointerId };
    } else {
      this._selection = null;
      drag = { kind: 'pan', last: p, pointerId: e.pointerId };
    }
    this._drag = drag;
    if (drag) {
      e.currentTarget.setPointerCapture(e.pointerId);
      e.preventDefault();
    }
    this.update();
  };

  private _onPointerMove = (e: React.PointerEvent<SVGSVGElement>): void => {
    const drag = this._drag;
    if (!drag || drag.pointerId !== e.pointerId) {
      return;
    }
    const p = this._point(e);
    const size = this._imageSize;
    if (drag.kind === 'pan') {
      this._view = panBy(this._view, p.x - drag.last.x, p.y - drag.last.y);
      this._fitted = false;
      drag.last = p;
    } else if (drag.kind === 'draw' && size) {
      const ip = toImage(this._view, p);
      const to = {
        x: Math.min(size.width, Math.max(0, ip.x)),
        y: Math.min(size.height, Math.max(0, ip.y))
      };
      this._ghost = normalizeRect(drag.anchor, to);
    } else if ((drag.kind === 'move' || drag.kind === 'resize') && size) {
      const ip = toImage(this._view, p);
      if (!drag.pushed) {
        if (
          Math.hypot(ip.x - drag.start.x, ip.y - drag.start.y) *
            this._view.scale <
          2
        ) {
          return;
        }
        this._undo.push(this._draft);
        drag.pushed = true;
      }
      const rect =
        drag.kind === 'move'
          ? moveRect(
              drag.rect,
              Math.round(ip.x - drag.start.x),
              Math.round(ip.y - drag.start.y),
              size
            )
          : resizeRect(
              drag.rect,
              drag.handle!,
              { x: Math.round(ip.x), y: Math.round(ip.y) },
              size
            );
      const boxes = this._draft.boxes.map((b, i) =>
        i === drag.index ? { ...b, ...rect } : b
      );
      this._draft = { ...this._draft, boxes };
    }
    this.update();
  };

  private _onPointerUp = (e: React.PointerEvent<SVGSVGElement>): void => {
    const drag = this._drag;
    if (!drag || drag.pointerId !== e.pointerId) {
      return;
    }
    this._drag = null;
    const size = this._imageSize;
    if (drag.kind === 'draw' && size) {
      const ghost = this._ghost;
      this._ghost = null;
      const p = this._point(e);
      const far =
        Math.abs(p.x - drag.start.x) >= MIN_DRAW_PX &&
        Math.abs(p.y - drag.start.y) >= MIN_DRAW_PX;
      const rect = ghost && far ? finishRect(ghost, size) : null;
      if (rect) {
        const box: BoxAnnotation = { label: this._activeLabel, ...rect };
        const next = { ...this._draft, boxes: [...this._draft.boxes, box] };
        this._change(next);
        this._selection = { kind: 'box', index: next.boxes.length - 1 };
      }
    } else if (
      (drag.kind === 'move' || drag.kind === 'resize') &&
      drag.pushed &&
      size
    ) {
      const rect = finishRect(this._draft.boxes[drag.index], size) ?? drag.rect;
      const boxes = this._draft.boxes.map((b, i) =>
        i === drag.index ? { ...b, ...rect } : b
      );
      this._draft = { ...this._draft, boxes };
      this._scheduleSave();
    }
    this.update();
  };

  private _viewportRef = (el: HTMLDivElement | null): void => {
    if (el === this._viewportEl) {
      return;
    }
    this._resize?.disconnect();
    this._viewportEl = el;
    if (el) {
      this._resize = new ResizeObserver(() => {
        const size = { width: el.clientWidth, height: el.clientHeight };
        if (
          size.width !== this._viewportSize?.width ||
          size.height !== this._viewportSize?.height
        ) {
          this._viewportSize = size;
          if (this._fitted) {
            this._needsFit = true;
          }
          this.update();
        }
      });
      this._resize.observe(el);
      this._viewportSize = { width: el.clientWidth, height: el.clientHeight };
      if (this._needsFit) {
        // Measured only now (after the first commit): render again, fitted.
        this.update();
      }
    }
  };

  private _imageRef = (el: HTMLImageElement | null): void => {
    if (
      el &&
      el.complete &&
      el.naturalWidth > 0 &&
      el.dataset.task === String(this._task?.id)
    ) {
      this._shown();
    }
  };

  private _onImageLoad = (el: HTMLImageElement): void => {
    if (el.dataset.task !== String(this._task?.id)) {
      return;
    }
    if (!this._imageSize && el.naturalWidth > 0) {
      this._imageSize = { width: el.naturalWidth, height: el.naturalHeight };
      this._needsFit = true;
      this.update();
    }
    this._shown();
  };

  /* ---------------------------------------------------------------------- */
  /* Rendering                                                               */
  /* ---------------------------------------------------------------------- */

  protected render(): JSX.Element {
    const trans = this._trans;
    const proj = this._proj;
    if (!proj) {
      return (
        <div className="cube-LAnnotator">
          {this._error ? (
            <ErrorBox className="cube-LError" error={this._error} />
          ) : null}
          {this._loading ? (
            <div className="cube-Loading">
              <span className="cube-Spinner" />{' '}
              {trans.__('Loading the labeling project…')}
            </div>
          ) : null}
        </div>
      );
    }
    const task = this._task;
    if (this._needsFit && this._imageSize && this._viewportSize) {
      this._view = fitView(this._imageSize, this._viewportSize);
      this._needsFit = false;
      this._fitted = true;
    }
    return (
      <div
        className="cube-LAnnotator"
        data-mode={this.mode}
        data-type={proj.type}
        data-task={task ? task.id : ''}
        data-status={task ? task.status : ''}
        data-save={this._saveState}
      >
        {this._header(proj, task)}
        {this._error ? (
          <ErrorBox
            className="cube-LError"
            error={this._error}
            action={
              this._failed
                ? {
                    label: trans.__('Go back to it'),
                    run: () => {
                      const failed = this._failed;
                      this._failed = null;
                      this._error = null;
                      if (failed) {
                        this._show(failed);
                      }
                    }
                  }
                : undefined
            }
            dismiss={() => {
              this._error = null;
              this._failed = null;
              this.update();
            }}
          />
        ) : null}
        <div className="cube-LBody">
          <div className="cube-LMain">
            {task ? this._stage(proj, task) : this._empty()}
          </div>
          {this._side(proj, task)}
        </div>
      </div>
    );
  }

  private _header(
    proj: LabelingProject,
    task: LabelingTask | null
  ): JSX.Element {
    const trans = this._trans;
    const review = this.mode === 'review';
    const position = review
      ? trans.__(
          '%1 of %2 to review',
          Math.min(this._reviewPos + 1, this._reviewList.length),
          this._reviewList.length
        )
      : task
        ? trans.__('task %1 of %2', task.index + 1, proj.progress?.total ?? '?')
        : '';
    return (
      <header className="cube-LHeader">
        <div className="cube-LHeader-title">
          <h2>{proj.name}</h2>
          <span className="cube-TMuted">
            {trans.__(taskTypeLabel(proj.type))}
            {review ? ` · ${trans.__('review')}` : ''}
          </span>
        </div>
        {task ? (
          <div className="cube-LHeader-task">
            <span className="cube-LItemName" title={task.item.name}>
              {task.item.name}
            </span>
            <span className="cube-TMuted">{position}</span>
            <span className={`cube-TBadge cube-LStatus-${task.status}`}>
              {task.status}
            </span>
            {!review ? (
              <SaveState state={this._saveState} trans={trans} />
            ) : null}
          </div>
        ) : null}
        <div className="cube-LHeader-actions">
          <button
            className="cube-Button"
            onClick={() => this._act({ kind: 'previous' })}
            disabled={review ? this._reviewPos <= 0 : !this._queue.canGoBack}
            title={trans.__('Previous task (←)')}
          >
            ← {trans.__('Previous')}
          </button>
          <button
            className="cube-Button"
            onClick={() => this._act({ kind: 'next' })}
            disabled={!task}
            title={
              review
                ? trans.__('Next task (→)')
                : trans.__(
                    'Skip to the next task; this one stays in your queue (→)'
                  )
            }
          >
            {trans.__('Next')} →
          </button>
          {review ? null : (
            <button
              className="cube-Button cube-mod-primary cube-LSubmit"
              onClick={() => void this._submit()}
              disabled={!task || !this._editable}
              title={trans.__('Submit and go to the next task (Enter)')}
            >
              {trans.__('Submit')} <kbd>↵</kbd>
            </button>
          )}
        </div>
      </header>
    );
  }

  private _empty(): JSX.Element {
    const trans = this._trans;
    if (this._loading) {
      return (
        <div className="cube-Loading">
          <span className="cube-Spinner" /> {trans.__('Loading the next task…')}
        </div>
      );
    }
    return (
      <div className="cube-TEmpty cube-LDone">
        <p className="cube-TEmpty-title">
          {this.mode === 'review'
            ? trans.__('Nothing left to review')
            : trans.__('Your queue is empty')}
        </p>
        <p className="cube-TEmpty-text">
          {this.mode === 'review'
            ? trans.__(
                '%1 reviewed in this session. Your own submissions are left to another reviewer.',
                this._reviewed
              )
            : trans.__(
                '%1 submitted in this session. New tasks come from the pool when the project owner assigns them or when unassigned tasks are left.',
                this._submitted
              )}
        </p>
        <button className="cube-Button" onClick={() => void this.refresh()}>
          {trans.__('Check again')}
        </button>
      </div>
    );
  }

  private _stage(proj: LabelingProject, task: LabelingTask): JSX.Element {
    const trans = this._trans;
    if (isImageType(proj.type) && task.item.kind === 'image') {
      const bbox = proj.type === 'image-bbox';
      return (
        <ImageStage
          taskId={task.id}
          src={serverUrl(task.item.content_url)}
          size={this._imageSize}
          view={this._view}
          boxes={bbox ? this._draft.boxes : []}
          suggestions={
            bbox && this._showSuggestions && this.mode === 'annotate'
              ? openBoxSuggestions(
                  this._draft,
                  task.prediction,
                  this._imageSize
                )
              : []
          }
          ghost={this._ghost}
          ghostLabel={this._activeLabel}
          selected={
            this._selection?.kind === 'box' ? this._selection.index : null
          }
          colors={this._colors}
          editable={this._editable && bbox}
          boxMode={bbox && this._boxMode}
          panning={this._drag?.kind === 'pan'}
          showBoxes={this._showSuggestions}
          label={trans.__('Image %1', task.item.name)}
          viewportRef={this._viewportRef}
          imageRef={this._imageRef}
          onImageLoad={this._onImageLoad}
          onPointerDown={this._onPointerDown}
          onPointerMove={this._onPointerMove}
          onPointerUp={this._onPointerUp}
        />
      );
    }
    const ner = proj.type === 'text-ner';
    return (
      <TextStage
        key={task.id}
        text={task.item.text ?? ''}
        spans={ner ? this._draft.spans : []}
        suggestions={
          ner && this._showSuggestions && this.mode === 'annotate'
            ? openSpanSuggestions(this._draft, task.prediction)
            : []
        }
        selected={
          this._selection?.kind === 'span' ? this._selection.index : null
        }
        colors={this._colors}
        spansShown={ner}
        textRef={el => {
          this._textEl = el;
          if (el) {
            this._shown();
          }
        }}
        onMouseUp={() => {
          if (ner && this._editable) {
            this._spanFromSelection(this._activeLabel);
          }
        }}
        onSpanClick={index => {
          this._selection = { kind: 'span', index };
          this._activeLabel =
            this._draft.spans[index]?.label ?? this._activeLabel;
          this.update();
        }}
        onSuggestionClick={index => {
          const open = openSpanSuggestions(this._draft, task.prediction);
          const s = open[index];
          if (s && this._editable) {
            this._change({
              ...this._draft,
              spans: addSpan(this._draft.spans, {
                label: s.label,
                start: s.start,
                end: s.end,
                text: s.text
              })
            });
          }
        }}
      />
    );
  }

  private _side(proj: LabelingProject, task: LabelingTask | null): JSX.Element {
    const trans = this._trans;
    const review = this.mode === 'review';
    const counts = countLabels(proj.type, this._draft);
    const classTask = isClassType(proj.type);
    const suggested = new Map(
      suggestedLabels(task?.prediction).map(s => [s.label, s.score] as const)
    );
    const openSuggestions =
      task && !review
        ? proj.type === 'image-bbox'
          ? openBoxSuggestions(this._draft, task.prediction, this._imageSize)
              .length
          : proj.type === 'text-ner'
            ? openSpanSuggestions(this._draft, task.prediction).length
            : suggestedLabels(task.prediction).filter(
                s => !this._draft.labels.includes(s.label)
              ).length
        : 0;
    return (
      <aside className="cube-LSide">
        {proj.instructions ? (
          <details className="cube-LInstructions" open={this._instructionsOpen}>
            <summary
              onClick={e => {
                e.preventDefault();
                this._instructionsOpen = !this._instructionsOpen;
                this.update();
              }}
            >
              {trans.__('Instructions')}
            </summary>
            <div className="cube-LInstructions-text">{proj.instructions}</div>
          </details>
        ) : null}
        <div className="cube-LSide-section">
          <h3>
            {classTask ? trans.__('Labels') : trans.__('Label for new marks')}
          </h3>
          <div
            className="cube-LLabels"
            role="group"
            aria-label={trans.__('Labels')}
          >
            {proj.labels.map(label => {
              const key = hotkeyOf(proj.labels, label.name);
              const on = classTask
                ? this._draft.labels.includes(label.name)
                : this._activeLabel === label.name;
              const score = suggested.get(label.name);
              return (
                <button
                  key={label.name}
                  className={`cube-LLabel${on ? ' cube-mod-active' : ''}`}
                  data-label={label.name}
                  aria-pressed={on}
                  disabled={review || (classTask && !this._editable)}
                  onClick={() => this._pickLabel(label.name)}
                  title={
                    key ? trans.__('%1 (key %2)', label.name, key) : label.name
                  }
                  style={
                    { '--cube-label-color': label.color } as React.CSSProperties
                  }
                >
                  <span className="cube-LLabel-swatch" />
                  <span className="cube-LLabel-name">{label.name}</span>
                  {classTask && suggested.has(label.name) && !review ? (
                    <span
                      className="cube-LChip"
                      title={trans.__(
                        'Suggested by %1',
                        task?.prediction_model ?? ''
                      )}
                    >
                      {trans.__('suggested')}
                      {typeof score === 'number'
                        ? ` ${Math.round(score * 100)}%`
                        : ''}
                    </span>
                  ) : null}
                  {!classTask && counts.get(label.name) ? (
                    <span className="cube-LLabel-count">
                      ×{counts.get(label.name)}
                    </span>
                  ) : null}
                  {key ? <kbd className="cube-LKey">{key}</kbd> : null}
                </button>
              );
            })}
          </div>
        </div>
        {proj.type === 'image-bbox' && !review ? (
          <div className="cube-LTools">
            <button
              className={`cube-Button cube-LTool${this._boxMode ? ' cube-mod-active' : ''}`}
              aria-pressed={this._boxMode}
              onClick={() => this._act({ kind: 'box-tool' })}
              title={trans.__(
                'Box tool: drag to draw a box (B). Off: drag pans.'
              )}
            >
              ▭ {trans.__('Box')} <kbd className="cube-LKey">B</kbd>
            </button>
            <button
              className="cube-Button"
              onClick={() => this._act({ kind: 'fit' })}
              title={trans.__('Fit the image in the view (F)')}
            >
              {trans.__('Fit')}
            </button>
            <span className="cube-TMuted cube-LZoom">
              {Math.round(this._view.scale * 100)}%
            </span>
          </div>
        ) : null}
        {task && task.prediction && !review ? (
          <div className="cube-LSide-section cube-LSuggest">
            <h3>{trans.__('Model suggestions')}</h3>
            <div className="cube-TMuted">
              {task.prediction_model ?? trans.__('a model')} ·{' '}
              {openSuggestions
                ? trans.__('%1 open', openSuggestions)
                : trans.__('all taken')}
            </div>
            <div className="cube-LSuggest-actions">
              <button
                className="cube-Button"
                disabled={!openSuggestions || !this._editable}
                onClick={() => this._acceptAll()}
                title={trans.__(
                  'Take the suggestions; correct them afterwards (A)'
                )}
              >
                {trans.__('Accept')} <kbd className="cube-LKey">A</kbd>
              </button>
              {proj.type !== 'image-class' && proj.type !== 'text-class' ? (
                <label className="cube-Check">
                  <input
                    type="checkbox"
                    checked={this._showSuggestions}
                    onChange={e => {
                      this._showSuggestions = e.currentTarget.checked;
                      this.update();
                    }}
                  />
                  {trans.__('show')}
                </label>
              ) : null}
            </div>
          </div>
        ) : null}
        {proj.type === 'image-bbox' && task ? (
          <div className="cube-LSide-section">
            <h3>
              {trans.__('Boxes')}{' '}
              <span className="cube-TMuted">{this._draft.boxes.length}</span>
            </h3>
            <ul className="cube-LMarks">
              {this._draft.boxes.map((b, i) => (
                <li
                  key={i}
                  className={
                    this._selection?.kind === 'box' &&
                    this._selection.index === i
                      ? 'cube-mod-selected'
                      : ''
                  }
                  onClick={() => {
                    this._selection = { kind: 'box', index: i };
                    this.update();
                  }}
                >
                  <span
                    className="cube-LLabel-swatch"
                    style={{ background: this._colors.get(b.label) }}
                  />
                  <span className="cube-LMarks-name">{b.label}</span>
                  <span className="cube-TMuted cube-num">
                    {Math.round(b.x)},{Math.round(b.y)} {Math.round(b.w)}×
                    {Math.round(b.h)}
                  </span>
                </li>
              ))}
            </ul>
          </div>
        ) : null}
        {proj.type === 'text-ner' && task ? (
          <div className="cube-LSide-section">
            <h3>
              {trans.__('Entities')}{' '}
              <span className="cube-TMuted">{this._draft.spans.length}</span>
            </h3>
            <ul className="cube-LMarks">
              {this._draft.spans.map((s, i) => (
                <li
                  key={`${s.start}-${s.end}`}
                  className={
                    this._selection?.kind === 'span' &&
                    this._selection.index === i
                      ? 'cube-mod-selected'
                      : ''
                  }
                  onClick={() => {
                    this._selection = { kind: 'span', index: i };
                    this.update();
                  }}
                >
                  <span
                    className="cube-LLabel-swatch"
                    style={{ background: this._colors.get(s.label) }}
                  />
                  <span className="cube-LMarks-name">{s.label}</span>
                  <span className="cube-LMarks-text">{s.text}</span>
                </li>
              ))}
            </ul>
          </div>
        ) : null}
        {task && task.review_comment && !review ? (
          <div className="cube-LSide-section cube-LComment" role="note">
            <h3>{trans.__('Review comment')}</h3>
            <div>{task.review_comment}</div>
            {task.reviewer ? (
              <div className="cube-TMuted">— {task.reviewer}</div>
            ) : null}
          </div>
        ) : null}
        {task && !review && !this._editable ? (
          <div className="cube-TNote">
            {task.status === 'submitted'
              ? trans.__('Submitted: read-only while it waits for review.')
              : task.status === 'accepted'
                ? trans.__('Accepted: read-only.')
                : trans.__('Read-only: this task is not in your queue.')}
          </div>
        ) : null}
        {review && task ? this._reviewBox(task) : null}
        <details className="cube-LHelp">
          <summary>{trans.__('Keyboard')}</summary>
          <dl>
            {(review
              ? [
                  ['Enter / A', trans.__('accept')],
                  ['R', trans.__('reject (with a comment)')],
                  ['← →', trans.__('previous / next')],
                  ['F', trans.__('fit the image')]
                ]
              : [
                  ['1-9', trans.__('pick a label')],
                  ['← →', trans.__('previous / next (skip)')],
                  ['Enter', trans.__('submit, next task')],
                  ['B', trans.__('box tool on / off')],
                  ['Del', trans.__('delete the selected mark')],
                  ['Ctrl-Z', trans.__('undo (Ctrl-Shift-Z redo)')],
                  ['A', trans.__('accept the suggestions')],
                  [trans.__('wheel'), trans.__('zoom')],
                  [trans.__('Space + drag'), trans.__('pan')],
                  ['F', trans.__('fit the image')]
                ]
            ).map(([k, v]) => (
              <React.Fragment key={k}>
                <dt>
                  <kbd>{k}</kbd>
                </dt>
                <dd>{v}</dd>
              </React.Fragment>
            ))}
          </dl>
        </details>
      </aside>
    );
  }

  private _reviewBox(task: LabelingTask): JSX.Element {
    const trans = this._trans;
    return (
      <div className="cube-LSide-section cube-LReview">
        <h3>{trans.__('Review')}</h3>
        <div className="cube-TMuted">
          {trans.__('by %1', task.assignee ?? '?')}
          {isDraftEmpty(this._proj!.type, this._draft)
            ? ` · ${trans.__('nothing marked')}`
            : ''}
        </div>
        {this._rejecting ? (
          <textarea
            className="cube-TField-input cube-LReview-comment"
            name="comment"
            rows={3}
            autoFocus
            placeholder={trans.__('What to fix (Ctrl-Enter rejects)')}
            value={this._comment}
            onChange={e => {
              this._comment = e.currentTarget.value;
              this.update();
            }}
          />
        ) : null}
        <div className="cube-LReview-actions">
          <button
            className="cube-Button cube-mod-primary"
            disabled={this._busy}
            onClick={() => void this._review('accept')}
            title={trans.__('Accept (Enter)')}
          >
            {trans.__('Accept')} <kbd className="cube-LKey">↵</kbd>
          </button>
          <button
            className="cube-Button cube-DDanger"
            disabled={this._busy}
            onClick={() => void this._review('reject')}
            title={trans.__(
              'Reject with a comment; it goes back to its annotator (R)'
            )}
          >
            {this._rejecting ? trans.__('Send rejection') : trans.__('Reject…')}{' '}
            <kbd className="cube-LKey">R</kbd>
          </button>
        </div>
      </div>
    );
  }

  private _trans: TranslationBundle;
  private _changed: () => void;
  private _started = false;
  private _loading = false;
  private _me = '';
  private _proj: LabelingProject | null = null;
  private _keys = new Map<string, string>();
  private _colors = new Map<string, string>();
  private _queue: TaskQueue;
  private _autosave: Autosaver;
  private _task: LabelingTask | null = null;
  private _draft: Draft = emptyDraft();
  private _undo = new UndoStack<Draft>();
  private _selection: Selection = null;
  private _activeLabel = '';
  private _boxMode = true;
  private _showSuggestions = true;
  private _instructionsOpen = true;
  private _drag: Drag | null = null;
  private _ghost: Rect | null = null;
  private _spaceDown = false;
  private _view: View = { scale: 1, tx: 0, ty: 0 };
  private _imageSize: Size | null = null;
  private _viewportSize: Size | null = null;
  private _needsFit = true;
  private _fitted = true;
  private _viewportEl: HTMLDivElement | null = null;
  private _textEl: HTMLDivElement | null = null;
  private _resize: ResizeObserver | null = null;
  private _images = new Map<string, HTMLImageElement>();
  private _switchStart: number | null = null;
  private _saveState: 'saved' | 'saving' | 'unsaved' | 'error' = 'saved';
  private _error: ErrorText | null = null;
  private _failed: LabelingTask | null = null;
  private _submitted = 0;
  private _reviewed = 0;
  private _reviewList: LabelingTask[] = [];
  private _reviewPos = 0;
  private _comment = '';
  private _rejecting = false;
  private _busy = false;
}

export namespace AnnotatorView {
  export interface IOptions {
    project: string;
    name: string;
    mode: AnnotatorMode;
    translator: ITranslator;
    /** Something changed on the server (progress moved). */
    changed?: () => void;
  }
}

function SaveState(props: {
  state: 'saved' | 'saving' | 'unsaved' | 'error';
  trans: TranslationBundle;
}): JSX.Element {
  const { trans } = props;
  const text = {
    saved: trans.__('saved'),
    saving: trans.__('saving…'),
    unsaved: trans.__('unsaved'),
    error: trans.__('not saved')
  }[props.state];
  return <span className={`cube-LSave cube-LSave-${props.state}`}>{text}</span>;
}
