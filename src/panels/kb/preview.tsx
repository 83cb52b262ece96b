/**
 * The chunk preview before an add: the staged files (paths under the root,
 * or uploads) chunked by the server as an ingest would (POST .../preview,
 * nothing committed) with the chunking options chosen here; per file its
 * chunk count and first chunks (excerpt, page, heading path, tokens), or its
 * error on its row. Change the options and preview again; Add commits with
 * the options of the preview shown, Cancel drops it.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import {
  describeError,
  KbChunkingOptions,
  KbDocument,
  KbPreview,
  previewKbSources
} from '../../api';
import { ErrorBox } from '../errorbox';
import { sourceLabel } from './logic';
import {
  checkChunking,
  chunkMetaText,
  CHUNKINGS,
  draftOf,
  excerpt,
  FIRST_CHUNKS,
  IChunkingDraft,
  IPreviewRow,
  previewRows,
  previewSummary,
  previewSummaryText,
  sameChunking,
  stagedNames
} from './previewlogic';

export function chunkingLabel(
  chunking: string,
  trans: TranslationBundle
): string {
  switch (chunking) {
    case 'tokens':
      return trans.__('By tokens, with overlap');
    case 'headings':
      return trans.__('By headings (sections)');
    case 'pages':
      return trans.__('By pages (PDF)');
    default:
      return chunking;
  }
}

export function AddPreview(props: {
  project: string;
  name: string;
  trans: TranslationBundle;
  /** The knowledge base's own chunking: the options to start from. */
  defaults: KbChunkingOptions;
  paths: string[];
  documents: KbDocument[];
  /** Commit the staged files with these options; resolves true once started. */
  add: (options: KbChunkingOptions) => Promise<boolean>;
  cancel: () => void;
}): JSX.Element {
  const { trans } = props;
  const [draft, setDraft] = React.useState<IChunkingDraft>(() =>
    draftOf(props.defaults)
  );
  const [preview, setPreview] = React.useState<KbPreview | null>(null);
  const [shownWith, setShownWith] = React.useState<KbChunkingOptions | null>(
    null
  );
  const [busy, setBusy] = React.useState(false);
  const [adding, setAdding] = React.useState(false);
  const [error, setError] = React.useState<{
    error: string;
    detail: string;
  } | null>(null);
  const request = React.useRef(0);
  const checked = checkChunking(draft, trans);

  const run = async (options: KbChunkingOptions | null) => {
    if (!options) {
      return;
    }
    const mine = ++request.current;
    setBusy(true);
    try {
      const shown = await previewKbSources(props.project, props.name, {
        paths: props.paths.length ? props.paths : undefined,
        documents: props.documents.length ? props.documents : undefined,
        ...options
      });
      if (mine === request.current) {
        setPreview(shown);
        setShownWith(options);
        setError(null);
      }
    } catch (err) {
      if (mine === request.current) {
        setError(describeError(err));
      }
    } finally {
      if (mine === request.current) {
        setBusy(false);
      }
    }
  };

  // the first preview, with the knowledge base's own chunking
  React.useEffect(() => {
    void run(checkChunking(draftOf(props.defaults), trans).options);
    return () => {
      request.current++; // an answer after unmounting is dropped
    };
  }, []);

  const current = sameChunking(checked.options, shownWith);
  const summary = preview ? previewSummary(preview) : null;
  const canAdd =
    !!preview && current && !busy && !adding && (summary?.adding ?? 0) > 0;
  const names = stagedNames(props.paths, props.documents);
  const change = (patch: Partial<IChunkingDraft>) =>
    setDraft({ ...draft, ...patch });

  return (
    <div
      className="cube-KbPreview"
      aria-busy={busy}
      data-state={busy ? 'busy' : preview ? 'shown' : 'empty'}
    >
      <div className="cube-KbPreview-head">
        <h4 className="cube-KbPreview-title">
          {trans.__('Preview of the chunks')}
        </h4>
        <span
          className="cube-Muted cube-KbPreview-staged"
          title={names.join('\n')}
        >
          {names.map(sourceLabel).join(', ')}
        </span>
      </div>
      <form
        className="cube-KbPreview-options"
        onSubmit={e => {
          e.preventDefault();
          void run(checked.options);
        }}
      >
        <label className="cube-KbPreview-field">
          <span>{trans.__('Chunking')}</span>
          <select
            className="jp-mod-styled cube-KbInput"
            name="kb-preview-chunking"
            value={draft.chunking}
            onChange={e =>
              change({ chunking: e.target.value as IChunkingDraft['chunking'] })
            }
          >
            {CHUNKINGS.map(c => (
              <option key={c} value={c}>
                {chunkingLabel(c, trans)}
              </option>
            ))}
          </select>
        </label>
        <label className="cube-KbPreview-field cube-KbPreview-number">
          <span>{trans.__('Chunk size (tokens)')}</span>
          <input
            className="jp-mod-styled cube-KbInput"
            name="kb-preview-size"
            inputMode="numeric"
            value={draft.chunk_size}
            aria-invalid={!!checked.errors.chunk_size}
            onChange={e => change({ chunk_size: e.target.value })}
          />
          {checked.errors.chunk_size ? (
            <span className="cube-KbPreview-invalid" role="alert">
              {checked.errors.chunk_size}
            </span>
          ) : null}
        </label>
        <label className="cube-KbPreview-field cube-KbPreview-number">
          <span>{trans.__('Overlap (tokens)')}</span>
          <input
            className="jp-mod-styled cube-KbInput"
            name="kb-preview-overlap"
            inputMode="numeric"
            value={draft.overlap}
            aria-invalid={!!checked.errors.overlap}
            onChange={e => change({ overlap: e.target.value })}
          />
          {checked.errors.overlap ? (
            <span className="cube-KbPreview-invalid" role="alert">
              {checked.errors.overlap}
            </span>
          ) : null}
        </label>
        <button
          type="submit"
          name="kb-preview-run"
          className="cube-Button"
          disabled={busy || !checked.options}
        >
          {trans.__('Preview')}
        </button>
      </form>
      <p className="cube-Muted cube-KbPreview-hint">
        {trans.__(
          'Headings split Markdown, HTML and DOCX by section, pages split PDFs by page; a section or page longer than the chunk size is split by tokens. CSV and JSONL rows (question and answer pairs) stay one chunk each.'
        )}
      </p>
      {busy ? (
        <div className="cube-KbPreview-progress" role="status">
          <span className="cube-Spinner" />{' '}
          {trans._n(
            'Parsing and chunking %1 item…',
            'Parsing and chunking %1 items…',
            names.length
          )}
          <div className="cube-KbBar cube-mod-indeterminate">
            <div className="cube-KbBar-fill" />
          </div>
        </div>
      ) : null}
      {error ? <ErrorBox error={error} /> : null}
      {preview && summary ? (
        <div
          className={`cube-KbPreview-result${current ? '' : ' cube-mod-stale'}`}
        >
          <div className="cube-KbPreview-summary">
            <span>{previewSummaryText(summary, trans)}</span>
            <span className="cube-Muted">
              {trans.__(
                '%1, %2 tokens, overlap %3',
                chunkingLabel(preview.chunking, trans),
                preview.chunk_size,
                preview.overlap
              )}
            </span>
          </div>
          {!current && !busy ? (
            <p className="cube-KbPreview-stale" role="status">
              {trans.__(
                'The options changed: press Preview to see the chunks they make before adding.'
              )}
            </p>
          ) : null}
          {preview.truncated ? (
            <p className="cube-Muted">
              {trans.__(
                'Showing the first %1 of %2 chunks.',
                preview.chunks.length,
                preview.total_chunks
              )}
            </p>
          ) : null}
          <ul className="cube-KbPreview-files">
            {previewRows(preview).map(row => (
              <PreviewFile key={row.file.source} row={row} trans={trans} />
            ))}
          </ul>
        </div>
      ) : null}
      <div className="cube-KbPreview-actions">
        <button
          type="button"
          name="kb-preview-add"
          className="cube-Button cube-mod-primary"
          disabled={!canAdd}
          title={
            preview && !current
              ? trans.__('Preview these options first')
              : undefined
          }
          onClick={async () => {
            if (!shownWith) {
              return;
            }
            setAdding(true);
            const started = await props.add(shownWith);
            if (!started) {
              setAdding(false);
            }
          }}
        >
          {summary && current
            ? trans._n('Add %1 chunk', 'Add %1 chunks', summary.chunks)
            : trans.__('Add to the knowledge base')}
        </button>
        <button
          type="button"
          name="kb-preview-cancel"
          className="cube-Button"
          onClick={props.cancel}
        >
          {trans.__('Cancel')}
        </button>
      </div>
    </div>
  );
}

function PreviewFile(props: {
  row: IPreviewRow;
  trans: TranslationBundle;
}): JSX.Element {
  const { row, trans } = props;
  const { file } = row;
  const [all, setAll] = React.useState(false);
  const shown = all ? row.chunks : row.chunks.slice(0, FIRST_CHUNKS);
  return (
    <li
      className={`cube-KbPreview-file cube-mod-${file.status}`}
      data-source={file.source}
      data-chunks={file.chunks}
    >
      <div className="cube-KbPreview-fileLine">
        <span className="cube-KbPreview-name" title={file.source}>
          {sourceLabel(file.source)}
        </span>
        {file.kind ? <span className="cube-Muted">{file.kind}</span> : null}
        {file.status === 'failed' ? (
          <span className="cube-KbStatus cube-KbStatus-failed">
            {trans.__('failed')}
          </span>
        ) : (
          <span className="cube-KbPreview-count">
            {trans._n('%1 chunk', '%1 chunks', file.chunks)} ·{' '}
            {trans._n('%1 token', '%1 tokens', file.tokens)}
          </span>
        )}
        {file.unchanged ? (
          <span
            className="cube-KbPreview-unchanged"
            title={trans.__(
              'The knowledge base holds this exact content: Add skips it. Remove the source first to chunk it again.'
            )}
          >
            {trans.__('unchanged')}
          </span>
        ) : null}
      </div>
      {file.status === 'failed' ? (
        <div className="cube-KbIngest-fileError" role="alert">
          {file.error}
          {file.detail ? ` — ${file.detail}` : ''}
        </div>
      ) : null}
      {shown.length ? (
        <ol className="cube-KbPreview-chunks">
          {shown.map(c => (
            <li
              key={c.position}
              className="cube-KbPreview-chunk"
              data-position={c.position}
            >
              <div className="cube-KbPreview-meta">
                {chunkMetaText(c, trans)}
              </div>
              <div className="cube-KbPreview-text">{excerpt(c.text)}</div>
            </li>
          ))}
        </ol>
      ) : null}
      {row.chunks.length > FIRST_CHUNKS ? (
        <button
          type="button"
          className="cube-TLink cube-KbPreview-more"
          onClick={() => setAll(!all)}
        >
          {all
            ? trans.__('Show the first %1', FIRST_CHUNKS)
            : trans.__('Show all %1 chunks', row.chunks.length)}
        </button>
      ) : null}
    </li>
  );
}
