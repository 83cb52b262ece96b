/**
 * One deployment in the main area: status and endpoint, a test form (an OIP
 * v2 request built from the served model's metadata, editable JSON, the
 * answer and its latency), the traffic split (canary slider, promote,
 * roll back), live QPS / error / latency charts from the router's Prometheus
 * counters (read every 2 s, rates computed here), opt-in request samples, the
 * log followed live, who may call it (API keys, auth, rate limit, address
 * lists), and undeploy; a failed, dead or stopped deployment can
 * be removed, after which the view says so (and stops polling).
 */
import {
  Clipboard,
  Dialog,
  ReactWidget,
  showDialog
} from '@jupyterlab/apputils';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { copyIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Poll } from '@lumino/polling';
import * as React from 'react';

import { ErrorBox } from '../errorbox';
import {
  changeTraffic,
  CubeApiError,
  Deployment,
  deploymentLog,
  deploymentMetrics,
  deploymentModelMetadata,
  describeError,
  getDeployment,
  inferDeployment,
  InferAnswer,
  isDeploymentActive,
  TrafficAction,
  undeploy
} from '../../api';
import { LineChart } from '../training/chart';
import { formatNumber } from '../training/logic';
import {
  canaryPercent,
  endAction,
  exampleText,
  formatRate,
  ITensorMeta,
  metadataInputs,
  parseRequestBody,
  prettyJson,
  RateHistory,
  readCounters,
  summarizeAnswer
} from './logic';
import { AccessSection } from './access';
import { DeploymentBadge, TrafficSummary } from './panel';
import { confirmRemove } from './remove';
import { SamplesSection } from './samples';

/** The issue asks for metrics every 2 s. */
const LIVE_INTERVAL_MS = 2000;
const MAX_BACKOFF_MS = 60 * 1000;
/** Log kept in the view at most (characters); older text is dropped. */
const MAX_LOG_CHARS = 200 * 1000;

type ErrorText = { error: string; detail: string };

interface ISent {
  answer: InferAnswer | null;
  error: ErrorText | null;
  ms: number;
}

export class DeploymentView extends ReactWidget {
  constructor(options: DeploymentView.IOptions) {
    super();
    this.addClass('cube-DView');
    this.project = options.project;
    this.name = options.name;
    this._trans = options.translator.load('cube_lab');
    this._openModel = options.openModel;
    this._openChat = options.openChat ?? null;
    this._changed = options.changed;
    this._close = options.close ?? (() => this.dispose());
    this.title.label = options.name;
    this._poll = new Poll({
      auto: false,
      factory: () => this._tick(),
      frequency: {
        interval: LIVE_INTERVAL_MS,
        backoff: true,
        max: MAX_BACKOFF_MS
      },
      name: `cube-lab:deployment:${options.project}/${options.name}`,
      standby: () => !this.isVisible || 'when-hidden'
    });
  }

  readonly project: string;
  readonly name: string;

  get deployment(): Deployment | null {
    return this._dep;
  }

  /** True once the deployment was removed (here, from the list, or elsewhere). */
  get removed(): boolean {
    return this._removed;
  }

  refresh(): Promise<void> {
    return this._removed ? Promise.resolve() : this._poll.refresh();
  }

  /**
   * The deployment is gone (`last`: its last state, status "removed"): say
   * so, keep the log read so far, and stop asking the server about it.
   */
  markRemoved(last?: Deployment): void {
    if (this._removed || this.isDisposed) {
      return;
    }
    this._removed = true;
    const base = last ?? this._dep;
    if (base) {
      this._dep = { ...base, status: 'removed', endpoint: null };
    }
    this._loadError = null;
    this._actionError = null;
    this.title.caption = this._trans.__('Deployment %1 (removed)', this.name);
    this._poll.dispose();
    this.update();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._poll.dispose();
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (!this._started) {
      this._started = true;
      void this._poll.start();
    }
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    if (this._started) {
      void this._poll.refresh();
    }
  }

  protected render(): JSX.Element {
    const trans = this._trans;
    const d = this._dep;
    if (!d) {
      return (
        <div className="cube-DDetail">
          {this._loadError ? (
            <ErrorBox error={this._loadError} />
          ) : (
            <div className="cube-Loading">
              <span className="cube-Spinner" />{' '}
              {trans.__('Loading the deployment…')}
            </div>
          )}
        </div>
      );
    }
    const removed = this._removed;
    const active = !removed && isDeploymentActive(d);
    const action = removed ? null : endAction(d);
    return (
      <div
        className="cube-DDetail"
        data-deployment={d.name}
        data-status={d.status}
      >
        <header className="cube-TJobHead">
          <div className="cube-TJobHead-title">
            <h2>{d.name}</h2>
            <DeploymentBadge status={d.status} />
            <span className="cube-TMuted">
              {d.model} · <TrafficSummary d={d} trans={trans} />
            </span>
          </div>
          <div className="cube-TJobHead-actions">
            <button
              className="cube-Button"
              onClick={() => this._openModel(d.project, d.model, d.version)}
              title={trans.__('Show the model version in the registry')}
            >
              {trans.__('Open model')}
            </button>
            {active && d.runtime === 'llm' && this._openChat ? (
              <button
                className="cube-Button"
                name="chat"
                onClick={() => this._openChat?.(d.project, d.name)}
                title={trans.__('Chat with this language model')}
              >
                {trans.__('Chat')}
              </button>
            ) : null}
            {action === 'remove' ? (
              <button
                className="cube-Button cube-DDanger"
                disabled={this._busy !== null}
                onClick={() => void this._remove()}
                title={trans.__(
                  'Delete this deployment’s record and log (it is %1)',
                  d.status
                )}
              >
                {this._busy === 'remove' ? (
                  <span className="cube-TBusy">
                    <span className="cube-Spinner" /> {trans.__('Removing…')}
                  </span>
                ) : (
                  trans.__('Remove')
                )}
              </button>
            ) : null}
            {removed ? (
              <button
                className="cube-Button"
                onClick={() => this._close()}
                title={trans.__('Close this tab')}
              >
                {trans.__('Close')}
              </button>
            ) : null}
            {action === 'undeploy' ? (
              <button
                className="cube-Button cube-DDanger"
                disabled={this._busy !== null}
                onClick={() => void this._undeploy()}
                title={trans.__('Stop every process of this deployment')}
              >
                {this._busy === 'undeploy' ? (
                  <span className="cube-TBusy">
                    <span className="cube-Spinner" /> {trans.__('Stopping…')}
                  </span>
                ) : (
                  trans.__('Undeploy')
                )}
              </button>
            ) : null}
          </div>
        </header>
        {d.endpoint ? (
          <div className="cube-DEndpoint">
            <span className="cube-TMuted">{trans.__('Endpoint')}</span>
            <code className="cube-DEndpoint-url">{d.endpoint}</code>
            <button
              className="cube-IconButton"
              title={trans.__('Copy the endpoint URL')}
              aria-label={trans.__('Copy the endpoint URL')}
              onClick={() => Clipboard.copyToSystem(d.endpoint!)}
            >
              <copyIcon.react tag="span" />
            </button>
            <span className="cube-TMuted cube-DEndpoint-routes">
              <code>POST /v2/models/{d.model}/infer</code> ·{' '}
              <code>POST /predict</code> · <code>GET /metrics</code>
            </span>
          </div>
        ) : null}
        {removed ? (
          <p className="cube-TNote cube-DRemoved" role="status">
            {trans.__(
              'Deployment %1 was removed: its processes, record and log are gone, and it left the Deployments list. Model %2 v%3 stays in the registry.',
              d.name,
              d.model,
              d.version
            )}
          </p>
        ) : null}
        {d.error && d.status !== 'running' && !removed ? (
          <ErrorBox error={{ error: d.error, detail: '' }} />
        ) : null}
        {this._actionError ? <ErrorBox error={this._actionError} /> : null}
        {this._loadError ? <ErrorBox error={this._loadError} /> : null}
        {active ? (
          <>
            <TestForm
              trans={trans}
              text={this._request}
              route={this._route}
              inputs={this._inputs}
              example={this._example}
              sending={this._busy === 'send'}
              sent={this._sent}
              setText={t => {
                this._request = t;
                this.update();
              }}
              setRoute={r => {
                this._route = r;
                this._request =
                  r === 'predict'
                    ? predictExample(this._example)
                    : this._example;
                this.update();
              }}
              reset={() => {
                this._request =
                  this._route === 'predict'
                    ? predictExample(this._example)
                    : this._example;
                this.update();
              }}
              send={() => void this._send()}
            />
            <TrafficSection
              d={d}
              trans={trans}
              busy={this._busy}
              change={c => void this._traffic(c)}
            />
            <MetricsSection
              history={this._history}
              trans={trans}
              version={this._metricsVersion}
            />
            <SamplesSection
              project={d.project}
              name={d.name}
              percent={d.samples_percent ?? 0}
              tick={this._metricsVersion}
              changed={() => void this._poll.refresh()}
              trans={trans}
            />
          </>
        ) : removed ? null : action === 'remove' ? (
          <p className="cube-TNote">
            {trans.__(
              'Nothing of this deployment runs (status: %1). Deploy the model again from the Models panel, or Remove it to delete its record and log.',
              d.status
            )}
          </p>
        ) : (
          <p className="cube-TNote">
            {trans.__(
              'This deployment is %1. Deploy the model again from the Models panel.',
              d.status
            )}
          </p>
        )}
        {removed ? null : (
          <AccessSection
            d={d}
            tick={this._metricsVersion}
            changed={next => {
              if (next && !this._removed) {
                this._dep = next;
                this.update();
              }
              this._changed();
            }}
            trans={trans}
          />
        )}
        <LogSection
          text={this._log}
          version={this._logVersion}
          dropped={this._logDropped}
          trans={trans}
        />
      </div>
    );
  }

  private async _tick(): Promise<void> {
    try {
      const d = await getDeployment(this.project, this.name);
      if (this._removed) {
        return; // removed while this read was on its way
      }
      this._dep = d;
      this.title.caption = this._trans.__(
        'Deployment %1 (%2)',
        d.name,
        d.status
      );
      this._loadError = null;
      await this._readLog();
      if (isDeploymentActive(d) && d.endpoint) {
        if (!this._metaLoaded) {
          await this._readMetadata();
        }
        try {
          const text = await deploymentMetrics(this.project, this.name);
          this._history.push(
            readCounters(
              typeof text === 'string' ? text : '',
              Date.now() / 1000
            )
          );
          this._metricsVersion++;
        } catch {
          // starting / updating: the router may not answer for a moment
        }
      }
    } catch (err) {
      if (this._removed) {
        return;
      }
      if (err instanceof CubeApiError && err.status === 404 && this._dep) {
        // removed elsewhere (the list, the CLI, another tab)
        this.markRemoved();
        return;
      }
      this._loadError = describeError(err);
      throw err;
    } finally {
      if (!this.isDisposed) {
        this.update();
      }
    }
  }

  private async _readLog(): Promise<void> {
    for (let i = 0; i < 8; i++) {
      const chunk = await deploymentLog(this.project, this.name, this._offset);
      if (chunk.text) {
        this._log += chunk.text;
        if (this._log.length > MAX_LOG_CHARS) {
          const cut = this._log.indexOf('\n', this._log.length - MAX_LOG_CHARS);
          const at = cut < 0 ? this._log.length - MAX_LOG_CHARS : cut + 1;
          this._logDropped += at;
          this._log = this._log.slice(at);
        }
        this._logVersion++;
      }
      this._offset = chunk.offset;
      if (chunk.offset >= chunk.size) {
        break;
      }
    }
  }

  private async _readMetadata(): Promise<void> {
    try {
      const answer = await deploymentModelMetadata(this.project, this.name);
      this._inputs = answer.status === 200 ? metadataInputs(answer.body) : [];
      this._metaLoaded = true;
    } catch {
      // not answering yet (starting, updating): ask again with the next tick
      this._inputs = [];
      if (this._request) {
        return;
      }
    }
    const before = this._example;
    this._example = exampleText(this._inputs);
    if (!this._request || this._request === before) {
      this._request = this._example; // not edited: follow the model
    }
  }

  private async _send(): Promise<void> {
    const parsed = parseRequestBody(this._request, this._trans);
    if (!parsed.ok) {
      this._sent = {
        answer: null,
        error: { error: parsed.error, detail: '' },
        ms: 0
      };
      this.update();
      return;
    }
    this._busy = 'send';
    this.update();
    const started = performance.now();
    try {
      const answer = await inferDeployment(
        this.project,
        this.name,
        parsed.body,
        this._route
      );
      this._sent = { answer, error: null, ms: performance.now() - started };
    } catch (err) {
      this._sent = {
        answer: null,
        error: describeError(err),
        ms: performance.now() - started
      };
    } finally {
      this._busy = null;
      this.update();
      void this.refresh(); // the request shows in the metrics
    }
  }

  private async _traffic(change: TrafficAction): Promise<void> {
    this._busy = change.action;
    this._actionError = null;
    this.update();
    try {
      this._dep = await changeTraffic(this.project, this.name, change);
      this._changed();
    } catch (err) {
      this._actionError = describeError(err);
    } finally {
      this._busy = null;
      this.update();
    }
  }

  private async _undeploy(): Promise<void> {
    const trans = this._trans;
    const result = await showDialog({
      title: trans.__('Undeploy %1?', this.name),
      body: trans.__(
        'Every process of "%1" stops and its endpoint stops answering. The model stays in the registry.',
        this.name
      ),
      buttons: [
        Dialog.cancelButton({ label: trans.__('Cancel') }),
        Dialog.warnButton({ label: trans.__('Undeploy') })
      ]
    });
    if (!result.button.accept) {
      return;
    }
    this._busy = 'undeploy';
    this._actionError = null;
    this.update();
    try {
      this._dep = await undeploy(this.project, this.name);
      this._changed();
      void this.refresh();
    } catch (err) {
      this._actionError = describeError(err);
    } finally {
      this._busy = null;
      this.update();
    }
  }

  private async _remove(): Promise<void> {
    const d = this._dep;
    if (!d || !(await confirmRemove(d, this._trans))) {
      return;
    }
    this._busy = 'remove';
    this._actionError = null;
    this.update();
    try {
      const last = await undeploy(this.project, this.name);
      this._changed();
      if (last.status === 'removed') {
        this.markRemoved(last);
      } else {
        this._dep = last; // it was deployed again meanwhile: only stopped
      }
    } catch (err) {
      this._actionError = describeError(err);
    } finally {
      this._busy = null;
      if (!this.isDisposed) {
        this.update();
      }
    }
  }

  private _trans: TranslationBundle;
  private _close: () => void;
  private _removed = false;
  private _openModel: (project: string, model: string, version: number) => void;
  private _openChat: ((project: string, name: string) => void) | null;
  private _changed: () => void;
  private _poll: Poll;
  private _started = false;
  private _dep: Deployment | null = null;
  private _loadError: ErrorText | null = null;
  private _actionError: ErrorText | null = null;
  private _busy: string | null = null;
  private _metaLoaded = false;
  private _inputs: ITensorMeta[] = [];
  private _example = '';
  private _request = '';
  private _route: 'infer' | 'predict' = 'infer';
  private _sent: ISent | null = null;
  private _history = new RateHistory();
  private _metricsVersion = 0;
  private _log = '';
  private _logDropped = 0;
  private _logVersion = 0;
  private _offset = 0;
}

export namespace DeploymentView {
  export interface IOptions {
    project: string;
    name: string;
    translator: ITranslator;
    openModel: (project: string, model: string, version: number) => void;
    /** Open the Chat tab on this deployment (an LLM one). */
    openChat?: (project: string, name: string) => void;
    /** The deployment changed here (the sidebar list should follow). */
    changed: () => void;
    /** Close the view's tab (default: dispose the view). */
    close?: () => void;
  }
}

/** The plain `/predict` body for the same rows as the OIP example. */
function predictExample(oipText: string): string {
  try {
    const req = JSON.parse(oipText) as {
      inputs: { shape: number[]; data: unknown[] }[];
    };
    const first = req.inputs[0];
    const width = first.shape.length > 1 ? first.shape[1] : 1;
    const rows: unknown[][] = [];
    for (let i = 0; i < first.data.length; i += width) {
      rows.push(first.data.slice(i, i + width));
    }
    return prettyJson({ instances: rows });
  } catch {
    return '{\n  "instances": [[0.5, 1.2, 1.9, 2.6], [0.5, 1.2, 1.9, 2.6]]\n}';
  }
}

function TestForm(props: {
  trans: TranslationBundle;
  text: string;
  route: 'infer' | 'predict';
  inputs: ITensorMeta[];
  example: string;
  sending: boolean;
  sent: ISent | null;
  setText: (t: string) => void;
  setRoute: (r: 'infer' | 'predict') => void;
  reset: () => void;
  send: () => void;
}): JSX.Element {
  const { trans, sent } = props;
  const answer = sent?.answer;
  const source = props.inputs.length
    ? trans.__(
        'model inputs: %1',
        props.inputs
          .map(t => `${t.name} ${t.datatype} [${t.shape.join(', ')}]`)
          .join('; ')
      )
    : '';
  const summary = answer ? summarizeAnswer(answer.body) : null;
  const ok = answer ? answer.status < 400 : false;
  return (
    <section className="cube-TSection cube-DTest">
      <h3>{trans.__('Test request')}</h3>
      <div className="cube-DTest-grid">
        <div className="cube-DTest-request">
          <div className="cube-DTest-bar">
            <select
              name="route"
              value={props.route}
              onChange={e =>
                props.setRoute(e.target.value as 'infer' | 'predict')
              }
              aria-label={trans.__('Route')}
            >
              <option value="infer">{trans.__('OIP v2 infer')}</option>
              <option value="predict">{trans.__('plain /predict')}</option>
            </select>
            <span className="cube-TMuted cube-DTest-source" title={source}>
              {props.inputs.length
                ? source
                : props.example
                  ? trans.__('the model declares no inputs: a 2-row example')
                  : trans.__('reading the model’s inputs…')}
            </span>
            <button
              className="cube-TLink"
              onClick={props.reset}
              title={trans.__('Put the example request back')}
            >
              {trans.__('Reset')}
            </button>
          </div>
          <textarea
            className="cube-DTest-editor"
            name="request"
            spellCheck={false}
            value={props.text}
            onChange={e => props.setText(e.target.value)}
            onKeyDown={e => {
              if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
                e.preventDefault();
                props.send();
              }
            }}
            aria-label={trans.__('Request body (JSON)')}
          />
          <div className="cube-DTest-actions">
            <button
              className="cube-Button cube-mod-primary"
              onClick={props.send}
              disabled={props.sending || !props.text.trim()}
              title={trans.__('Send (Ctrl+Enter)')}
            >
              {props.sending ? (
                <span className="cube-TBusy">
                  <span className="cube-Spinner" /> {trans.__('Sending…')}
                </span>
              ) : (
                trans.__('Send')
              )}
            </button>
          </div>
        </div>
        <div className="cube-DTest-response" aria-live="polite">
          {sent ? (
            sent.error ? (
              <ErrorBox error={sent.error} />
            ) : (
              <>
                <div className="cube-DTest-status">
                  <span
                    className={`cube-DStatus ${ok ? 'cube-mod-ok' : 'cube-mod-bad'}`}
                  >
                    {answer!.status}
                  </span>
                  {answer!.version ? (
                    <span>{trans.__('answered by v%1', answer!.version)}</span>
                  ) : null}
                  <span className="cube-DTest-latency">
                    {trans.__(
                      '%1 ms',
                      formatNumber(Math.round(sent.ms * 10) / 10)
                    )}
                  </span>
                </div>
                {summary ? (
                  <div className="cube-DTest-summary">{summary}</div>
                ) : null}
                <pre className="cube-DTest-body">
                  {typeof answer!.body === 'string'
                    ? answer!.body
                    : prettyJson(answer!.body)}
                </pre>
              </>
            )
          ) : (
            <p className="cube-TMuted cube-DTest-hint">
              {trans.__(
                'Send the request to see the model’s answer and the round-trip time.'
              )}
            </p>
          )}
        </div>
      </div>
    </section>
  );
}

function TrafficSection(props: {
  d: Deployment;
  trans: TranslationBundle;
  busy: string | null;
  change: (c: TrafficAction) => void;
}): JSX.Element {
  const { d, trans } = props;
  const canary = canaryPercent(d);
  const shadow = d.traffic.find(t => t.shadow);
  const [slider, setSlider] = React.useState<number | null>(null);
  const value = slider ?? canary ?? 0;
  const primary = d.traffic[0];
  const candidate = d.traffic[1];
  const disabled = props.busy !== null || d.status !== 'running';
  return (
    <section className="cube-TSection cube-DTrafficSection">
      <h3>{trans.__('Traffic')}</h3>
      {candidate && !candidate.shadow ? (
        <div className="cube-DSplit">
          <span className="cube-DSplit-side">
            v{primary.version} <b>{Math.round(100 - value)}%</b>
          </span>
          <input
            type="range"
            name="canary"
            min={0}
            max={100}
            step={1}
            value={value}
            disabled={disabled}
            aria-label={trans.__(
              'Percent of requests to the canary v%1',
              candidate.version
            )}
            onChange={e => setSlider(Number(e.target.value))}
            onPointerUp={() => {
              if (slider !== null && slider !== canary) {
                props.change({ action: 'split', percent: slider });
              }
              setSlider(null);
            }}
            onKeyUp={() => {
              if (slider !== null && slider !== canary) {
                props.change({ action: 'split', percent: slider });
              }
              setSlider(null);
            }}
          />
          <span className="cube-DSplit-side">
            v{candidate.version} <b>{Math.round(value)}%</b>
            <span className="cube-TMuted"> {trans.__('canary')}</span>
          </span>
        </div>
      ) : shadow ? (
        <p className="cube-DTraffic-text">
          {trans.__(
            'v%1 answers every request; v%2 gets a mirror of each (its answers are logged, not returned).',
            primary.version,
            shadow.version
          )}
        </p>
      ) : (
        <p className="cube-DTraffic-text">
          {trans.__('v%1 takes all requests.', primary.version)}{' '}
          <span className="cube-TMuted">
            {trans.__(
              'Deploy another version of %1 from Models to start a canary.',
              d.model
            )}
          </span>
        </p>
      )}
      <div className="cube-DTraffic-actions">
        {candidate ? (
          <button
            className="cube-Button cube-mod-primary"
            disabled={disabled}
            onClick={() => props.change({ action: 'promote' })}
            title={trans.__(
              'v%1 takes all traffic; v%2 stops',
              candidate.version,
              primary.version
            )}
          >
            {props.busy === 'promote' ? (
              <span className="cube-TBusy">
                <span className="cube-Spinner" /> {trans.__('Promoting…')}
              </span>
            ) : (
              trans.__('Promote v%1', candidate.version)
            )}
          </button>
        ) : null}
        {candidate || d.previous_version !== null ? (
          <button
            className="cube-Button"
            disabled={disabled}
            onClick={() => props.change({ action: 'rollback' })}
            title={
              candidate
                ? trans.__(
                    'Drop v%1; v%2 takes all traffic',
                    candidate.version,
                    primary.version
                  )
                : trans.__('Go back to v%1', d.previous_version)
            }
          >
            {props.busy === 'rollback' ? (
              <span className="cube-TBusy">
                <span className="cube-Spinner" /> {trans.__('Rolling back…')}
              </span>
            ) : candidate ? (
              trans.__('Roll back (drop v%1)', candidate.version)
            ) : (
              trans.__('Roll back to v%1', d.previous_version)
            )}
          </button>
        ) : null}
        {props.busy === 'split' ? (
          <span className="cube-TBusy cube-TMuted">
            <span className="cube-Spinner" /> {trans.__('Applying…')}
          </span>
        ) : null}
      </div>
    </section>
  );
}

function MetricsSection(props: {
  history: RateHistory;
  version: number;
  trans: TranslationBundle;
}): JSX.Element {
  const { history, trans } = props;
  const last = history.points[history.points.length - 1];
  return (
    <section className="cube-TSection cube-DMetrics">
      <h3>
        {trans.__('Live metrics')}{' '}
        <span className="cube-TMuted">
          {trans.__('(every 2 s, from the router’s counters)')}
        </span>
      </h3>
      {last ? (
        <>
          <div className="cube-DMetrics-now">
            <span>
              {trans.__('QPS')} <b>{formatRate(last.qps, trans.__('req/s'))}</b>
            </span>
            <span>
              {trans.__('errors')}{' '}
              <b>{formatRate(last.errorsPerSec, trans.__('/s'))}</b>
            </span>
            <span>
              {trans.__('p50')} <b>{formatRate(last.p50Ms, trans.__('ms'))}</b>
            </span>
            <span>
              {trans.__('p99')} <b>{formatRate(last.p99Ms, trans.__('ms'))}</b>
            </span>
            <span className="cube-TMuted">
              {trans.__('%1 requests in all', history.last?.requests ?? 0)}
            </span>
          </div>
          <div className="cube-TCharts">
            <LineChart
              name={trans.__('requests / s')}
              series={history.series(r => r.qps)}
              xLabel={trans.__('second')}
            />
            <LineChart
              name={trans.__('errors / s')}
              series={history.series(r => r.errorsPerSec)}
              xLabel={trans.__('second')}
            />
            <LineChart
              name={trans.__('latency p50 (ms)')}
              series={history.series(r => r.p50Ms)}
              xLabel={trans.__('second')}
            />
          </div>
        </>
      ) : (
        <p className="cube-TMuted">{trans.__('Reading the counters…')}</p>
      )}
    </section>
  );
}

function LogSection(props: {
  text: string;
  version: number;
  dropped: number;
  trans: TranslationBundle;
}): JSX.Element {
  const { trans } = props;
  const pre = React.useRef<HTMLPreElement>(null);
  const [follow, setFollow] = React.useState(true);
  React.useLayoutEffect(() => {
    if (follow && pre.current) {
      pre.current.scrollTop = pre.current.scrollHeight;
    }
  }, [props.version, follow]);
  const onScroll = () => {
    const el = pre.current;
    if (el) {
      const atEnd = el.scrollHeight - el.scrollTop - el.clientHeight < 8;
      if (atEnd !== follow) {
        setFollow(atEnd);
      }
    }
  };
  return (
    <section className="cube-TSection cube-TLog cube-DLog">
      <div className="cube-TLog-head">
        <h3>{trans.__('Log')}</h3>
        <label className="cube-TLog-follow">
          <input
            type="checkbox"
            checked={follow}
            onChange={e => setFollow(e.target.checked)}
          />{' '}
          {trans.__('Follow')}
        </label>
      </div>
      {props.dropped ? (
        <div className="cube-TMuted">
          {trans.__('%1 earlier characters not shown.', props.dropped)}
        </div>
      ) : null}
      <pre
        className="cube-TLog-text cube-DLog-text"
        ref={pre}
        onScroll={onScroll}
      >
        {props.text || trans.__('Waiting for output…')}
      </pre>
    </section>
  );
}
