/**
 * The "Retrieval test" of a knowledge base: a query, a mode and k give the
 * ranked chunks with their scores (fused, vector, keyword, as the mode has
 * them) and the query's words highlighted in each chunk's text.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import {
  describeError,
  KbHit,
  KbMode,
  KbSearchResult,
  searchKnowledgeBase
} from '../../api';
import { ErrorBox } from '../errorbox';
import {
  formatScore,
  highlight,
  hitScores,
  type HitScoreKind,
  queryTerms,
  reflow,
  splitSource
} from './logic';

export const MODES: KbMode[] = ['hybrid', 'vector', 'keyword'];

export function modeLabel(mode: string, trans: TranslationBundle): string {
  switch (mode) {
    case 'hybrid':
      return trans.__('Hybrid (vector + keyword)');
    case 'vector':
      return trans.__('Vector');
    case 'keyword':
    case 'bm25':
      return trans.__('Keyword (BM25)');
    default:
      return mode;
  }
}

export function Highlighted(props: {
  text: string;
  terms: string[];
}): JSX.Element {
  return (
    <>
      {highlight(reflow(props.text), props.terms).map((s, n) =>
        s.match ? (
          <mark key={n} className="cube-KbMark">
            {s.text}
          </mark>
        ) : (
          <React.Fragment key={n}>{s.text}</React.Fragment>
        )
      )}
    </>
  );
}

export function RetrievalTest(props: {
  project: string;
  name: string;
  trans: TranslationBundle;
  /** The knowledge base has no chunks yet. */
  empty: boolean;
}): JSX.Element {
  const { trans } = props;
  const [query, setQuery] = React.useState('');
  const [mode, setMode] = React.useState<KbMode>('hybrid');
  const [k, setK] = React.useState('5');
  const [busy, setBusy] = React.useState(false);
  const [result, setResult] = React.useState<KbSearchResult | null>(null);
  const [error, setError] = React.useState<{
    error: string;
    detail: string;
  } | null>(null);
  const [ms, setMs] = React.useState<number | null>(null);

  const run = async (event: React.FormEvent) => {
    event.preventDefault();
    if (!query.trim()) {
      return;
    }
    setBusy(true);
    const started = performance.now();
    try {
      const answer = await searchKnowledgeBase(props.project, props.name, {
        query: query.trim(),
        mode,
        k: Number(k) || 5
      });
      setMs(performance.now() - started);
      setResult(answer);
      setError(null);
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };
  const terms = result ? queryTerms(result.query) : [];
  return (
    <section className="cube-KbSection cube-KbSearch">
      <h3 className="cube-KbSection-title">{trans.__('Retrieval test')}</h3>
      <form className="cube-KbSearch-form" onSubmit={e => void run(e)}>
        <input
          className="jp-mod-styled cube-KbInput cube-KbSearch-query"
          name="kb-query"
          value={query}
          placeholder={trans.__('Ask something the documents answer')}
          aria-label={trans.__('Query')}
          onChange={e => setQuery(e.target.value)}
        />
        <select
          className="jp-mod-styled cube-KbInput"
          name="kb-mode"
          value={mode}
          aria-label={trans.__('Mode')}
          onChange={e => setMode(e.target.value as KbMode)}
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
            className="jp-mod-styled cube-KbInput"
            name="kb-k"
            type="number"
            min={1}
            max={100}
            value={k}
            aria-label={trans.__('Number of chunks (k)')}
            onChange={e => setK(e.target.value)}
          />
        </label>
        <button
          type="submit"
          className="cube-Button cube-mod-primary"
          disabled={busy || !query.trim()}
        >
          {busy ? trans.__('Searching…') : trans.__('Search')}
        </button>
      </form>
      {props.empty && !result ? (
        <p className="cube-Muted">
          {trans.__('Add sources first: the index has no chunks yet.')}
        </p>
      ) : null}
      {error ? <ErrorBox error={error} /> : null}
      {result ? (
        <>
          <p className="cube-KbSearch-summary">
            {trans._n(
              '%1 chunk for “%2”',
              '%1 chunks for “%2”',
              result.hits.length,
              result.query
            )}
            {` · ${modeLabel(result.mode, trans)}`}
            {ms !== null ? ` · ${Math.round(ms)} ms` : ''}
          </p>
          <ol className="cube-KbHits" aria-label={trans.__('Ranked chunks')}>
            {result.hits.map((hit, n) => (
              <HitCard
                key={hit.id}
                hit={hit}
                rank={n + 1}
                mode={result.mode}
                terms={terms}
                trans={trans}
              />
            ))}
          </ol>
        </>
      ) : null}
    </section>
  );
}

function scoreName(kind: HitScoreKind, trans: TranslationBundle): string {
  return kind === 'rerank'
    ? trans.__('rerank')
    : kind === 'fused'
      ? trans.__('fused')
      : kind === 'vector'
        ? trans.__('vector')
        : trans.__('keyword');
}

function HitCard(props: {
  hit: KbHit;
  rank: number;
  mode: string;
  terms: string[];
  trans: TranslationBundle;
}): JSX.Element {
  const { hit, trans } = props;
  return (
    <li className="cube-KbHit" data-rank={props.rank} data-source={hit.source}>
      <div className="cube-KbHit-head">
        <span className="cube-KbHit-rank">#{props.rank}</span>
        <SourceName source={hit.source} className="cube-KbHit-source" />
        {hit.heading ? (
          <span className="cube-KbHit-heading" title={hit.heading}>
            {hit.heading}
          </span>
        ) : null}
        <span className="cube-KbHit-scores">
          {hitScores(hit, props.mode).map(s => (
            <span
              key={s.kind}
              className={`cube-KbScore cube-KbScore-${s.kind}`}
              data-kind={s.kind}
            >
              {scoreName(s.kind, trans)} <b>{formatScore(s.value)}</b>
            </span>
          ))}
        </span>
      </div>
      <div className="cube-KbHit-text">
        <Highlighted text={hit.text} terms={props.terms} />
      </div>
    </li>
  );
}

/** A source as "folder/ file.md": the folder dimmed and cut first when short of room. */
export function SourceName(props: {
  source: string;
  className?: string;
}): JSX.Element {
  const { dir, file } = splitSource(props.source);
  return (
    <span
      className={`cube-KbSourceName ${props.className ?? ''}`}
      title={props.source}
    >
      {dir ? <span className="cube-KbSourceName-dir">{dir}</span> : null}
      <span className="cube-KbSourceName-file">{file}</span>
    </span>
  );
}
