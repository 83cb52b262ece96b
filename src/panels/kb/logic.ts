/**
 * The pure logic of the Knowledge bases panel: query terms and their
 * highlighting in a chunk, an ingest's progress in words, scores, the
 * numbered citations of an answer, and the paths a user types.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import type { KbHit, KbIngest, KbIngestFile } from '../../api';

/** A piece of a chunk's text: a query term (match) or the text between. */
export interface Segment {
  text: string;
  match: boolean;
}

const CJK = /[\u3400-\u9fff\uf900-\ufaff]/u;

/** Words too common to be worth marking in a chunk. */
const STOPWORDS = new Set(
  (
    'a an and are as at be by can do does for from has have how i if in is it ' +
    'its my of on or our so than that the their then there these this to until ' +
    'was we were what when where which who why will with you your'
  ).split(' ')
);

/**
 * The words of a query to highlight: lower-cased, each once, longest first
 * (so "indexing" wins over "index"); one-letter Latin words and common
 * English words ("is", "the", "how") are left out, a single CJK character is
 * kept.
 */
export function queryTerms(query: string): string[] {
  const words = query.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [];
  const kept = new Set<string>();
  for (const word of words) {
    if ((word.length > 1 || CJK.test(word)) && !STOPWORDS.has(word)) {
      kept.add(word);
    }
  }
  return [...kept].sort((a, b) => b.length - a.length || (a < b ? -1 : 1));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * `text` cut into segments where the terms occur (any case). A Latin term
 * matches at the start of a word ("index" marks "indexes", not "reindex");
 * a CJK term anywhere.
 */
export function highlight(text: string, terms: string[]): Segment[] {
  if (!text) {
    return [];
  }
  if (!terms.length) {
    return [{ text, match: false }];
  }
  const alternatives = terms.map(t =>
    CJK.test(t) ? escapeRegExp(t) : `(?<![\\p{L}\\p{N}_])${escapeRegExp(t)}`
  );
  const pattern = new RegExp(alternatives.join('|'), 'giu');
  const out: Segment[] = [];
  let last = 0;
  for (const m of text.matchAll(pattern)) {
    const start = m.index ?? 0;
    if (!m[0].length) {
      continue;
    }
    if (start > last) {
      out.push({ text: text.slice(last, start), match: false });
    }
    out.push({ text: m[0], match: true });
    last = start + m[0].length;
  }
  if (last < text.length) {
    out.push({ text: text.slice(last), match: false });
  }
  return out;
}

/** True while the server is still working on the ingest. */
export function ingestActive(ingest: Pick<KbIngest, 'status'>): boolean {
  return ingest.status === 'queued' || ingest.status === 'running';
}

/** The share of files done, 0..100 (100 once the ingest has ended). */
export function ingestPercent(
  ingest: Pick<KbIngest, 'status' | 'files_done' | 'files_total'>
): number {
  if (!ingestActive(ingest)) {
    return 100;
  }
  if (ingest.files_total <= 0) {
    return 0;
  }
  return Math.min(
    100,
    Math.round((100 * ingest.files_done) / ingest.files_total)
  );
}

/** "2 of 3 files · 14 chunks · 1 failed" */
export function ingestProgressText(
  ingest: Pick<KbIngest, 'files_done' | 'files_total' | 'chunks' | 'failed'>,
  trans: Pick<TranslationBundle, '__' | '_n'>
): string {
  const parts = [
    trans._n(
      '%2 of %1 file',
      '%2 of %1 files',
      ingest.files_total,
      ingest.files_done
    ),
    trans._n('%1 chunk', '%1 chunks', ingest.chunks)
  ];
  if (ingest.failed > 0) {
    parts.push(trans._n('%1 failed', '%1 failed', ingest.failed));
  }
  return parts.join(' · ');
}

/** The status of an ingest in the reader's words. */
export function ingestStatusText(
  status: KbIngest['status'],
  trans: Pick<TranslationBundle, '__'>
): string {
  switch (status) {
    case 'queued':
      return trans.__('Queued');
    case 'running':
      return trans.__('Ingesting');
    case 'succeeded':
      return trans.__('Done');
    case 'failed':
      return trans.__('Failed');
    case 'interrupted':
      return trans.__('Interrupted');
    default:
      return String(status);
  }
}

/** What happened to one file of an ingest, in words. */
export function fileOutcomeText(
  file: Pick<KbIngestFile, 'status' | 'chunks'>,
  trans: Pick<TranslationBundle, '__' | '_n'>
): string {
  switch (file.status) {
    case 'added':
      return trans._n('added, %1 chunk', 'added, %1 chunks', file.chunks);
    case 'replaced':
      return trans._n('replaced, %1 chunk', 'replaced, %1 chunks', file.chunks);
    case 'unchanged':
      return trans.__('unchanged');
    case 'failed':
      return trans.__('failed');
    default:
      return String(file.status);
  }
}

/** A score as shown: three significant decimals, "–" when there is none. */
export function formatScore(score: number | null | undefined): string {
  if (score === null || score === undefined || !Number.isFinite(score)) {
    return '–';
  }
  const abs = Math.abs(score);
  return abs !== 0 && abs < 0.01 ? score.toPrecision(2) : score.toFixed(3);
}

/** A kind of score a hit shows. */
export type HitScoreKind = 'rerank' | 'fused' | 'vector' | 'keyword';

/**
 * The scores of a hit worth showing for its mode: [label key, value] pairs;
 * first the reranker's, when a cross-encoder reranked the hits.
 */
export function hitScores(
  hit: Pick<KbHit, 'score' | 'vector_score' | 'keyword_score'> & {
    rerank?: number | null;
  },
  mode: string
): { kind: HitScoreKind; value: number }[] {
  const out: { kind: HitScoreKind; value: number }[] = [];
  if (hit.rerank !== null && hit.rerank !== undefined) {
    out.push({ kind: 'rerank', value: hit.rerank });
  }
  if (mode === 'hybrid') {
    out.push({ kind: 'fused', value: hit.score });
  }
  const vector = mode === 'vector' ? hit.score : hit.vector_score;
  const keyword =
    mode === 'keyword' || mode === 'bm25' ? hit.score : hit.keyword_score;
  if (vector !== null && vector !== undefined) {
    out.push({ kind: 'vector', value: vector });
  }
  if (keyword !== null && keyword !== undefined) {
    out.push({ kind: 'keyword', value: keyword });
  }
  return out;
}

/** A piece of an answer: text, or a citation marker "[n]". */
export type AnswerPart = { text: string } | { cite: number };

/**
 * An answer cut at its citation markers: "[1]", "[2, 3]" and "[1][2]" give
 * one part per number; numbers not among `known` stay as text.
 */
export function answerParts(answer: string, known: number[]): AnswerPart[] {
  const ok = new Set(known);
  const out: AnswerPart[] = [];
  const pattern = /\[(\d+(?:\s*,\s*\d+)*)\]/g;
  let last = 0;
  const pushText = (text: string) => {
    if (!text) {
      return;
    }
    const prev = out[out.length - 1];
    if (prev && 'text' in prev) {
      prev.text += text;
    } else {
      out.push({ text });
    }
  };
  for (const m of answer.matchAll(pattern)) {
    const start = m.index ?? 0;
    const numbers = m[1].split(',').map(n => Number(n.trim()));
    if (!numbers.every(n => ok.has(n))) {
      continue;
    }
    pushText(answer.slice(last, start));
    for (const n of numbers) {
      out.push({ cite: n });
    }
    last = start + m[0].length;
  }
  pushText(answer.slice(last));
  return out;
}

/** The paths a user typed: one a line or comma-separated, trimmed, each once. */
export function parsePaths(text: string): string[] {
  const seen = new Set<string>();
  for (const raw of text.split(/[\n,]/)) {
    const path = raw.trim();
    if (path) {
      seen.add(path);
    }
  }
  return [...seen];
}

/** The name a source is shown by: its last path segment ("upload:" dropped). */
export function sourceLabel(source: string): string {
  const bare = source.startsWith('upload:')
    ? source.slice('upload:'.length)
    : source;
  const parts = bare.split('/');
  return parts[parts.length - 1] || bare;
}

/**
 * A chunk's text for reading: the line breaks inside a paragraph (the
 * source's wrapping) become spaces; blank lines between paragraphs stay.
 */
export function reflow(text: string): string {
  return text.replace(/[ \t]*\n(?![ \t]*\n)(?<!\n[ \t]*\n)[ \t]*/g, ' ').trim();
}

/** A source path cut into its folder ("" for none) and its file name. */
export function splitSource(source: string): { dir: string; file: string } {
  const bare = source.startsWith('upload:')
    ? source.slice('upload:'.length)
    : source;
  const cut = bare.lastIndexOf('/');
  return cut < 0
    ? { dir: '', file: bare }
    : { dir: bare.slice(0, cut + 1), file: bare.slice(cut + 1) };
}
