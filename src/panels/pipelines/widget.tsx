/**
 * The pipeline editor document widget: opens `.pipeline` files, keeps the
 * document model in step with the graph (dirty state, save, revert), takes
 * files dropped from the file browser and runs the pipeline with a live
 * overlay.
 */
import { ReactWidget } from '@jupyterlab/apputils';
import { PathExt } from '@jupyterlab/coreutils';
import {
  ABCWidgetFactory,
  DocumentRegistry,
  DocumentWidget
} from '@jupyterlab/docregistry';
import { Contents } from '@jupyterlab/services';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { Message } from '@lumino/messaging';
import { Drag } from '@lumino/dragdrop';
import * as React from 'react';

import {
  cancelRun,
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
import { addNodes, createNode, duplicate } from './graph';
import { PipelineEditorModel } from './model';
import {
  Ops,
  parse,
  PipelineGraph,
  PipelineNode,
  serialize
} from './serializer';
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
    this._contentsManager = options.contents;
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
        PathExt.basename(this.context.localPath, '.pipeline')
      );
      this._error = null;
      this._lastText = text;
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
    const text = serialize(this.model.graph);
    if (text === this._lastText) {
      return;
    }
    this._writing = true;
    try {
      this._lastText = text;
      this.context.model.fromString(text);
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
  private _contentsManager?: Contents.IManager;
  private _error: string | null = null;
  private _writing = false;
  private _lastText = '';
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
  }
}

/** The document widget around the editor. */
export class PipelineDocument extends DocumentWidget<PipelineEditor> {}

export class PipelineEditorFactory extends ABCWidgetFactory<PipelineDocument> {
  constructor(
    options: DocumentRegistry.IWidgetFactoryOptions<PipelineDocument> & {
      translator: ITranslator;
      contents?: Contents.IManager;
    }
  ) {
    super(options);
    this._editorTranslator = options.translator;
    this._editorContents = options.contents;
  }

  protected createNewWidget(
    context: DocumentRegistry.Context
  ): PipelineDocument {
    const content = new PipelineEditor({
      context,
      translator: this._editorTranslator,
      contents: this._editorContents
    });
    const widget = new PipelineDocument({ content, context });
    widget.addClass('cube-PipelineDocument');
    return widget;
  }

  private _editorTranslator: ITranslator;
  private _editorContents?: Contents.IManager;
}
