/**
 * The "Deployments" section of the cube-lab sidebar: every deployment the
 * user can see with its status, traffic and endpoint URL (copy button), and
 * a "Remove" action on the failed, dead or stopped ones.
 * Polls while visible, faster while one is starting or updating.
 */
import { Clipboard } from '@jupyterlab/apputils';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { copyIcon, refreshIcon } from '@jupyterlab/ui-components';
import * as React from 'react';

import { ErrorBox } from '../errorbox';
import { EmptyState } from '../empty';
import {
  Deployment,
  describeError,
  listDeployments,
  undeploy
} from '../../api';
import { ICubeSettings } from '../../tokens';
import { PolledSection } from '../section';
import { describeTraffic, endAction, withoutDeployment } from './logic';
import { confirmRemove } from './remove';

const CHANGING_INTERVAL_MS = 1500;

export class DeploymentsPanel extends PolledSection {
  constructor(options: DeploymentsPanel.IOptions) {
    super({
      ...options,
      pollName: 'cube-lab:deployments',
      fastIntervalMs: CHANGING_INTERVAL_MS
    });
    this.addClass('cube-DeploymentsPanel');
    this._open = options.open;
    this._removed = options.removed ?? (() => undefined);
    this.title.label = this.trans.__('Deployments');
    this.title.caption = this.trans.__('Models served as inference services');
    this.addButton(
      'refresh',
      refreshIcon,
      this.trans.__('Refresh deployments'),
      () => void this.refresh()
    );
  }

  get deployments(): Deployment[] {
    return this._deployments;
  }

  protected render(): JSX.Element {
    const trans = this.trans;
    return (
      <div className="cube-Deployments">
        {this._error ? <ErrorBox error={this._error} /> : null}
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
                removing={this._removing.has(d.id)}
                remove={() => void this._remove(d)}
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
          <EmptyState
            title={trans.__('No deployments yet')}
            text={trans.__(
              'Open a model version in Models and press Deploy; it is served over the Open Inference Protocol on this machine.'
            )}
            notebook="%cube_deploy iris:1"
            terminal="cube-lab deploy iris:1"
            trans={trans}
          />
        )}
      </div>
    );
  }

  protected async fetch(): Promise<void> {
    try {
      this._deployments = (await listDeployments()).deployments;
      this._error = null;
    } catch (err) {
      this._error = describeError(err);
      throw err;
    } finally {
      this._loaded = true;
    }
  }

  /** Confirm, then DELETE a failed / dead / stopped deployment and drop it. */
  private async _remove(d: Deployment): Promise<void> {
    if (!(await confirmRemove(d, this.trans))) {
      return;
    }
    this._removing.add(d.id);
    this.update();
    try {
      const last = await undeploy(d.project, d.name);
      this._error = null;
      if (last.status === 'removed') {
        this._deployments = withoutDeployment(this._deployments, d);
        this._removed(last);
      }
    } catch (err) {
      this._error = describeError(err);
    } finally {
      this._removing.delete(d.id);
      this.update();
    }
    void this.refresh();
  }

  protected changing(): boolean {
    return this._deployments.some(
      d => d.status === 'starting' || d.status === 'updating'
    );
  }

  private _open: (d: Deployment) => void;
  private _removed: (last: Deployment) => void;
  private _removing = new Set<string>();
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
    /** A deployment was removed from here (its last state, status "removed"). */
    removed?: (last: Deployment) => void;
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
  remove: () => void;
  removing: boolean;
}): JSX.Element {
  const { d, trans } = props;
  const error =
    d.error && d.status !== 'stopped' && !d.endpoint ? d.error : null;
  const removable = endAction(d) === 'remove';
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
      ) : null}
      {error || removable ? (
        <span className="cube-DItem-foot">
          {error ? (
            <span className="cube-DItem-error" title={error}>
              {error}
            </span>
          ) : (
            <span className="cube-DItem-spacer" />
          )}
          {removable ? (
            <button
              className="cube-TLink cube-DRemove"
              onClick={props.remove}
              disabled={props.removing}
              title={trans.__(
                'Remove this %1 deployment: its record and log are deleted',
                d.status
              )}
            >
              {props.removing ? trans.__('Removing…') : trans.__('Remove')}
            </button>
          ) : null}
        </span>
      ) : null}
    </li>
  );
}
