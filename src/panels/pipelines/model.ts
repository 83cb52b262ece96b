/**
 * The state of one pipeline editor: the graph with its history, the
 * selection, the validator's problems, the run shown on the canvas and the
 * palette's catalog. Views listen to `changed`.
 */
import { ISignal, Signal } from '@lumino/signaling';

import {
  JobTemplate,
  NodeKind,
  NodeRun,
  PipelineProblem,
  PipelineRun
} from '../../api';
import { History } from './graph';
import { PipelineGraph } from './serializer';

export type ChangeKind =
  'graph' | 'selection' | 'problems' | 'run' | 'catalog' | 'status';

export class PipelineEditorModel {
  constructor(graph: PipelineGraph) {
    this._history = new History(graph);
  }

  get changed(): ISignal<PipelineEditorModel, ChangeKind> {
    return this._changed;
  }

  get graph(): PipelineGraph {
    return this._history.present;
  }

  get canUndo(): boolean {
    return this._history.canUndo;
  }

  get canRedo(): boolean {
    return this._history.canRedo;
  }

  /** Apply an edit; recorded for undo when it changes anything. */
  apply(edit: (graph: PipelineGraph) => PipelineGraph): boolean {
    const next = edit(this.graph);
    if (!this._history.push(next)) {
      return false;
    }
    this._pruneSelection();
    this._changed.emit('graph');
    return true;
  }

  undo(): void {
    if (this.canUndo) {
      this._history.undo();
      this._pruneSelection();
      this._changed.emit('graph');
    }
  }

  redo(): void {
    if (this.canRedo) {
      this._history.redo();
      this._pruneSelection();
      this._changed.emit('graph');
    }
  }

  /** Replace the graph without history (a file read or reverted). */
  reset(graph: PipelineGraph): void {
    this._history.reset(graph);
    this._pruneSelection();
    this._changed.emit('graph');
  }

  get selection(): readonly string[] {
    return this._selection;
  }

  select(ids: readonly string[]): void {
    if (
      ids.length === this._selection.length &&
      ids.every((id, i) => id === this._selection[i])
    ) {
      return;
    }
    this._selection = [...ids];
    this._changed.emit('selection');
  }

  get problems(): readonly PipelineProblem[] {
    return this._problems;
  }

  setProblems(problems: PipelineProblem[]): void {
    this._problems = problems;
    this._changed.emit('problems');
  }

  /** Problems of one node (or of the pipeline itself, for null). */
  problemsOf(nodeId: string | null): PipelineProblem[] {
    return this._problems.filter(p => (p.node_id ?? null) === nodeId);
  }

  get run(): PipelineRun | null {
    return this._run;
  }

  setRun(run: PipelineRun | null): void {
    this._run = run;
    this._nodeRuns = new Map((run?.nodes ?? []).map(n => [n.id, n]));
    this._changed.emit('run');
  }

  nodeRun(id: string): NodeRun | undefined {
    return this._nodeRuns.get(id);
  }

  get templates(): readonly JobTemplate[] {
    return this._templates;
  }

  get nodeKinds(): readonly NodeKind[] {
    return this._kinds;
  }

  setCatalog(templates: JobTemplate[], kinds: NodeKind[]): void {
    this._templates = templates;
    this._kinds = kinds;
    this._changed.emit('catalog');
  }

  /** A line for the status bar of the editor ('' for none). */
  get status(): { text: string; error: boolean } {
    return this._status;
  }

  setStatus(text: string, error = false): void {
    this._status = { text, error };
    this._changed.emit('status');
  }

  private _pruneSelection(): void {
    const ids = new Set(this.graph.nodes.map(n => n.id));
    if (this._selection.some(id => !ids.has(id))) {
      this._selection = this._selection.filter(id => ids.has(id));
      this._changed.emit('selection');
    }
  }

  private _history: History;
  private _selection: string[] = [];
  private _problems: PipelineProblem[] = [];
  private _run: PipelineRun | null = null;
  private _nodeRuns = new Map<string, NodeRun>();
  private _templates: JobTemplate[] = [];
  private _kinds: NodeKind[] = [];
  private _status = { text: '', error: false };
  private _changed = new Signal<PipelineEditorModel, ChangeKind>(this);
}
