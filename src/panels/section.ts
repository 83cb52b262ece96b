/**
 * The base of a polled side panel list (Training, Tuning, Deployments,
 * Labeling): a toolbar (shown in the side panel's header), and a poll that
 * reads the list while it is visible, at the shared refresh interval, faster
 * while something it shows is changing, backing off when the server does not
 * answer.
 */
import { ReactWidget } from '@jupyterlab/apputils';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { LabIcon, Toolbar, ToolbarButton } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { IPoll, Poll } from '@lumino/polling';

import { ICubeSettings } from '../tokens';

const MAX_BACKOFF_MS = 2 * 60 * 1000;

export abstract class PolledSection extends ReactWidget {
  constructor(options: PolledSection.IOptions) {
    super();
    this.trans = options.translator.load('cube_lab');
    this.settings = options.settings;
    this._fastMs = options.fastIntervalMs ?? options.settings.refreshInterval;
    this.toolbar = new Toolbar();
    this._poll = new Poll({
      auto: false,
      factory: () => this._tick(),
      // subclass fields are not set yet: the first read retunes
      frequency: this._frequency(false),
      name: options.pollName,
      standby: () => !this.isVisible || 'when-hidden'
    });
    this.settings.changed.connect(this._retune, this);
  }

  readonly toolbar: Toolbar;

  /** Read again now. */
  refresh(): Promise<void> {
    return this._poll.refresh();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.settings.changed.disconnect(this._retune, this);
    this._poll.dispose();
    super.dispose();
  }

  /** Read the section's data; the poll calls it, and re-renders after. */
  protected abstract fetch(): Promise<void>;

  /** True while something shown is changing: read at the fast interval. */
  protected changing(): boolean {
    return false;
  }

  /** A toolbar button. */
  protected addButton(
    name: string,
    icon: LabIcon,
    tooltip: string,
    onClick: () => void
  ): void {
    this.toolbar.addItem(name, new ToolbarButton({ icon, tooltip, onClick }));
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    if (!this._started) {
      this._started = true;
      void this._poll.start();
    }
    void this._poll.refresh();
  }

  protected readonly trans: TranslationBundle;
  protected readonly settings: ICubeSettings;

  private async _tick(): Promise<void> {
    try {
      await this.fetch();
    } finally {
      this._retune();
      this.update();
    }
  }

  private _frequency(changing: boolean): IPoll.Frequency {
    const every = this.settings.refreshInterval;
    return {
      interval: changing ? Math.min(this._fastMs, every) : every,
      backoff: true,
      max: MAX_BACKOFF_MS
    };
  }

  private _retune(): void {
    const next = this._frequency(this.changing());
    if (next.interval !== this._poll.frequency.interval) {
      this._poll.frequency = next;
    }
  }

  private _poll: Poll;
  private _fastMs: number;
  private _started = false;
}

export namespace PolledSection {
  export interface IOptions {
    settings: ICubeSettings;
    translator: ITranslator;
    /** The poll's name, e.g. 'cube-lab:training'. */
    pollName: string;
    /** The interval while `changing()` (default: the shared interval). */
    fastIntervalMs?: number;
  }
}
