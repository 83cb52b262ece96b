/**
 * The list of the "Tuning" side panel: the experiments (status, trials, best
 * metric; open, stop, resume). The new-experiment form opens in a main-area
 * tab. Polls while visible.
 */
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { addIcon, refreshIcon } from '@jupyterlab/ui-components';
import * as React from 'react';

import { EmptyState } from '../empty';
import { ErrorBox } from '../errorbox';
import {
  describeError,
  listExperiments,
  resumeExperiment,
  stopExperiment,
  TuningExperiment
} from '../../api';
import { ICubeSettings } from '../../tokens';
import { PolledSection } from '../section';
import { StatusBadge } from '../training/panel';
import { formatNumber } from '../training/logic';
import { isExperimentActive } from './logic';

const ACTIVE_INTERVAL_MS = 2000;

export class TuningPanel extends PolledSection {
  constructor(options: TuningPanel.IOptions) {
    super({
      ...options,
      pollName: 'cube-lab:tuning',
      fastIntervalMs: ACTIVE_INTERVAL_MS
    });
    this.addClass('cube-TuningPanel');
    this._openExperiment = options.openExperiment;
    this._newExperiment = options.newExperiment;
    this.title.label = this.trans.__('Tuning');
    this.title.caption = this.trans.__('Hyperparameter tuning experiments');

    this.addButton('new', addIcon, this.trans.__('New tuning experiment'), () =>
      this._newExperiment()
    );
    this.addButton(
      'refresh',
      refreshIcon,
      this.trans.__('Refresh experiments'),
      () => void this.refresh()
    );
  }

  get experiments(): TuningExperiment[] {
    return this._experiments;
  }

  protected render(): JSX.Element {
    const trans = this.trans;
    return (
      <div className="cube-Training cube-Tuning">
        {this._error ? <ErrorBox error={this._error} /> : null}
        {!this._loaded ? (
          <div className="cube-Loading">
            <span className="cube-Spinner" /> {trans.__('Loading experiments…')}
          </div>
        ) : this._experiments.length ? (
          <ul className="cube-TJobs" aria-label={trans.__('Experiments')}>
            {this._experiments.map(exp => (
              <ExperimentItem
                key={exp.id}
                exp={exp}
                trans={trans}
                pending={this._pending.has(exp.id)}
                open={() => this._openExperiment(exp)}
                act={what => void this._act(exp, what)}
              />
            ))}
          </ul>
        ) : this._error ? null : (
          <EmptyState
            title={trans.__('No tuning experiments yet')}
            text={trans.__(
              'Search hyperparameters with NNI tuners (TPE, Random, Anneal, Evolution, grid search); your NNI trial code runs unchanged.'
            )}
            action={{
              label: trans.__('New tuning experiment'),
              run: () => this._newExperiment()
            }}
            notebook="%cube_tune config.yml"
            terminal="cube-lab tune config.yml"
            trans={trans}
          />
        )}
      </div>
    );
  }

  protected changing(): boolean {
    return this._experiments.some(isExperimentActive);
  }

  protected async fetch(): Promise<void> {
    try {
      this._experiments = (await listExperiments({ limit: 100 })).experiments;
      this._error = null;
    } catch (err) {
      this._error = describeError(err);
      throw err;
    } finally {
      this._loaded = true;
    }
  }

  private async _act(
    exp: TuningExperiment,
    what: 'stop' | 'resume'
  ): Promise<void> {
    this._pending.add(exp.id);
    this.update();
    try {
      await (what === 'stop' ? stopExperiment : resumeExperiment)(exp.id);
      this._error = null;
    } catch (err) {
      this._error = describeError(err);
    } finally {
      this._pending.delete(exp.id);
      void this.refresh();
    }
  }

  private _openExperiment: (exp: TuningExperiment) => void;
  private _newExperiment: () => void;
  private _experiments: TuningExperiment[] = [];
  private _loaded = false;
  private _error: { error: string; detail: string } | null = null;
  private _pending = new Set<string>();
}

export namespace TuningPanel {
  export interface IOptions {
    settings: ICubeSettings;
    translator: ITranslator;
    openExperiment: (exp: TuningExperiment) => void;
    /** Open the new-experiment form. */
    newExperiment: () => void;
  }
}

function ExperimentItem(props: {
  exp: TuningExperiment;
  trans: TranslationBundle;
  pending: boolean;
  open: () => void;
  act: (what: 'stop' | 'resume') => void;
}): JSX.Element {
  const { exp, trans } = props;
  const best = exp.best?.final;
  const resumable = ['stopped', 'interrupted', 'failed'].includes(exp.status);
  return (
    <li className="cube-TJob" data-experiment={exp.id}>
      <button
        className="cube-TJob-main"
        onClick={props.open}
        title={trans.__('Open experiment %1', exp.id)}
      >
        <span className="cube-TJob-line">
          <span className="cube-TJob-name">{exp.name}</span>
          <StatusBadge status={exp.status} trans={trans} />
        </span>
        <span className="cube-TJob-meta">
          {exp.spec.tuner.name} ·{' '}
          {trans.__('%1/%2 trials', exp.trial_count, exp.spec.max_trials)}
          {best !== null && best !== undefined ? (
            <>
              {' · '}
              <span className="cube-TuBestMeta">
                {trans.__('best %1 %2', exp.spec.metric, formatNumber(best))}
              </span>
            </>
          ) : null}
        </span>
      </button>
      <span className="cube-TJob-actions">
        {props.pending ? (
          <span className="cube-Spinner" />
        ) : isExperimentActive(exp) ? (
          <button
            className="cube-TLink"
            onClick={() => props.act('stop')}
            title={trans.__('Stop launching trials and kill the running ones')}
          >
            {trans.__('Stop')}
          </button>
        ) : resumable ? (
          <button
            className="cube-TLink"
            onClick={() => props.act('resume')}
            title={trans.__('Go on with the remaining trials')}
          >
            {trans.__('Resume')}
          </button>
        ) : null}
      </span>
    </li>
  );
}
