/**
 * The pipeline editor's React view: toolbar, palette, canvas and side pane
 * (properties, live log and results of the selected node).
 */
import { TranslationBundle } from '@jupyterlab/translation';
import {
  downloadIcon,
  fastForwardIcon,
  LabIcon,
  listIcon,
  redoIcon,
  runIcon,
  saveIcon,
  searchIcon,
  stopIcon,
  undoIcon
} from '@jupyterlab/ui-components';
import { ReactFlowProvider, useReactFlow } from '@xyflow/react';
import * as React from 'react';

import {
  describeError,
  isRunActive,
  JobTemplate,
  nodeLog,
  pipelineRunResources
} from '../../api';
import { ResourceStrip } from '../resources/strip';
import { NODE_MIME, PipelineCanvas } from './canvas';
import { autoLayout } from './graph';
import { catalogPaletteEntries, kindLabel, serverText } from './kinds';
import { ChangeKind, PipelineEditorModel } from './model';
import { PropertiesPane } from './properties';
import { NodeResults } from './results';
import { Ops } from './serializer';

export type RunMode = 'all' | 'from' | 'only';

export interface IEditorActions {
  save: () => void;
  run: (mode: RunMode) => void;
  cancel: () => void;
  copy: () => void;
  paste: () => void;
  setProjector: (
    project: ((x: number, y: number) => { x: number; y: number }) | null
  ) => void;
  dropSpec: (spec: string, x: number, y: number) => void;
  /** Download the pipeline compiled for Kubeflow Pipelines (saves first). */
  exportKfp: () => void;
  /** The Schedule dialog (saves first). */
  schedule: () => void;
  /** A note on the canvas, at its centre. */
  addComment: () => void;
  /** Files chosen in a file dialog, relative to the pipeline's folder. */
  pickFiles?: (multiple: boolean) => Promise<string[]>;
}

/** Below this width the palette starts hidden (the canvas needs the room). */
export const NARROW_EDITOR = 900;

/** Re-render when the model emits one of `kinds` (all when omitted). */
function useModel(model: PipelineEditorModel, kinds?: ChangeKind[]): number {
  const [version, setVersion] = React.useState(0);
  React.useEffect(() => {
    const onChange = (_: unknown, kind: ChangeKind) => {
      if (!kinds || kinds.includes(kind)) {
        setVersion(v => v + 1);
      }
    };
    model.changed.connect(onChange);
    return () => {
      model.changed.disconnect(onChange);
    };
  }, [model]);
  return version;
}

function ToolButton(props: {
  icon?: LabIcon;
  label: string;
  title: string;
  onClick: () => void;
  disabled?: boolean;
  className?: string;
  text?: boolean;
  pressed?: boolean;
}): JSX.Element {
  return (
    <button
      className={`cube-ToolButton${props.icon && props.text ? ' cube-mod-iconText' : ''}${
        props.className ? ` ${props.className}` : ''
      }`}
      title={props.title}
      aria-label={props.label}
      disabled={props.disabled}
      aria-pressed={props.pressed}
      onClick={props.onClick}
    >
      {props.icon ? <props.icon.react tag="span" elementSize="normal" /> : null}
      {props.text ? (
        <span className="cube-ToolButton-text">{props.label}</span>
      ) : null}
    </button>
  );
}

function Toolbar(props: {
  model: PipelineEditorModel;
  actions: IEditorActions;
  trans: TranslationBundle;
  paletteOpen: boolean;
  togglePalette: () => void;
}): JSX.Element {
  const { model, actions, trans } = props;
  useModel(model, ['graph', 'selection', 'run', 'status']);
  const flow = useReactFlow();
  const one = model.selection.length === 1;
  const running = model.run ? isRunActive(model.run) : false;
  const status = model.status;
  return (
    <div
      className="cube-PipelineToolbar"
      role="toolbar"
      aria-label={trans.__('Pipeline')}
    >
      <ToolButton
        icon={listIcon}
        label={trans.__('Node palette')}
        title={trans.__('Show or hide the node palette')}
        pressed={props.paletteOpen}
        className={props.paletteOpen ? 'cube-mod-pressed' : undefined}
        onClick={props.togglePalette}
      />
      <ToolButton
        icon={saveIcon}
        label={trans.__('Save')}
        title={trans.__('Save the pipeline')}
        onClick={actions.save}
      />
      <ToolButton
        icon={undoIcon}
        label={trans.__('Undo')}
        title={trans.__('Undo (Ctrl+Z)')}
        disabled={!model.canUndo}
        onClick={() => model.undo()}
      />
      <ToolButton
        icon={redoIcon}
        label={trans.__('Redo')}
        title={trans.__('Redo (Ctrl+Shift+Z)')}
        disabled={!model.canRedo}
        onClick={() => model.redo()}
      />
      <ToolButton
        label={trans.__('Arrange')}
        title={trans.__('Lay the nodes out automatically')}
        text
        onClick={() => {
          model.apply(autoLayout);
          window.requestAnimationFrame(
            () => void flow.fitView({ padding: 0.15, maxZoom: 1 })
          );
        }}
      />
      <ToolButton
        label={trans.__('Fit')}
        title={trans.__('Fit the pipeline in view')}
        text
        onClick={() => void flow.fitView({ padding: 0.15, maxZoom: 1 })}
      />
      <ToolButton
        label={trans.__('Comment')}
        title={trans.__('Add a comment to the canvas')}
        text
        onClick={actions.addComment}
      />
      <span className="cube-PipelineToolbar-sep" />
      <ToolButton
        icon={runIcon}
        label={trans.__('Run')}
        title={trans.__('Run the whole pipeline (saves first)')}
        text
        className="cube-mod-accent"
        disabled={running || !model.graph.nodes.length}
        onClick={() => actions.run('all')}
      />
      <ToolButton
        icon={fastForwardIcon}
        label={trans.__('Run from selected')}
        title={trans.__('Run the selected node and everything downstream')}
        text
        disabled={running || !one}
        onClick={() => actions.run('from')}
      />
      <ToolButton
        icon={runIcon}
        label={trans.__('Run only selected')}
        title={trans.__('Run the selected node alone')}
        text
        disabled={running || !one}
        onClick={() => actions.run('only')}
      />
      <ToolButton
        icon={stopIcon}
        label={trans.__('Cancel')}
        title={trans.__('Cancel the run')}
        text
        disabled={!running}
        onClick={actions.cancel}
      />
      <span className="cube-PipelineToolbar-sep" />
      <ToolButton
        icon={downloadIcon}
        label={trans.__('Export for Kubeflow Pipelines')}
        title={trans.__(
          'Download the pipeline compiled to Kubeflow Pipelines v2 IR YAML (saves first)'
        )}
        text
        disabled={!model.graph.nodes.length}
        onClick={actions.exportKfp}
      />
      <ToolButton
        label={trans.__('Schedule')}
        title={trans.__('Run this pipeline on a cron schedule (saves first)')}
        text
        disabled={!model.graph.nodes.length}
        onClick={actions.schedule}
      />
      <span
        className={`cube-PipelineToolbar-status${status.error ? ' cube-mod-error' : ''}`}
        role="status"
      >
        {status.text}
      </span>
    </div>
  );
}

interface IPaletteItem {
  key: string;
  label: string;
  description: string;
  spec: { op: string; label: string; params?: Record<string, unknown> };
}

function Palette(props: {
  model: PipelineEditorModel;
  actions: IEditorActions;
  trans: TranslationBundle;
}): JSX.Element {
  const { model, trans, actions } = props;
  useModel(model, ['catalog']);
  const [query, setQuery] = React.useState('');
  const groups = React.useMemo(() => {
    const byCategory = new Map<string, IPaletteItem[]>();
    const add = (category: string, item: IPaletteItem) => {
      const list = byCategory.get(category) ?? [];
      list.push(item);
      byCategory.set(category, list);
    };
    const generic = trans.__('Generic');
    add(generic, {
      key: 'shell',
      label: trans.__('Shell command'),
      description: trans.__('Run a shell command in the pipeline folder'),
      spec: { op: Ops.shell, label: 'shell', params: { command: '' } }
    });
    for (const kind of model.nodeKinds) {
      if (
        kind.component ||
        [Ops.notebook, Ops.python, Ops.r, Ops.shell, Ops.template].includes(
          kind.op
        )
      ) {
        continue;
      }
      const label = kindLabel({ op: kind.op }, trans, [], model.nodeKinds);
      add(trans.__('Node kinds'), {
        key: `kind:${kind.op}`,
        label,
        description: kind.op,
        spec: { op: kind.op, label }
      });
    }
    for (const t of model.templates as JobTemplate[]) {
      const title = serverText(t.display_name, trans);
      add(serverText(t.category, trans) || trans.__('Templates'), {
        key: `template:${t.name}`,
        label: title,
        description: serverText(t.description, trans),
        spec: {
          op: Ops.template,
          label: title,
          params: { template: t.name, parameters: {} }
        }
      });
    }
    // Elyra component catalogs, each under its catalog's name
    for (const entry of catalogPaletteEntries(model.nodeKinds)) {
      add(entry.category, entry);
    }
    return byCategory;
  }, [model.templates, model.nodeKinds]);
  const q = query.trim().toLowerCase();
  return (
    <div className="cube-Palette" aria-label={trans.__('Node palette')}>
      <div className="cube-Palette-search">
        <searchIcon.react tag="span" className="cube-Palette-searchIcon" />
        <input
          className="jp-mod-styled"
          type="search"
          placeholder={trans.__('Search nodes')}
          aria-label={trans.__('Search nodes')}
          value={query}
          onChange={e => setQuery(e.target.value)}
        />
      </div>
      <p className="cube-Palette-hint">
        {trans.__(
          'Drag notebooks and scripts from the file browser, or these onto the canvas.'
        )}
      </p>
      {Array.from(groups.entries()).map(([category, items]) => {
        const shown = items.filter(
          i =>
            !q ||
            i.label.toLowerCase().includes(q) ||
            i.description.toLowerCase().includes(q) ||
            category.toLowerCase().includes(q)
        );
        if (!shown.length) {
          return null;
        }
        return (
          <div className="cube-Palette-group" key={category}>
            <div className="cube-Palette-category">{category}</div>
            {shown.map(item => (
              <div
                key={item.key}
                className="cube-Palette-item"
                draggable
                role="button"
                tabIndex={0}
                title={item.description}
                data-key={item.key}
                onDragStart={e => {
                  e.dataTransfer.setData(NODE_MIME, JSON.stringify(item.spec));
                  e.dataTransfer.effectAllowed = 'copy';
                }}
                onDoubleClick={() =>
                  actions.dropSpec(JSON.stringify(item.spec), NaN, NaN)
                }
                onKeyDown={e => {
                  if (e.key === 'Enter') {
                    actions.dropSpec(JSON.stringify(item.spec), NaN, NaN);
                  }
                }}
              >
                {item.label}
              </div>
            ))}
          </div>
        );
      })}
    </div>
  );
}

const MAX_LOG = 256 * 1024;

function NodeLog(props: {
  runId: string;
  nodeId: string;
  trans: TranslationBundle;
}): JSX.Element {
  const { runId, nodeId, trans } = props;
  const [text, setText] = React.useState('');
  const [done, setDone] = React.useState(false);
  const [error, setError] = React.useState('');
  const ref = React.useRef<HTMLPreElement>(null);
  React.useEffect(() => {
    let offset = 0;
    let stopped = false;
    let timer = 0;
    setText('');
    setDone(false);
    setError('');
    const step = async () => {
      try {
        const chunk = await nodeLog(runId, nodeId, offset);
        if (stopped) {
          return;
        }
        offset = chunk.offset;
        if (chunk.text) {
          setText(t => (t + chunk.text).slice(-MAX_LOG));
        }
        setError('');
        if (chunk.done) {
          setDone(true);
          return;
        }
      } catch (err) {
        if (stopped) {
          return;
        }
        setError(describeError(err).error);
      }
      timer = window.setTimeout(step, 1000);
    };
    void step();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
    };
  }, [runId, nodeId]);
  React.useEffect(() => {
    if (ref.current) {
      ref.current.scrollTop = ref.current.scrollHeight;
    }
  }, [text]);
  return (
    <div className="cube-NodeLog">
      <div className="cube-NodeLog-head">
        {done ? trans.__('Log (finished)') : trans.__('Log (following…)')}
        {error ? <span className="cube-Field-error"> {error}</span> : null}
      </div>
      <pre
        className="cube-NodeLog-text"
        ref={ref}
        aria-label={trans.__('Node log')}
      >
        {text || (done ? trans.__('(empty)') : '')}
      </pre>
    </div>
  );
}

function SidePane(props: {
  model: PipelineEditorModel;
  trans: TranslationBundle;
  pickFiles?: (multiple: boolean) => Promise<string[]>;
}): JSX.Element {
  const { model, trans } = props;
  useModel(model);
  const [tab, setTab] = React.useState<'properties' | 'run'>('properties');
  const run = model.run;
  const selected = model.selection.length === 1 ? model.selection[0] : null;
  const nodeRun = selected ? model.nodeRun(selected) : undefined;
  const runId = run?.id;
  React.useEffect(() => {
    if (runId) {
      setTab('run');
    }
  }, [runId]);
  const showRunTab = tab === 'run' && run;
  return (
    <div className="cube-SidePane">
      <div className="cube-SidePane-tabs" role="tablist">
        <button
          role="tab"
          aria-selected={!showRunTab}
          className={!showRunTab ? 'cube-mod-active' : ''}
          onClick={() => setTab('properties')}
        >
          {trans.__('Properties')}
        </button>
        <button
          role="tab"
          aria-selected={Boolean(showRunTab)}
          className={showRunTab ? 'cube-mod-active' : ''}
          disabled={!run}
          onClick={() => setTab('run')}
        >
          {trans.__('Run')}
        </button>
      </div>
      <div className="cube-SidePane-body">
        {showRunTab && run ? (
          <div className="cube-RunInfo">
            <div className={`cube-RunBadge cube-RunBadge-${run.status}`}>
              {trans.__('Run %1: %2', run.id.slice(0, 8), run.status)}
            </div>
            {run.error ? <p className="cube-Field-error">{run.error}</p> : null}
            {selected && nodeRun ? (
              <>
                <div className="cube-RunInfo-node">
                  <strong>{nodeRun.label}</strong> — {nodeRun.status}
                  {nodeRun.attempts > 1
                    ? ` · ${trans.__('attempt %1', nodeRun.attempts)}`
                    : ''}
                </div>
                {nodeRun.error ? (
                  <p className="cube-Field-error">{nodeRun.error}</p>
                ) : null}
                <ResourceStrip
                  objectKey={`${run.id}:${selected}:${nodeRun.attempts}`}
                  load={() =>
                    pipelineRunResources(run.id).then(
                      r => r.nodes[selected] ?? null
                    )
                  }
                  active={['pending', 'running'].includes(nodeRun.status)}
                  trans={trans}
                />
                <NodeLog runId={run.id} nodeId={selected} trans={trans} />
                <NodeResults
                  runId={run.id}
                  nodeId={selected}
                  finished={!['pending', 'running'].includes(nodeRun.status)}
                  trans={trans}
                />
              </>
            ) : (
              <p className="cube-Muted">
                {trans.__('Select a node to follow its log.')}
              </p>
            )}
          </div>
        ) : (
          <PropertiesPane
            model={model}
            trans={trans}
            pickFiles={props.pickFiles}
          />
        )}
      </div>
    </div>
  );
}

/** Shows the run tab when a node is selected during or after a run. */
export function PipelineView(props: {
  model: PipelineEditorModel;
  actions: IEditorActions;
  trans: TranslationBundle;
  error: string | null;
}): JSX.Element {
  const { model, actions, trans } = props;
  const root = React.useRef<HTMLDivElement>(null);
  // null: not chosen by the user yet, so it follows the editor's width.
  const [paletteChoice, setPaletteChoice] = React.useState<boolean | null>(
    null
  );
  const [narrow, setNarrow] = React.useState(false);
  React.useEffect(() => {
    const node = root.current;
    if (!node || typeof ResizeObserver === 'undefined') {
      return;
    }
    const observer = new ResizeObserver(entries => {
      const width = entries[0]?.contentRect.width ?? 0;
      if (width > 0) {
        setNarrow(width < NARROW_EDITOR);
      }
    });
    observer.observe(node);
    return () => observer.disconnect();
  }, [props.error]);
  const paletteOpen = paletteChoice ?? !narrow;
  const onKeyDown = (e: React.KeyboardEvent) => {
    const target = e.target as HTMLElement;
    if (target.closest('input, textarea, select, [contenteditable="true"]')) {
      return;
    }
    const mod = e.ctrlKey || e.metaKey;
    if (!mod) {
      return;
    }
    const key = e.key.toLowerCase();
    if (key === 'z' && !e.shiftKey) {
      model.undo();
    } else if ((key === 'z' && e.shiftKey) || key === 'y') {
      model.redo();
    } else if (key === 'c') {
      actions.copy();
    } else if (key === 'v') {
      actions.paste();
    } else {
      return;
    }
    e.preventDefault();
    e.stopPropagation();
  };
  if (props.error) {
    return (
      <div className="cube-PipelineEditor-error" role="alert">
        <h3>{trans.__('This pipeline cannot be opened')}</h3>
        <p>{props.error}</p>
      </div>
    );
  }
  return (
    <ReactFlowProvider>
      <div
        className="cube-PipelineEditor-root"
        onKeyDown={onKeyDown}
        ref={root}
      >
        <Toolbar
          model={model}
          actions={actions}
          trans={trans}
          paletteOpen={paletteOpen}
          togglePalette={() => setPaletteChoice(!paletteOpen)}
        />
        <div className="cube-PipelineEditor-body">
          {paletteOpen ? (
            <Palette model={model} actions={actions} trans={trans} />
          ) : null}
          <div className="cube-PipelineEditor-canvas">
            <PipelineCanvas
              model={model}
              trans={trans}
              setProjector={actions.setProjector}
              onDropSpec={actions.dropSpec}
              onRefused={message => model.setStatus(message, true)}
            />
          </div>
          <SidePane model={model} trans={trans} pickFiles={actions.pickFiles} />
        </div>
      </div>
    </ReactFlowProvider>
  );
}
