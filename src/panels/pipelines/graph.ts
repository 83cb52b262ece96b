/**
 * Graph operations on an immutable `PipelineGraph`, the undo/redo history
 * and the automatic layout. Nothing here touches the DOM.
 */
import dagre from '@dagrejs/dagre';
import { UUID } from '@lumino/coreutils';

import {
  COMMENT_HEIGHT,
  COMMENT_WIDTH,
  PipelineComment,
  PipelineGraph,
  PipelineNode,
  PipelineParameter
} from './serializer';

/** The size the canvas draws a node at (the layout needs it). */
export const NODE_WIDTH = 200;
export const NODE_HEIGHT = 56;

export interface Edge {
  source: string;
  target: string;
}

/** Every link, as source (upstream) -> target (downstream). */
export function edges(graph: PipelineGraph): Edge[] {
  const ids = new Set(graph.nodes.map(n => n.id));
  const out: Edge[] = [];
  for (const node of graph.nodes) {
    for (const up of node.upstream) {
      if (ids.has(up)) {
        out.push({ source: up, target: node.id });
      }
    }
  }
  return out;
}

/** `id` and every node downstream of it. */
export function downstream(graph: PipelineGraph, id: string): Set<string> {
  const children = new Map<string, string[]>();
  for (const node of graph.nodes) {
    for (const up of node.upstream) {
      const list = children.get(up) ?? [];
      list.push(node.id);
      children.set(up, list);
    }
  }
  const seen = new Set([id]);
  const stack = [id];
  while (stack.length) {
    for (const child of children.get(stack.pop()!) ?? []) {
      if (!seen.has(child)) {
        seen.add(child);
        stack.push(child);
      }
    }
  }
  return seen;
}

/** Would the link source -> target close a cycle (or link a node to itself)? */
export function wouldCycle(
  graph: PipelineGraph,
  source: string,
  target: string
): boolean {
  return source === target || downstream(graph, target).has(source);
}

export type ConnectResult = 'ok' | 'exists' | 'cycle' | 'missing';

/** Why `connect` would refuse the link, or 'ok'. */
export function canConnect(
  graph: PipelineGraph,
  source: string,
  target: string
): ConnectResult {
  const to = graph.nodes.find(n => n.id === target);
  if (!to || !graph.nodes.some(n => n.id === source)) {
    return 'missing';
  }
  if (to.upstream.includes(source)) {
    return 'exists';
  }
  return wouldCycle(graph, source, target) ? 'cycle' : 'ok';
}

function replaceNode(
  graph: PipelineGraph,
  id: string,
  update: (node: PipelineNode) => PipelineNode
): PipelineGraph {
  let changed = false;
  const nodes = graph.nodes.map(n => {
    if (n.id !== id) {
      return n;
    }
    const next = update(n);
    changed = changed || next !== n;
    return next;
  });
  return changed ? { ...graph, nodes } : graph;
}

/** Link source -> target; the same graph when the link is refused. */
export function connect(
  graph: PipelineGraph,
  source: string,
  target: string
): PipelineGraph {
  if (canConnect(graph, source, target) !== 'ok') {
    return graph;
  }
  return replaceNode(graph, target, n => ({
    ...n,
    upstream: [...n.upstream, source]
  }));
}

export function disconnect(
  graph: PipelineGraph,
  source: string,
  target: string
): PipelineGraph {
  return replaceNode(graph, target, n =>
    n.upstream.includes(source)
      ? { ...n, upstream: n.upstream.filter(u => u !== source) }
      : n
  );
}

export interface NewNode {
  op: string;
  label: string;
  x: number;
  y: number;
  params?: Record<string, unknown>;
  cube?: Record<string, unknown>;
  id?: string;
}

export function createNode(spec: NewNode): PipelineNode {
  return {
    id: spec.id ?? UUID.uuid4(),
    op: spec.op,
    label: spec.label,
    x: spec.x,
    y: spec.y,
    params: spec.params ?? {},
    cube: spec.cube ?? {},
    upstream: [],
    raw: null
  };
}

export function addNodes(
  graph: PipelineGraph,
  nodes: PipelineNode[]
): PipelineGraph {
  return nodes.length ? { ...graph, nodes: [...graph.nodes, ...nodes] } : graph;
}

/** Remove nodes and every link to or from them. */
export function removeNodes(
  graph: PipelineGraph,
  ids: Iterable<string>
): PipelineGraph {
  const gone = new Set(ids);
  if (!graph.nodes.some(n => gone.has(n.id))) {
    return graph;
  }
  const nodes = graph.nodes
    .filter(n => !gone.has(n.id))
    .map(n =>
      n.upstream.some(u => gone.has(u))
        ? { ...n, upstream: n.upstream.filter(u => !gone.has(u)) }
        : n
    );
  // A comment stays, but no longer points at nodes that are gone.
  const comments = graph.comments.some(c => c.nodeRefs.some(r => gone.has(r)))
    ? graph.comments.map(c =>
        c.nodeRefs.some(r => gone.has(r))
          ? { ...c, nodeRefs: c.nodeRefs.filter(r => !gone.has(r)) }
          : c
      )
    : graph.comments;
  return { ...graph, nodes, comments };
}

/** A new comment at (x, y), about `nodeRefs`. */
export function createComment(
  x: number,
  y: number,
  content = '',
  nodeRefs: string[] = []
): PipelineComment {
  return {
    id: UUID.uuid4(),
    x: Math.round(x),
    y: Math.round(y),
    width: COMMENT_WIDTH,
    height: COMMENT_HEIGHT,
    content,
    nodeRefs,
    raw: null
  };
}

export function addComments(
  graph: PipelineGraph,
  comments: PipelineComment[]
): PipelineGraph {
  return comments.length
    ? { ...graph, comments: [...graph.comments, ...comments] }
    : graph;
}

export type CommentPatch = Partial<
  Pick<PipelineComment, 'content' | 'x' | 'y' | 'width' | 'height' | 'nodeRefs'>
>;

export function updateComment(
  graph: PipelineGraph,
  id: string,
  patch: CommentPatch
): PipelineGraph {
  const index = graph.comments.findIndex(c => c.id === id);
  if (index < 0) {
    return graph;
  }
  const old = graph.comments[index];
  const next = { ...old, ...patch };
  if (
    (Object.keys(patch) as (keyof CommentPatch)[]).every(
      k => next[k] === old[k]
    )
  ) {
    return graph;
  }
  const comments = [...graph.comments];
  comments[index] = next;
  return { ...graph, comments };
}

export function removeComments(
  graph: PipelineGraph,
  ids: Iterable<string>
): PipelineGraph {
  const gone = new Set(ids);
  return graph.comments.some(c => gone.has(c.id))
    ? { ...graph, comments: graph.comments.filter(c => !gone.has(c.id)) }
    : graph;
}

export function moveComments(
  graph: PipelineGraph,
  positions: Map<string, { x: number; y: number }>
): PipelineGraph {
  let changed = false;
  const comments = graph.comments.map(c => {
    const p = positions.get(c.id);
    if (!p || (Math.round(p.x) === c.x && Math.round(p.y) === c.y)) {
      return c;
    }
    changed = true;
    return { ...c, x: Math.round(p.x), y: Math.round(p.y) };
  });
  return changed ? { ...graph, comments } : graph;
}

export function moveNodes(
  graph: PipelineGraph,
  positions: Map<string, { x: number; y: number }>
): PipelineGraph {
  let changed = false;
  const nodes = graph.nodes.map(n => {
    const p = positions.get(n.id);
    if (!p || (Math.round(p.x) === n.x && Math.round(p.y) === n.y)) {
      return n;
    }
    changed = true;
    return { ...n, x: Math.round(p.x), y: Math.round(p.y) };
  });
  return changed ? { ...graph, nodes } : graph;
}

export type NodePatch = Partial<
  Pick<PipelineNode, 'label' | 'params' | 'cube' | 'op'>
>;

export function updateNode(
  graph: PipelineGraph,
  id: string,
  patch: NodePatch
): PipelineGraph {
  return replaceNode(graph, id, n => ({ ...n, ...patch }));
}

export interface PipelinePatch {
  name?: string;
  parameters?: PipelineParameter[];
  cube?: Record<string, unknown>;
}

export function updatePipeline(
  graph: PipelineGraph,
  patch: PipelinePatch
): PipelineGraph {
  return { ...graph, ...patch };
}

/** Copies of `ids` (with the links among them), shifted by `offset`. */
export function duplicate(
  graph: PipelineGraph,
  ids: Iterable<string>,
  offset = 40
): PipelineNode[] {
  const chosen = new Set(ids);
  const map = new Map<string, string>();
  const picked = graph.nodes.filter(n => chosen.has(n.id));
  for (const node of picked) {
    map.set(node.id, UUID.uuid4());
  }
  return picked.map(n => ({
    ...n,
    id: map.get(n.id)!,
    x: n.x + offset,
    y: n.y + offset,
    raw: null,
    upstream: n.upstream.filter(u => map.has(u)).map(u => map.get(u)!)
  }));
}

/** Lay the graph out left to right (dagre). */
export function autoLayout(graph: PipelineGraph): PipelineGraph {
  const g = new dagre.graphlib.Graph();
  g.setGraph({
    rankdir: 'LR',
    nodesep: 30,
    ranksep: 80,
    marginx: 20,
    marginy: 20
  });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of graph.nodes) {
    g.setNode(node.id, { width: NODE_WIDTH, height: NODE_HEIGHT });
  }
  for (const e of edges(graph)) {
    g.setEdge(e.source, e.target);
  }
  dagre.layout(g);
  const positions = new Map<string, { x: number; y: number }>();
  for (const node of graph.nodes) {
    const p = g.node(node.id);
    if (p) {
      positions.set(node.id, {
        x: p.x - NODE_WIDTH / 2,
        y: p.y - NODE_HEIGHT / 2
      });
    }
  }
  return moveNodes(graph, positions);
}

/**
 * Undo / redo over graph snapshots. Snapshots are immutable and share
 * unchanged nodes, so keeping many is cheap.
 */
export class History {
  constructor(
    initial: PipelineGraph,
    readonly limit = 200
  ) {
    this._present = initial;
  }

  get present(): PipelineGraph {
    return this._present;
  }

  get canUndo(): boolean {
    return this._past.length > 0;
  }

  get canRedo(): boolean {
    return this._future.length > 0;
  }

  /** Record a new state; returns false (and records nothing) when unchanged. */
  push(next: PipelineGraph): boolean {
    if (next === this._present) {
      return false;
    }
    this._past.push(this._present);
    if (this._past.length > this.limit) {
      this._past.shift();
    }
    this._present = next;
    this._future = [];
    return true;
  }

  undo(): PipelineGraph {
    const previous = this._past.pop();
    if (previous) {
      this._future.push(this._present);
      this._present = previous;
    }
    return this._present;
  }

  redo(): PipelineGraph {
    const next = this._future.pop();
    if (next) {
      this._past.push(this._present);
      this._present = next;
    }
    return this._present;
  }

  /** Forget everything and start from `graph` (after a revert). */
  reset(graph: PipelineGraph): void {
    this._past = [];
    this._future = [];
    this._present = graph;
  }

  private _present: PipelineGraph;
  private _past: PipelineGraph[] = [];
  private _future: PipelineGraph[] = [];
}
