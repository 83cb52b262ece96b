/**
 * The annotator's way through its queue, apart from the DOM so it can be
 * tested: the tasks seen (back / forward), the next task fetched (and its
 * image preloaded) while the current one is shown, and the debounced
 * autosave of drafts.
 */
import type { LabelingResult, LabelingTask } from '../../api';
import { sameResult } from './result';

/** The server calls the queue needs (the real ones or fakes in tests). */
export interface IQueueSource {
  /** The next task after `after` (or the first one), null when none. */
  next(after: number | null): Promise<LabelingTask | null>;
}

export class TaskQueue {
  constructor(
    private readonly _source: IQueueSource,
    /** Start loading what the task shows (its image) before it is shown. */
    private readonly _preload: (task: LabelingTask) => void = () => undefined
  ) {}

  get current(): LabelingTask | null {
    return this._pos >= 0 ? this._seen[this._pos] : null;
  }

  get canGoBack(): boolean {
    return this._pos > 0;
  }

  /** How many tasks were shown so far (the position is 1-based). */
  get position(): number {
    return this._pos + 1;
  }

  /** True once the server had nothing more (until something is saved). */
  get exhausted(): boolean {
    return this._exhausted;
  }

  /** True when the task after the current one is fetched already. */
  get hasAhead(): boolean {
    const current = this.current;
    if (!current) {
      return false;
    }
    if (this._pos < this._seen.length - 1) {
      return true;
    }
    return (
      !!this._ahead &&
      this._ahead.after === current.id &&
      !!this._ahead.resolved
    );
  }

  /** The first task of the queue (null when the queue is empty). */
  async start(): Promise<LabelingTask | null> {
    this._seen = [];
    this._pos = -1;
    this._ahead = null;
    const task = await this._source.next(null);
    if (task) {
      this._seen.push(task);
      this._pos = 0;
      this.prefetch();
    }
    this._exhausted = task === null;
    return task;
  }

  /**
   * Fetch the task after the current one now (and preload its image), so
   * going forward needs no round trip.
   */
  prefetch(): void {
    const current = this.current;
    if (!current || this._pos < this._seen.length - 1) {
      return;
    }
    if (this._ahead && this._ahead.after === current.id) {
      return;
    }
    const ahead: TaskQueue.IAhead = {
      after: current.id,
      resolved: null,
      task: this._source.next(current.id).then(
        task => {
          if (task) {
            this._preload(task);
          }
          ahead.resolved = task;
          return task;
        },
        () => {
          // A failed prefetch is retried by forward().
          if (this._ahead === ahead) {
            this._ahead = null;
          }
          return undefined;
        }
      )
    };
    this._ahead = ahead;
  }

  /**
   * Go to the next task: one already seen after a step back, else the
   * prefetched one, else the server's; at the end of the queue wrap to a
   * task skipped earlier. Null when nothing is left.
   */
  async forward(): Promise<LabelingTask | null> {
    if (this._pos < this._seen.length - 1) {
      this._pos++;
      this.prefetch();
      return this.current;
    }
    const current = this.current;
    let task: LabelingTask | null | undefined;
    if (current && this._ahead && this._ahead.after === current.id) {
      task = await this._ahead.task;
      // Submitted since it was fetched (e.g. seen before): ask again.
      if (
        task &&
        this._seen.some(t => t.id === task!.id && t.status !== 'assigned')
      ) {
        task = undefined;
      }
    }
    if (task === undefined) {
      task = await this._source.next(current ? current.id : null);
    }
    if (!task && current) {
      // Nothing after this one: a task skipped before it may be left.
      const first = await this._source.next(null);
      task = first && first.id !== current.id ? first : null;
    }
    this._ahead = null;
    if (!task) {
      this._exhausted = true;
      return null;
    }
    this._exhausted = false;
    this._seen.push(task);
    this._pos = this._seen.length - 1;
    this.prefetch();
    return task;
  }

  /** Step back to the task seen before (null at the first one). */
  back(): LabelingTask | null {
    if (this._pos <= 0) {
      return null;
    }
    this._pos--;
    return this.current;
  }

  /** Keep the server's latest copy of a task (after a save or submit). */
  replace(task: LabelingTask): void {
    this._seen = this._seen.map(t => (t.id === task.id ? task : t));
  }

  private _seen: LabelingTask[] = [];
  private _pos = -1;
  private _exhausted = false;
  private _ahead: TaskQueue.IAhead | null = null;
}

export namespace TaskQueue {
  /** The task after `after`, being fetched (`resolved` once it is there). */
  export interface IAhead {
    after: number;
    resolved: LabelingTask | null;
    task: Promise<LabelingTask | null | undefined>;
  }
}

/**
 * Saves the draft of a task some time after the last change, skipping
 * what the server already has. `flush` saves a pending change now.
 */
export class Autosaver {
  constructor(
    private readonly _save: (
      taskId: number,
      result: LabelingResult
    ) => Promise<unknown>,
    readonly delayMs = 800
  ) {}

  /** The server's copy of a task's result (what needs no saving). */
  saved(taskId: number, result: LabelingResult): void {
    this._saved.set(taskId, result);
  }

  get pending(): boolean {
    return this._pending !== null;
  }

  schedule(taskId: number, result: LabelingResult): void {
    const last = this._saved.get(taskId);
    if (this._pending && this._pending.taskId !== taskId) {
      void this.flush();
    }
    if (last && sameResult(last, result)) {
      this._cancel();
      return;
    }
    this._cancel();
    this._pending = {
      taskId,
      result,
      timer: setTimeout(() => void this.flush(), this.delayMs)
    };
  }

  /**
   * Save the pending draft now. Resolves once it is stored (true) or the
   * save failed (false, the error goes to `onError`).
   */
  async flush(): Promise<boolean> {
    const pending = this._pending;
    if (!pending) {
      return (await this._inflight) ?? true;
    }
    this._cancel();
    const before = this._inflight;
    const run = (async () => {
      await before;
      try {
        await this._save(pending.taskId, pending.result);
        this._saved.set(pending.taskId, pending.result);
        return true;
      } catch (err) {
        this.onError(err, pending.taskId);
        return false;
      }
    })();
    this._inflight = run;
    return run;
  }

  /** Called with what a failed save threw. */
  onError: (err: unknown, taskId: number) => void = () => undefined;

  /** Forget a pending draft (the task was submitted with it). */
  drop(taskId: number): void {
    if (this._pending?.taskId === taskId) {
      this._cancel();
    }
  }

  dispose(): void {
    this._cancel();
  }

  private _cancel(): void {
    if (this._pending) {
      clearTimeout(this._pending.timer);
      this._pending = null;
    }
  }

  private _saved = new Map<number, LabelingResult>();
  private _pending: {
    taskId: number;
    result: LabelingResult;
    timer: ReturnType<typeof setTimeout>;
  } | null = null;
  private _inflight: Promise<boolean> | null = null;
}
