/**
 * The "Deployments" section of the cube-lab sidebar: every deployment the
 * user can see with its status, traffic and endpoint URL (copy button).
 * Polls while visible, faster while one is starting or updating.
 */
import { Clipboard, ReactWidget } from '@jupyterlab/apputils';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import {
  copyIcon,
  refreshIcon,
  Toolbar,
  ToolbarButton
} from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { IPoll, Poll } from '@lumino/polling';
import * as React from 'react';

import { Deployment, describeError, listDeployments } from '../../api';
import { ICubeSettings } from '../../tokens';
import { describeTraffic } from './logic';

const MAX_BACKOFF_MS = 2 * 60 * 1000;
const CHANGING_INTERVAL_MS = 1500;

export class DeploymentsPanel extends ReactWidget {
  constructor(options: DeploymentsPanel.IOptions) {
    super();
    this.addClass('cube-DeploymentsPanel');
    this._trans = options.translator.load('cube_lab');
    this._settings = options.settings;
    this._open = options.open;
    this.title.label = this._trans.__('Deployments');
    this.title.caption = this._trans.__('Models served as inference services');
    this.toolbar = new Toolbar();
    this.toolbar.addItem(
      'refresh',
      new ToolbarButton({
        icon: refreshIcon,
        tooltip: this._trans.__('Refresh deployments'),
        onClick: () => void this.refresh()
      })
    );
    this._poll = new Poll({
      auto: false,
      factory: () => this._fetch(),
      frequency: this._frequency(),
      name: 'cube-lab:deployments',
      standby: () => !this.isVisible || 'when-hidden'
    });
    this._settings.changed.connect(this._retune, this);
  }

  readonly toolbar: Toolbar;

  get deployments(): Deployment[] {
    return this._deployments;
  }

  refresh(): Promise<void> {
    return this._poll.refresh();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._settings.changed.disconnect(this._retune, this);
    this._poll.dispose();
    super.dispose();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    if (!this._started) {
      this._started = true;
      void this._poll.start();
    }
    void this._poll.refresh();
  }

  protected render(): JSX.Element {
    const trans = this._trans;
    return (
      <div className="cube-Deployments">
        {this._error ? (
          <div className="cube-TError" role="alert">
            <div className="cube-TError-title">{this._error.error}</div>
            {this._error.detail ? (
              <div className="cube-TError-detail">{this._error.detail}</div>
            ) : null}
          </div>
        ) : null}
        {!this._loaded ? (
          <div className="cube-Loading">
            <span className="cube-Spinner" /> {trans.__('Loading deployments…')}
          </div>
        ) : this._deployments.length ? (
          <ul className="cube-DList" aria-label={trans.__('Deployments')}>
            {this._deployments.map(d => (
              <DeploymentItem
                key={d.id}
                d={d}
                trans={trans}
                open={() => this._open(d)}
                copied={this._copied === d.id}
                copy={() => {
                  if (d.endpoint) {
                    Clipboard.copyToSystem(d.endpoint);
                    this._copied = d.id;
                    this.update();
                    window.setTimeout(() => {
                      this._copied = null;
                      this.update();
                    }, 1500);
                  }
                }}
              />
            ))}
          </ul>
        ) : this._error ? null : (
          <div className="cube-TEmpty">
            <p className="cube-TEmpty-title">
              {trans.__('No deployments yet')}
            </p>
            <p className="cube-TEmpty-text">
              {trans.__(
                'Open a model version in Models and press Deploy; it is served over the Open Inference Protocol on this machine.'
              )}
            </p>
            <p className="cube-TEmpty-text">
              {trans.__('Or from a notebook:')} <code>%cube_deploy iris:1</code>
              <br />
              {trans.__('or a terminal:')} <code>cube-lab deploy iris:1</code>
            </p>
          </div>
        )}
      </div>
    );
  }

  private async _fetch(): Promise<void> {
    try {
      this._deployments = (await listDeployments()).deployments;
      this._error = null;
    } catch (err) {
      this._error = describeError(err);
      throw err;
    } finally {
      this._loaded = true;
      this._retune();
      this.update();
    }
  }

  private _frequency(): IPoll.Frequency {
    const changing = this._deployments.some(
      d => d.status === 'starting' || d.status === 'updating'
    );
    return {
      interval: changing
        ? Math.min(CHANGING_INTERVAL_MS, this._settings.refreshInterval)
        : this._settings.refreshInterval,
      backoff: true,
      max: MAX_BACKOFF_MS
    };
  }

  private _retune(): void {
    const next = this._frequency();
    if (next.interval !== this._poll.frequency.interval) {
      this._poll.frequency = next;
    }
  }

  private _trans: TranslationBundle;
  private _settings: ICubeSettings;
  private _open: (d: Deployment) => void;
  private _poll: Poll;
  private _started = false;
  private _loaded = false;
  private _deployments: Deployment[] = [];
  private _error: { error: string; detail: string } | null = null;
  private _copied: string | null = null;
}

export namespace DeploymentsPanel {
  export interface IOptions {
    settings: ICubeSettings;
    translator: ITranslator;
    /** Open the deployment's view in the main area. */
    open: (d: Deployment) => void;
  }
}

export function DeploymentBadge(props: { status: string }): JSX.Element {
  return (
    <span className={`cube-TBadge cube-DBadge-${props.status}`}>
      {props.status === 'running' ? (
        <span className="cube-TBadge-pulse" />
      ) : null}
      {props.status}
    </span>
  );
}

/** "v1 · v2 20%" */
export function TrafficSummary(props: {
  d: Deployment;
  trans: TranslationBundle;
}): JSX.Element {
  const parts = describeTraffic(props.d);
  return (
    <span className="cube-DTraffic">
      {parts.map(p => (
        <span key={p.version} className={`cube-DTraffic-${p.role}`}>
          v{p.version}
          {p.role === 'shadow'
            ? ` ${props.trans.__('shadow')}`
            : parts.length > 1
              ? ` ${Math.round(p.weight)}%`
              : ''}
        </span>
      ))}
    </span>
  );
}

function DeploymentItem(props: {
  d: Deployment;
  trans: TranslationBundle;
  open: () => void;
  copy: () => void;
  copied: boolean;
}): JSX.Element {
  const { d, trans } = props;
  return (
    <li className="cube-DItem" data-deployment={d.name} data-status={d.status}>
      <button
        className="cube-DItem-main"
        onClick={props.open}
        title={trans.__('Open deployment %1', d.name)}
      >
        <span className="cube-DItem-line">
          <span className="cube-DItem-name">{d.name}</span>
          <DeploymentBadge status={d.status} />
        </span>
        <span className="cube-DItem-meta">
          {d.model} · <TrafficSummary d={d} trans={trans} />
          {d.replicas > 1 ? ` · ${trans.__('%1 replicas', d.replicas)}` : ''}
          {d.project !== d.owner ? ` · ${d.project}` : ''}
        </span>
      </button>
      {d.endpoint ? (
        <span className="cube-DItem-endpoint">
          <code title={d.endpoint}>{d.endpoint}</code>
          <button
            className="cube-IconButton cube-DCopy"
            onClick={props.copy}
            title={trans.__('Copy the endpoint URL')}
            aria-label={trans.__('Copy the endpoint URL')}
          >
            {props.copied ? (
              <span className="cube-DCopied">{trans.__('copied')}</span>
            ) : (
              <copyIcon.react tag="span" />
            )}
          </button>
        </span>
      ) : d.error && d.status !== 'stopped' ? (
        <span className="cube-DItem-error" title={d.error}>
          {d.error}
        </span>
      ) : null}
    </li>
  );
}
