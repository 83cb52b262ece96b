/**
 * The React Flow canvas of the pipeline editor, with the live run overlay.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import {
  applyEdgeChanges,
  applyNodeChanges,
  Background,
  BackgroundVariant,
  Connection,
  Controls,
  Edge as FlowEdge,
  EdgeChange,
  Handle,
  MarkerType,
  MiniMap,
  Node as FlowNode,
  NodeChange,
  NodeProps,
  NodeResizer,
  OnSelectionChangeParams,
  Position,
  ReactFlow,
  useReactFlow
} from '@xyflow/react';
import * as React from 'react';

import { isRunActive, NodeRun, NodeRunStatus } from '../../api';
import {
  canConnect,
  connect,
  disconnect,
  edges as graphEdges,
  moveComments,
  moveNodes,
  NODE_HEIGHT,
  NODE_WIDTH,
  removeComments,
  removeNodes,
  updateComment
} from './graph';
import { kindLabel } from './kinds';
import { PipelineEditorModel } from './model';
import { FILE_OPS, Ops, PipelineNode } from './serializer';

/** The MIME type the palette drags node specs with. */
export const NODE_MIME = 'application/x-cube-lab-pipeline-node';

export interface ICubeNodeData extends Record<string, unknown> {
  label: string;
  kind: string;
  op: string;
  /** What the node is, translated ("Notebook", "Job template: …"). */
  kindLabel: string;
  status?: NodeRunStatus;
  elapsed?: string;
  retries?: number;
  problems?: string[];
  statusLabel?: string;
  retryLabel?: string;
}

type CubeFlowNode = FlowNode<ICubeNodeData, 'cube'>;

export interface ICommentData extends Record<string, unknown> {
  content: string;
  placeholder: string;
  commit: (id: string, content: string) => void;
  resize: (id: string, width: number, height: number) => void;
}

type CommentFlowNode = FlowNode<ICommentData, 'comment'>;
type AnyFlowNode = CubeFlowNode | CommentFlowNode;

/** Comments share the canvas with nodes: their flow ids carry a prefix. */
export const COMMENT_PREFIX = 'comment:';

export function isCommentId(id: string): boolean {
  return id.startsWith(COMMENT_PREFIX);
}

function commentId(flowId: string): string {
  return flowId.slice(COMMENT_PREFIX.length);
}

/** Seconds as "4s", "2m 05s", "1h 02m". */
export function formatElapsed(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) {
    return `${s}s`;
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  }
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** The elapsed time of a node run now ('' before it starts). */
export function nodeElapsed(run: NodeRun, now = Date.now()): string {
  if (run.duration_s !== null && run.duration_s !== undefined) {
    return formatElapsed(run.duration_s);
  }
  if (run.started_at && run.status === 'running') {
    return formatElapsed((now - Date.parse(run.started_at)) / 1000);
  }
  return '';
}

const STATUS_GLYPH: Record<NodeRunStatus, string> = {
  pending: '○',
  running: '◐',
  succeeded: '✓',
  failed: '✕',
  cancelled: '⊘',
  skipped: '↷',
  cached: '≡',
  reused: '≡',
  interrupted: '!'
};

/** A short name for a node's op (the badge on the node). */
export function kindOf(op: string): string {
  switch (op) {
    case Ops.notebook:
      return 'notebook';
    case Ops.python:
      return 'python';
    case Ops.r:
      return 'r';
    case Ops.shell:
      return 'shell';
    case Ops.template:
      return 'template';
    default:
      return 'other';
  }
}

const CubeNode = React.memo((props: NodeProps<CubeFlowNode>) => {
  const { data, selected } = props;
  const status = data.status;
  return (
    <div
      className={`cube-PNode cube-PNode-kind-${data.kind}${status ? ` cube-PNode-${status}` : ''}${
        data.problems?.length ? ' cube-PNode-invalid' : ''
      }${selected ? ' cube-mod-selected' : ''}`}
      data-status={status ?? ''}
      title={data.problems?.join('\n') || undefined}
    >
      <Handle type="target" position={Position.Left} />
      <div className="cube-PNode-icon" aria-hidden="true" />
      <div className="cube-PNode-text">
        <div className="cube-PNode-label" title={data.label}>
          {data.label}
        </div>
        <div className="cube-PNode-meta">
          {status ? (
            <>
              <span
                className="cube-PNode-status"
                title={data.statusLabel}
                aria-label={data.statusLabel}
              >
                {STATUS_GLYPH[status]}
              </span>
              <span className="cube-PNode-statusText">{data.statusLabel}</span>
              {data.elapsed ? (
                <span className="cube-PNode-elapsed">{data.elapsed}</span>
              ) : null}
              {data.retries ? (
                <span className="cube-PNode-retries" title={data.retryLabel}>
                  ↻{data.retries}
                </span>
              ) : null}
            </>
          ) : (
            <span
              className="cube-PNode-op"
              data-op={data.op}
              title={data.kindLabel}
            >
              {data.kindLabel}
            </span>
          )}
        </div>
      </div>
      {data.problems?.length ? (
        <div className="cube-PNode-problem" aria-label={data.problems[0]}>
          !
        </div>
      ) : null}
      <Handle type="source" position={Position.Right} />
    </div>
  );
});
CubeNode.displayName = 'CubeNode';

/** A note on the canvas: double-click to edit, drag the corners to resize. */
const CommentNode = React.memo((props: NodeProps<CommentFlowNode>) => {
  const { data, selected, id } = props;
  const [editing, setEditing] = React.useState(false);
  const [draft, setDraft] = React.useState(data.content);
  React.useEffect(() => setDraft(data.content), [data.content]);
  const stop = () => {
    setEditing(false);
    if (draft !== data.content) {
      data.commit(commentId(id), draft);
    }
  };
  return (
    <div
      className={`cube-PComment${selected ? ' cube-mod-selected' : ''}`}
      onDoubleClick={() => setEditing(true)}
    >
      <NodeResizer
        isVisible={selected && !editing}
        minWidth={80}
        minHeight={32}
        onResizeEnd={(_, p) => data.resize(commentId(id), p.width, p.height)}
      />
      {/* Where the dashed lines to the nodes start; not for linking. */}
      <Handle
        type="source"
        position={Position.Top}
        className="cube-PComment-anchor"
        isConnectable={false}
      />
      {editing ? (
        <textarea
          className="cube-PComment-edit nodrag nowheel"
          autoFocus
          value={draft}
          aria-label={data.placeholder}
          onChange={e => setDraft(e.target.value)}
          onBlur={stop}
          onKeyDown={e => {
            e.stopPropagation();
            if (e.key === 'Escape' || (e.key === 'Enter' && e.ctrlKey)) {
              stop();
            }
          }}
        />
      ) : (
        <div
          className={`cube-PComment-text${data.content ? '' : ' cube-mod-empty'}`}
        >
          {data.content || data.placeholder}
        </div>
      )}
    </div>
  );
});
CommentNode.displayName = 'CommentNode';

const NODE_TYPES = { cube: CubeNode, comment: CommentNode };

export interface ICanvasProps {
  model: PipelineEditorModel;
  trans: TranslationBundle;
  /** Called once with a function turning client coordinates into flow ones. */
  setProjector: (
    project: ((x: number, y: number) => { x: number; y: number }) | null
  ) => void;
  /** A palette item dropped on the canvas at flow position (x, y). */
  onDropSpec: (spec: string, x: number, y: number) => void;
  /** Tell the user why a link is refused. */
  onRefused: (message: string) => void;
}

function statusLabels(trans: TranslationBundle): Record<NodeRunStatus, string> {
  return {
    pending: trans.__('pending'),
    running: trans.__('running'),
    succeeded: trans.__('succeeded'),
    failed: trans.__('failed'),
    cancelled: trans.__('cancelled'),
    skipped: trans.__('skipped'),
    cached: trans.__('cached'),
    reused: trans.__('reused'),
    interrupted: trans.__('interrupted')
  };
}

function buildNodes(
  model: PipelineEditorModel,
  trans: TranslationBundle,
  now: number
): CubeFlowNode[] {
  const labels = statusLabels(trans);
  const selected = new Set(model.selection);
  const problems = new Map<string, string[]>();
  for (const p of model.problems) {
    if (p.node_id) {
      const list = problems.get(p.node_id) ?? [];
      list.push(`${p.field}: ${p.message}`);
      problems.set(p.node_id, list);
    }
  }
  return model.graph.nodes.map((n: PipelineNode) => {
    const run = model.nodeRun(n.id);
    const data: ICubeNodeData = {
      label: n.label,
      kind: kindOf(n.op),
      op: n.op,
      kindLabel: kindLabel(n, trans, model.templates, model.nodeKinds),
      problems: problems.get(n.id)
    };
    if (run) {
      data.status = run.status;
      data.statusLabel = labels[run.status] ?? run.status;
      data.elapsed = nodeElapsed(run, now);
      data.retries = Math.max(0, (run.attempts ?? 0) - 1);
      data.retryLabel = trans._n('%1 retry', '%1 retries', data.retries ?? 0);
    }
    return {
      id: n.id,
      type: 'cube',
      position: { x: n.x, y: n.y },
      // Known sizes: React Flow can place edges and fit the view before
      // measuring every node.
      width: NODE_WIDTH,
      height: NODE_HEIGHT,
      data,
      selected: selected.has(n.id)
    };
  });
}

function buildComments(
  model: PipelineEditorModel,
  trans: TranslationBundle,
  previous: Map<string, boolean>
): CommentFlowNode[] {
  const commit = (id: string, content: string) =>
    model.apply(g => updateComment(g, id, { content }));
  const resize = (id: string, width: number, height: number) =>
    model.apply(g =>
      updateComment(g, id, {
        width: Math.round(width),
        height: Math.round(height)
      })
    );
  const placeholder = trans.__('Double-click to write a comment');
  return model.graph.comments.map(c => {
    const id = COMMENT_PREFIX + c.id;
    return {
      id,
      type: 'comment',
      position: { x: c.x, y: c.y },
      width: c.width,
      height: c.height,
      // Behind the nodes; keeps its selection over rebuilds.
      zIndex: -1,
      selected: previous.get(id) ?? false,
      data: { content: c.content, placeholder, commit, resize }
    };
  });
}

/** Comment links: a dashed line from a comment to each node it is about. */
function buildCommentEdges(model: PipelineEditorModel): FlowEdge[] {
  const ids = new Set(model.graph.nodes.map(n => n.id));
  return model.graph.comments.flatMap(c =>
    c.nodeRefs
      .filter(ref => ids.has(ref))
      .map(ref => ({
        id: `${COMMENT_PREFIX}${c.id}->${ref}`,
        source: COMMENT_PREFIX + c.id,
        target: ref,
        type: 'straight',
        className: 'cube-CommentLink',
        selectable: false,
        focusable: false,
        deletable: false
      }))
  );
}

function buildEdges(model: PipelineEditorModel): FlowEdge[] {
  return graphEdges(model.graph).map(e => {
    const running = model.nodeRun(e.target)?.status === 'running';
    return {
      id: `${e.source}->${e.target}`,
      source: e.source,
      target: e.target,
      animated: running,
      markerEnd: { type: MarkerType.ArrowClosed, width: 16, height: 16 }
    };
  });
}

export function PipelineCanvas(props: ICanvasProps): JSX.Element {
  const { model, trans } = props;
  const flow = useReactFlow();
  const [now, setNow] = React.useState(Date.now());
  const [nodes, setNodes] = React.useState<AnyFlowNode[]>(() => [
    ...buildComments(model, trans, new Map()),
    ...buildNodes(model, trans, now)
  ]);
  const [edges, setEdges] = React.useState<FlowEdge[]>(() => [
    ...buildEdges(model),
    ...buildCommentEdges(model)
  ]);
  const rebuild = React.useCallback(
    (at: number) =>
      setNodes(old => {
        const selected = new Map(
          old.filter(n => n.type === 'comment').map(n => [n.id, !!n.selected])
        );
        return [
          ...buildComments(model, trans, selected),
          ...buildNodes(model, trans, at)
        ];
      }),
    [model]
  );

  React.useEffect(() => {
    props.setProjector((x, y) => flow.screenToFlowPosition({ x, y }));
    return () => props.setProjector(null);
  }, [flow]);

  // Rebuild from the model when the graph, the problems or the run change.
  React.useEffect(() => {
    const onChange = (_: unknown, kind: string) => {
      if (
        kind === 'graph' ||
        kind === 'problems' ||
        kind === 'run' ||
        kind === 'catalog'
      ) {
        rebuild(Date.now());
        setEdges([...buildEdges(model), ...buildCommentEdges(model)]);
      }
    };
    model.changed.connect(onChange);
    return () => {
      model.changed.disconnect(onChange);
    };
  }, [model]);

  // Tick the elapsed times while a run goes on.
  const active = model.run ? isRunActive(model.run) : false;
  React.useEffect(() => {
    if (!active) {
      return;
    }
    const timer = window.setInterval(() => setNow(Date.now()), 1000);
    return () => window.clearInterval(timer);
  }, [active]);
  React.useEffect(() => {
    if (active) {
      rebuild(now);
    }
  }, [now]);

  const onNodesChange = React.useCallback((changes: NodeChange[]) => {
    const kept = changes.filter(c => c.type !== 'remove');
    if (kept.length) {
      setNodes(ns => applyNodeChanges(kept, ns) as AnyFlowNode[]);
    }
  }, []);

  const onEdgesChange = React.useCallback((changes: EdgeChange[]) => {
    const kept = changes.filter(c => c.type !== 'remove');
    if (kept.length) {
      setEdges(es => applyEdgeChanges(kept, es));
    }
  }, []);

  const onNodeDragStop = React.useCallback(
    (_: unknown, __: unknown, dragged: FlowNode[]) => {
      const comments = new Map(
        dragged
          .filter(n => isCommentId(n.id))
          .map(n => [commentId(n.id), n.position])
      );
      const moved = new Map(
        dragged.filter(n => !isCommentId(n.id)).map(n => [n.id, n.position])
      );
      model.apply(g => moveComments(moveNodes(g, moved), comments));
    },
    [model]
  );

  const onDelete = React.useCallback(
    ({ nodes: ns, edges: es }: { nodes: FlowNode[]; edges: FlowEdge[] }) => {
      model.apply(g => {
        let next = removeNodes(
          g,
          ns.filter(n => !isCommentId(n.id)).map(n => n.id)
        );
        next = removeComments(
          next,
          ns.filter(n => isCommentId(n.id)).map(n => commentId(n.id))
        );
        for (const e of es) {
          if (!isCommentId(e.source)) {
            next = disconnect(next, e.source, e.target);
          }
        }
        return next;
      });
    },
    [model]
  );

  const isValidConnection = React.useCallback(
    (c: Connection | FlowEdge) =>
      canConnect(model.graph, c.source, c.target) === 'ok',
    [model]
  );

  const onConnect = React.useCallback(
    (c: Connection) => {
      const why = canConnect(model.graph, c.source, c.target);
      if (why === 'cycle') {
        props.onRefused(trans.__('That link would make a cycle.'));
        return;
      }
      model.apply(g => connect(g, c.source, c.target));
    },
    [model]
  );

  const onSelectionChange = React.useCallback(
    ({ nodes: ns }: OnSelectionChangeParams) => {
      model.select(ns.filter(n => !isCommentId(n.id)).map(n => n.id));
    },
    [model]
  );

  const onDragOver = React.useCallback((event: React.DragEvent) => {
    if (event.dataTransfer.types.includes(NODE_MIME)) {
      event.preventDefault();
      event.dataTransfer.dropEffect = 'copy';
    }
  }, []);

  const onDrop = React.useCallback(
    (event: React.DragEvent) => {
      const spec = event.dataTransfer.getData(NODE_MIME);
      if (!spec) {
        return;
      }
      event.preventDefault();
      const p = flow.screenToFlowPosition({
        x: event.clientX,
        y: event.clientY
      });
      props.onDropSpec(spec, p.x, p.y);
    },
    [flow]
  );

  const minimapColor = React.useCallback((n: FlowNode) => {
    if (n.type === 'comment') {
      return 'transparent';
    }
    const status = (n.data as ICubeNodeData).status;
    return status
      ? `var(--cube-status-${status}, var(--jp-layout-color3))`
      : 'var(--jp-layout-color3)';
  }, []);

  const many = nodes.length > 100;
  return (
    <ReactFlow
      className="cube-PipelineCanvas"
      nodes={nodes}
      edges={edges}
      nodeTypes={NODE_TYPES}
      onNodesChange={onNodesChange}
      onEdgesChange={onEdgesChange}
      onNodeDragStop={onNodeDragStop}
      onDelete={onDelete}
      onConnect={onConnect}
      isValidConnection={isValidConnection}
      onSelectionChange={onSelectionChange}
      onDragOver={onDragOver}
      onDrop={onDrop}
      deleteKeyCode={['Backspace', 'Delete']}
      multiSelectionKeyCode={['Meta', 'Control', 'Shift']}
      onlyRenderVisibleElements={many}
      minZoom={0.1}
      maxZoom={2}
      fitView
      fitViewOptions={{ padding: 0.15, maxZoom: 1 }}
      proOptions={{ hideAttribution: true }}
    >
      <Background variant={BackgroundVariant.Dots} gap={16} size={1} />
      <Controls
        showInteractive={false}
        aria-label={trans.__('Zoom controls')}
      />
      <MiniMap
        pannable
        zoomable
        nodeColor={minimapColor}
        ariaLabel={trans.__('Mini map')}
      />
    </ReactFlow>
  );
}

/** Node ops that run a file. */
export function isFileOp(op: string): boolean {
  return FILE_OPS.includes(op);
}
