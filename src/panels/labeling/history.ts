/**
 * Undo / redo of the annotator: snapshots of the (immutable) annotation,
 * one per user action; a drag pushes once, when it starts.
 */
export class UndoStack<T> {
  constructor(readonly limit = 200) {}

  get canUndo(): boolean {
    return this._past.length > 0;
  }

  get canRedo(): boolean {
    return this._future.length > 0;
  }

  /** Remember `state` (the one before a change); a new change drops the redo list. */
  push(state: T): void {
    this._past.push(state);
    if (this._past.length > this.limit) {
      this._past.shift();
    }
    this._future = [];
  }

  /** The state to go back to (`current` goes to the redo list), or null. */
  undo(current: T): T | null {
    const previous = this._past.pop();
    if (previous === undefined) {
      return null;
    }
    this._future.push(current);
    return previous;
  }

  redo(current: T): T | null {
    const next = this._future.pop();
    if (next === undefined) {
      return null;
    }
    this._past.push(current);
    return next;
  }

  clear(): void {
    this._past = [];
    this._future = [];
  }

  private _past: T[] = [];
  private _future: T[] = [];
}
