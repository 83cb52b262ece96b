/**
 * The pure logic of the chunk preview before an add: the chunking options
 * as typed (checked as the server checks them), whether a shown preview
 * still matches them, each file with its first chunks, and a chunk's
 * metadata and excerpt in words.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import type {
  KbChunking,
  KbChunkingOptions,
  KbPreview,
  KbPreviewChunk,
  KbPreviewFile
} from '../../api';

/** The strategies a knowledge base chunks by (cube_lab/kb/chunk.py). */
export const CHUNKINGS: KbChunking[] = ['tokens', 'headings', 'pages'];

/** The smallest chunk size the server takes. */
export const MIN_CHUNK_SIZE = 8;

/** Chunks shown per file before "Show all". */
export const FIRST_CHUNKS = 3;

/** The options as the form holds them (numbers as typed). */
export interface IChunkingDraft {
  chunking: KbChunking;
  chunk_size: string;
  overlap: string;
}

export interface IChunkingCheck {
  /** The options to send; null while a field is wrong. */
  options: KbChunkingOptions | null;
  errors: { chunk_size?: string; overlap?: string };
}

export function draftOf(options: KbChunkingOptions): IChunkingDraft {
  return {
    chunking: options.chunking,
    chunk_size: String(options.chunk_size),
    overlap: String(options.overlap)
  };
}

function wholeNumber(text: string): number | null {
  const trimmed = text.trim();
  return /^\d+$/.test(trimmed) ? Number(trimmed) : null;
}

/**
 * The draft checked: a chunk size of at least 8 tokens, an overlap from 0 to
 * the size - 1 (each error in words, on its field).
 */
export function checkChunking(
  draft: IChunkingDraft,
  trans: Pick<TranslationBundle, '__'>
): IChunkingCheck {
  const errors: IChunkingCheck['errors'] = {};
  const size = wholeNumber(draft.chunk_size);
  const overlap = wholeNumber(draft.overlap);
  if (size === null || size < MIN_CHUNK_SIZE) {
    errors.chunk_size = trans.__(
      'A whole number of at least %1 tokens.',
      MIN_CHUNK_SIZE
    );
  }
  if (overlap === null) {
    errors.overlap = trans.__('A whole number of tokens, 0 or more.');
  } else if (size !== null && overlap >= size) {
    errors.overlap = trans.__('Less than the chunk size (%1).', size);
  }
  const ok =
    CHUNKINGS.includes(draft.chunking) && !errors.chunk_size && !errors.overlap;
  return {
    options: ok
      ? { chunking: draft.chunking, chunk_size: size!, overlap: overlap! }
      : null,
    errors
  };
}

/** True when both are the same chunking (a shown preview is still current). */
export function sameChunking(
  a: KbChunkingOptions | null,
  b: KbChunkingOptions | null
): boolean {
  return (
    !!a &&
    !!b &&
    a.chunking === b.chunking &&
    a.chunk_size === b.chunk_size &&
    a.overlap === b.overlap
  );
}

/** A file of a preview with its chunks (those the answer holds), in order. */
export interface IPreviewRow {
  file: KbPreviewFile;
  chunks: KbPreviewChunk[];
}

export function previewRows(preview: KbPreview): IPreviewRow[] {
  const bySource = new Map<string, KbPreviewChunk[]>();
  for (const chunk of preview.chunks) {
    const list = bySource.get(chunk.source) ?? [];
    list.push(chunk);
    bySource.set(chunk.source, list);
  }
  return preview.files.map(file => ({
    file,
    chunks: (bySource.get(file.source) ?? []).sort(
      (a, b) => a.position - b.position
    )
  }));
}

/** What an Add of this preview would do: files to add, chunks, failures. */
export interface IPreviewSummary {
  files: number;
  /** Files that would be added (parsed, and not already held unchanged). */
  adding: number;
  unchanged: number;
  failed: number;
  chunks: number;
}

export function previewSummary(preview: KbPreview): IPreviewSummary {
  let adding = 0;
  let unchanged = 0;
  let failed = 0;
  let chunks = 0;
  for (const f of preview.files) {
    if (f.status === 'failed') {
      failed++;
    } else if (f.unchanged) {
      unchanged++;
    } else {
      adding++;
      chunks += f.chunks;
    }
  }
  return { files: preview.files.length, adding, unchanged, failed, chunks };
}

/** The summary in words, e.g. "2 files · 7 chunks · 1 failed". */
export function previewSummaryText(
  summary: IPreviewSummary,
  trans: Pick<TranslationBundle, '__' | '_n'>
): string {
  const parts = [
    trans._n('%1 file', '%1 files', summary.files),
    trans._n('%1 new chunk', '%1 new chunks', summary.chunks)
  ];
  if (summary.unchanged) {
    parts.push(trans.__('%1 unchanged', summary.unchanged));
  }
  if (summary.failed) {
    parts.push(trans.__('%1 failed', summary.failed));
  }
  return parts.join(' · ');
}

/** A chunk's metadata in words: its number, page, heading path, tokens. */
export function chunkMetaText(
  chunk: KbPreviewChunk,
  trans: Pick<TranslationBundle, '__' | '_n'>
): string {
  const parts = [trans.__('#%1', chunk.position + 1)];
  if (chunk.page !== null && chunk.page !== undefined) {
    parts.push(trans.__('page %1', chunk.page));
  }
  const row = chunk.meta?.row;
  if (typeof row === 'number') {
    parts.push(trans.__('row %1', row));
  }
  const heading = chunk.heading_path?.length
    ? chunk.heading_path.join(' › ')
    : chunk.heading;
  if (heading) {
    parts.push(heading);
  }
  parts.push(trans._n('%1 token', '%1 tokens', chunk.tokens));
  return parts.join(' · ');
}

/** The first `max` characters of a chunk, cut at a word, with an ellipsis. */
export function excerpt(text: string, max = 280): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= max) {
    return flat;
  }
  const cut = flat.slice(0, max);
  const space = cut.lastIndexOf(' ');
  return (space > max * 0.6 ? cut.slice(0, space) : cut) + '…';
}

/** What is staged for the preview, in words: the paths and the uploads' names. */
export function stagedNames(
  paths: string[],
  documents: { name: string }[]
): string[] {
  return [...paths, ...documents.map(d => d.name)];
}
