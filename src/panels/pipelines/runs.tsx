/**
 * The "Pipeline runs" section of the cube-lab sidebar: recent runs grouped by
 * pipeline, with status, start, duration and trigger; open, re-run, cancel.
 */
import { ReactWidget } from '@jupyterlab/apputils';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import {
  LabIcon,
  launchIcon,
  refreshIcon,
  stopIcon,
  Toolbar,
  ToolbarButton
} from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Poll } from '@lumino/polling';
import * as React from 'react';

import {
  cancelRun,
  describeError,
  isRunActive,
  listRuns,
  PipelineRun,
  startRun
} from '../../api';
import { ICubeSettings } from '../../tokens';
import { formatElapsed } from './canvas';
import { ITrans } from './kinds';
import { uiLanguage } from '../../locale';

export class PipelineRunsPanel extends ReactWidget {
  constructor(options: PipelineRunsPanel.IOptions) {
    super();
    this.addClass('cube-RunsPanel');
    this._trans = options.translator.load('cube_lab');
    this._openRun = options.openRun;
    this.title.label = this._trans.__('Pipeline runs');
    this.toolbar = new Toolbar();
    this.toolbar.addItem(
      'refresh',
      new ToolbarButton({
        icon: refreshIcon,
        tooltip: this._trans.__('Refresh pipeline runs'),
        onClick: () => void this.refresh()
      })
    );
    this._poll = new Poll({
      factory: () => this._fetch(),
      frequency: {
        interval: options.settings.refreshInterval,
        backoff: true,
        max: 120000
      },
      standby: () => (this.isVisible ? false : 'when-hidden')
    });
    options.settings.changed.connect(() => {
      this._poll.frequency = {
        ...this._poll.frequency,
        interval: options.settings.refreshInterval
      };
    });
  }

  readonly toolbar: Toolbar;

  async refresh(): Promise<void> {
    await this._poll.refresh();
  }

  dispose(): void {
    this._poll.dispose();
    super.dispose();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this._poll.refresh();
  }

  render(): JSX.Element {
    return (
      <RunsView
        runs={this._runs}
        error={this._error}
        loaded={this._loaded}
        trans={this._trans}
        open={run => this._openRun(run)}
        rerun={run => void this._rerun(run)}
        cancel={run => void this._cancel(run)}
      />
    );
  }

  private async _fetch(): Promise<void> {
    try {
      this._runs = (await listRuns({ limit: 100 })).runs;
      this._error = '';
    } catch (err) {
      this._error = describeError(err).error;
      throw err;
    } finally {
      this._loaded = true;
      this.update();
    }
  }

  private async _rerun(run: PipelineRun): Promise<void> {
    try {
      const opts = run.options ?? {};
      const started = await startRun({
        path: run.pipeline_path,
        ...(typeof opts.only === 'string' ? { only: opts.only } : {}),
        ...(typeof opts.from === 'string' ? { from: opts.from } : {}),
        ...(typeof opts.parallelism === 'number'
          ? { parallelism: opts.parallelism }
          : {}),
        ...(opts.params &&
        typeof opts.params === 'object' &&
        !Array.isArray(opts.params)
          ? { params: opts.params as Record<string, any> }
          : {})
      });
      this._openRun(started);
    } catch (err) {
      this._error = describeError(err).error;
    }
    void this.refresh();
  }

  private async _cancel(run: PipelineRun): Promise<void> {
    try {
      await cancelRun(run.id);
    } catch (err) {
      this._error = describeError(err).error;
    }
    void this.refresh();
  }

  private _trans: TranslationBundle;
  private _openRun: (run: PipelineRun) => void;
  private _poll: Poll;
  private _runs: PipelineRun[] = [];
  private _error = '';
  private _loaded = false;
}

export namespace PipelineRunsPanel {
  export interface IOptions {
    settings: ICubeSettings;
    translator: ITranslator;
    /** Open the run's pipeline with the run on the canvas. */
    openRun: (run: PipelineRun) => void;
  }
}

function startTime(run: PipelineRun): string {
  const at = run.started_at ?? run.created_at;
  if (!at) {
    return '';
  }
  const d = new Date(at);
  return d.toLocaleString(uiLanguage(), {
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit'
  });
}

/** A run's status in words (the badge). */
export function runStatusLabel(status: string, trans: ITrans): string {
  switch (status) {
    case 'queued':
      return trans.__('queued');
    case 'running':
      return trans.__('running');
    case 'succeeded':
      return trans.__('succeeded');
    case 'failed':
      return trans.__('failed');
    case 'cancelled':
      return trans.__('cancelled');
    case 'interrupted':
      return trans.__('interrupted');
    default:
      return status;
  }
}

/** What started a run, in words. */
export function triggerLabel(trigger: string, trans: ITrans): string {
  switch (trigger) {
    case 'manual':
      return trans.__('manual');
    case 'cli':
      return trans.__('command line');
    case 'schedule':
      return trans.__('schedule');
    default:
      return trigger;
  }
}

/** The second line of a run: duration and trigger. */
export function runMeta(run: PipelineRun, trans: ITrans): string {
  const parts: string[] = [];
  if (run.duration_s !== null && run.duration_s !== undefined) {
    parts.push(formatElapsed(run.duration_s));
  }
  if (run.trigger) {
    parts.push(triggerLabel(run.trigger, trans));
  }
  return parts.join(' · ');
}

function RunAction(props: {
  icon: LabIcon;
  label: string;
  title: string;
  className: string;
  onClick: () => void;
}): JSX.Element {
  return (
    <button
      className={`cube-Runs-action ${props.className}`}
      onClick={props.onClick}
      title={props.title}
      aria-label={props.label}
    >
      <props.icon.react tag="span" elementSize="normal" />
    </button>
  );
}

/**
 * Runs grouped by pipeline. Each row is status, start (with duration and
 * trigger below) and icon actions, so that Open / Re-run / Cancel stay in
 * view in a 250 px sidebar, with no horizontal scroll.
 */
function RunsView(props: {
  runs: PipelineRun[];
  error: string;
  loaded: boolean;
  trans: TranslationBundle;
  open: (run: PipelineRun) => void;
  rerun: (run: PipelineRun) => void;
  cancel: (run: PipelineRun) => void;
}): JSX.Element {
  const { runs, trans } = props;
  const groups = new Map<string, PipelineRun[]>();
  for (const run of runs) {
    const list = groups.get(run.pipeline_path) ?? [];
    list.push(run);
    groups.set(run.pipeline_path, list);
  }
  return (
    <div className="cube-Runs">
      {props.error ? (
        <div className="cube-Field-error" role="alert">
          {props.error}
        </div>
      ) : null}
      {props.loaded && !runs.length && !props.error ? (
        <p className="cube-Muted cube-Runs-empty">
          {trans.__(
            'No pipeline runs yet. Open a .pipeline file and press Run.'
          )}
        </p>
      ) : null}
      {Array.from(groups.entries()).map(([path, list]) => (
        <div className="cube-Runs-group" key={path}>
          <div className="cube-Runs-pipeline" title={path}>
            <span className="cube-Runs-name">{list[0].pipeline || path}</span>
            <span className="cube-Muted cube-Runs-path">{path}</span>
          </div>
          <table className="cube-Runs-table">
            <thead>
              <tr>
                <th>{trans.__('Status')}</th>
                <th>{trans.__('Started')}</th>
                <th className="cube-Runs-actionsHead">
                  <span className="cube-VisuallyHidden">
                    {trans.__('Actions')}
                  </span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map(run => (
                <tr
                  key={run.id}
                  className="cube-Runs-row"
                  data-run={run.id}
                  data-status={run.status}
                >
                  <td className="cube-Runs-status">
                    <span
                      className={`cube-RunBadge cube-RunBadge-${run.status}`}
                    >
                      {runStatusLabel(run.status, trans)}
                    </span>
                  </td>
                  <td className="cube-Runs-when">
                    <div>{startTime(run)}</div>
                    <div className="cube-Muted cube-Runs-meta">
                      {runMeta(run, trans)}
                    </div>
                  </td>
                  <td className="cube-Runs-actions">
                    <RunAction
                      icon={launchIcon}
                      label={trans.__('Open')}
                      title={trans.__('Open this run on the canvas')}
                      className="cube-Runs-open"
                      onClick={() => props.open(run)}
                    />
                    {isRunActive(run) ? (
                      <RunAction
                        icon={stopIcon}
                        label={trans.__('Cancel')}
                        title={trans.__('Cancel this run')}
                        className="cube-Runs-cancel"
                        onClick={() => props.cancel(run)}
                      />
                    ) : (
                      <RunAction
                        icon={refreshIcon}
                        label={trans.__('Re-run')}
                        title={trans.__('Run again with the same options')}
                        className="cube-Runs-rerun"
                        onClick={() => props.rerun(run)}
                      />
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
    </div>
  );
}
