/**
 * "Evaluate": two retrieval configurations (mode, k) on one question set,
 * recall@k, MRR and nDCG@10 in two columns with the better value marked,
 * and per question the rank each configuration found its answer at.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import {
  describeError,
  evaluateKnowledgeBase,
  KbEvalScores,
  KbMode
} from '../../api';
import { ErrorBox } from '../errorbox';
import {
  compareScores,
  firstRank,
  formatMetric,
  IEvalConfig,
  MetricKey,
  parseQuestionSet,
  readConfig
} from './evaluation';
import { modeLabel, MODES } from './search';

function metricLabel(key: MetricKey, trans: TranslationBundle): string {
  switch (key) {
    case 'recall_at_k':
      return trans.__('Recall@k');
    case 'mrr':
      return trans.__('MRR');
    default:
      return trans.__('nDCG@10');
  }
}

function ConfigFields(props: {
  which: 'a' | 'b';
  config: IEvalConfig;
  error: string | undefined;
  trans: TranslationBundle;
  onChange: (c: IEvalConfig) => void;
}): JSX.Element {
  const { trans, config, which } = props;
  return (
    <fieldset className="cube-KbEval-config" data-config={which}>
      <legend>
        {which === 'a'
          ? trans.__('Configuration A')
          : trans.__('Configuration B')}
      </legend>
      <select
        className="jp-mod-styled cube-KbInput"
        name={`kb-eval-mode-${which}`}
        value={config.mode}
        aria-label={trans.__('Mode')}
        onChange={e =>
          props.onChange({ ...config, mode: e.target.value as KbMode })
        }
      >
        {MODES.map(m => (
          <option key={m} value={m}>
            {modeLabel(m, trans)}
          </option>
        ))}
      </select>
      <label className="cube-KbSearch-k">
        <span>k</span>
        <input
          className={`jp-mod-styled cube-KbInput${props.error ? ' cube-mod-invalid' : ''}`}
          name={`kb-eval-k-${which}`}
          type="number"
          min={1}
          max={100}
          value={config.k}
          aria-label={trans.__('Number of chunks (k)')}
          onChange={e => props.onChange({ ...config, k: e.target.value })}
        />
      </label>
      {props.error ? (
        <div className="cube-TField-error" role="alert">
          {props.error}
        </div>
      ) : null}
    </fieldset>
  );
}

export function EvaluateBox(props: {
  project: string;
  name: string;
  trans: TranslationBundle;
}): JSX.Element {
  const { trans } = props;
  const [text, setText] = React.useState('');
  const [a, setA] = React.useState<IEvalConfig>({ mode: 'hybrid', k: '5' });
  const [b, setB] = React.useState<IEvalConfig>({ mode: 'vector', k: '5' });
  const [busy, setBusy] = React.useState(false);
  const [scores, setScores] = React.useState<
    [KbEvalScores, KbEvalScores] | null
  >(null);
  const [error, setError] = React.useState<{
    error: string;
    detail: string;
  } | null>(null);

  const set = parseQuestionSet(text, trans);
  const ca = readConfig(a, trans);
  const cb = readConfig(b, trans);
  const ready =
    !busy &&
    set.questions.length > 0 &&
    set.errors.length === 0 &&
    !('error' in ca) &&
    !('error' in cb);

  const run = async (event: React.FormEvent) => {
    event.preventDefault();
    if (!ready || 'error' in ca || 'error' in cb) {
      return;
    }
    setBusy(true);
    try {
      const [sa, sb] = await Promise.all(
        [ca, cb].map(c =>
          evaluateKnowledgeBase(props.project, props.name, {
            questions: set.questions,
            k: c.k,
            mode: c.mode
          })
        )
      );
      setScores([sa, sb]);
      setError(null);
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };

  const rows = scores ? compareScores(scores[0], scores[1]) : [];
  const label = (c: IEvalConfig, k: number) =>
    trans.__('%1, k=%2', modeLabel(c.mode, trans), k);
  return (
    <section className="cube-KbSection cube-KbEval">
      <h3 className="cube-KbSection-title">{trans.__('Evaluate')}</h3>
      <form className="cube-KbEval-form" onSubmit={e => void run(e)}>
        <textarea
          className="jp-mod-styled cube-KbInput cube-KbEval-questions"
          name="kb-eval-questions"
          rows={4}
          value={text}
          aria-label={trans.__('Question set')}
          placeholder={trans.__(
            'One question a line: question => expected source\nHow long does a refund take? => docs/refunds.md'
          )}
          onChange={e => setText(e.target.value)}
        />
        {set.errors.length ? (
          <ul className="cube-TField-error cube-KbEval-errors" role="alert">
            {set.errors.slice(0, 5).map((e, n) => (
              <li key={n}>{e}</li>
            ))}
          </ul>
        ) : null}
        <div className="cube-KbEval-configs">
          <ConfigFields
            which="a"
            config={a}
            error={'error' in ca ? ca.error : undefined}
            trans={trans}
            onChange={setA}
          />
          <ConfigFields
            which="b"
            config={b}
            error={'error' in cb ? cb.error : undefined}
            trans={trans}
            onChange={setB}
          />
        </div>
        <button
          type="submit"
          className="cube-Button cube-mod-primary"
          name="kb-eval-run"
          disabled={!ready}
        >
          {busy
            ? trans.__('Evaluating…')
            : trans.__('Compare on %1 questions', set.questions.length)}
        </button>
      </form>
      {error ? <ErrorBox error={error} /> : null}
      {scores ? (
        <div className="cube-KbEval-result">
          <table className="cube-KbEval-table">
            <thead>
              <tr>
                <th>{trans.__('Metric')}</th>
                <th data-config="a">{label(a, scores[0].k)}</th>
                <th data-config="b">{label(b, scores[1].k)}</th>
              </tr>
            </thead>
            <tbody>
              {rows.map(r => (
                <tr key={r.key} data-metric={r.key}>
                  <th>{metricLabel(r.key, trans)}</th>
                  {(['a', 'b'] as const).map(which => (
                    <td
                      key={which}
                      data-config={which}
                      className={r.better === which ? 'cube-mod-better' : ''}
                    >
                      {formatMetric(r[which])}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
          <details className="cube-KbEval-per">
            <summary>
              {trans.__('Per question (%1)', scores[0].questions)}
            </summary>
            <table className="cube-KbEval-table">
              <thead>
                <tr>
                  <th>{trans.__('Question')}</th>
                  <th data-config="a">{trans.__('Rank in A')}</th>
                  <th data-config="b">{trans.__('Rank in B')}</th>
                </tr>
              </thead>
              <tbody>
                {scores[0].per_question.map((q, n) => {
                  const ra = firstRank(q.ranks);
                  const rb = firstRank(scores[1].per_question[n]?.ranks ?? []);
                  return (
                    <tr key={n}>
                      <td>{q.question}</td>
                      <td data-config="a">
                        {ra === null ? trans.__('not found') : ra}
                      </td>
                      <td data-config="b">
                        {rb === null ? trans.__('not found') : rb}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </details>
        </div>
      ) : null}
    </section>
  );
}
