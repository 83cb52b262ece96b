/**
 * "Evaluate": two retrieval configurations (mode, k, reranker) on one question set,
 * recall@k, MRR and nDCG@10 in two columns with the better value marked,
 * and per question the rank each configuration found its answer at.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import {
  describeError,
  evaluateKnowledgeBase,
  KbEvalScores,
  KbMode,
  KbRerank,
  listModels
} from '../../api';
import { ErrorBox } from '../errorbox';
import {
  compareScores,
  firstRank,
  formatMetric,
  IEvalConfig,
  IEvalRequest,
  MAX_TOP_N,
  MetricKey,
  parseQuestionSet,
  readConfig,
  rerankerChoices,
  rerankLabel
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
  /** The project's registered models a reranker can be. */
  rerankers: string[];
  /** List the models again (when the reranker field is focused). */
  onReload: () => void;
  trans: TranslationBundle;
  onChange: (c: IEvalConfig) => void;
}): JSX.Element {
  const { trans, config, which } = props;
  const rerank = config.rerank ?? '';
  // a model named by the knowledge base's default stays selectable
  const choices =
    rerank && !props.rerankers.includes(rerank)
      ? [rerank, ...props.rerankers]
      : props.rerankers;
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
      <label className="cube-KbEval-rerank">
        <span>{trans.__('Reranker')}</span>
        <select
          className="jp-mod-styled cube-KbInput"
          name={`kb-eval-rerank-${which}`}
          value={rerank}
          aria-label={trans.__('Reranker')}
          title={trans.__(
            'A registered cross-encoder of this project rescores the first hits'
          )}
          onFocus={props.onReload}
          onChange={e => props.onChange({ ...config, rerank: e.target.value })}
        >
          <option value="">{trans.__('none')}</option>
          {choices.map(m => (
            <option key={m} value={m}>
              {m}
            </option>
          ))}
        </select>
      </label>
      <label className="cube-KbSearch-k cube-KbEval-topN">
        <span>top_n</span>
        <input
          className="jp-mod-styled cube-KbInput"
          name={`kb-eval-topn-${which}`}
          type="number"
          min={1}
          max={MAX_TOP_N}
          value={config.topN ?? ''}
          disabled={!rerank}
          placeholder={trans.__('3 × k')}
          aria-label={trans.__('Hits the reranker rescores (top_n)')}
          title={trans.__(
            'How many first hits the reranker rescores; empty: 3 × k'
          )}
          onChange={e => props.onChange({ ...config, topN: e.target.value })}
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
  /** The knowledge base's default reranker: configuration A starts with it. */
  defaultRerank?: KbRerank | null;
  trans: TranslationBundle;
}): JSX.Element {
  const { trans } = props;
  const [text, setText] = React.useState('');
  const [a, setA] = React.useState<IEvalConfig>({
    mode: 'hybrid',
    k: '5',
    rerank: props.defaultRerank?.model ?? '',
    topN:
      props.defaultRerank?.top_n !== null &&
      props.defaultRerank?.top_n !== undefined
        ? String(props.defaultRerank.top_n)
        : ''
  });
  const [b, setB] = React.useState<IEvalConfig>({
    mode: 'vector',
    k: '5',
    rerank: '',
    topN: ''
  });
  const [rerankers, setRerankers] = React.useState<string[]>([]);
  const [modelsError, setModelsError] = React.useState<string | null>(null);
  const [busy, setBusy] = React.useState(false);
  const [scores, setScores] = React.useState<
    [KbEvalScores, KbEvalScores] | null
  >(null);
  // what was run, so the headers say it even after the fields change
  const [ran, setRan] = React.useState<[IEvalRequest, IEvalRequest] | null>(
    null
  );

  // the project's models, listed again when a reranker field is focused
  // (a model registered meanwhile shows up)
  const live = React.useRef(true);
  const loadRerankers = React.useCallback(() => {
    listModels({ project: props.project, limit: 200 })
      .then(list => {
        if (live.current) {
          setRerankers(rerankerChoices(list.models, props.project));
          setModelsError(null);
        }
      })
      .catch(err => {
        if (live.current) {
          setModelsError(describeError(err).error);
        }
      });
  }, [props.project]);
  React.useEffect(() => {
    live.current = true;
    loadRerankers();
    return () => {
      live.current = false;
    };
  }, [loadRerankers]);
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
            mode: c.mode,
            rerank: c.rerank
          })
        )
      );
      setScores([sa, sb]);
      setRan([ca, cb]);
      setError(null);
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };

  const rows = scores ? compareScores(scores[0], scores[1]) : [];
  const header = (which: 0 | 1) => {
    const s = scores?.[which];
    const c = ran?.[which];
    if (!s || !c) {
      return null;
    }
    // the server says which reranker it used (the knowledge base's default
    // when none was named); false asked for none
    const used = s.rerank ?? (c.rerank === false ? null : c.rerank);
    return (
      <>
        <span className="cube-KbEval-head">
          {trans.__('%1, k=%2', modeLabel(c.mode, trans), s.k)}
        </span>
        <span
          className={`cube-KbEval-reranker${used ? ' cube-mod-reranked' : ''}`}
          data-rerank={used?.model ?? ''}
        >
          {rerankLabel(used, trans)}
        </span>
      </>
    );
  };
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
            rerankers={rerankers}
            onReload={loadRerankers}
            trans={trans}
            onChange={setA}
          />
          <ConfigFields
            which="b"
            config={b}
            error={'error' in cb ? cb.error : undefined}
            rerankers={rerankers}
            onReload={loadRerankers}
            trans={trans}
            onChange={setB}
          />
        </div>
        {modelsError ? (
          <div className="cube-Muted cube-KbEval-modelsError">
            {trans.__('Rerankers could not be listed: %1', modelsError)}
          </div>
        ) : null}
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
                <th data-config="a">{header(0)}</th>
                <th data-config="b">{header(1)}</th>
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
