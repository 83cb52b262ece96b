/**
 * The annotation being edited, per task type: read from the server's
 * `result`, changed by the annotator, written back in the contract's shape
 * (`{"labels"}`, `{"boxes"}` or `{"spans"}`). Model proposals (`prediction`)
 * stay apart until the annotator accepts them.
 */
import type {
  BoxAnnotation,
  LabelingPrediction,
  LabelingResult,
  LabelingTaskType,
  SpanAnnotation
} from '../../api';
import { finishRect, Size } from './geometry';

/** What the annotator edits: every list present, whatever the type. */
export interface Draft {
  labels: string[];
  boxes: BoxAnnotation[];
  spans: SpanAnnotation[];
}

export function emptyDraft(): Draft {
  return { labels: [], boxes: [], spans: [] };
}

export function isClassType(type: LabelingTaskType): boolean {
  return type === 'image-class' || type === 'text-class';
}

export function isImageType(type: LabelingTaskType): boolean {
  return type === 'image-class' || type === 'image-bbox';
}

/** Read a stored result (or null) into a draft; unknown keys are dropped. */
export function draftFromResult(
  result: LabelingResult | null | undefined
): Draft {
  const draft = emptyDraft();
  if (!result) {
    return draft;
  }
  if (Array.isArray(result.labels)) {
    draft.labels = result.labels.filter(l => typeof l === 'string');
  }
  if (Array.isArray(result.boxes)) {
    draft.boxes = result.boxes.map(b => ({
      label: b.label,
      x: b.x,
      y: b.y,
      w: b.w,
      h: b.h
    }));
  }
  if (Array.isArray(result.spans)) {
    draft.spans = result.spans.map(s => ({
      label: s.label,
      start: s.start,
      end: s.end,
      text: s.text
    }));
  }
  return draft;
}

/**
 * The `result` to PUT: only the key of the task type, boxes cut to the
 * image and rounded to whole pixels, spans in text order.
 */
export function serializeDraft(
  type: LabelingTaskType,
  draft: Draft,
  image?: Size | null
): LabelingResult {
  switch (type) {
    case 'image-class':
    case 'text-class':
      return { labels: [...new Set(draft.labels)] };
    case 'image-bbox': {
      const boxes: BoxAnnotation[] = [];
      for (const b of draft.boxes) {
        const rect = image
          ? finishRect(b, image)
          : {
              x: Math.round(b.x),
              y: Math.round(b.y),
              w: Math.round(b.w),
              h: Math.round(b.h)
            };
        if (rect && rect.w > 0 && rect.h > 0) {
          boxes.push({ label: b.label, ...rect });
        }
      }
      return { boxes };
    }
    case 'text-ner':
      return {
        spans: [...draft.spans]
          .sort((a, b) => a.start - b.start || a.end - b.end)
          .map(s => ({
            label: s.label,
            start: s.start,
            end: s.end,
            text: s.text
          }))
      };
  }
}

/** True when two serialised results say the same thing (autosave skips). */
export function sameResult(a: LabelingResult, b: LabelingResult): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** True when nothing is annotated yet. */
export function isDraftEmpty(type: LabelingTaskType, draft: Draft): boolean {
  if (isClassType(type)) {
    return draft.labels.length === 0;
  }
  return type === 'image-bbox'
    ? draft.boxes.length === 0
    : draft.spans.length === 0;
}

/**
 * Press a label on a class task: single-label sets it (pressing it again
 * clears it), multi-label toggles it.
 */
export function toggleLabel(
  draft: Draft,
  label: string,
  multi: boolean
): Draft {
  const has = draft.labels.includes(label);
  let labels: string[];
  if (multi) {
    labels = has
      ? draft.labels.filter(l => l !== label)
      : [...draft.labels, label];
  } else {
    labels = has && draft.labels.length === 1 ? [] : [label];
  }
  return { ...draft, labels };
}

/* ------------------------------------------------------------------------ */
/* Suggestions (the model's prediction)                                      */
/* ------------------------------------------------------------------------ */

export interface ClassSuggestion {
  label: string;
  score: number | null;
}

/**
 * The suggested labels of a class task, best first. Reads
 * `{"labels": [...], "scores": [...]}` and `{"labels": [{"label", "score"}]}`.
 */
export function suggestedLabels(
  prediction: LabelingPrediction | null | undefined
): ClassSuggestion[] {
  if (!prediction || !Array.isArray(prediction.labels)) {
    return [];
  }
  const scores = prediction.scores;
  const out: ClassSuggestion[] = [];
  prediction.labels.forEach((entry, i) => {
    let label: string | undefined;
    let score: number | null = null;
    if (typeof entry === 'string') {
      label = entry;
      if (Array.isArray(scores) && typeof scores[i] === 'number') {
        score = scores[i];
      } else if (
        scores &&
        !Array.isArray(scores) &&
        typeof scores[entry] === 'number'
      ) {
        score = scores[entry];
      }
    } else if (entry && typeof entry === 'object') {
      label = entry.label ?? entry.name;
      score = typeof entry.score === 'number' ? entry.score : null;
    }
    if (label) {
      out.push({ label, score });
    }
  });
  return out.sort((a, b) => (b.score ?? -1) - (a.score ?? -1));
}

export function suggestedBoxes(
  prediction: LabelingPrediction | null | undefined
): BoxAnnotation[] {
  return Array.isArray(prediction?.boxes) ? prediction!.boxes : [];
}

export function suggestedSpans(
  prediction: LabelingPrediction | null | undefined
): SpanAnnotation[] {
  return Array.isArray(prediction?.spans) ? prediction!.spans : [];
}

function sameBox(a: BoxAnnotation, b: BoxAnnotation): boolean {
  return (
    a.label === b.label &&
    Math.abs(a.x - b.x) < 0.5 &&
    Math.abs(a.y - b.y) < 0.5 &&
    Math.abs(a.w - b.w) < 0.5 &&
    Math.abs(a.h - b.h) < 0.5
  );
}

/** The suggested boxes not taken over yet (what is drawn dashed). */
export function openBoxSuggestions(
  draft: Draft,
  prediction: LabelingPrediction | null | undefined,
  image?: Size | null
): BoxAnnotation[] {
  return suggestedBoxes(prediction).filter(s => {
    const rect = image ? finishRect(s, image) : s;
    return !draft.boxes.some(b => sameBox(b, { ...s, ...(rect ?? s) }));
  });
}

export function openSpanSuggestions(
  draft: Draft,
  prediction: LabelingPrediction | null | undefined
): SpanAnnotation[] {
  return suggestedSpans(prediction).filter(
    s =>
      !draft.spans.some(
        d => d.start === s.start && d.end === s.end && d.label === s.label
      ) && !draft.spans.some(d => d.start < s.end && s.start < d.end)
  );
}

/**
 * Take the model's proposals into the draft (the annotator corrects them
 * afterwards): class tasks get the best label (all of them when multi-label),
 * boxes and spans are added, without their scores.
 */
export function acceptSuggestions(
  type: LabelingTaskType,
  draft: Draft,
  prediction: LabelingPrediction | null | undefined,
  multi: boolean,
  image?: Size | null
): Draft {
  if (isClassType(type)) {
    const labels = suggestedLabels(prediction).map(s => s.label);
    if (!labels.length) {
      return draft;
    }
    return {
      ...draft,
      labels: multi ? [...new Set([...draft.labels, ...labels])] : [labels[0]]
    };
  }
  if (type === 'image-bbox') {
    const add = openBoxSuggestions(draft, prediction, image).map(s => {
      const rect = image ? finishRect(s, image) : s;
      return rect
        ? { label: s.label, x: rect.x, y: rect.y, w: rect.w, h: rect.h }
        : null;
    });
    const boxes = add.filter((b): b is BoxAnnotation => b !== null);
    return boxes.length
      ? { ...draft, boxes: [...draft.boxes, ...boxes] }
      : draft;
  }
  let spans = draft.spans;
  for (const s of openSpanSuggestions(draft, prediction)) {
    spans = addSpan(spans, {
      label: s.label,
      start: s.start,
      end: s.end,
      text: s.text
    });
  }
  return spans === draft.spans ? draft : { ...draft, spans };
}

/** Take one suggested box. */
export function acceptBox(
  draft: Draft,
  box: BoxAnnotation,
  image?: Size | null
): Draft {
  const rect = image ? finishRect(box, image) : box;
  if (!rect) {
    return draft;
  }
  return {
    ...draft,
    boxes: [
      ...draft.boxes,
      { label: box.label, x: rect.x, y: rect.y, w: rect.w, h: rect.h }
    ]
  };
}

/* ------------------------------------------------------------------------ */
/* Named-entity spans                                                        */
/* ------------------------------------------------------------------------ */

/**
 * A span for the characters [start, end) of `text` with the surrounding
 * white space trimmed off; null when nothing but white space is selected.
 */
export function spanFromOffsets(
  text: string,
  start: number,
  end: number,
  label: string
): SpanAnnotation | null {
  let s = Math.max(0, Math.min(start, end));
  let e = Math.min(text.length, Math.max(start, end));
  while (s < e && /\s/.test(text[s])) {
    s++;
  }
  while (e > s && /\s/.test(text[e - 1])) {
    e--;
  }
  if (e <= s) {
    return null;
  }
  return { label, start: s, end: e, text: text.slice(s, e) };
}

/** Add a span; spans it overlaps are replaced (entities do not nest). */
export function addSpan(
  spans: SpanAnnotation[],
  span: SpanAnnotation
): SpanAnnotation[] {
  const kept = spans.filter(s => s.end <= span.start || s.start >= span.end);
  return [...kept, span].sort((a, b) => a.start - b.start);
}

/** A run of the text: plain, or inside a span (its index in `spans`). */
export interface TextSegment {
  start: number;
  end: number;
  text: string;
  span: number | null;
  suggestion: number | null;
}

/**
 * Cut the text into runs for display: the human's spans, the model's open
 * suggestions (dotted) and plain text between them.
 */
export function segmentText(
  text: string,
  spans: SpanAnnotation[],
  suggestions: SpanAnnotation[] = []
): TextSegment[] {
  type Mark = {
    start: number;
    end: number;
    span: number | null;
    suggestion: number | null;
  };
  const marks: Mark[] = [];
  spans.forEach((s, i) =>
    marks.push({ start: s.start, end: s.end, span: i, suggestion: null })
  );
  suggestions.forEach((s, i) => {
    if (!marks.some(m => m.start < s.end && s.start < m.end)) {
      marks.push({ start: s.start, end: s.end, span: null, suggestion: i });
    }
  });
  marks.sort((a, b) => a.start - b.start);
  const out: TextSegment[] = [];
  let at = 0;
  for (const m of marks) {
    const start = Math.max(m.start, at);
    const end = Math.min(m.end, text.length);
    if (end <= start) {
      continue;
    }
    if (start > at) {
      out.push({
        start: at,
        end: start,
        text: text.slice(at, start),
        span: null,
        suggestion: null
      });
    }
    out.push({
      start,
      end,
      text: text.slice(start, end),
      span: m.span,
      suggestion: m.suggestion
    });
    at = end;
  }
  if (at < text.length) {
    out.push({
      start: at,
      end: text.length,
      text: text.slice(at),
      span: null,
      suggestion: null
    });
  }
  return out;
}

/** Labels used in a draft, counted (for the side panel). */
export function countLabels(
  type: LabelingTaskType,
  draft: Draft
): Map<string, number> {
  const counts = new Map<string, number>();
  const names = isClassType(type)
    ? draft.labels
    : type === 'image-bbox'
      ? draft.boxes.map(b => b.label)
      : draft.spans.map(s => s.label);
  for (const n of names) {
    counts.set(n, (counts.get(n) ?? 0) + 1);
  }
  return counts;
}
