/**
 * The "Resources" side panel: what runs now for this user (admins: a
 * checkbox for everyone's), what each holds, and its project's quota use;
 * a click opens the object's view. And the status-bar item with this
 * server's CPU / memory / GPUs.
 */
import { ReactWidget } from '@jupyterlab/apputils';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { Message } from '@lumino/messaging';
import { Poll } from '@lumino/polling';
import * as React from 'react';

import { ErrorBox } from '../errorbox';
import {
  describeError,
  LiveObject,
  resourcesNow,
  ResourcesNow,
  ServerTotals
} from '../../api';
import { holdsText, objectLabel, quotaText, serverSummary } from './logic';

/** How often the panel and the status bar read `/resources`. */
export const RESOURCES_INTERVAL_MS = 3000;

type ErrorText = { error: string; detail: string };

export class ResourcesPanel extends ReactWidget {
  constructor(options: ResourcesPanel.IOptions) {
    super();
    this.addClass('cube-ResourcesPanel');
    this._trans = options.translator.load('cube_lab');
    this._open = options.open;
    this.title.label = this._trans.__('Resources');
    this.title.caption = this._trans.__('What runs now and what it holds');
    this._poll = new Poll({
      auto: false,
      factory: () => this._tick(),
      frequency: { interval: RESOURCES_INTERVAL_MS, backoff: true, max: 60000 },
      name: 'cube-lab:resources',
      standby: () => !this.isVisible || 'when-hidden'
    });
  }

  refresh(): Promise<void> {
    return this._poll.refresh();
  }

  dispose(): void {
    if (!this.isDisposed) {
      this._poll.dispose();
    }
    super.dispose();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    if (!this._started) {
      this._started = true;
      void this._poll.start();
    } else {
      void this._poll.refresh();
    }
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (this.isVisible && !this._started) {
      this._started = true;
      void this._poll.start();
    }
  }

  protected render(): JSX.Element {
    return (
      <ResourcesList
        now={this._now}
        error={this._error}
        everyone={this._everyone}
        setEveryone={value => {
          this._everyone = value;
          void this.refresh();
        }}
        open={this._open}
        trans={this._trans}
      />
    );
  }

  private async _tick(): Promise<void> {
    try {
      this._now = await resourcesNow(this._everyone);
      this._error = null;
    } catch (err) {
      this._error = describeError(err);
      throw err;
    } finally {
      this.update();
    }
  }

  private _trans: TranslationBundle;
  private _open: (obj: LiveObject) => void;
  private _poll: Poll;
  private _started = false;
  private _everyone = false;
  private _now: ResourcesNow | null = null;
  private _error: ErrorText | null = null;
}

export namespace ResourcesPanel {
  export interface IOptions {
    translator: ITranslator;
    open: (obj: LiveObject) => void;
  }
}

function ResourcesList(props: {
  now: ResourcesNow | null;
  error: ErrorText | null;
  everyone: boolean;
  setEveryone: (value: boolean) => void;
  open: (obj: LiveObject) => void;
  trans: TranslationBundle;
}): JSX.Element {
  const { now, trans } = props;
  if (!now) {
    return (
      <div className="cube-Resources">
        {props.error ? (
          <ErrorBox error={props.error} />
        ) : (
          <div className="cube-Loading">
            <span className="cube-Spinner" /> {trans.__('Loading…')}
          </div>
        )}
      </div>
    );
  }
  const summary = serverSummary(now.server, trans);
  return (
    <div className="cube-Resources">
      <div className="cube-Resources-server" title={summary.title}>
        <span>{summary.cpu}</span>
        <span>{summary.memory}</span>
        {summary.gpus ? <span>{summary.gpus}</span> : null}
      </div>
      {now.admin ? (
        <label className="cube-Resources-all">
          <input
            type="checkbox"
            checked={props.everyone}
            onChange={e => props.setEveryone(e.currentTarget.checked)}
          />{' '}
          {trans.__("Everyone's")}
        </label>
      ) : null}
      {props.error ? <ErrorBox error={props.error} /> : null}
      {now.projects.map(use => {
        const objects = now.objects.filter(o => o.project === use.project);
        return (
          <section
            key={use.project}
            className="cube-Resources-project"
            data-project={use.project}
          >
            <h3>
              <span>{use.project}</span>
              <span className="cube-Resources-quota">
                {quotaText(use, trans)}
              </span>
            </h3>
            <ul className="cube-Resources-list">
              {objects.map(obj => (
                <li
                  key={`${obj.kind}:${obj.id}:${obj.node}`}
                  data-kind={obj.kind}
                  data-id={obj.id}
                >
                  <button
                    className="cube-Resources-item"
                    onClick={() => props.open(obj)}
                    title={trans.__('Open its view')}
                  >
                    <span className="cube-Resources-name">
                      {objectLabel(obj, trans)}
                    </span>
                    <span className="cube-Resources-holds">
                      {holdsText(obj, trans)}
                      {now.all ? ` · ${obj.user}` : ''}
                    </span>
                  </button>
                </li>
              ))}
            </ul>
          </section>
        );
      })}
      {!now.objects.length ? (
        <p className="cube-TMuted cube-Resources-empty">
          {trans.__(
            'Nothing of yours runs now. Running training jobs, pipeline nodes and tuning trials show here with what they hold.'
          )}
        </p>
      ) : null}
    </div>
  );
}

/** The status-bar item: this server's CPU, memory and GPUs. */
export class ServerStatus extends ReactWidget {
  constructor(translator: ITranslator) {
    super();
    this.addClass('cube-ServerStatus');
    this._trans = translator.load('cube_lab');
    this._poll = new Poll({
      auto: true,
      factory: () => this._tick(),
      frequency: { interval: RESOURCES_INTERVAL_MS, backoff: true, max: 60000 },
      name: 'cube-lab:server-status',
      standby: 'when-hidden'
    });
  }

  dispose(): void {
    if (!this.isDisposed) {
      this._poll.dispose();
    }
    super.dispose();
  }

  protected render(): JSX.Element {
    if (!this._totals) {
      return <span />;
    }
    const s = serverSummary(this._totals, this._trans);
    return (
      <span className="cube-ServerStatus-text" title={s.title}>
        {[s.cpu, s.memory, s.gpus].filter(Boolean).join(' · ')}
      </span>
    );
  }

  private async _tick(): Promise<void> {
    try {
      this._totals = (await resourcesNow()).server;
    } finally {
      this.update();
    }
  }

  private _trans: TranslationBundle;
  private _poll: Poll;
  private _totals: ServerTotals | null = null;
}
