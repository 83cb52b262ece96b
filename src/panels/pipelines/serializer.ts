/**
 * Read and write Elyra `.pipeline` files (pipeline-flow v3, Elyra pipeline
 * version 8) for the editor.
 *
 * The editor works on an immutable `PipelineGraph`. Every node keeps the JSON
 * it was read from (`raw`): a node the user did not touch is written back
 * exactly as read, and a changed one is its old JSON with only the fields the
 * editor owns brought up to date. So a file saved by the editor reopens
 * identically and keeps whatever Elyra or another tool put there.
 */
import { UUID } from '@lumino/coreutils';
import { identity, ITrans } from '../../validate';

export const ELYRA_VERSION = 8;
export const SCHEMA_URL =
  'http://api.dataplatform.ibm.com/schemas/common-pipeline/pipeline-flow/pipeline-flow-v3-schema.json';
/** Where cube-lab keeps its own settings, in node and pipeline app_data. */
export const CUBE_KEY = 'cube_lab';

/** Node ops cube-lab knows (more come from the server's node kinds). */
export namespace Ops {
  export const notebook = 'execute-notebook-node';
  export const python = 'execute-python-node';
  export const r = 'execute-r-node';
  export const shell = 'cube-lab:shell';
  export const template = 'cube-lab:template';
}

/** Ops whose node runs a file of the project. */
export const FILE_OPS = [Ops.notebook, Ops.python, Ops.r];

type Json = any;
type JsonObject = Record<string, Json>;

export interface PipelineNode {
  readonly id: string;
  readonly op: string;
  readonly label: string;
  readonly x: number;
  readonly y: number;
  /** `app_data.component_parameters` */
  readonly params: Readonly<JsonObject>;
  /** `app_data.cube_lab`: retries, timeout_s, retry_backoff_s, parameters */
  readonly cube: Readonly<JsonObject>;
  /** Ids of the nodes this one depends on. */
  readonly upstream: readonly string[];
  /** The node's JSON as read (null for a node the editor created). */
  readonly raw: JsonObject | null;
}

/**
 * A note on the canvas: Elyra keeps these in the primary pipeline's
 * `app_data.ui_data.comments` (common-canvas comments), tied to nodes by
 * `associated_id_refs`.
 */
export interface PipelineComment {
  readonly id: string;
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
  readonly content: string;
  /** Ids of the nodes the comment is about. */
  readonly nodeRefs: readonly string[];
  /** The comment's JSON as read (null for a new one). */
  readonly raw: JsonObject | null;
}

export const COMMENT_WIDTH = 180;
export const COMMENT_HEIGHT = 60;

export interface PipelineParameter {
  name: string;
  /** Elyra: String | Integer | Float | Bool */
  type: string;
  default: Json;
  required: boolean;
  description: string;
}

export interface PipelineGraph {
  readonly name: string;
  readonly nodes: readonly PipelineNode[];
  readonly comments: readonly PipelineComment[];
  readonly parameters: readonly PipelineParameter[];
  /** `properties.cube_lab`: parallelism, ... */
  readonly cube: Readonly<JsonObject>;
  /** The whole document as read. */
  readonly raw: JsonObject;
  /** What was read, to tell what changed (never edited). */
  readonly original: {
    readonly name: string;
    readonly parameters: readonly PipelineParameter[];
    readonly cube: Readonly<JsonObject>;
    readonly nodes: ReadonlyMap<string, PipelineNode>;
    readonly comments: readonly PipelineComment[];
  };
}

/** A problem reading a document, naming the field. */
export class PipelineFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PipelineFormatError';
  }
}

function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function clone<T>(value: T): T {
  return value === undefined ? value : JSON.parse(JSON.stringify(value));
}

/** An empty Elyra v8 pipeline document (what the server's `new_document` writes). */
export function newDocument(name: string): JsonObject {
  return {
    doc_type: 'pipeline',
    version: '3.0',
    json_schema: SCHEMA_URL,
    id: 'elyra-auto-generated-pipeline',
    primary_pipeline: 'primary',
    pipelines: [
      {
        id: 'primary',
        nodes: [],
        app_data: {
          ui_data: { comments: [] },
          version: ELYRA_VERSION,
          properties: {
            name,
            runtime: 'Generic',
            pipeline_defaults: {},
            pipeline_parameters: []
          }
        },
        runtime_ref: ''
      }
    ],
    schemas: []
  };
}

function primaryIndex(doc: JsonObject): number {
  const pipelines = doc.pipelines as Json[];
  const index = pipelines.findIndex(
    p => isObject(p) && p.id === doc.primary_pipeline
  );
  return index < 0 ? 0 : index;
}

/** Parse a document's text. An empty text is a new, empty pipeline. */
export function parse(
  text: string,
  fallbackName = 'pipeline',
  trans: ITrans = identity
): PipelineGraph {
  if (!text.trim()) {
    return fromDocument(newDocument(fallbackName), fallbackName);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new PipelineFormatError(
      trans.__(
        'The pipeline file is not valid JSON: %1',
        (err as Error).message
      )
    );
  }
  return fromDocument(doc, fallbackName, trans);
}

export function fromDocument(
  input: unknown,
  fallbackName = 'pipeline',
  trans: ITrans = identity
): PipelineGraph {
  if (!isObject(input)) {
    throw new PipelineFormatError(
      trans.__('The pipeline document must be an object')
    );
  }
  if ((input.doc_type ?? 'pipeline') !== 'pipeline') {
    throw new PipelineFormatError(
      trans.__('doc_type is %1, not "pipeline"', JSON.stringify(input.doc_type))
    );
  }
  if (!Array.isArray(input.pipelines) || input.pipelines.length === 0) {
    throw new PipelineFormatError(
      trans.__('pipelines must be a non-empty array')
    );
  }
  const raw = input;
  const primary = raw.pipelines[primaryIndex(raw)];
  if (!isObject(primary)) {
    throw new PipelineFormatError(
      trans.__('the primary pipeline must be an object')
    );
  }
  const appData = isObject(primary.app_data) ? primary.app_data : {};
  const version = appData.version ?? ELYRA_VERSION;
  if (typeof version !== 'number' || version > ELYRA_VERSION) {
    throw new PipelineFormatError(
      trans.__(
        'Elyra pipeline version %1 is not supported (cube-lab reads 5 to %2)',
        JSON.stringify(version),
        ELYRA_VERSION
      )
    );
  }
  const props = isObject(appData.properties) ? appData.properties : {};
  const rawNodes = primary.nodes ?? [];
  if (!Array.isArray(rawNodes)) {
    throw new PipelineFormatError(
      trans.__('pipelines[0].nodes must be an array')
    );
  }
  const nodes = rawNodes.map((n, i) => readNode(n, i, version, trans));
  const ids = new Set<string>();
  for (const node of nodes) {
    if (ids.has(node.id)) {
      throw new PipelineFormatError(
        trans.__('two nodes have the id %1', node.id)
      );
    }
    ids.add(node.id);
  }
  const name =
    typeof props.name === 'string' && props.name ? props.name : fallbackName;
  const parameters = readParameters(props.pipeline_parameters);
  const cube = isObject(props[CUBE_KEY]) ? props[CUBE_KEY] : {};
  const uiData = isObject(appData.ui_data) ? appData.ui_data : {};
  const comments = readComments(uiData.comments);
  return {
    name,
    nodes,
    comments,
    parameters,
    cube,
    raw,
    original: {
      name,
      parameters,
      cube,
      nodes: new Map(nodes.map(n => [n.id, n])),
      comments
    }
  };
}

const OLD_COMPONENT_KEYS = [
  'filename',
  'runtime_image',
  'env_vars',
  'dependencies',
  'include_subdirectories',
  'outputs',
  'cpu',
  'gpu',
  'memory',
  'kubernetes_secrets',
  'mounted_volumes'
];

function readNode(
  raw: unknown,
  index: number,
  version: number,
  trans: ITrans
): PipelineNode {
  const where = `pipelines[0].nodes[${index}]`;
  if (!isObject(raw)) {
    throw new PipelineFormatError(trans.__('%1 must be an object', where));
  }
  if (typeof raw.id !== 'string' || !raw.id) {
    throw new PipelineFormatError(trans.__('%1.id is missing', where));
  }
  const app = isObject(raw.app_data) ? raw.app_data : {};
  let params: JsonObject = isObject(app.component_parameters)
    ? app.component_parameters
    : {};
  if (version < ELYRA_VERSION) {
    // Older Elyra versions: settings sat in app_data, env vars were strings.
    params = { ...params };
    if (version < 7) {
      for (const key of OLD_COMPONENT_KEYS) {
        if (key in app && !(key in params)) {
          params[key] = app[key];
        }
      }
    }
    if (Array.isArray(params.env_vars)) {
      params.env_vars = params.env_vars.map((e: Json) => {
        if (typeof e !== 'string') {
          return e;
        }
        const at = e.indexOf('=');
        return at < 0
          ? { env_var: e.trim(), value: '' }
          : { env_var: e.slice(0, at).trim(), value: e.slice(at + 1) };
      });
    }
  }
  const ui = isObject(app.ui_data) ? app.ui_data : {};
  const upstream: string[] = [];
  for (const port of Array.isArray(raw.inputs) ? raw.inputs : []) {
    for (const link of isObject(port) && Array.isArray(port.links)
      ? port.links
      : []) {
      const ref = isObject(link) ? link.node_id_ref : undefined;
      if (typeof ref === 'string' && ref && !upstream.includes(ref)) {
        upstream.push(ref);
      }
    }
  }
  const label =
    app.label || ui.label || params.filename || params.template || raw.id;
  return {
    id: raw.id,
    op: typeof raw.op === 'string' ? raw.op : '',
    label: String(label),
    x: Number(ui.x_pos) || 0,
    y: Number(ui.y_pos) || 0,
    params,
    cube: isObject(app[CUBE_KEY]) ? app[CUBE_KEY] : {},
    upstream,
    raw
  };
}

function readComments(raw: unknown): PipelineComment[] {
  if (!Array.isArray(raw)) {
    return [];
  }
  return raw.filter(isObject).map((c, i) => ({
    id: typeof c.id === 'string' && c.id ? c.id : `comment-${i}`,
    x: Number(c.x_pos) || 0,
    y: Number(c.y_pos) || 0,
    width: Number(c.width) || COMMENT_WIDTH,
    height: Number(c.height) || COMMENT_HEIGHT,
    content: typeof c.content === 'string' ? c.content : '',
    nodeRefs: (Array.isArray(c.associated_id_refs) ? c.associated_id_refs : [])
      .map((r: Json) => (isObject(r) ? r.node_ref : undefined))
      .filter((r: Json): r is string => typeof r === 'string' && r !== ''),
    raw: c
  }));
}

function writeComment(c: PipelineComment): JsonObject {
  const raw: JsonObject = c.raw
    ? clone(c.raw)
    : { class_name: 'd3-comment-rect', style: '' };
  raw.id = c.id;
  raw.x_pos = Math.round(c.x);
  raw.y_pos = Math.round(c.y);
  raw.width = Math.round(c.width);
  raw.height = Math.round(c.height);
  raw.content = c.content;
  const old = new Map<string, JsonObject>();
  for (const ref of Array.isArray(raw.associated_id_refs)
    ? raw.associated_id_refs
    : []) {
    if (isObject(ref) && typeof ref.node_ref === 'string') {
      old.set(ref.node_ref, ref);
    }
  }
  raw.associated_id_refs = c.nodeRefs.map(
    ref => old.get(ref) ?? { id: UUID.uuid4(), node_ref: ref }
  );
  return raw;
}

function readParameters(raw: unknown): PipelineParameter[] {
  if (!Array.isArray(raw)) {
    return [];
  }
  return raw.filter(isObject).map(item => {
    const value = isObject(item.default_value) ? item.default_value : {};
    return {
      name: String(item.name ?? ''),
      type: String(value.type ?? 'String'),
      default: value.value ?? null,
      required: Boolean(item.required),
      description: String(item.description ?? '')
    };
  });
}

/** The document to save. */
export function toDocument(graph: PipelineGraph): JsonObject {
  const doc = clone(graph.raw);
  const primary = doc.pipelines[primaryIndex(doc)];
  const appData = objectAt(primary, 'app_data');
  const versionChanged = appData.version !== ELYRA_VERSION;
  appData.version = ELYRA_VERSION;
  const props = objectAt(appData, 'properties');
  const { original } = graph;
  if (graph.name !== original.name) {
    props.name = graph.name;
  }
  if (graph.parameters !== original.parameters) {
    props.pipeline_parameters = graph.parameters.map(p => ({
      name: p.name,
      description: p.description,
      required: p.required,
      default_value: { type: p.type, value: p.default }
    }));
  }
  if (graph.cube !== original.cube) {
    if (Object.keys(graph.cube).length) {
      props[CUBE_KEY] = clone(graph.cube);
    } else {
      delete props[CUBE_KEY];
    }
  }
  if (graph.comments !== original.comments) {
    const unchanged = new Set(original.comments);
    objectAt(appData, 'ui_data').comments = graph.comments.map(c =>
      unchanged.has(c) && c.raw ? clone(c.raw) : writeComment(c)
    );
  }
  primary.nodes = graph.nodes.map(node =>
    !versionChanged && node.raw && original.nodes.get(node.id) === node
      ? clone(node.raw)
      : writeNode(node)
  );
  return doc;
}

function objectAt(container: JsonObject, key: string): JsonObject {
  if (!isObject(container[key])) {
    container[key] = {};
  }
  return container[key];
}

function writeNode(node: PipelineNode): JsonObject {
  const raw: JsonObject = node.raw
    ? clone(node.raw)
    : {
        id: node.id,
        type: 'execution_node',
        inputs: [],
        outputs: [
          {
            id: 'outPort',
            app_data: {
              ui_data: {
                cardinality: { min: 0, max: -1 },
                label: 'Output Port'
              }
            }
          }
        ]
      };
  raw.id = node.id;
  raw.op = node.op;
  const app = objectAt(raw, 'app_data');
  app.label = node.label;
  app.component_parameters = clone(node.params);
  if (Object.keys(node.cube).length) {
    app[CUBE_KEY] = clone(node.cube);
  } else {
    delete app[CUBE_KEY];
  }
  const ui = objectAt(app, 'ui_data');
  ui.label = node.label;
  ui.x_pos = Math.round(node.x);
  ui.y_pos = Math.round(node.y);
  const ports: JsonObject[] = (
    Array.isArray(raw.inputs) ? raw.inputs : []
  ).filter(isObject);
  const oldLinks = new Map<string, JsonObject>();
  for (const port of ports) {
    for (const link of Array.isArray(port.links) ? port.links : []) {
      if (isObject(link) && typeof link.node_id_ref === 'string') {
        oldLinks.set(link.node_id_ref, link);
      }
    }
  }
  if (!ports.length) {
    ports.push({
      id: 'inPort',
      app_data: {
        ui_data: { cardinality: { min: 0, max: -1 }, label: 'Input Port' }
      }
    });
  }
  for (const port of ports.slice(1)) {
    port.links = [];
  }
  ports[0].links = node.upstream.map(
    up =>
      oldLinks.get(up) ?? {
        id: UUID.uuid4(),
        node_id_ref: up,
        port_id_ref: 'outPort'
      }
  );
  raw.inputs = ports;
  return raw;
}

/** The text to save (two-space JSON and a final newline, like the server). */
export function serialize(graph: PipelineGraph): string {
  return JSON.stringify(toDocument(graph), null, 2) + '\n';
}
