/**
 * The annotator's keyboard: a key press -> an action. Pure, so the mapping
 * is tested without a browser.
 */
import type { LabelSpec } from '../../api';

export type AnnotatorAction =
  | { kind: 'label'; label: string }
  | { kind: 'next' }
  | { kind: 'previous' }
  | { kind: 'submit' }
  | { kind: 'box-tool' }
  | { kind: 'delete' }
  | { kind: 'undo' }
  | { kind: 'redo' }
  | { kind: 'accept-suggestions' }
  | { kind: 'deselect' }
  | { kind: 'review-accept' }
  | { kind: 'review-reject' }
  | { kind: 'fit' };

/** The parts of a KeyboardEvent the mapping looks at. */
export interface IKeyPress {
  key: string;
  code?: string;
  ctrlKey?: boolean;
  metaKey?: boolean;
  altKey?: boolean;
  shiftKey?: boolean;
}

export type AnnotatorMode = 'annotate' | 'review';

/** Hotkey (lower case) -> label name. The first label wins a clash. */
export function hotkeyMap(labels: LabelSpec[]): Map<string, string> {
  const map = new Map<string, string>();
  labels.forEach((label, i) => {
    const key = (label.hotkey || (i < 9 ? String(i + 1) : '')).toLowerCase();
    if (key && !map.has(key)) {
      map.set(key, label.name);
    }
  });
  return map;
}

/** The hotkey shown on a label's button ('' when it has none). */
export function hotkeyOf(labels: LabelSpec[], name: string): string {
  for (const [key, label] of hotkeyMap(labels)) {
    if (label === name) {
      return key;
    }
  }
  return '';
}

/** Keys the annotator uses itself: a label hotkey must not take them. */
export const RESERVED_KEYS = new Set(['a', 'b', 'f', 'r']);

/**
 * Map a key press to an action, or null to let it through.
 *
 * `labels` is the hotkey map; in review mode the labels are read-only.
 */
export function keyAction(
  press: IKeyPress,
  labels: Map<string, string>,
  mode: AnnotatorMode
): AnnotatorAction | null {
  const mod = !!(press.ctrlKey || press.metaKey);
  const key = press.key.length === 1 ? press.key.toLowerCase() : press.key;
  if (mod && !press.altKey) {
    if (key === 'z') {
      return press.shiftKey ? { kind: 'redo' } : { kind: 'undo' };
    }
    if (key === 'y') {
      return { kind: 'redo' };
    }
    if (key === 'Enter') {
      return mode === 'review' ? { kind: 'review-reject' } : null;
    }
    return null;
  }
  if (press.altKey || mod) {
    return null;
  }
  switch (key) {
    case 'ArrowRight':
      return { kind: 'next' };
    case 'ArrowLeft':
      return { kind: 'previous' };
    case 'Enter':
      return mode === 'review' ? { kind: 'review-accept' } : { kind: 'submit' };
    case 'Escape':
      return { kind: 'deselect' };
    case 'f':
      return { kind: 'fit' };
  }
  if (mode === 'review') {
    if (key === 'a') {
      return { kind: 'review-accept' };
    }
    if (key === 'r') {
      return { kind: 'review-reject' };
    }
    return null;
  }
  if (key === 'Delete' || key === 'Backspace') {
    return { kind: 'delete' };
  }
  if (key === 'b') {
    return { kind: 'box-tool' };
  }
  if (key === 'a') {
    return { kind: 'accept-suggestions' };
  }
  // Digits also by code, so 1-9 work whatever the keyboard layout.
  const digit = /^Digit([0-9])$/.exec(press.code ?? '');
  const label = labels.get(key) ?? (digit ? labels.get(digit[1]) : undefined);
  if (label !== undefined) {
    return { kind: 'label', label };
  }
  return null;
}
