/**
 * The main-area view of one tuning experiment: facts, actions (stop,
 * resume, train with the best parameters), the live trials table (sortable,
 * best trial highlighted), intermediate curves, parallel coordinates and the
 * selected trial's log (followed with offsets).
 */
import { Clipboard, InputDialog, ReactWidget } from '@jupyterlab/apputils';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { Poll } from '@lumino/polling';
import * as React from 'react';

import { ErrorBox } from '../errorbox';
import {
  describeError,
  getExperiment,
  registerTrialModel,
  resumeExperiment,
  stopExperiment,
  trialLog,
  TuningExperiment,
  TuningTrial
} from '../../api';
import { formatDuration, formatNumber } from '../training/logic';
import { StatusBadge } from '../training/panel';
import { CurvesChart, ParallelCoordinates } from './charts';
import {
  ACTIVE_TRIAL,
  bestTrialId,
  formatValue,
  isExperimentActive,
  ISort,
  nextSort,
  parameterNames,
  SortKey,
  sortTrials,
  statusSummary,
  trainCommand
} from './logic';

const ACTIVE_MS = 1000;
const IDLE_MS = 10000;
const MAX_LOG_CHARS = 200000;

export class ExperimentView extends ReactWidget {
  constructor(options: ExperimentView.IOptions) {
    super();
    this.addClass('cube-TJobView');
    this.addClass('cube-TuExperimentView');
    this.experimentId = options.experimentId;
    this._trans = options.translator.load('cube_lab');
    this._poll = new Poll({
      auto: true,
      factory: () => this._fetch(),
      frequency: { interval: ACTIVE_MS, backoff: true, max: 60000 },
      name: `cube-lab:tuning-experiment:${this.experimentId}`,
      standby: 'when-hidden'
    });
  }

  readonly experimentId: string;

  refresh(): Promise<void> {
    return this._poll.refresh();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._poll.dispose();
    super.dispose();
  }

  protected render(): JSX.Element {
    const trans = this._trans;
    const exp = this._exp;
    if (!exp) {
      return (
        <div className="cube-TJobDetail">
          {this._error ? (
            <ErrorBox error={this._error} />
          ) : (
            <div className="cube-Loading">
              <span className="cube-Spinner" />{' '}
              {trans.__('Loading the experiment…')}
            </div>
          )}
        </div>
      );
    }
    const trials = exp.trials ?? [];
    const mode = exp.spec.mode;
    const params = parameterNames(trials).length
      ? parameterNames(trials)
      : Object.keys(exp.spec.search_space);
    const bestId = bestTrialId(trials, mode);
    const best = trials.find(t => t.id === bestId) ?? null;
    const selected = trials.find(t => t.id === this._selected) ?? null;
    const resumable = ['stopped', 'interrupted', 'failed'].includes(exp.status);
    return (
      <div
        className="cube-TJobDetail cube-TuDetail"
        data-experiment={exp.id}
        data-status={exp.status}
      >
        <header className="cube-TJobHead">
          <div className="cube-TJobHead-title">
            <h2>{exp.name}</h2>
            <StatusBadge status={exp.status} trans={trans} />
            <span className="cube-TMuted">{exp.id}</span>
          </div>
          <div className="cube-TJobHead-actions">
            {isExperimentActive(exp) ? (
              <button
                className="cube-Button"
                disabled={this._busy}
                onClick={() => void this._act('stop')}
              >
                {trans.__('Stop')}
              </button>
            ) : resumable ? (
              <button
                className="cube-Button"
                disabled={this._busy}
                onClick={() => void this._act('resume')}
              >
                {trans.__('Resume')}
              </button>
            ) : null}
            <button
              className="cube-Button cube-mod-primary"
              disabled={!(selected ?? best)}
              onClick={() => this._train(selected ?? best!)}
              title={trans.__(
                'Copy a `cube-lab train` command that runs the trial script once with these parameters as --name value arguments'
              )}
            >
              {selected && selected.id !== bestId
                ? trans.__('Train with trial #%1’s parameters', selected.seq)
                : trans.__('Train with the best parameters')}
            </button>
            <button
              className="cube-Button"
              disabled={
                this._busy || typeof (selected ?? best)?.final !== 'number'
              }
              onClick={() => void this._register(selected ?? best!)}
              title={trans.__(
                'Register what the trial saved under $NNI_OUTPUT_DIR as a model version, with its parameters and metric'
              )}
            >
              {selected && selected.id !== bestId
                ? trans.__('Register trial #%1’s model', selected.seq)
                : trans.__('Register the best model')}
            </button>
          </div>
        </header>
        <code className="cube-TJobCommand" title={exp.spec.code_dir}>
          {exp.spec.trial_command}
        </code>
        <dl className="cube-TFacts">
          <Fact label={trans.__('Tuner')} value={exp.spec.tuner.name} />
          <Fact
            label={trans.__('Assessor')}
            value={exp.spec.assessor?.name ?? trans.__('none')}
          />
          <Fact
            label={trans.__('Objective')}
            value={
              mode === 'maximize'
                ? trans.__('maximize %1', exp.spec.metric)
                : trans.__('minimize %1', exp.spec.metric)
            }
          />
          <Fact
            label={trans.__('Trials')}
            value={`${trials.length} / ${exp.spec.max_trials} · ${trans.__('%1 at a time', exp.spec.concurrency)}`}
          />
          <Fact
            label={trans.__('Status')}
            value={statusSummary(trials, trans) || trans.__('no trials yet')}
          />
          <Fact
            label={trans.__('Best')}
            value={
              best
                ? `${formatNumber(best.final!)} (#${best.seq})`
                : trans.__('none yet')
            }
          />
        </dl>
        {exp.error ? (
          <ErrorBox error={{ error: exp.error, detail: '' }} />
        ) : null}
        {this._error ? <ErrorBox error={this._error} /> : null}
        {this._note ? (
          <div className="cube-TNote cube-TuNote" role="status">
            <div>{this._note.text}</div>
            {this._note.code ? (
              <code className="cube-TuNote-code">{this._note.code}</code>
            ) : null}
          </div>
        ) : null}
        <section className="cube-TSection">
          <h3>{trans.__('Trials')}</h3>
          {trials.length ? (
            <TrialsTable
              trials={trials}
              params={params}
              sort={this._sort}
              bestId={bestId}
              selected={this._selected}
              trans={trans}
              onSort={key => {
                this._sort = nextSort(this._sort, key, mode);
                this.update();
              }}
              onPick={t => this._pick(t)}
            />
          ) : (
            <p className="cube-TMuted">
              {trans.__('No trial has started yet.')}
            </p>
          )}
        </section>
        <section className="cube-TSection">
          <h3>{trans.__('Charts')}</h3>
          {trials.some(t => t.intermediate.length || t.final !== null) ? (
            <div className="cube-TuCharts">
              <CurvesChart
                trials={trials}
                bestId={bestId}
                selected={this._selected}
                metric={exp.spec.metric}
                onPick={t => this._pick(t)}
                trans={trans}
              />
              <ParallelCoordinates
                trials={trials}
                params={params}
                searchSpace={exp.spec.search_space}
                mode={mode}
                metric={exp.spec.metric}
                selected={this._selected}
                onPick={t => this._pick(t)}
                trans={trans}
              />
            </div>
          ) : (
            <p className="cube-TMuted">
              {trans.__('The charts draw as trials report results.')}
            </p>
          )}
        </section>
        {selected ? (
          <section className="cube-TSection cube-TLog cube-TuLog">
            <div className="cube-TLog-head">
              <h3>{trans.__('Trial #%1 log', selected.seq)}</h3>
              <span className="cube-TMuted">
                {Object.entries(selected.parameters)
                  .map(([k, v]) => `${k}=${formatValue(v)}`)
                  .join(' · ')}
              </span>
              <span className="cube-TMuted cube-TLog-state">
                {this._logDone ? (
                  trans.__('complete')
                ) : (
                  <span className="cube-TBusy">
                    <span className="cube-Spinner" /> {trans.__('live')}
                  </span>
                )}
              </span>
              <button
                className="cube-TLink"
                onClick={() => {
                  this._selected = null;
                  this.update();
                }}
              >
                {trans.__('Close')}
              </button>
            </div>
            {selected.error ? (
              <div className="cube-TError-detail">{selected.error}</div>
            ) : null}
            <pre className="cube-TLog-text cube-TuLog-text">
              {this._log || trans.__('(no output yet)')}
            </pre>
          </section>
        ) : trials.length ? (
          <p className="cube-TMuted cube-TuHint">
            {trans.__('Click a trial (row, curve or line) to read its log.')}
          </p>
        ) : null}
      </div>
    );
  }

  private async _fetch(): Promise<void> {
    try {
      this._exp = await getExperiment(this.experimentId);
      this._error = null;
      this.title.label = this._exp.name;
      if (this._selected) {
        await this._readLog();
      }
    } catch (err) {
      this._error = describeError(err);
      throw err;
    } finally {
      const active =
        (this._exp && isExperimentActive(this._exp)) ||
        (this._selected !== null && !this._logDone);
      const interval = active ? ACTIVE_MS : IDLE_MS;
      if (this._poll.frequency.interval !== interval) {
        this._poll.frequency = { ...this._poll.frequency, interval };
      }
      this.update();
    }
  }

  private _pick(trial: TuningTrial): void {
    if (this._selected === trial.id) {
      return;
    }
    this._selected = trial.id;
    this._log = '';
    this._logOffset = 0;
    this._logDone = false;
    this.update();
    void this._readLog().then(() => {
      void this._poll.refresh();
    });
  }

  /** Read on from the last offset; a change of trial discards the answer. */
  private async _readLog(): Promise<void> {
    const trialId = this._selected;
    if (!trialId || this._logDone) {
      return;
    }
    try {
      const chunk = await trialLog(this.experimentId, trialId, this._logOffset);
      if (this._selected !== trialId) {
        return;
      }
      this._log = (this._log + chunk.text).slice(-MAX_LOG_CHARS);
      this._logOffset = chunk.offset;
      const trial = this._exp?.trials?.find(t => t.id === trialId);
      this._logDone =
        chunk.done && !!trial && !ACTIVE_TRIAL.includes(trial.status);
    } catch (err) {
      this._error = describeError(err);
    }
    this.update();
  }

  private async _act(what: 'stop' | 'resume'): Promise<void> {
    this._busy = true;
    this.update();
    try {
      this._exp = await (what === 'stop' ? stopExperiment : resumeExperiment)(
        this.experimentId
      );
      this._error = null;
    } catch (err) {
      this._error = describeError(err);
    } finally {
      this._busy = false;
      void this.refresh();
    }
  }

  private _train(trial: TuningTrial): void {
    const exp = this._exp!;
    const command = trainCommand(
      exp.spec.trial_command,
      exp.spec.code_dir,
      trial.parameters
    );
    Clipboard.copyToSystem(command);
    this._note = {
      text: this._trans.__(
        'Copied to the clipboard: run it in a terminal (the script reads the parameters as --name value arguments). Parameters of trial #%1:',
        trial.seq
      ),
      code: `${command}\n\n${JSON.stringify(trial.parameters)}`
    };
    this.update();
  }

  private async _register(trial: TuningTrial): Promise<void> {
    const exp = this._exp!;
    const asked = await InputDialog.getText({
      title: this._trans.__('Register trial #%1’s model', trial.seq),
      label: this._trans.__('Model name'),
      text: exp.name.toLowerCase().replace(/[^a-z0-9_.-]+/g, '-')
    });
    if (!asked.button.accept || !asked.value) {
      return;
    }
    this._busy = true;
    this.update();
    try {
      const version = await registerTrialModel(exp.id, {
        name: asked.value,
        trial: trial.id
      });
      this._error = null;
      this._note = {
        text: this._trans.__(
          'Registered %1 version %2 from trial #%3.',
          version.model,
          version.version,
          trial.seq
        ),
        code: JSON.stringify(trial.parameters)
      };
    } catch (err) {
      this._error = describeError(err);
    } finally {
      this._busy = false;
      this.update();
    }
  }

  private _trans: TranslationBundle;
  private _poll: Poll;
  private _exp: TuningExperiment | null = null;
  private _error: { error: string; detail: string } | null = null;
  private _busy = false;
  private _sort: ISort = { key: 'seq', descending: false };
  private _selected: string | null = null;
  private _log = '';
  private _logOffset = 0;
  private _logDone = false;
  private _note: { text: string; code: string } | null = null;
}

export namespace ExperimentView {
  export interface IOptions {
    experimentId: string;
    translator: ITranslator;
  }
}

function Fact(props: { label: string; value: string }): JSX.Element {
  return (
    <div className="cube-TFact">
      <dt>{props.label}</dt>
      <dd>{props.value}</dd>
    </div>
  );
}

function TrialsTable(props: {
  trials: TuningTrial[];
  params: string[];
  sort: ISort;
  bestId: string | null;
  selected: string | null;
  trans: TranslationBundle;
  onSort: (key: SortKey) => void;
  onPick: (trial: TuningTrial) => void;
}): JSX.Element {
  const { trans, sort } = props;
  const rows = sortTrials(props.trials, sort);
  const header = (key: SortKey, label: string, numeric = false) => (
    <th
      key={key}
      className={numeric ? 'cube-mod-num' : undefined}
      aria-sort={
        sort.key === key
          ? sort.descending
            ? 'descending'
            : 'ascending'
          : 'none'
      }
    >
      <button className="cube-TuSort" onClick={() => props.onSort(key)}>
        {label}
        <span className="cube-TuSort-mark">
          {sort.key === key ? (sort.descending ? '▼' : '▲') : ''}
        </span>
      </button>
    </th>
  );
  return (
    <div className="cube-TuTableWrap">
      <table className="cube-TuTable" aria-label={trans.__('Trials')}>
        <thead>
          <tr>
            {header('seq', '#', true)}
            {props.params.map(p => header(`param:${p}`, p))}
            {header('status', trans.__('status'))}
            {header('intermediate', trans.__('reports'), true)}
            {header('final', trans.__('final'), true)}
            {header('duration', trans.__('duration'), true)}
          </tr>
        </thead>
        <tbody>
          {rows.map(t => (
            <tr
              key={t.id}
              data-trial={t.id}
              data-status={t.status}
              className={`${t.id === props.bestId ? 'cube-mod-best' : ''}${t.id === props.selected ? ' cube-mod-selected' : ''}`}
              onClick={() => props.onPick(t)}
              title={trans.__('Show trial #%1’s log', t.seq)}
            >
              <td className="cube-mod-num">
                {t.seq}
                {t.id === props.bestId ? (
                  <span className="cube-TuBest" title={trans.__('best trial')}>
                    ★
                  </span>
                ) : null}
              </td>
              {props.params.map(p => (
                <td
                  key={p}
                  className="cube-TuParam"
                  title={formatValue(t.parameters?.[p])}
                >
                  {formatValue(t.parameters?.[p])}
                </td>
              ))}
              <td>
                <StatusBadge status={t.status} trans={trans} />
              </td>
              <td className="cube-mod-num">{t.intermediate.length}</td>
              <td className="cube-mod-num cube-TuFinal">
                {t.final !== null ? formatNumber(t.final) : ''}
              </td>
              <td className="cube-mod-num">{formatDuration(t.duration_s)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
