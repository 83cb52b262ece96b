/**
 * Labeling logic: box geometry (draw, move, resize, clamp), the zoom / pan
 * view, undo, the annotator's keys, results per task type, NER spans from a
 * selection, model suggestions, the task queue with prefetch, autosave and
 * the panel's forms.
 */
import type { LabelingTask, LabelSpec } from '../api';
import {
  clampRect,
  finishRect,
  fitView,
  handlePoints,
  hitBox,
  hitHandle,
  moveRect,
  normalizeRect,
  resizeRect,
  toImage,
  toViewport,
  wheelFactor,
  zoomAt
} from '../panels/labeling/geometry';
import { UndoStack } from '../panels/labeling/history';
import { hotkeyMap, hotkeyOf, keyAction } from '../panels/labeling/keys';
import {
  assignRequest,
  datasetFormToRequest,
  donePercent,
  emptyDatasetForm,
  emptyProjectForm,
  exportFormats,
  labelRows,
  nameFromPath,
  parseLabels,
  progressSegments,
  projectFormToRequest
} from '../panels/labeling/logic';
import { Autosaver, TaskQueue } from '../panels/labeling/queue';
import {
  acceptSuggestions,
  addSpan,
  draftFromResult,
  emptyDraft,
  openBoxSuggestions,
  segmentText,
  serializeDraft,
  spanFromOffsets,
  suggestedLabels,
  toggleLabel
} from '../panels/labeling/result';

const IMG = { width: 100, height: 80 };

describe('box geometry', () => {
  it('normalises a box drawn in any direction', () => {
    expect(normalizeRect({ x: 50, y: 40 }, { x: 10, y: 60 })).toEqual({
      x: 10,
      y: 40,
      w: 40,
      h: 20
    });
  });

  it('cuts a box to the image and snaps it to whole pixels', () => {
    expect(clampRect({ x: -10, y: 70, w: 30, h: 30 }, IMG)).toEqual({
      x: 0,
      y: 70,
      w: 20,
      h: 10
    });
    expect(finishRect({ x: 10.4, y: 5.6, w: 20.2, h: 9.9 }, IMG)).toEqual({
      x: 10,
      y: 6,
      w: 21,
      h: 10
    });
    // A click (no drag) or a box all outside the image is no box.
    expect(finishRect({ x: 10, y: 10, w: 0.2, h: 0.2 }, IMG)).toBeNull();
    expect(finishRect({ x: 120, y: 10, w: 30, h: 30 }, IMG)).toBeNull();
    // The right edge stays inside the image.
    const edge = finishRect({ x: 95, y: 0, w: 40, h: 10 }, IMG)!;
    expect(edge.x + edge.w).toBe(100);
  });

  it('moves a box but stops it at the image edge', () => {
    const box = { x: 10, y: 10, w: 20, h: 20 };
    expect(moveRect(box, 5, -3, IMG)).toEqual({ x: 15, y: 7, w: 20, h: 20 });
    expect(moveRect(box, 500, 500, IMG)).toEqual({
      x: 80,
      y: 60,
      w: 20,
      h: 20
    });
    expect(moveRect(box, -50, -50, IMG)).toEqual({ x: 0, y: 0, w: 20, h: 20 });
  });

  it('resizes from each handle, keeping the opposite edges, and flips past them', () => {
    const box = { x: 10, y: 10, w: 20, h: 20 };
    expect(resizeRect(box, 'se', { x: 50, y: 40 }, IMG)).toEqual({
      x: 10,
      y: 10,
      w: 40,
      h: 30
    });
    expect(resizeRect(box, 'n', { x: 99, y: 0 }, IMG)).toEqual({
      x: 10,
      y: 0,
      w: 20,
      h: 30
    });
    expect(resizeRect(box, 'w', { x: 40, y: 0 }, IMG)).toEqual({
      x: 30,
      y: 10,
      w: 10,
      h: 20
    });
    // Dragged out of the image: held at its border.
    expect(resizeRect(box, 'nw', { x: -30, y: -30 }, IMG)).toEqual({
      x: 0,
      y: 0,
      w: 30,
      h: 30
    });
  });

  it('finds handles and boxes under the pointer', () => {
    const box = { x: 10, y: 10, w: 20, h: 20 };
    expect(handlePoints(box)).toHaveLength(8);
    expect(hitHandle(box, { x: 30.5, y: 29 }, 2)).toBe('se');
    expect(hitHandle(box, { x: 20, y: 10 }, 2)).toBe('n');
    expect(hitHandle(box, { x: 20, y: 20 }, 2)).toBeNull();
    const big = { x: 0, y: 0, w: 90, h: 70 };
    // The smaller box inside a bigger one wins.
    expect(hitBox([box, big], { x: 15, y: 15 })).toBe(0);
    expect(hitBox([box, big], { x: 60, y: 60 })).toBe(1);
    expect(hitBox([box, big], { x: 95, y: 75 })).toBe(-1);
  });
});

describe('zoom and pan', () => {
  it('fits the image in the viewport, centred', () => {
    const view = fitView(
      { width: 200, height: 100 },
      { width: 432, height: 432 },
      16
    );
    expect(view.scale).toBe(2);
    expect(view.tx).toBe(16);
    expect(view.ty).toBe(116);
  });

  it('keeps the point under the mouse in place when zooming', () => {
    const view = { scale: 2, tx: 16, ty: 116 };
    const at = { x: 100, y: 150 };
    const before = toImage(view, at);
    const zoomed = zoomAt(view, 1.5, at);
    expect(zoomed.scale).toBe(3);
    const after = toImage(zoomed, at);
    expect(after.x).toBeCloseTo(before.x);
    expect(after.y).toBeCloseTo(before.y);
    expect(toViewport(zoomed, after).x).toBeCloseTo(100);
    // Limits hold.
    expect(zoomAt(view, 1e6, at).scale).toBe(40);
  });

  it('turns wheel steps into zoom factors', () => {
    expect(wheelFactor(-100)).toBeGreaterThan(1.1);
    expect(wheelFactor(100)).toBeLessThan(0.91);
    expect(wheelFactor(-3, 1)).toBeCloseTo(wheelFactor(-48, 0));
    expect(wheelFactor(0)).toBe(1);
  });
});

describe('undo', () => {
  it('goes back and forth; a new change drops the redo list', () => {
    const stack = new UndoStack<number>();
    expect(stack.undo(0)).toBeNull();
    stack.push(0);
    stack.push(1);
    expect(stack.undo(2)).toBe(1);
    expect(stack.undo(1)).toBe(0);
    expect(stack.canUndo).toBe(false);
    expect(stack.redo(0)).toBe(1);
    stack.push(1);
    expect(stack.canRedo).toBe(false);
  });

  it('keeps at most `limit` steps', () => {
    const stack = new UndoStack<number>(3);
    [0, 1, 2, 3, 4].forEach(n => stack.push(n));
    expect(stack.undo(5)).toBe(4);
    expect(stack.undo(4)).toBe(3);
    expect(stack.undo(3)).toBe(2);
    expect(stack.undo(2)).toBeNull();
  });
});

describe('keys', () => {
  const labels: LabelSpec[] = [
    { name: 'cat', color: '#e6194b', hotkey: '1' },
    { name: 'dog', color: '#3cb44b', hotkey: '' },
    { name: 'bird', color: '#4363d8', hotkey: 'q' }
  ];
  const map = hotkeyMap(labels);

  it('maps hotkeys to labels, digits by position when unset', () => {
    expect(map.get('1')).toBe('cat');
    expect(map.get('2')).toBe('dog');
    expect(map.get('q')).toBe('bird');
    expect(hotkeyOf(labels, 'bird')).toBe('q');
    expect(keyAction({ key: 'Q' }, map, 'annotate')).toEqual({
      kind: 'label',
      label: 'bird'
    });
    // By key code on layouts where 1 needs shift.
    expect(keyAction({ key: '&', code: 'Digit1' }, map, 'annotate')).toEqual({
      kind: 'label',
      label: 'cat'
    });
  });

  it('maps the editing keys', () => {
    const act = (key: string, extra = {}) =>
      keyAction({ key, ...extra }, map, 'annotate')?.kind ?? null;
    expect(act('ArrowRight')).toBe('next');
    expect(act('ArrowLeft')).toBe('previous');
    expect(act('b')).toBe('box-tool');
    expect(act('Delete')).toBe('delete');
    expect(act('Backspace')).toBe('delete');
    expect(act('z', { ctrlKey: true })).toBe('undo');
    expect(act('z', { metaKey: true })).toBe('undo');
    expect(act('Z', { ctrlKey: true, shiftKey: true })).toBe('redo');
    expect(act('Enter')).toBe('submit');
    expect(act('a')).toBe('accept-suggestions');
    expect(act('1', { ctrlKey: true })).toBeNull();
    expect(act('x')).toBeNull();
  });

  it('has no label keys in review mode', () => {
    expect(keyAction({ key: '1' }, map, 'review')).toBeNull();
    expect(keyAction({ key: 'Enter' }, map, 'review')?.kind).toBe(
      'review-accept'
    );
    expect(keyAction({ key: 'r' }, map, 'review')?.kind).toBe('review-reject');
    expect(keyAction({ key: 'Delete' }, map, 'review')).toBeNull();
  });
});

describe('results per task type', () => {
  it('sends only the key of the task type', () => {
    const draft = {
      labels: ['cat', 'cat'],
      boxes: [{ label: 'cat', x: 1.4, y: 2, w: 10, h: 10 }],
      spans: [{ label: 'PER', start: 0, end: 5, text: 'Alice' }]
    };
    expect(serializeDraft('image-class', draft)).toEqual({ labels: ['cat'] });
    expect(serializeDraft('text-class', draft)).toEqual({ labels: ['cat'] });
    expect(serializeDraft('image-bbox', draft, IMG)).toEqual({
      boxes: [{ label: 'cat', x: 1, y: 2, w: 10, h: 10 }]
    });
    expect(serializeDraft('text-ner', draft)).toEqual({
      spans: [{ label: 'PER', start: 0, end: 5, text: 'Alice' }]
    });
  });

  it('cuts boxes to the image and drops empty ones when sending', () => {
    const draft = {
      ...emptyDraft(),
      boxes: [
        { label: 'cat', x: 90, y: 70, w: 30, h: 30 },
        { label: 'dog', x: 200, y: 10, w: 5, h: 5 }
      ]
    };
    expect(serializeDraft('image-bbox', draft, IMG)).toEqual({
      boxes: [{ label: 'cat', x: 90, y: 70, w: 10, h: 10 }]
    });
  });

  it('reads a stored result, without scores', () => {
    const draft = draftFromResult({
      boxes: [{ label: 'cat', x: 1, y: 2, w: 3, h: 4, score: 0.9 }]
    });
    expect(draft.boxes[0]).toEqual({ label: 'cat', x: 1, y: 2, w: 3, h: 4 });
    expect(draftFromResult(null)).toEqual(emptyDraft());
  });

  it('sets one label or toggles many', () => {
    let d = toggleLabel(emptyDraft(), 'cat', false);
    d = toggleLabel(d, 'dog', false);
    expect(d.labels).toEqual(['dog']);
    expect(toggleLabel(d, 'dog', false).labels).toEqual([]);
    let m = toggleLabel(emptyDraft(), 'cat', true);
    m = toggleLabel(m, 'dog', true);
    expect(m.labels).toEqual(['cat', 'dog']);
    expect(toggleLabel(m, 'cat', true).labels).toEqual(['dog']);
  });
});

describe('suggestions', () => {
  it('reads class predictions in both shapes, best first', () => {
    expect(
      suggestedLabels({ labels: ['dog', 'cat'], scores: [0.2, 0.7] })
    ).toEqual([
      { label: 'cat', score: 0.7 },
      { label: 'dog', score: 0.2 }
    ]);
    expect(suggestedLabels({ labels: [{ label: 'cat', score: 0.9 }] })).toEqual(
      [{ label: 'cat', score: 0.9 }]
    );
    expect(suggestedLabels(null)).toEqual([]);
  });

  it('accepts the proposals into the draft, apart from the prediction', () => {
    const prediction = {
      boxes: [
        { label: 'cat', x: 5, y: 5, w: 10, h: 10, score: 0.9 },
        { label: 'dog', x: 50, y: 50, w: 80, h: 80, score: 0.6 }
      ]
    };
    const draft = acceptSuggestions(
      'image-bbox',
      emptyDraft(),
      prediction,
      false,
      IMG
    );
    expect(draft.boxes).toEqual([
      { label: 'cat', x: 5, y: 5, w: 10, h: 10 },
      { label: 'dog', x: 50, y: 50, w: 50, h: 30 }
    ]);
    // Nothing is left to suggest; the prediction itself is unchanged.
    expect(openBoxSuggestions(draft, prediction, IMG)).toEqual([]);
    expect(prediction.boxes[1].w).toBe(80);
    const single = acceptSuggestions(
      'image-class',
      emptyDraft(),
      { labels: ['dog', 'cat'], scores: [0.3, 0.6] },
      false
    );
    expect(single.labels).toEqual(['cat']);
  });
});

describe('NER spans', () => {
  const text = 'Alice met Bob in Paris.';

  it('makes a span from a selection, trimming white space', () => {
    expect(spanFromOffsets(text, 9, 13, 'PER')).toEqual({
      label: 'PER',
      start: 10,
      end: 13,
      text: 'Bob'
    });
    // Selected backwards.
    expect(spanFromOffsets(text, 22, 17, 'LOC')?.text).toBe('Paris');
    expect(spanFromOffsets(text, 5, 6, 'PER')).toBeNull();
  });

  it('replaces overlapping spans and cuts the text for display', () => {
    let spans = addSpan([], { label: 'PER', start: 0, end: 5, text: 'Alice' });
    spans = addSpan(spans, { label: 'LOC', start: 17, end: 22, text: 'Paris' });
    spans = addSpan(spans, {
      label: 'PER',
      start: 0,
      end: 9,
      text: 'Alice met'
    });
    expect(spans.map(s => s.text)).toEqual(['Alice met', 'Paris']);
    const segments = segmentText(text, spans, [
      { label: 'PER', start: 10, end: 13, text: 'Bob', score: 0.8 }
    ]);
    expect(segments.map(s => [s.text, s.span, s.suggestion])).toEqual([
      ['Alice met', 0, null],
      [' ', null, null],
      ['Bob', null, 0],
      [' in ', null, null],
      ['Paris', 1, null],
      ['.', null, null]
    ]);
    expect(segments.map(s => s.text).join('')).toBe(text);
  });
});

function task(id: number): LabelingTask {
  return {
    id,
    index: id - 1,
    status: 'assigned',
    assignee: 'alice',
    item: {
      id,
      kind: 'image',
      name: `${id}.png`,
      width: 10,
      height: 10,
      content_url: `/c/${id}`
    },
    result: null,
    prediction: null,
    prediction_model: null,
    review_comment: null,
    reviewer: null,
    updated_at: ''
  };
}

describe('task queue', () => {
  /** A server queue of task ids; `done` ones are not handed out. */
  function source(ids: number[], done = new Set<number>()) {
    const calls: (number | null)[] = [];
    return {
      calls,
      done,
      next: async (after: number | null) => {
        calls.push(after);
        const id = ids.find(i => !done.has(i) && (after === null || i > after));
        return id === undefined ? null : task(id);
      }
    };
  }

  it('prefetches the next task and its image while one is shown', async () => {
    const src = source([1, 2, 3]);
    const preloaded: number[] = [];
    const queue = new TaskQueue(src, t => preloaded.push(t.id));
    expect((await queue.start())?.id).toBe(1);
    await Promise.resolve();
    await Promise.resolve();
    expect(preloaded).toEqual([2]);
    expect(src.calls).toEqual([null, 1]);
    expect((await queue.forward())?.id).toBe(2);
    // The forward step used the prefetched task: no extra call for it.
    expect(src.calls).toEqual([null, 1, 2]);
  });

  it('steps back and forward through seen tasks, wraps to skipped ones', async () => {
    const src = source([1, 2, 3]);
    const queue = new TaskQueue(src);
    await queue.start();
    await queue.forward();
    await queue.forward();
    expect(queue.current?.id).toBe(3);
    expect(queue.back()?.id).toBe(2);
    expect(queue.back()?.id).toBe(1);
    expect(queue.back()).toBeNull();
    expect((await queue.forward())?.id).toBe(2);
    expect((await queue.forward())?.id).toBe(3);
    // 1 and 2 were skipped, 3 is submitted: the end wraps back to 1.
    src.done.add(3);
    expect((await queue.forward())?.id).toBe(1);
    // Everything done (2 was submitted after the prefetch): nothing left.
    src.done.add(1);
    src.done.add(2);
    queue.replace({ ...task(2), status: 'submitted' });
    expect(await queue.forward()).toBeNull();
    expect(queue.exhausted).toBe(true);
  });
});

describe('autosave', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('saves once after the last change and skips what is saved', async () => {
    const saves: [number, unknown][] = [];
    const saver = new Autosaver(async (id, result) => {
      saves.push([id, result]);
    }, 500);
    saver.schedule(1, { labels: ['a'] });
    jest.advanceTimersByTime(300);
    saver.schedule(1, { labels: ['b'] });
    jest.advanceTimersByTime(499);
    expect(saves).toEqual([]);
    jest.advanceTimersByTime(1);
    await saver.flush();
    expect(saves).toEqual([[1, { labels: ['b'] }]]);
    saver.schedule(1, { labels: ['b'] });
    expect(saver.pending).toBe(false);
  });

  it('saves the previous task at once when the task changes', async () => {
    const saves: number[] = [];
    const saver = new Autosaver(async id => {
      saves.push(id);
    }, 500);
    saver.schedule(1, { labels: ['a'] });
    saver.schedule(2, { labels: ['a'] });
    await Promise.resolve();
    await Promise.resolve();
    expect(saves).toEqual([1]);
  });

  it('reports a failed save', async () => {
    const errors: number[] = [];
    const saver = new Autosaver(async () => {
      throw new Error('409');
    }, 10);
    saver.onError = (_err, id) => errors.push(id);
    saver.schedule(7, { labels: ['a'] });
    expect(await saver.flush()).toBe(false);
    expect(errors).toEqual([7]);
  });
});

describe('panel forms', () => {
  it('builds the dataset request; texts by file type', () => {
    const form = {
      ...emptyDatasetForm('alice'),
      name: 'reviews',
      path: 'data/reviews.csv',
      textField: 'body'
    };
    expect(datasetFormToRequest(form).request).toEqual({
      name: 'reviews',
      path: 'data/reviews.csv',
      project: 'alice',
      kind: 'texts',
      text_field: 'body'
    });
    expect(datasetFormToRequest(emptyDatasetForm()).errors).toHaveProperty(
      'name'
    );
    expect(nameFromPath('data/Flowers 2/')).toBe('flowers-2');
    expect(nameFromPath('texts/reviews.csv')).toBe('reviews');
  });

  it('parses labels with hotkeys and builds the project request', () => {
    const { labels, problems } = parseLabels('cat, dog=d\nbird');
    expect(problems).toEqual([]);
    expect(labels.map(l => [l.name, l.hotkey])).toEqual([
      ['cat', '1'],
      ['dog', 'd'],
      ['bird', '2']
    ]);
    expect(parseLabels('cat=b').problems[0]).toContain('Hotkey "b"');
    expect(parseLabels('cat, cat').problems[0]).toContain('twice');
    const { request, errors } = projectFormToRequest({
      ...emptyProjectForm('alice'),
      name: 'pets',
      dataset: 'flowers',
      type: 'image-class',
      labels: 'cat, dog',
      multiLabel: true
    });
    expect(errors).toEqual({});
    expect(request).toMatchObject({
      name: 'pets',
      dataset: 'flowers',
      type: 'image-class',
      multi_label: true,
      review: true,
      project: 'alice'
    });
    expect(projectFormToRequest(emptyProjectForm()).errors).toMatchObject({
      name: expect.any(String),
      dataset: expect.any(String),
      labels: expect.any(String)
    });
  });

  it('draws progress and picks export formats', () => {
    const progress = {
      total: 10,
      new: 4,
      assigned: 2,
      submitted: 1,
      accepted: 3,
      rejected: 0,
      prelabeled: 0,
      by_user: {},
      by_label: { cat: 6, dog: 2 }
    };
    expect(progressSegments(progress).map(s => [s.status, s.percent])).toEqual([
      ['accepted', 30],
      ['submitted', 10],
      ['assigned', 20],
      ['new', 40]
    ]);
    expect(donePercent(progress)).toBe(40);
    const rows = labelRows(
      {
        labels: [
          { name: 'dog', color: '#111', hotkey: '1' },
          { name: 'cat', color: '#222', hotkey: '2' },
          { name: 'cow', color: '#333', hotkey: '3' }
        ]
      },
      progress
    );
    expect(rows.map(r => [r.name, r.count, r.percent])).toEqual([
      ['cat', 6, 100],
      ['dog', 2, (2 / 6) * 100],
      ['cow', 0, 0]
    ]);
    expect(exportFormats('image-bbox')[0]).toBe('coco');
    expect(exportFormats('text-ner')).not.toContain('coco');
    expect(assignRequest([], 'round_robin', '').error).toBeTruthy();
    expect(assignRequest(['a'], 'batch', '5').request).toEqual({
      users: ['a'],
      mode: 'batch',
      batch_size: 5
    });
  });
});
