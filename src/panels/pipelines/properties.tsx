/**
 * The properties pane: a node's settings (a form generated from the job
 * template's JSON schema for template nodes), or the pipeline's.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { JobTemplate, JSONSchema, PipelineProblem } from '../../api';
import { updateNode, updatePipeline } from './graph';
import {
  catalogComponent,
  catalogInputSchema,
  catalogValues,
  kindLabel,
  parentOutputs,
  pluginSchema,
  serverText,
  withCatalogValues
} from './kinds';
import { PipelineEditorModel } from './model';
import { FILE_OPS, Ops, PipelineNode, PipelineParameter } from './serializer';

type Json = any;

function problemFor(
  problems: PipelineProblem[],
  field: string
): string | undefined {
  const found = problems.filter(
    p =>
      p.field === field ||
      p.field.startsWith(`${field}[`) ||
      p.field.startsWith(`${field}.`)
  );
  return found.length ? found.map(p => p.message).join('; ') : undefined;
}

interface IFieldProps {
  label: string;
  value: string;
  onCommit: (value: string) => void;
  error?: string;
  hint?: string;
  type?: 'text' | 'number';
  multiline?: boolean;
  placeholder?: string;
  name?: string;
  required?: boolean;
  /** Shows a "Browse…" button; resolves to the new value (null: cancelled). */
  onBrowse?: () => Promise<string | null>;
  browseLabel?: string;
}

/** A text field that commits on blur or Enter (one undo step per edit). */
export function Field(props: IFieldProps): JSX.Element {
  const [draft, setDraft] = React.useState(props.value);
  React.useEffect(() => setDraft(props.value), [props.value]);
  const commit = () => {
    if (draft !== props.value) {
      props.onCommit(draft);
    }
  };
  const common = {
    className: `jp-mod-styled cube-Field-input${props.error ? ' cube-mod-invalid' : ''}`,
    value: draft,
    name: props.name,
    placeholder: props.placeholder,
    'aria-invalid': props.error ? true : undefined,
    onBlur: commit
  };
  return (
    <label className="cube-Field">
      <span className="cube-Field-label">
        {props.label}
        {props.required ? <span className="cube-Field-required">*</span> : null}
      </span>
      <span className={props.onBrowse ? 'cube-Field-browseRow' : undefined}>
        {props.multiline ? (
          <textarea
            {...common}
            rows={3}
            onChange={e => setDraft(e.target.value)}
          />
        ) : (
          <input
            {...common}
            type={props.type ?? 'text'}
            onChange={e => setDraft(e.target.value)}
            onKeyDown={e => {
              if (e.key === 'Enter') {
                commit();
              }
            }}
          />
        )}
        {props.onBrowse ? (
          <button
            type="button"
            className="jp-mod-styled cube-Field-browse"
            title={props.browseLabel}
            aria-label={props.browseLabel}
            onClick={e => {
              // Inside the label: do not focus the input (it would commit the draft).
              e.preventDefault();
              void props.onBrowse!().then(value => {
                if (value !== null && value !== props.value) {
                  setDraft(value);
                  props.onCommit(value);
                }
              });
            }}
          >
            …
          </button>
        ) : null}
      </span>
      {props.error ? (
        <span className="cube-Field-error" role="alert">
          {props.error}
        </span>
      ) : props.hint ? (
        <span className="cube-Field-hint">{props.hint}</span>
      ) : null}
    </label>
  );
}

interface IPairsProps {
  label: string;
  pairs: [string, string][];
  onCommit: (pairs: [string, string][]) => void;
  trans: TranslationBundle;
  keyPlaceholder: string;
  valuePlaceholder: string;
  error?: string;
  name: string;
}

/** Name = value rows (env vars, node parameters). */
export function Pairs(props: IPairsProps): JSX.Element {
  const { trans } = props;
  const [rows, setRows] = React.useState(props.pairs);
  React.useEffect(() => setRows(props.pairs), [JSON.stringify(props.pairs)]);
  const commit = (next: [string, string][]) => {
    const clean = next.filter(([k]) => k.trim());
    if (JSON.stringify(clean) !== JSON.stringify(props.pairs)) {
      props.onCommit(clean);
    }
  };
  return (
    <div className="cube-Field" role="group" aria-label={props.label}>
      <span className="cube-Field-label">{props.label}</span>
      {rows.map(([k, v], i) => (
        <div className="cube-Pairs-row" key={i}>
          <input
            className="jp-mod-styled cube-Field-input"
            value={k}
            name={`${props.name}-key-${i}`}
            placeholder={props.keyPlaceholder}
            aria-label={props.keyPlaceholder}
            onChange={e =>
              setRows(
                rows.map((r, j) => (j === i ? [e.target.value, r[1]] : r))
              )
            }
            onBlur={() => commit(rows)}
          />
          <input
            className="jp-mod-styled cube-Field-input"
            value={v}
            name={`${props.name}-value-${i}`}
            placeholder={props.valuePlaceholder}
            aria-label={props.valuePlaceholder}
            onChange={e =>
              setRows(
                rows.map((r, j) => (j === i ? [r[0], e.target.value] : r))
              )
            }
            onBlur={() => commit(rows)}
            onKeyDown={e => {
              if (e.key === 'Enter') {
                commit(rows);
              }
            }}
          />
          <button
            className="cube-IconButton"
            title={trans.__('Remove')}
            aria-label={trans.__('Remove')}
            onClick={() => {
              const next = rows.filter((_, j) => j !== i);
              setRows(next);
              commit(next);
            }}
          >
            ×
          </button>
        </div>
      ))}
      <button
        className="cube-LinkButton"
        onClick={() => setRows([...rows, ['', '']])}
      >
        {trans.__('+ Add')}
      </button>
      {props.error ? (
        <span className="cube-Field-error" role="alert">
          {props.error}
        </span>
      ) : null}
    </div>
  );
}

/** Parse a typed value: JSON when it is valid JSON, else the text. */
export function parseValue(text: string): Json {
  const trimmed = text.trim();
  if (trimmed === '') {
    return '';
  }
  try {
    return JSON.parse(trimmed);
  } catch {
    return text;
  }
}

function showValue(value: Json): string {
  if (value === undefined || value === null) {
    return '';
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function numberOrUndefined(text: string): number | string | undefined {
  if (!text.trim()) {
    return undefined;
  }
  const n = Number(text);
  return Number.isFinite(n) ? n : text;
}

function withKey(obj: Record<string, Json>, key: string, value: Json) {
  const next = { ...obj };
  if (value === undefined || value === '') {
    delete next[key];
  } else {
    next[key] = value;
  }
  return next;
}

/** A form generated from a JSON schema's properties (template parameters). */
export function SchemaForm(props: {
  schema: JSONSchema;
  value: Record<string, Json>;
  onChange: (value: Record<string, Json>) => void;
  error?: string;
  trans: TranslationBundle;
}): JSX.Element {
  const { schema, value, trans } = props;
  const required = new Set(schema.required ?? []);
  const entries = Object.entries(schema.properties ?? {});
  if (!entries.length) {
    return (
      <p className="cube-Muted">
        {trans.__('This template takes no parameters.')}
      </p>
    );
  }
  return (
    <div className="cube-SchemaForm">
      {entries.map(([key, prop]) => {
        const label = serverText(prop.title, trans) || key;
        const hint =
          prop.description !== undefined
            ? serverText(prop.description, trans)
            : prop.default !== undefined
              ? trans.__('Default: %1', showValue(prop.default))
              : undefined;
        const current = value[key];
        const set = (v: Json) => props.onChange(withKey(value, key, v));
        if (Array.isArray(prop.enum)) {
          return (
            <label className="cube-Field" key={key}>
              <span className="cube-Field-label">
                {label}
                {required.has(key) ? (
                  <span className="cube-Field-required">*</span>
                ) : null}
              </span>
              <select
                className="jp-mod-styled cube-Field-input"
                name={`param-${key}`}
                value={showValue(current ?? '')}
                onChange={e => {
                  const picked = prop.enum!.find(
                    o => showValue(o) === e.target.value
                  );
                  set(e.target.value === '' ? undefined : picked);
                }}
              >
                <option value="">
                  {prop.default !== undefined
                    ? trans.__('(default: %1)', showValue(prop.default))
                    : trans.__('(not set)')}
                </option>
                {prop.enum.map(o => (
                  <option key={showValue(o)} value={showValue(o)}>
                    {showValue(o)}
                  </option>
                ))}
              </select>
            </label>
          );
        }
        if (prop.type === 'boolean') {
          return (
            <label className="cube-Field cube-Field-check" key={key}>
              <input
                type="checkbox"
                name={`param-${key}`}
                checked={Boolean(current ?? prop.default)}
                onChange={e => set(e.target.checked)}
              />
              <span className="cube-Field-label">{label}</span>
            </label>
          );
        }
        if (prop.type === 'array') {
          const list = Array.isArray(current) ? current : [];
          return (
            <Field
              key={key}
              name={`param-${key}`}
              label={label}
              required={required.has(key)}
              multiline
              hint={hint ?? trans.__('One per line')}
              value={list.map(showValue).join('\n')}
              onCommit={text =>
                set(
                  text
                    .split('\n')
                    .map(s => s.trim())
                    .filter(Boolean)
                    .map(s =>
                      prop.items?.type === 'string' ? s : parseValue(s)
                    )
                )
              }
            />
          );
        }
        const numeric = prop.type === 'number' || prop.type === 'integer';
        return (
          <Field
            key={key}
            name={`param-${key}`}
            label={label}
            required={required.has(key)}
            hint={hint}
            type={numeric ? 'number' : 'text'}
            placeholder={
              prop.default !== undefined ? showValue(prop.default) : undefined
            }
            value={showValue(current)}
            onCommit={text =>
              set(
                numeric
                  ? numberOrUndefined(text)
                  : prop.type === 'string' || !prop.type
                    ? text
                    : parseValue(text)
              )
            }
          />
        );
      })}
      {props.error ? (
        <span className="cube-Field-error" role="alert">
          {props.error}
        </span>
      ) : null}
    </div>
  );
}

function RunSettings(props: {
  node: PipelineNode;
  setCube: (key: string, value: Json) => void;
  problems: PipelineProblem[];
  trans: TranslationBundle;
}): JSX.Element {
  const { node, trans, problems } = props;
  return (
    <fieldset className="cube-Fieldset">
      <legend>{trans.__('Retries and timeout')}</legend>
      <div className="cube-FieldRow">
        <Field
          label={trans.__('Retries')}
          name="retries"
          type="number"
          value={showValue(node.cube.retries)}
          error={problemFor(problems, 'retries')}
          onCommit={v => props.setCube('retries', numberOrUndefined(v))}
        />
        <Field
          label={trans.__('Timeout (s)')}
          name="timeout_s"
          type="number"
          value={showValue(node.cube.timeout_s)}
          error={problemFor(problems, 'timeout_s')}
          onCommit={v => props.setCube('timeout_s', numberOrUndefined(v))}
        />
        <Field
          label={trans.__('Backoff (s)')}
          name="retry_backoff_s"
          type="number"
          value={showValue(node.cube.retry_backoff_s)}
          error={problemFor(problems, 'retry_backoff_s')}
          onCommit={v => props.setCube('retry_backoff_s', numberOrUndefined(v))}
        />
      </div>
    </fieldset>
  );
}

type PickFiles = (multiple: boolean) => Promise<string[]>;

/** The lines of a list field, without blanks. */
export function lines(text: string): string[] {
  return text
    .split('\n')
    .map(s => s.trim())
    .filter(Boolean);
}

function NodeProperties(props: {
  model: PipelineEditorModel;
  node: PipelineNode;
  template: JobTemplate | undefined;
  kindName: string;
  trans: TranslationBundle;
  pickFiles?: PickFiles;
}): JSX.Element {
  const { model, node, trans, template, pickFiles } = props;
  const problems = model.problemsOf(node.id);
  const setParams = (key: string, value: Json) =>
    model.apply(g =>
      updateNode(g, node.id, { params: withKey(node.params, key, value) })
    );
  const setCube = (key: string, value: Json) =>
    model.apply(g =>
      updateNode(g, node.id, { cube: withKey(node.cube, key, value) })
    );
  const isFile = FILE_OPS.includes(node.op);
  const component = catalogComponent(node.op, model.nodeKinds);
  const kindSchema = pluginSchema(node.op, model.nodeKinds);
  const envPairs: [string, string][] = (
    Array.isArray(node.params.env_vars) ? node.params.env_vars : []
  ).map((e: Json) => [String(e?.env_var ?? ''), showValue(e?.value)]);
  const paramPairs: [string, string][] = Object.entries(
    (node.cube.parameters as Record<string, Json>) ?? {}
  ).map(([k, v]) => [k, showValue(v)]);

  return (
    <div className="cube-Properties" aria-label={trans.__('Node properties')}>
      <div className="cube-Properties-kind">{props.kindName}</div>
      {problems.length ? (
        <ul className="cube-Problems" aria-label={trans.__('Problems')}>
          {problems.map((p, i) => (
            <li key={i}>
              <strong>{p.field}</strong>: {p.message}
            </li>
          ))}
        </ul>
      ) : null}
      <Field
        label={trans.__('Label')}
        name="label"
        value={node.label}
        onCommit={v =>
          model.apply(g => updateNode(g, node.id, { label: v || node.id }))
        }
      />
      {isFile ? (
        <>
          <Field
            label={trans.__('File')}
            name="filename"
            required
            hint={trans.__('Relative to the pipeline file')}
            value={showValue(node.params.filename)}
            error={problemFor(problems, 'filename')}
            onCommit={v => setParams('filename', v)}
            browseLabel={trans.__('Choose the file')}
            onBrowse={
              pickFiles
                ? async () => (await pickFiles(false))[0] ?? null
                : undefined
            }
          />
          <Pairs
            label={trans.__('Parameters')}
            name="node-param"
            trans={trans}
            keyPlaceholder={trans.__('name')}
            valuePlaceholder={trans.__('value')}
            pairs={paramPairs}
            error={problemFor(problems, 'parameters')}
            onCommit={pairs =>
              setCube(
                'parameters',
                pairs.length
                  ? Object.fromEntries(
                      pairs.map(([k, v]) => [k, parseValue(v)])
                    )
                  : undefined
              )
            }
          />
          <Pairs
            label={trans.__('Environment variables')}
            name="env"
            trans={trans}
            keyPlaceholder={trans.__('NAME')}
            valuePlaceholder={trans.__('value')}
            pairs={envPairs}
            error={problemFor(problems, 'env_vars')}
            onCommit={pairs =>
              setParams(
                'env_vars',
                pairs.map(([k, v]) => ({ env_var: k, value: v }))
              )
            }
          />
          <Field
            label={trans.__('Dependencies')}
            name="dependencies"
            multiline
            hint={trans.__(
              'Files and folders the node needs next to it, one per line (globs allowed)'
            )}
            value={(Array.isArray(node.params.dependencies)
              ? node.params.dependencies
              : []
            ).join('\n')}
            error={problemFor(problems, 'dependencies')}
            onCommit={v => setParams('dependencies', lines(v))}
            browseLabel={trans.__('Add files')}
            onBrowse={
              pickFiles
                ? async () => {
                    const picked = await pickFiles(true);
                    if (!picked.length) {
                      return null;
                    }
                    const old: string[] = Array.isArray(
                      node.params.dependencies
                    )
                      ? node.params.dependencies
                      : [];
                    return [
                      ...old,
                      ...picked.filter(p => !old.includes(p))
                    ].join('\n');
                  }
                : undefined
            }
          />
          <Field
            label={trans.__('Outputs')}
            name="outputs"
            multiline
            hint={trans.__('Files the node writes, one per line')}
            value={(Array.isArray(node.params.outputs)
              ? node.params.outputs
              : []
            ).join('\n')}
            error={problemFor(problems, 'outputs')}
            onCommit={v =>
              setParams(
                'outputs',
                v
                  .split('\n')
                  .map(s => s.trim())
                  .filter(Boolean)
              )
            }
          />
          <fieldset className="cube-Fieldset">
            <legend>{trans.__('Resources')}</legend>
            <div className="cube-FieldRow">
              <Field
                label={trans.__('CPU')}
                name="cpu"
                type="number"
                value={showValue(node.params.cpu)}
                error={problemFor(problems, 'cpu')}
                onCommit={v => setParams('cpu', numberOrUndefined(v))}
              />
              <Field
                label={trans.__('Memory (GB)')}
                name="memory"
                type="number"
                value={showValue(node.params.memory)}
                error={problemFor(problems, 'memory')}
                onCommit={v => setParams('memory', numberOrUndefined(v))}
              />
            </div>
            <div className="cube-FieldRow">
              <Field
                label={trans.__('GPUs')}
                name="gpu"
                type="number"
                value={showValue(node.params.gpu)}
                error={problemFor(problems, 'gpu')}
                onCommit={v => setParams('gpu', numberOrUndefined(v))}
              />
              <Field
                label={trans.__('GPU resource')}
                name="gpu_vendor"
                placeholder="nvidia.com/gpu"
                value={showValue(node.params.gpu_vendor)}
                error={problemFor(problems, 'gpu_vendor')}
                onCommit={v => setParams('gpu_vendor', v)}
              />
            </div>
          </fieldset>
        </>
      ) : null}
      {node.op === Ops.shell ? (
        <Field
          label={trans.__('Command')}
          name="command"
          multiline
          required
          value={showValue(node.params.command)}
          error={problemFor(problems, 'command')}
          onCommit={v => setParams('command', v)}
        />
      ) : null}
      {node.op === Ops.template ? (
        template ? (
          <fieldset className="cube-Fieldset">
            <legend>{serverText(template.display_name, trans)}</legend>
            <SchemaForm
              schema={template.parameters}
              value={(node.params.parameters as Record<string, Json>) ?? {}}
              error={problemFor(problems, 'parameters')}
              trans={trans}
              onChange={v => setParams('parameters', v)}
            />
          </fieldset>
        ) : (
          <p className="cube-Field-error">
            {trans.__(
              'Job template %1 is not available on this server.',
              showValue(node.params.template)
            )}
          </p>
        )
      ) : null}
      {component ? (
        <fieldset className="cube-Fieldset">
          <legend>{component.name}</legend>
          <p className="cube-Muted">{trans.__('Image: %1', component.image)}</p>
          <SchemaForm
            schema={catalogInputSchema(component, trans)}
            value={catalogValues(node.params)}
            trans={trans}
            onChange={v =>
              model.apply(g =>
                updateNode(g, node.id, {
                  params: withCatalogValues(node.params, component, v) as any
                })
              )
            }
          />
          {component.inputs
            .filter(i => i.path)
            .map(input => {
              const current = node.params[input.ref] as any;
              const picked =
                current?.widget === 'inputpath' && current.value
                  ? `${current.value.value}|${current.value.option}`
                  : '';
              const upstream = model.graph.nodes.filter(n =>
                node.upstream.includes(n.id)
              );
              return (
                <label className="cube-Field" key={input.ref}>
                  <span className="cube-Field-label">
                    {input.name}
                    {input.optional ? null : (
                      <span className="cube-Field-required">*</span>
                    )}
                  </span>
                  <select
                    className="jp-mod-styled cube-Field-input"
                    name={`param-${input.ref}`}
                    value={picked}
                    onChange={e => {
                      const [id, option] = e.target.value.split('|');
                      setParams(
                        input.ref,
                        e.target.value
                          ? {
                              widget: 'inputpath',
                              value: { value: id, option }
                            }
                          : undefined
                      );
                    }}
                  >
                    <option value="">
                      {trans.__('(an output of a linked parent node)')}
                    </option>
                    {parentOutputs(upstream, model.nodeKinds).map(o => (
                      <option
                        key={`${o.node}|${o.option}`}
                        value={`${o.node}|${o.option}`}
                      >
                        {o.label}
                      </option>
                    ))}
                  </select>
                  {problemFor(problems, input.ref) ? (
                    <span className="cube-Field-error" role="alert">
                      {problemFor(problems, input.ref)}
                    </span>
                  ) : null}
                </label>
              );
            })}
          {component.inputs
            .filter(i => !i.path && problemFor(problems, i.ref))
            .map(i => (
              <span className="cube-Field-error" role="alert" key={i.ref}>
                {i.name}: {problemFor(problems, i.ref)}
              </span>
            ))}
        </fieldset>
      ) : null}
      {kindSchema ? (
        <fieldset className="cube-Fieldset">
          <legend>{props.kindName}</legend>
          <SchemaForm
            schema={kindSchema}
            value={node.params as Record<string, Json>}
            error={problems
              .filter(p => p.field in (kindSchema.properties ?? {}))
              .map(p => p.message)
              .join(' ')}
            trans={trans}
            onChange={v =>
              model.apply(g => updateNode(g, node.id, { params: v }))
            }
          />
        </fieldset>
      ) : null}
      {!component &&
      !kindSchema &&
      !isFile &&
      node.op !== Ops.shell &&
      node.op !== Ops.template ? (
        <Field
          label={trans.__('Component parameters (JSON)')}
          name="component_parameters"
          multiline
          value={JSON.stringify(node.params, null, 2)}
          onCommit={v => {
            try {
              const parsed = JSON.parse(v);
              model.apply(g => updateNode(g, node.id, { params: parsed }));
            } catch {
              model.setStatus(
                trans.__('Component parameters must be JSON.'),
                true
              );
            }
          }}
        />
      ) : null}
      <RunSettings
        node={node}
        setCube={setCube}
        problems={problems}
        trans={trans}
      />
    </div>
  );
}

const PARAM_TYPES = ['String', 'Integer', 'Float', 'Bool'];

function PipelineProperties(props: {
  model: PipelineEditorModel;
  trans: TranslationBundle;
}): JSX.Element {
  const { model, trans } = props;
  const graph = model.graph;
  const problems = model.problemsOf(null);
  const setParams = (parameters: PipelineParameter[]) =>
    model.apply(g => updatePipeline(g, { parameters }));
  return (
    <div
      className="cube-Properties"
      aria-label={trans.__('Pipeline properties')}
    >
      <div className="cube-Properties-kind">{trans.__('Pipeline')}</div>
      {problems.length ? (
        <ul className="cube-Problems">
          {problems.map((p, i) => (
            <li key={i}>
              <strong>{p.field}</strong>: {p.message}
            </li>
          ))}
        </ul>
      ) : null}
      <Field
        label={trans.__('Name')}
        name="pipeline-name"
        value={graph.name}
        onCommit={v => model.apply(g => updatePipeline(g, { name: v }))}
      />
      <Field
        label={trans.__('Parallelism')}
        name="parallelism"
        type="number"
        hint={trans.__(
          'How many nodes run at once (empty: the server default)'
        )}
        value={showValue(graph.cube.parallelism)}
        error={problemFor(problems, 'parallelism')}
        onCommit={v =>
          model.apply(g =>
            updatePipeline(g, {
              cube: withKey(g.cube, 'parallelism', numberOrUndefined(v))
            })
          )
        }
      />
      <Field
        label={trans.__('Alert rules on failure')}
        name="alert_rules"
        hint={trans.__(
          "Names of the project's alert rules a failed run is sent to, separated by commas (Notifications panel)"
        )}
        value={
          Array.isArray(graph.cube.alert_rules)
            ? graph.cube.alert_rules.join(', ')
            : ''
        }
        error={problemFor(problems, 'alert_rules')}
        onCommit={v => {
          const names = v.split(/[\s,]+/).filter(Boolean);
          model.apply(g =>
            updatePipeline(g, {
              cube: withKey(
                g.cube,
                'alert_rules',
                names.length ? names : undefined
              )
            })
          );
        }}
      />
      <div
        className="cube-Field"
        role="group"
        aria-label={trans.__('Parameters')}
      >
        <span className="cube-Field-label">{trans.__('Parameters')}</span>
        {graph.parameters.map((p, i) => {
          const set = (patch: Partial<PipelineParameter>) =>
            setParams(
              graph.parameters.map((q, j) => (j === i ? { ...q, ...patch } : q))
            );
          return (
            <div className="cube-ParamRow" key={i}>
              <Field
                label={trans.__('Name')}
                name={`pparam-name-${i}`}
                value={p.name}
                onCommit={v => set({ name: v })}
              />
              <label className="cube-Field">
                <span className="cube-Field-label">{trans.__('Type')}</span>
                <select
                  className="jp-mod-styled cube-Field-input"
                  value={p.type}
                  onChange={e => set({ type: e.target.value })}
                >
                  {PARAM_TYPES.map(t => (
                    <option key={t}>{t}</option>
                  ))}
                </select>
              </label>
              <Field
                label={trans.__('Default')}
                name={`pparam-default-${i}`}
                value={showValue(p.default)}
                onCommit={v =>
                  set({
                    default:
                      p.type === 'String' ? v : v.trim() ? parseValue(v) : null
                  })
                }
              />
              <label className="cube-Field cube-Field-check">
                <input
                  type="checkbox"
                  checked={p.required}
                  onChange={e => set({ required: e.target.checked })}
                />
                <span className="cube-Field-label">{trans.__('Required')}</span>
              </label>
              <button
                className="cube-IconButton"
                title={trans.__('Remove parameter')}
                aria-label={trans.__('Remove parameter')}
                onClick={() =>
                  setParams(graph.parameters.filter((_, j) => j !== i))
                }
              >
                ×
              </button>
            </div>
          );
        })}
        <button
          className="cube-LinkButton"
          onClick={() =>
            setParams([
              ...graph.parameters,
              {
                name: `param${graph.parameters.length + 1}`,
                type: 'String',
                default: '',
                required: false,
                description: ''
              }
            ])
          }
        >
          {trans.__('+ Add parameter')}
        </button>
        {problemFor(problems, 'pipeline_parameters') ? (
          <span className="cube-Field-error">
            {problemFor(problems, 'pipeline_parameters')}
          </span>
        ) : null}
      </div>
      <p className="cube-Muted">
        {trans._n('%1 node', '%1 nodes', graph.nodes.length)}
      </p>
    </div>
  );
}

export function PropertiesPane(props: {
  model: PipelineEditorModel;
  trans: TranslationBundle;
  pickFiles?: PickFiles;
}): JSX.Element {
  const { model, trans } = props;
  const selected = model.selection;
  if (selected.length > 1) {
    return (
      <div className="cube-Properties">
        <p className="cube-Muted">
          {trans.__('%1 nodes selected', selected.length)}
        </p>
      </div>
    );
  }
  const node = selected.length
    ? model.graph.nodes.find(n => n.id === selected[0])
    : undefined;
  if (!node) {
    return <PipelineProperties model={model} trans={trans} />;
  }
  const template =
    node.op === Ops.template
      ? model.templates.find(t => t.name === node.params.template)
      : undefined;
  return (
    <NodeProperties
      key={node.id}
      model={model}
      node={node}
      template={template}
      kindName={kindLabel(node, trans, model.templates, model.nodeKinds)}
      trans={trans}
      pickFiles={props.pickFiles}
    />
  );
}
