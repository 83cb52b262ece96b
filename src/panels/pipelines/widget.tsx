/**
 * The pipeline editor document widget: opens `.pipeline` files, keeps the
 * document model in step with the graph (dirty state, save, revert), takes
 * files dropped from the file browser and runs the pipeline with a live
 * overlay.
 */
import { ReactWidget } from '@jupyterlab/apputils';
import { PathExt } from '@jupyterlab/coreutils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import {
  ABCWidgetFactory,
  DocumentRegistry,
  DocumentWidget
} from '@jupyterlab/docregistry';
import { FileDialog } from '@jupyterlab/filebrowser';
import { Contents } from '@jupyterlab/services';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { Message } from '@lumino/messaging';
import { Drag } from '@lumino/dragdrop';
import * as React from 'react';

import {
  cancelRun,
  compilePipeline,
  describeError,
  getRun,
  isRunActive,
  JobTemplate,
  listNodeKinds,
  listTemplates,
  NodeKind,
  PipelineRun,
  startRun,
  StartRunRequest,
  validatePipeline
} from '../../api';
import {
  addComments,
  addNodes,
  createComment,
  createNode,
  duplicate,
  NODE_HEIGHT,
  NODE_WIDTH
} from './graph';
import { PipelineEditorModel } from './model';
import {
  COMMENT_HEIGHT,
  COMMENT_WIDTH,
  Ops,
  parse,
  PipelineGraph,
  PipelineNode,
  serialize
} from './serializer';
import { showScheduleDialog } from './schedule';
import { IEditorActions, PipelineView, RunMode } from './view';

const CONTENTS_MIME = 'application/x-jupyter-icontents';

/** The op that runs a file, from its extension (null: not runnable). */
export function opForPath(path: string): string | null {
  switch (PathExt.extname(path).toLowerCase()) {
    case '.ipynb':
      return Ops.notebook;
    case '.py':
      return Ops.python;
    case '.r':
      return Ops.r;
    default:
      return null;
  }
}

let catalog: Promise<{ templates: JobTemplate[]; kinds: NodeKind[] }> | null =
  null;

/** Templates and node kinds, fetched once per page (refetched after errors). */
function loadCatalog() {
  if (!catalog) {
    catalog = Promise.all([listTemplates(), listNodeKinds()])
      .then(([t, k]) => ({ templates: t.templates, kinds: k.node_kinds }))
      .catch(err => {
        catalog = null;
        throw err;
      });
  }
  return catalog;
}

let clipboard: PipelineNode[] = [];

export class PipelineEditor extends ReactWidget {
  constructor(options: PipelineEditor.IOptions) {
    super();
    this.addClass('cube-PipelineEditor');
    this.context = options.context;
    this._trans = options.translator.load('cube_lab');
    this._translator = options.translator;
    this._contentsManager = options.contents;
    this._docManager = options.docManager;
    this.model = new PipelineEditorModel(parse('', 'pipeline'));
    this.model.changed.connect((_, kind) => {
      if (kind === 'graph') {
        this._writeBack();
      }
    });
    void this.context.ready.then(() => {
      this._load();
      this.context.model.contentChanged.connect(this._onContentChanged, this);
      this.context.fileChanged.connect(() => void this.validate(), this);
      this.context.saveState.connect((_, state) => {
        if (state === 'completed') {
          this._savedGraph = this.model.graph;
          this._savedText = this._lastText;
        }
      }, this);
      void this.validate();
    });
    loadCatalog()
      .then(c => this.model.setCatalog(c.templates, c.kinds))
      .catch(err =>
        this.model.setStatus(
          this._trans.__(
            'Cannot load the job templates: %1',
            describeError(err).error
          ),
          true
        )
      );
  }

  readonly context: DocumentRegistry.Context;
  readonly model: PipelineEditorModel;

  /** The pipeline's folder, relative to the server root. */
  get folder(): string {
    return PathExt.dirname(this.context.localPath);
  }

  /** Ask the server for problems and mark them on the canvas. */
  async validate(): Promise<void> {
    if (this.context.model.dirty) {
      return;
    }
    try {
      const result = await validatePipeline(this.context.localPath);
      this.model.setProblems(result.problems);
    } catch (err) {
      this.model.setStatus(describeError(err).error, true);
    }
  }

  /** Save (when needed) and start a run. */
  async run(mode: RunMode): Promise<PipelineRun | null> {
    const trans = this._trans;
    const selected = this.model.selection[0];
    const body: StartRunRequest = { path: this.context.localPath };
    if (mode !== 'all') {
      if (!selected) {
        return null;
      }
      body[mode] = selected;
    }
    try {
      if (this.context.model.dirty) {
        await this.context.save();
      }
      this.model.setStatus(trans.__('Starting…'));
      const run = await startRun(body);
      this.showRun(run);
      return run;
    } catch (err) {
      const { error, detail } = describeError(err);
      this.model.setStatus(
        detail ? `${error}: ${detail.split('\n')[0]}` : error,
        true
      );
      void this.validate();
      return null;
    }
  }

  async cancel(): Promise<void> {
    const run = this.model.run;
    if (!run) {
      return;
    }
    try {
      this.showRun(await cancelRun(run.id));
    } catch (err) {
      this.model.setStatus(describeError(err).error, true);
    }
  }

  /** Save when needed; false (with the reason in the status) when it failed. */
  private async _saved(): Promise<boolean> {
    try {
      if (this.context.model.dirty) {
        await this.context.save();
      }
      return true;
    } catch (err) {
      this.model.setStatus(describeError(err).error, true);
      return false;
    }
  }

  /** Compile to Kubeflow Pipelines IR and download it; the YAML is returned too. */
  async exportKfp(): Promise<string | null> {
    const trans = this._trans;
    if (!(await this._saved())) {
      return null;
    }
    this.model.setStatus(trans.__('Compiling for Kubeflow Pipelines…'));
    try {
      const compiled = await compilePipeline(this.context.localPath);
      downloadText(compiled.filename, compiled.yaml, 'application/yaml');
      this.model.setStatus(
        compiled.notes.length
          ? trans._n(
              'Exported %2 (%1 note: see the pipeline description)',
              'Exported %2 (%1 notes: see the pipeline description)',
              compiled.notes.length,
              compiled.filename
            )
          : trans.__('Exported %1', compiled.filename)
      );
      return compiled.yaml;
    } catch (err) {
      const { error, detail } = describeError(err);
      this.model.setStatus(
        detail ? `${error}: ${detail.split('\n')[0]}` : error,
        true
      );
      void this.validate();
      return null;
    }
  }

  async schedule(): Promise<void> {
    if (!(await this._saved())) {
      return;
    }
    await showScheduleDialog({
      path: this.context.localPath,
      name: this.model.graph.name,
      parameters: this.model.graph.parameters,
      trans: this._trans
    });
  }

  /** Files chosen in JupyterLab's file dialog, relative to the pipeline's folder. */
  async pickFiles(multiple: boolean): Promise<string[]> {
    if (!this._docManager) {
      return [];
    }
    const result = await FileDialog.getOpenFiles({
      manager: this._docManager,
      title: multiple
        ? this._trans.__('Add dependencies')
        : this._trans.__('Choose the file to run'),
      translator: this._translator,
      filter: model =>
        multiple || model.type === 'directory' || opForPath(model.path) !== null
          ? {}
          : null
    });
    if (!result.button.accept || !result.value) {
      return [];
    }
    const picked = result.value.map(m =>
      PathExt.relative(
        this.folder,
        this._contents ? this._contents.localPath(m.path) : m.path
      )
    );
    return multiple ? picked : picked.slice(0, 1);
  }

  /** Show a run on the canvas and follow it while it goes on. */
  showRun(run: PipelineRun): void {
    this.model.setRun(run);
    this._statusOfRun(run);
    window.clearTimeout(this._pollTimer);
    if (isRunActive(run)) {
      this._pollTimer = window.setTimeout(() => void this._poll(run.id), 1000);
    }
  }

  /** Load a run by id (from the runs panel). */
  async openRun(runId: string): Promise<void> {
    try {
      this.showRun(await getRun(runId));
    } catch (err) {
      this.model.setStatus(describeError(err).error, true);
    }
  }

  /** Add nodes for files (paths relative to the server root) at a client point. */
  addFiles(paths: string[], clientX: number, clientY: number): number {
    const at = this._project(clientX, clientY);
    const nodes: PipelineNode[] = [];
    for (const path of paths) {
      const op = opForPath(path);
      if (!op) {
        continue;
      }
      const filename = PathExt.relative(this.folder, path);
      nodes.push(
        createNode({
          op,
          label: PathExt.basename(path),
          x: Math.round(at.x + nodes.length * 30),
          y: Math.round(at.y + nodes.length * 80),
          params: {
            filename,
            runtime_image: '',
            env_vars: [],
            dependencies: [],
            include_subdirectories: false,
            outputs: []
          }
        })
      );
    }
    if (!nodes.length) {
      this.model.setStatus(
        this._trans.__('Only notebooks, Python and R scripts can be nodes.'),
        true
      );
      return 0;
    }
    this.model.apply(g => addNodes(g, nodes));
    this.model.select(nodes.map(n => n.id));
    return nodes.length;
  }

  dispose(): void {
    window.clearTimeout(this._pollTimer);
    super.dispose();
  }

  handleEvent(event: Event): void {
    switch (event.type) {
      case 'lm-dragenter':
      case 'lm-dragover': {
        const drag = event as Drag.Event;
        if (drag.mimeData.hasData(CONTENTS_MIME)) {
          drag.preventDefault();
          drag.stopPropagation();
          drag.dropAction = drag.proposedAction;
          this.addClass('cube-mod-dropTarget');
        }
        break;
      }
      case 'lm-dragleave':
        this.removeClass('cube-mod-dropTarget');
        break;
      case 'lm-drop': {
        const drag = event as Drag.Event;
        this.removeClass('cube-mod-dropTarget');
        if (!drag.mimeData.hasData(CONTENTS_MIME)) {
          return;
        }
        drag.preventDefault();
        drag.stopPropagation();
        // 'copy' keeps the file browser from treating it as a move.
        drag.dropAction = 'copy';
        const raw = drag.mimeData.getData(CONTENTS_MIME) as string[];
        const paths = raw.map(p =>
          this._contents ? this._contents.localPath(p) : p
        );
        this.addFiles(paths, drag.clientX, drag.clientY);
        break;
      }
    }
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    for (const type of [
      'lm-dragenter',
      'lm-dragleave',
      'lm-dragover',
      'lm-drop'
    ]) {
      this.node.addEventListener(type, this);
    }
  }

  protected onBeforeDetach(msg: Message): void {
    for (const type of [
      'lm-dragenter',
      'lm-dragleave',
      'lm-dragover',
      'lm-drop'
    ]) {
      this.node.removeEventListener(type, this);
    }
    super.onBeforeDetach(msg);
  }

  render(): JSX.Element {
    return (
      <PipelineView
        model={this.model}
        actions={this._actions}
        trans={this._trans}
        error={this._error}
      />
    );
  }

  private get _contents(): Contents.IManager | undefined {
    return this._contentsManager;
  }

  private _project(x: number, y: number): { x: number; y: number } {
    if (this._projector && Number.isFinite(x) && Number.isFinite(y)) {
      return this._projector(x, y);
    }
    if (this._projector) {
      const rect = this.node.getBoundingClientRect();
      return this._projector(
        rect.left + rect.width / 2,
        rect.top + rect.height / 2
      );
    }
    return { x: 0, y: 0 };
  }

  private _load(): void {
    const text = this.context.model.toString();
    try {
      const graph = parse(
        text,
        PathExt.basename(this.context.localPath, '.pipeline'),
        this._trans
      );
      this._error = null;
      this._lastText = text;
      this._savedText = text;
      this._savedGraph = graph;
      this.model.reset(graph);
    } catch (err) {
      this._error = (err as Error).message;
    }
    this.update();
  }

  private _onContentChanged(): void {
    if (this._writing) {
      return;
    }
    const text = this.context.model.toString();
    if (text === this._lastText) {
      return;
    }
    // A revert or a change from elsewhere: start over from the text.
    this._load();
  }

  private _writeBack(): void {
    if (this._error) {
      return;
    }
    // The graph as read or last saved keeps the file's own text: opening a
    // file written by another tool (other spacing) must not make it dirty,
    // and undoing back to the saved state makes it clean again.
    const clean = this.model.graph === this._savedGraph;
    const text = clean ? this._savedText : serialize(this.model.graph);
    if (text === this._lastText) {
      return;
    }
    this._writing = true;
    try {
      this._lastText = text;
      this.context.model.fromString(text);
      // The shared model's setSource does not mark the document dirty (only
      // edits through updateSource do): an edit on the canvas must.
      this.context.model.dirty = !clean;
    } finally {
      this._writing = false;
    }
  }

  private async _poll(runId: string): Promise<void> {
    if (this.isDisposed || this.model.run?.id !== runId) {
      return;
    }
    try {
      const run = await getRun(runId);
      if (this.isDisposed || this.model.run?.id !== runId) {
        return;
      }
      this.showRun(run);
    } catch (err) {
      this.model.setStatus(describeError(err).error, true);
      this._pollTimer = window.setTimeout(() => void this._poll(runId), 3000);
    }
  }

  private _statusOfRun(run: PipelineRun): void {
    const trans = this._trans;
    const counts = run.nodes ?? [];
    const done = counts.filter(
      n => !['pending', 'running'].includes(n.status)
    ).length;
    this.model.setStatus(
      trans.__(
        'Run %1: %2 (%3/%4 nodes done)',
        run.id.slice(0, 8),
        run.status,
        done,
        counts.length
      ),
      run.status === 'failed'
    );
  }

  private _actions: IEditorActions = {
    save: () => void this.context.save(),
    run: mode => void this.run(mode),
    cancel: () => void this.cancel(),
    copy: () => {
      const chosen = new Set(this.model.selection);
      clipboard = this.model.graph.nodes.filter(n => chosen.has(n.id));
    },
    paste: () => {
      if (!clipboard.length) {
        return;
      }
      const copies = duplicate(
        { ...this.model.graph, nodes: clipboard } as PipelineGraph,
        clipboard.map(n => n.id)
      );
      clipboard = copies;
      this.model.apply(g => addNodes(g, copies));
      this.model.select(copies.map(n => n.id));
    },
    exportKfp: () => void this.exportKfp(),
    schedule: () => void this.schedule(),
    addComment: () => {
      const about = this.model.graph.nodes.filter(n =>
        this.model.selection.includes(n.id)
      );
      let at = this._project(NaN, NaN);
      at = { x: at.x - COMMENT_WIDTH / 2, y: at.y - COMMENT_HEIGHT / 2 };
      if (about.length) {
        at = freeSpotNear(this.model.graph, about);
      }
      const comment = createComment(
        at.x,
        at.y,
        '',
        about.map(n => n.id)
      );
      this.model.apply(g => addComments(g, [comment]));
    },
    pickFiles: multiple => this.pickFiles(multiple),
    setProjector: project => {
      this._projector = project;
    },
    dropSpec: (spec, x, y) => {
      let parsed: {
        op: string;
        label: string;
        params?: Record<string, unknown>;
      };
      try {
        parsed = JSON.parse(spec);
      } catch {
        return;
      }
      let at = { x, y };
      if (!Number.isFinite(x) || !Number.isFinite(y)) {
        at = this._project(NaN, NaN);
      }
      const node = createNode({
        op: parsed.op,
        label: parsed.label,
        x: Math.round(at.x),
        y: Math.round(at.y),
        params: parsed.params ?? {}
      });
      this.model.apply(g => addNodes(g, [node]));
      this.model.select([node.id]);
    }
  };

  private _trans: TranslationBundle;
  private _translator: ITranslator;
  private _contentsManager?: Contents.IManager;
  private _docManager?: IDocumentManager;
  private _error: string | null = null;
  private _writing = false;
  private _lastText = '';
  private _savedText = '';
  private _savedGraph: PipelineGraph | null = null;
  private _pollTimer = 0;
  private _projector:
    ((x: number, y: number) => { x: number; y: number }) | null = null;
}

export namespace PipelineEditor {
  export interface IOptions {
    context: DocumentRegistry.Context;
    translator: ITranslator;
    /** Turns drive paths from the file browser into server-root paths. */
    contents?: Contents.IManager;
    /** For the file pickers of the properties pane. */
    docManager?: IDocumentManager;
  }
}

/**
 * Where a comment about `about` goes: below, above, right or left of them,
 * the first place that covers no node (else below).
 */
export function freeSpotNear(
  graph: PipelineGraph,
  about: readonly PipelineNode[]
): { x: number; y: number } {
  const gap = 30;
  const left = Math.min(...about.map(n => n.x));
  const top = Math.min(...about.map(n => n.y));
  const right = Math.max(...about.map(n => n.x + NODE_WIDTH));
  const bottom = Math.max(...about.map(n => n.y + NODE_HEIGHT));
  // Below first: the dashed link leaves the comment's top edge.
  const candidates = [
    { x: left, y: bottom + gap },
    { x: left, y: top - COMMENT_HEIGHT - gap },
    { x: right + gap, y: top },
    { x: left - COMMENT_WIDTH - gap, y: top }
  ];
  const covers = (p: { x: number; y: number }) =>
    graph.nodes.some(
      n =>
        p.x < n.x + NODE_WIDTH + 10 &&
        p.x + COMMENT_WIDTH + 10 > n.x &&
        p.y < n.y + NODE_HEIGHT + 10 &&
        p.y + COMMENT_HEIGHT + 10 > n.y
    );
  return candidates.find(p => !covers(p)) ?? candidates[0];
}

/** Save text as a file through the browser's download. */
export function downloadText(
  filename: string,
  text: string,
  type: string
): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  link.style.display = 'none';
  document.body.appendChild(link);
  link.click();
  link.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/** The document widget around the editor. */
export class PipelineDocument extends DocumentWidget<PipelineEditor> {}

export class PipelineEditorFactory extends ABCWidgetFactory<PipelineDocument> {
  constructor(
    options: DocumentRegistry.IWidgetFactoryOptions<PipelineDocument> & {
      translator: ITranslator;
      contents?: Contents.IManager;
      docManager?: IDocumentManager;
    }
  ) {
    super(options);
    this._editorTranslator = options.translator;
    this._editorContents = options.contents;
    this._editorDocManager = options.docManager;
  }

  protected createNewWidget(
    context: DocumentRegistry.Context
  ): PipelineDocument {
    const content = new PipelineEditor({
      context,
      translator: this._editorTranslator,
      contents: this._editorContents,
      docManager: this._editorDocManager
    });
    const widget = new PipelineDocument({ content, context });
    widget.addClass('cube-PipelineDocument');
    return widget;
  }

  private _editorTranslator: ITranslator;
  private _editorContents?: Contents.IManager;
  private _editorDocManager?: IDocumentManager;
}
