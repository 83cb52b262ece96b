/**
 * Knowledge bases (cube_lab/handlers/kb.py, docs/kb.md): list, create, show
 * and delete; sources (add files, folders or uploaded text as an ingest the
 * server runs on and the client polls; remove); search with scores; and chat
 * with numbered citations.
 */
import { ServerConnection } from '@jupyterlab/services';

import type { ChatParams, ChatTarget } from './chat';
import { postForEvents } from './eventstream';
import { encodePath, queryString, requestAPI } from './request';

export type KbChunking = 'tokens' | 'headings' | 'pages';
export type KbMode = 'vector' | 'keyword' | 'bm25' | 'hybrid';

/**
 * A cross-encoder reranker (cube_lab/kb/rerank.py): a registered model of the
 * knowledge base's project ("NAME" or "NAME/VERSION") rescoring the first
 * `top_n` hits (default 3 x k). A request's `rerank: false` asks for none
 * even where the knowledge base has a default one.
 */
export interface KbRerank {
  model: string;
  top_n?: number | null;
}

export interface KnowledgeBase {
  project: string;
  name: string;
  owner: string;
  created_at: string;
  chunking: KbChunking;
  chunk_size: number;
  overlap: number;
  /** The embedding model. */
  model: string;
  sources: number;
  chunks: number;
  /** The default reranker of its retrievals, if any. */
  rerank?: KbRerank | null;
}

export interface NewKnowledgeBase {
  name: string;
  project?: string;
  chunking?: KbChunking;
  chunk_size?: number;
  overlap?: number;
  model?: string;
}

/** A source as GET .../sources lists it (relative to the root, or upload:NAME). */
export interface KbSource {
  source: string;
  sha256: string;
  kind: string;
  chunks: number;
  added_at: string;
}

export type KbIngestStatus =
  'queued' | 'running' | 'succeeded' | 'failed' | 'interrupted';

export interface KbIngestFile {
  source: string;
  status: 'added' | 'replaced' | 'unchanged' | 'failed';
  chunks: number;
  error?: string;
  detail?: string;
}

export interface KbIngest {
  id: string;
  project: string;
  kb: string;
  status: KbIngestStatus;
  files_total: number;
  files_done: number;
  /** Chunks added so far. */
  chunks: number;
  /** Files that failed (each alone; the others go on). */
  failed: number;
  files: KbIngestFile[];
  /** Why the whole ingest failed. */
  error: string | null;
  started_at: string;
  finished_at: string | null;
}

/** An uploaded document: its text, or its bytes base64-encoded. */
export interface KbDocument {
  name: string;
  content?: string;
  content_base64?: string;
}

export interface KbHit {
  /** The chunk's id. */
  id: number;
  text: string;
  source: string;
  /** Its place in its source, from 0. */
  position: number;
  heading: string;
  meta: Record<string, unknown>;
  /** The mode's score: cosine (vector), BM25 (keyword) or fused (hybrid). */
  score: number;
  vector_score: number | null;
  keyword_score: number | null;
  vector_rank: number | null;
  keyword_rank: number | null;
}

export interface KbSearchResult {
  query: string;
  mode: KbMode;
  k: number;
  hits: KbHit[];
}

export interface KbChatRequest {
  query: string;
  target: ChatTarget;
  history?: { role: 'user' | 'assistant'; content: string }[];
  k?: number;
  mode?: KbMode;
  threshold?: number;
  template?: string;
  system?: string;
  params?: ChatParams;
}

export interface KbCitation {
  number: number;
  chunk_id: number;
  source: string;
  name: string;
  position: number;
  page: number | null;
  heading: string;
  text: string;
  score: number;
  cosine: number | null;
  cited: boolean;
}

export interface KbChatAnswer {
  /** False when no passage passed the threshold (the model was not asked). */
  answered: boolean;
  answer: string;
  reason?: string;
  query: string;
  mode: KbMode;
  k: number;
  threshold: number;
  retrieved: number;
  target: Record<string, string>;
  cited: number[];
  citations: KbCitation[];
  usage: Record<string, number> | null;
}

const KB = 'kb';

export function listKnowledgeBases(
  project?: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<{ knowledge_bases: KnowledgeBase[] }>(
    KB + queryString({ project }),
    {},
    settings
  );
}

export function createKnowledgeBase(
  body: NewKnowledgeBase,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<KnowledgeBase>(KB, { method: 'POST', body }, settings);
}

export function getKnowledgeBase(
  project: string,
  name: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<KnowledgeBase>(encodePath(KB, project, name), {}, settings);
}

export function deleteKnowledgeBase(
  project: string,
  name: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<void>(
    encodePath(KB, project, name),
    { method: 'DELETE' },
    settings
  );
}

export function listKbSources(
  project: string,
  name: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<{ sources: KbSource[] }>(
    encodePath(KB, project, name, 'sources'),
    {},
    settings
  );
}

/** How files are cut into chunks: a knowledge base's settings, or an ingest's own. */
export interface KbChunkingOptions {
  chunking: KbChunking;
  chunk_size: number;
  overlap: number;
}

/** What to add (or preview): files / folders under the root, uploaded documents. */
export interface KbAddRequest extends Partial<KbChunkingOptions> {
  paths?: string[];
  documents?: KbDocument[];
}

/** A file of a preview: its chunk count, or why it fails (the others go on). */
export interface KbPreviewFile {
  source: string;
  status: 'ok' | 'failed';
  chunks: number;
  tokens: number;
  error: string;
  detail: string;
  kind?: string;
  sha256?: string;
  /** The knowledge base holds this exact content already: an ingest skips it. */
  unchanged?: boolean;
}

/** A chunk of a preview, as an ingest would store it. */
export interface KbPreviewChunk {
  source: string;
  position: number;
  text: string;
  page: number | null;
  heading: string;
  heading_path: string[];
  tokens: number;
  meta: Record<string, unknown>;
}

/** POST .../preview: the chunks an ingest would make, nothing committed. */
export interface KbPreview extends KbChunkingOptions {
  files: KbPreviewFile[];
  chunks: KbPreviewChunk[];
  total_chunks: number;
  /** More chunks than returned (the counts are complete). */
  truncated: boolean;
}

/** Start an ingest of files / folders under the root and uploaded documents (202). */
export function addKbSources(
  project: string,
  name: string,
  body: KbAddRequest,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<KbIngest>(
    encodePath(KB, project, name, 'sources'),
    { method: 'POST', body },
    settings
  );
}

/** Parse and chunk files or documents as an ingest would, committing nothing. */
export function previewKbSources(
  project: string,
  name: string,
  body: KbAddRequest,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<KbPreview>(
    encodePath(KB, project, name, 'preview'),
    { method: 'POST', body },
    settings
  );
}

export function removeKbSource(
  project: string,
  name: string,
  source: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<{ source: string; removed_chunks: number }>(
    encodePath(KB, project, name, 'sources') + queryString({ source }),
    { method: 'DELETE' },
    settings
  );
}

export function listKbIngests(
  project: string,
  name: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<{ ingests: KbIngest[] }>(
    encodePath(KB, project, name, 'ingests'),
    {},
    settings
  );
}

export function getKbIngest(
  project: string,
  name: string,
  id: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<KbIngest>(
    encodePath(KB, project, name, 'ingests', id),
    {},
    settings
  );
}

export function searchKnowledgeBase(
  project: string,
  name: string,
  body: { query: string; k?: number; mode?: KbMode },
  settings?: ServerConnection.ISettings
) {
  return requestAPI<KbSearchResult>(
    encodePath(KB, project, name, 'search'),
    { method: 'POST', body },
    settings
  );
}

export function chatKnowledgeBase(
  project: string,
  name: string,
  body: KbChatRequest,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<KbChatAnswer>(
    encodePath(KB, project, name, 'chat'),
    { method: 'POST', body },
    settings
  );
}

/** An event of a streamed answer (`"stream": true`; docs/kb.md). */
export type KbChatEvent =
  | ({ event: 'citations' } & Omit<
      KbChatAnswer,
      'answer' | 'answered' | 'cited' | 'usage'
    >)
  | { event: 'delta'; text: string }
  | ({ event: 'done' } & KbChatAnswer)
  | { event: 'error'; error: string; detail: string };

function parseKbChatEvent(data: string): KbChatEvent | null {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return null;
  }
  if (!value || typeof value !== 'object') {
    return null;
  }
  const kind = (value as { event?: unknown }).event;
  return kind === 'citations' ||
    kind === 'delta' ||
    kind === 'done' ||
    kind === 'error'
    ? (value as KbChatEvent)
    : null;
}

/**
 * Ask a knowledge base and read the answer as it streams: the citations
 * first, the answer's pieces, then the whole answer. Abort `signal` to stop.
 *
 * @throws CubeApiError when the server refuses before streaming (400, 404,
 *   409, 424).
 */
export async function* streamKnowledgeBaseChat(
  project: string,
  name: string,
  body: KbChatRequest,
  signal?: AbortSignal,
  settings?: ServerConnection.ISettings
): AsyncGenerator<KbChatEvent, void, undefined> {
  yield* postForEvents(
    encodePath(KB, project, name, 'chat'),
    { ...body, stream: true },
    parseKbChatEvent,
    signal,
    settings
  );
}

/** One question of an evaluation set: what it should find. */
export type KbEvalQuestion = {
  question: string;
  source?: string;
  sources?: string[];
  chunks?: number[];
};

/** POST /kb/{project}/{name}/evaluate: averages over the set, and each question's. */
export interface KbEvalScores {
  questions: number;
  k: number;
  recall_at_k: number;
  mrr: number;
  ndcg_at_10: number;
  /** The reranker the rankings went through (null: none). */
  rerank?: KbRerank | null;
  per_question: {
    question: string;
    /** Per expected source or chunk, the first rank (from 1) it was found at; null: not found. */
    ranks: (number | null)[];
    recall_at_k: number;
    reciprocal_rank: number;
    ndcg_at_10: number;
  }[];
}

export function evaluateKnowledgeBase(
  project: string,
  name: string,
  body: {
    questions: KbEvalQuestion[];
    k?: number;
    mode?: KbMode;
    rerank?: KbRerank | false;
  },
  settings?: ServerConnection.ISettings
) {
  return requestAPI<KbEvalScores>(
    encodePath(KB, project, name, 'evaluate'),
    { method: 'POST', body },
    settings
  );
}
