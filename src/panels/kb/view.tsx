/**
 * A knowledge base in the main area: its settings and counts, its sources
 * (add files or folders by path, the File Browser's selection, or uploads;
 * remove one), the live progress of its ingests, a retrieval test and, with
 * a language model, questions answered with numbered citations.
 */
import { ReactWidget } from '@jupyterlab/apputils';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import {
  addKbSources,
  describeError,
  getKbIngest,
  getKnowledgeBase,
  KbChunkingOptions,
  KbDocument,
  KbIngest,
  KbSource,
  KnowledgeBase,
  listKbIngests,
  listKbSources,
  removeKbSource
} from '../../api';
import { ErrorBox } from '../errorbox';
import { AskBox } from './ask';
import { EvaluateBox } from './evaluate';
import { IngestProgress } from './ingest';
import { ingestActive, parsePaths } from './logic';
import { AddPreview } from './preview';
import { confirmRemoveSource } from './remove';
import { RetrievalTest, SourceName } from './search';

type ErrorInfo = { error: string; detail: string };

const INGEST_POLL_MS = 600;

/** A dropped or picked file as an uploaded document (text, or base64 bytes). */
export async function fileToDocument(file: File): Promise<KbDocument> {
  const binary = /\.(pdf|docx)$/i.test(file.name);
  if (!binary) {
    return { name: file.name, content: await file.text() };
  }
  const bytes = new Uint8Array(await file.arrayBuffer());
  let raw = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    raw += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return { name: file.name, content_base64: btoa(raw) };
}

export class KnowledgeBaseView extends ReactWidget {
  constructor(options: KnowledgeBaseView.IOptions) {
    super();
    this.addClass('cube-KbView');
    this.project = options.project;
    this.name = options.name;
    this._trans = options.translator.load('cube_lab');
    this._selected = options.selectedFiles ?? null;
    this._changed = options.changed ?? (() => undefined);
    this._openPath = options.openPath;
    this._openChat = options.openChat;
    void this.refresh(true);
  }

  readonly project: string;
  readonly name: string;

  get deleted(): boolean {
    return this._deleted;
  }

  /** The knowledge base was deleted elsewhere: say so, keep the tab. */
  markDeleted(): void {
    this._deleted = true;
    this.update();
  }

  /** Read the knowledge base, its sources and (at first) its recent ingests. */
  async refresh(withIngests = false): Promise<void> {
    try {
      const [kb, sources] = await Promise.all([
        getKnowledgeBase(this.project, this.name),
        listKbSources(this.project, this.name)
      ]);
      this._kb = kb;
      this._sources = sources.sources;
      if (withIngests) {
        const recent = (await listKbIngests(this.project, this.name)).ingests;
        // the running ones, or else the last one
        const shown = recent.filter(ingestActive);
        this._ingests = shown.length ? shown : recent.slice(0, 1);
        this._pollIngests();
      }
      this._error = null;
    } catch (err) {
      this._error = describeError(err);
    } finally {
      this._loaded = true;
      this.update();
    }
  }

  dispose(): void {
    window.clearTimeout(this._timer);
    super.dispose();
  }

  /**
   * Start an ingest of these paths and documents (with `options`, chunked so
   * instead of by the knowledge base's settings); its progress shows.
   * Resolves true once it started.
   */
  async add(
    paths: string[],
    documents: KbDocument[] = [],
    options?: KbChunkingOptions
  ): Promise<boolean> {
    if (!paths.length && !documents.length) {
      return false;
    }
    this._adding = true;
    this.update();
    try {
      const ingest = await addKbSources(this.project, this.name, {
        paths,
        documents,
        ...options
      });
      this._ingests = [
        ingest,
        ...this._ingests.filter(i => i.id !== ingest.id && ingestActive(i))
      ];
      this._addError = null;
      this._paths = '';
      this._staged = null;
      this._pollIngests();
      return true;
    } catch (err) {
      this._addError = describeError(err);
      return false;
    } finally {
      this._adding = false;
      this.update();
    }
  }

  /**
   * What the user picked to add (typed paths, the File Browser's selection,
   * uploads): added at once, or with "Preview the chunks first" on, shown as
   * a preview that adds only when the user says so.
   */
  submit(paths: string[], documents: KbDocument[] = []): Promise<boolean> {
    if (!this._previewFirst || (!paths.length && !documents.length)) {
      return this.add(paths, documents);
    }
    this._staged = { id: ++this._stagedId, paths, documents };
    this._addError = null;
    this.update();
    return Promise.resolve(false);
  }

  protected render(): JSX.Element {
    const trans = this._trans;
    const kb = this._kb;
    if (!this._loaded) {
      return (
        <div className="cube-Loading">
          <span className="cube-Spinner" /> {trans.__('Loading…')}
        </div>
      );
    }
    return (
      <div className="cube-KbView-body">
        <header className="cube-Header">
          <div className="cube-Header-title">
            <h2>{this.name}</h2>
            <span className="cube-Muted">{this.project}</span>
          </div>
          {kb ? (
            <div className="cube-KbMeta">
              <span>{trans._n('%1 source', '%1 sources', kb.sources)}</span>
              <span>{trans._n('%1 chunk', '%1 chunks', kb.chunks)}</span>
              <span>
                {trans.__(
                  'chunking: %1, %2 tokens, overlap %3',
                  kb.chunking,
                  kb.chunk_size,
                  kb.overlap
                )}
              </span>
              <span>{trans.__('embeddings: %1', kb.model)}</span>
            </div>
          ) : null}
        </header>
        {this._deleted ? (
          <ErrorBox
            error={{
              error: trans.__('This knowledge base was deleted.'),
              detail: trans.__('Close this tab, or create it again.')
            }}
          />
        ) : null}
        {this._error ? <ErrorBox error={this._error} /> : null}
        <div className="cube-KbColumns">
          <div className="cube-KbColumn">{this._renderSources(trans)}</div>
          <div className="cube-KbColumn">
            <RetrievalTest
              project={this.project}
              name={this.name}
              trans={trans}
              empty={!kb || kb.chunks === 0}
            />
            <AskBox
              project={this.project}
              name={this.name}
              trans={trans}
              openSource={this._openPath}
              openChat={this._openChat}
            />
          </div>
        </div>
        {kb && kb.chunks > 0 ? (
          <EvaluateBox
            project={this.project}
            name={this.name}
            defaultRerank={kb.rerank ?? null}
            trans={trans}
          />
        ) : null}
      </div>
    );
  }

  private _renderSources(trans: TranslationBundle): JSX.Element {
    const paths = parsePaths(this._paths);
    return (
      <section
        className={`cube-KbSection cube-KbSources${this._dragging ? ' cube-mod-dropTarget' : ''}`}
        onDragOver={e => {
          if (e.dataTransfer.types.includes('Files')) {
            e.preventDefault();
            if (!this._dragging) {
              this._dragging = true;
              this.update();
            }
          }
        }}
        onDragLeave={() => {
          this._dragging = false;
          this.update();
        }}
        onDrop={e => {
          e.preventDefault();
          this._dragging = false;
          void this._upload(Array.from(e.dataTransfer.files));
        }}
      >
        <h3 className="cube-KbSection-title">{trans.__('Sources')}</h3>
        <form
          className="cube-KbAdd"
          onSubmit={e => {
            e.preventDefault();
            void this.submit(paths);
          }}
        >
          <input
            className="jp-mod-styled cube-KbInput cube-KbAdd-paths"
            name="kb-paths"
            value={this._paths}
            placeholder="docs, notes/guide.md"
            aria-label={trans.__('Files or folders to add')}
            onChange={e => {
              this._paths = e.target.value;
              this.update();
            }}
          />
          <button
            type="submit"
            className="cube-Button cube-mod-primary"
            disabled={this._adding || !paths.length}
          >
            {this._previewFirst ? trans.__('Preview') : trans.__('Add')}
          </button>
          <label
            className="cube-KbAdd-previewFirst"
            title={trans.__(
              'See each file’s chunks, and choose how to chunk them, before anything is added'
            )}
          >
            <input
              type="checkbox"
              name="kb-preview-first"
              checked={this._previewFirst}
              onChange={e => {
                this._previewFirst = e.target.checked;
                this.update();
              }}
            />
            {trans.__('Preview the chunks first')}
          </label>
        </form>
        <div className="cube-KbAdd-more">
          <span className="cube-Muted">
            {trans.__('Files or folders under the server root;')}
          </span>
          {this._selected ? (
            <button
              className="cube-TLink"
              onClick={() => {
                const picked = this._selected?.() ?? [];
                if (picked.length) {
                  void this.submit(picked);
                } else {
                  this._addError = {
                    error: trans.__('Nothing is selected in the File Browser.'),
                    detail: trans.__(
                      'Select files or folders there, then press this again.'
                    )
                  };
                  this.update();
                }
              }}
            >
              {trans.__('Add the File Browser’s selection')}
            </button>
          ) : null}
          <label className="cube-TLink cube-KbUpload">
            {trans.__('Upload files…')}
            <input
              type="file"
              multiple
              className="cube-VisuallyHidden"
              onChange={e => {
                const files = Array.from(e.target.files ?? []);
                e.target.value = '';
                void this._upload(files);
              }}
            />
          </label>
          <span className="cube-Muted">{trans.__('or drop files here')}</span>
        </div>
        {this._addError ? (
          <ErrorBox
            error={this._addError}
            dismiss={() => {
              this._addError = null;
              this.update();
            }}
            dismissLabel={trans.__('Dismiss')}
          />
        ) : null}
        {this._staged ? (
          <AddPreview
            key={this._staged.id}
            project={this.project}
            name={this.name}
            trans={trans}
            defaults={{
              chunking: this._kb?.chunking ?? 'tokens',
              chunk_size: this._kb?.chunk_size ?? 200,
              overlap: this._kb?.overlap ?? 40
            }}
            paths={this._staged.paths}
            documents={this._staged.documents}
            add={options =>
              this.add(
                this._staged?.paths ?? [],
                this._staged?.documents ?? [],
                options
              )
            }
            cancel={() => {
              this._staged = null;
              this.update();
            }}
          />
        ) : null}
        {this._ingests.map(ingest => (
          <IngestProgress
            key={ingest.id}
            ingest={ingest}
            trans={trans}
            dismiss={() => {
              this._ingests = this._ingests.filter(i => i.id !== ingest.id);
              this.update();
            }}
          />
        ))}
        {this._sources.length ? (
          <table className="cube-Table cube-KbSourceTable">
            <thead>
              <tr>
                <th>{trans.__('Source')}</th>
                <th>{trans.__('Kind')}</th>
                <th className="cube-num">{trans.__('Chunks')}</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {this._sources.map(s => (
                <tr key={s.source} data-source={s.source}>
                  <td className="cube-KbSource-name">
                    <SourceName source={s.source} />
                  </td>
                  <td>{s.kind}</td>
                  <td className="cube-num">{s.chunks}</td>
                  <td className="cube-num">
                    <button
                      className="cube-TLink cube-KbSource-remove"
                      disabled={this._removing.has(s.source)}
                      onClick={() => void this._remove(s)}
                      title={trans.__('Remove %1 and its chunks', s.source)}
                    >
                      {trans.__('Remove')}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : (
          <p className="cube-Muted cube-KbNoSources">
            {trans.__(
              'No sources yet: add Markdown, text, HTML, PDF, DOCX, CSV, JSONL or notebooks.'
            )}
          </p>
        )}
      </section>
    );
  }

  private async _upload(files: File[]): Promise<void> {
    if (!files.length) {
      return;
    }
    try {
      await this.submit([], await Promise.all(files.map(fileToDocument)));
    } catch (err) {
      this._addError = describeError(err);
      this.update();
    }
  }

  private async _remove(source: KbSource): Promise<void> {
    if (
      !(await confirmRemoveSource(source.source, source.chunks, this._trans))
    ) {
      return;
    }
    this._removing.add(source.source);
    this.update();
    try {
      await removeKbSource(this.project, this.name, source.source);
      this._sources = this._sources.filter(s => s.source !== source.source);
      this._error = null;
    } catch (err) {
      this._error = describeError(err);
    } finally {
      this._removing.delete(source.source);
      this.update();
    }
    this._changed();
    void this.refresh();
  }

  /** Poll the running ingests until each has ended; then read the sources again. */
  private _pollIngests(): void {
    window.clearTimeout(this._timer);
    if (!this._ingests.some(ingestActive) || this.isDisposed) {
      return;
    }
    this._timer = window.setTimeout(async () => {
      let ended = false;
      const next: KbIngest[] = [];
      for (const ingest of this._ingests) {
        if (!ingestActive(ingest)) {
          next.push(ingest);
          continue;
        }
        try {
          const now = await getKbIngest(this.project, this.name, ingest.id);
          ended = ended || !ingestActive(now);
          next.push(now);
        } catch (err) {
          this._error = describeError(err);
          next.push({ ...ingest, status: 'interrupted' });
        }
      }
      if (this.isDisposed) {
        return;
      }
      this._ingests = next;
      this.update();
      if (ended) {
        this._changed();
        await this.refresh();
      }
      this._pollIngests();
    }, INGEST_POLL_MS);
  }

  private _trans: TranslationBundle;
  private _selected: (() => string[]) | null;
  private _changed: () => void;
  private _openPath: ((path: string) => void) | undefined;
  private _openChat: (() => void) | undefined;
  private _kb: KnowledgeBase | null = null;
  private _sources: KbSource[] = [];
  private _ingests: KbIngest[] = [];
  private _paths = '';
  private _adding = false;
  private _previewFirst = false;
  private _staged: {
    id: number;
    paths: string[];
    documents: KbDocument[];
  } | null = null;
  private _stagedId = 0;
  private _dragging = false;
  private _removing = new Set<string>();
  private _loaded = false;
  private _deleted = false;
  private _timer = 0;
  private _error: ErrorInfo | null = null;
  private _addError: ErrorInfo | null = null;
}

export namespace KnowledgeBaseView {
  export interface IOptions {
    project: string;
    name: string;
    translator: ITranslator;
    /** The File Browser's selected paths (relative to the server root). */
    selectedFiles?: () => string[];
    /** Its counts changed (an ingest ended, a source went). */
    changed?: () => void;
    /** Open a file of the root (a cited source). */
    openPath?: (path: string) => void;
    /** Chat with this knowledge base in the Chat panel. */
    openChat?: () => void;
  }
}
