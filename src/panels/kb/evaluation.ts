/**
 * Side-by-side evaluation of two retrieval configurations on one question
 * set: the set as typed (one question a line, `question => source[, source]`,
 * or a JSON list as POST .../evaluate takes it), each configuration checked,
 * and the two results' metrics lined up with the better one marked.
 */
import type {
  KbEvalQuestion,
  KbEvalScores,
  KbMode,
  KbRerank,
  Model
} from '../../api';
import { identity, ITrans } from '../../validate';

export interface IQuestionSet {
  questions: KbEvalQuestion[];
  /** What is wrong, one message a bad line (empty when all is well). */
  errors: string[];
}

const ARROW = /\s*(?:=>|\t)\s*/;

/**
 * The question set typed: a JSON list of `{question, source | sources |
 * chunks}`, or lines of `question => source` (several sources split by
 * commas). Blank lines and lines starting with `#` are skipped.
 */
export function parseQuestionSet(
  text: string,
  trans: ITrans = identity
): IQuestionSet {
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) {
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch (err) {
      return {
        questions: [],
        errors: [
          trans.__(
            'Not valid JSON: %1',
            err instanceof Error ? err.message : String(err)
          )
        ]
      };
    }
    const questions: KbEvalQuestion[] = [];
    const errors: string[] = [];
    (Array.isArray(value) ? value : []).forEach((q, n) => {
      if (
        q &&
        typeof q === 'object' &&
        typeof (q as KbEvalQuestion).question === 'string' &&
        ('source' in q || 'sources' in q || 'chunks' in q)
      ) {
        questions.push(q as KbEvalQuestion);
      } else {
        errors.push(
          trans.__(
            'Item %1: {"question": "...", "source": "docs/a.md"} expected.',
            n + 1
          )
        );
      }
    });
    return { questions, errors };
  }
  const questions: KbEvalQuestion[] = [];
  const errors: string[] = [];
  trimmed.split('\n').forEach((raw, n) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) {
      return;
    }
    const parts = line.split(ARROW);
    const question = parts[0]?.trim() ?? '';
    const sources = (parts.slice(1).join(',') || '')
      .split(',')
      .map(s => s.trim())
      .filter(Boolean);
    if (parts.length < 2 || !question || !sources.length) {
      errors.push(
        trans.__(
          'Line %1: write "question => expected source" (sources split by commas).',
          n + 1
        )
      );
      return;
    }
    questions.push(
      sources.length === 1
        ? { question, source: sources[0] }
        : { question, sources }
    );
  });
  return { questions, errors };
}

/** One configuration as the form holds it. */
export interface IEvalConfig {
  mode: KbMode;
  k: string;
  /** The reranker: '' for none, else a registered model ("NAME" or "NAME/VERSION"). */
  rerank?: string;
  /** How many first-stage hits the reranker rescores ('' : the server's default, 3 x k). */
  topN?: string;
}

/** The largest top_n the server takes (cube_lab/kb/rerank.py MAX_TOP_N). */
export const MAX_TOP_N = 200;

/** A checked configuration: the request body's `k`, `mode` and `rerank`. */
export interface IEvalRequest {
  k: number;
  mode: KbMode;
  /** false: no reranker, even where the knowledge base has a default one. */
  rerank: KbRerank | false;
}

/** The request body's `k`, `mode` and `rerank`, or what is wrong with k or top_n. */
export function readConfig(
  config: IEvalConfig,
  trans: ITrans = identity
): IEvalRequest | { error: string } {
  const k = Number(config.k);
  if (!config.k.trim() || !Number.isInteger(k) || k < 1 || k > 100) {
    return { error: trans.__('k: a whole number from 1 to 100.') };
  }
  const model = (config.rerank ?? '').trim();
  if (!model) {
    return { k, mode: config.mode, rerank: false };
  }
  const raw = (config.topN ?? '').trim();
  if (!raw) {
    return { k, mode: config.mode, rerank: { model } };
  }
  const topN = Number(raw);
  if (!Number.isInteger(topN) || topN < 1 || topN > MAX_TOP_N) {
    return {
      error: trans.__(
        'top_n: a whole number from 1 to %1, or empty for 3 × k.',
        MAX_TOP_N
      )
    };
  }
  return { k, mode: config.mode, rerank: { model, top_n: topN } };
}

/**
 * The rerankers a configuration can pick: the project's registered models
 * that have a version, not archived, by name (the latest version is used).
 */
export function rerankerChoices(
  models: readonly Pick<
    Model,
    'name' | 'project' | 'archived' | 'latest_version'
  >[],
  project: string
): string[] {
  const names = models
    .filter(
      m => m.project === project && !m.archived && m.latest_version !== null
    )
    .map(m => m.name);
  return [...new Set(names)].sort((x, y) => x.localeCompare(y));
}

/**
 * A configuration's reranker as its column header says it: the one the
 * server reports it used (the scores' `rerank`), none when it used none.
 */
export function rerankLabel(
  rerank: KbRerank | null | undefined,
  trans: ITrans = identity
): string {
  if (!rerank || !rerank.model) {
    return trans.__('no reranker');
  }
  return rerank.top_n === null || rerank.top_n === undefined
    ? trans.__('reranked by %1', rerank.model)
    : trans.__('reranked by %1 (top %2)', rerank.model, rerank.top_n);
}

export type MetricKey = 'recall_at_k' | 'mrr' | 'ndcg_at_10';

export const METRICS: readonly MetricKey[] = [
  'recall_at_k',
  'mrr',
  'ndcg_at_10'
];

/** One metric's row: both values and which is higher (null: equal or missing). */
export interface IMetricRow {
  key: MetricKey;
  a: number | null;
  b: number | null;
  better: 'a' | 'b' | null;
}

/** The metrics of A and B side by side. */
export function compareScores(
  a: KbEvalScores | null,
  b: KbEvalScores | null
): IMetricRow[] {
  return METRICS.map(key => {
    const x = a ? a[key] : null;
    const y = b ? b[key] : null;
    let better: 'a' | 'b' | null = null;
    if (x !== null && y !== null && Math.abs(x - y) > 1e-9) {
      better = x > y ? 'a' : 'b';
    }
    return { key, a: x, b: y, better };
  });
}

/** A metric as shown: three decimals, a dash for none. */
export function formatMetric(value: number | null): string {
  return value === null || !Number.isFinite(value) ? '–' : value.toFixed(3);
}

/** The best rank at which a question found something it expected (null: nothing found). */
export function firstRank(ranks: (number | null)[]): number | null {
  const found = ranks.filter((r): r is number => r !== null);
  return found.length ? Math.min(...found) : null;
}
