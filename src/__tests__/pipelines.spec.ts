/**
 * Pipeline editor: serializer round trip and graph operations.
 */
import {
  addNodes,
  autoLayout,
  canConnect,
  connect,
  createNode,
  disconnect,
  edges,
  History,
  moveNodes,
  removeNodes,
  updateNode,
  updatePipeline,
  wouldCycle
} from '../panels/pipelines/graph';
import {
  CUBE_KEY,
  newDocument,
  Ops,
  parse,
  PipelineGraph,
  serialize,
  toDocument
} from '../panels/pipelines/serializer';

/** An Elyra v8 file as Elyra writes it, with fields the editor does not know. */
const ELYRA_FILE: any = {
  doc_type: 'pipeline',
  version: '3.0',
  json_schema:
    'http://api.dataplatform.ibm.com/schemas/common-pipeline/pipeline-flow/pipeline-flow-v3-schema.json',
  id: 'elyra-auto-generated-pipeline',
  primary_pipeline: 'primary',
  pipelines: [
    {
      id: 'primary',
      nodes: [
        {
          id: 'a',
          type: 'execution_node',
          op: 'execute-notebook-node',
          app_data: {
            component_parameters: {
              filename: 'prep.ipynb',
              runtime_image: 'img',
              env_vars: [{ env_var: 'X', value: '1' }],
              outputs: ['data.csv'],
              include_subdirectories: false
            },
            label: '',
            ui_data: {
              label: 'prep.ipynb',
              image: '/static/elyra/notebook.svg',
              x_pos: 10,
              y_pos: 20,
              description: 'Run notebook file'
            },
            extra_from_elyra: { keep: true }
          },
          inputs: [
            {
              id: 'inPort',
              app_data: {
                ui_data: {
                  cardinality: { min: 0, max: -1 },
                  label: 'Input Port'
                }
              }
            }
          ],
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
        },
        {
          id: 'b',
          type: 'execution_node',
          op: 'execute-python-node',
          app_data: {
            component_parameters: { filename: 'train.py' },
            cube_lab: { retries: 2 },
            ui_data: { label: 'train', x_pos: 300, y_pos: 20 }
          },
          inputs: [
            {
              id: 'inPort',
              links: [
                {
                  id: 'link-1',
                  node_id_ref: 'a',
                  port_id_ref: 'outPort',
                  app_data: { custom: 1 }
                }
              ]
            }
          ],
          outputs: [{ id: 'outPort' }]
        }
      ],
      app_data: {
        ui_data: { comments: [{ id: 'c1', content: 'hello' }] },
        version: 8,
        runtime_type: 'LOCAL',
        properties: {
          name: 'demo',
          runtime: 'Generic',
          pipeline_defaults: { kubernetes_shared_mem_size: {} },
          pipeline_parameters: [
            {
              name: 'lr',
              description: '',
              required: false,
              default_value: { type: 'Float', value: 0.1 }
            }
          ],
          [CUBE_KEY]: { parallelism: 2 }
        }
      },
      runtime_ref: ''
    }
  ],
  schemas: []
};

const TEXT = JSON.stringify(ELYRA_FILE, null, 2) + '\n';

function empty(): PipelineGraph {
  return parse(JSON.stringify(newDocument('t')));
}

function chain(...ids: string[]): PipelineGraph {
  let g = addNodes(
    empty(),
    ids.map((id, i) =>
      createNode({ id, op: Ops.python, label: id, x: i, y: 0 })
    )
  );
  for (let i = 1; i < ids.length; i++) {
    g = connect(g, ids[i - 1], ids[i]);
  }
  return g;
}

describe('serializer', () => {
  it('reads nodes, links, positions and cube-lab settings', () => {
    const g = parse(TEXT);
    expect(g.name).toBe('demo');
    expect(g.nodes.map(n => n.id)).toEqual(['a', 'b']);
    expect(g.nodes[0].label).toBe('prep.ipynb');
    expect(g.nodes[0]).toMatchObject({ x: 10, y: 20 });
    expect(g.nodes[1].upstream).toEqual(['a']);
    expect(g.nodes[1].cube).toEqual({ retries: 2 });
    expect(g.cube).toEqual({ parallelism: 2 });
    expect(g.parameters).toEqual([
      {
        name: 'lr',
        type: 'Float',
        default: 0.1,
        required: false,
        description: ''
      }
    ]);
  });

  it('writes an unchanged file back identically', () => {
    expect(serialize(parse(TEXT))).toBe(TEXT);
  });

  it('keeps unknown fields of changed nodes and links', () => {
    let g = parse(TEXT);
    g = updateNode(g, 'a', { label: 'Prepare' });
    g = moveNodes(g, new Map([['b', { x: 500.4, y: 40 }]]));
    const doc = toDocument(g);
    const [a, b] = doc.pipelines[0].nodes;
    expect(a.app_data.extra_from_elyra).toEqual({ keep: true });
    expect(a.app_data.ui_data.image).toBe('/static/elyra/notebook.svg');
    expect(a.app_data.label).toBe('Prepare');
    expect(b.app_data.ui_data.x_pos).toBe(500);
    expect(b.inputs[0].links[0]).toEqual(
      ELYRA_FILE.pipelines[0].nodes[1].inputs[0].links![0]
    );
    expect(doc.pipelines[0].app_data.ui_data.comments).toHaveLength(1);
    // and it reads back to the same graph
    const again = parse(serialize(g));
    expect(again.nodes.map(n => [n.id, n.label, n.x, n.y, n.upstream])).toEqual(
      g.nodes.map(n => [n.id, n.label, n.x, n.y, n.upstream])
    );
    expect(serialize(again)).toBe(serialize(g));
  });

  it('writes new nodes as valid Elyra nodes with links on the first input port', () => {
    let g = empty();
    const a = createNode({
      id: 'n1',
      op: Ops.notebook,
      label: 'x.ipynb',
      x: 1,
      y: 2,
      params: { filename: 'x.ipynb' }
    });
    const b = createNode({
      id: 'n2',
      op: Ops.shell,
      label: 'sh',
      x: 3,
      y: 4,
      params: { command: 'ls' },
      cube: { timeout_s: 5 }
    });
    g = connect(addNodes(g, [a, b]), 'n1', 'n2');
    g = updatePipeline(g, {
      cube: { parallelism: 3 },
      parameters: [
        {
          name: 'p',
          type: 'String',
          default: 'v',
          required: true,
          description: ''
        }
      ]
    });
    const doc = toDocument(g);
    const n2 = doc.pipelines[0].nodes[1];
    expect(n2).toMatchObject({
      id: 'n2',
      type: 'execution_node',
      op: 'cube-lab:shell',
      app_data: {
        label: 'sh',
        component_parameters: { command: 'ls' },
        cube_lab: { timeout_s: 5 },
        ui_data: { x_pos: 3, y_pos: 4, label: 'sh' }
      }
    });
    expect(n2.inputs[0].links[0]).toMatchObject({
      node_id_ref: 'n1',
      port_id_ref: 'outPort'
    });
    expect(n2.outputs[0].id).toBe('outPort');
    const props = doc.pipelines[0].app_data.properties;
    expect(props.cube_lab).toEqual({ parallelism: 3 });
    expect(props.pipeline_parameters[0]).toEqual({
      name: 'p',
      description: '',
      required: true,
      default_value: { type: 'String', value: 'v' }
    });
    expect(doc.pipelines[0].app_data.version).toBe(8);
  });

  it('migrates Elyra 7 env vars and refuses newer versions', () => {
    const old = JSON.parse(TEXT);
    old.pipelines[0].app_data.version = 7;
    old.pipelines[0].nodes[0].app_data.component_parameters.env_vars = [
      'A=1=2'
    ];
    const g = parse(JSON.stringify(old));
    expect(g.nodes[0].params.env_vars).toEqual([
      { env_var: 'A', value: '1=2' }
    ]);
    expect(toDocument(g).pipelines[0].app_data.version).toBe(8);
    old.pipelines[0].app_data.version = 9;
    expect(() => parse(JSON.stringify(old))).toThrow(/version 9/);
    expect(() => parse('{')).toThrow(/not valid JSON/);
    expect(() => parse('{"doc_type":"pipeline","pipelines":[]}')).toThrow();
  });

  it('opens an empty file as a new pipeline', () => {
    const g = parse('', 'fresh');
    expect(g.name).toBe('fresh');
    expect(g.nodes).toEqual([]);
  });
});

describe('graph operations', () => {
  it('refuses links that would close a cycle', () => {
    const g = chain('a', 'b', 'c');
    expect(wouldCycle(g, 'c', 'a')).toBe(true);
    expect(wouldCycle(g, 'a', 'a')).toBe(true);
    expect(wouldCycle(g, 'a', 'c')).toBe(false);
    expect(canConnect(g, 'c', 'a')).toBe('cycle');
    expect(canConnect(g, 'a', 'b')).toBe('exists');
    expect(canConnect(g, 'a', 'zz')).toBe('missing');
    expect(connect(g, 'c', 'a')).toBe(g);
    expect(connect(g, 'b', 'b')).toBe(g);
    const skip = connect(g, 'a', 'c');
    expect(edges(skip)).toHaveLength(3);
  });

  it('disconnects and removes nodes with their links', () => {
    const g = chain('a', 'b', 'c');
    expect(edges(disconnect(g, 'a', 'b'))).toEqual([
      { source: 'b', target: 'c' }
    ]);
    const removed = removeNodes(g, ['b']);
    expect(removed.nodes.map(n => n.id)).toEqual(['a', 'c']);
    expect(edges(removed)).toEqual([]);
    expect(removeNodes(g, ['nope'])).toBe(g);
  });

  it('undoes and redoes edits', () => {
    const start = chain('a', 'b');
    const h = new History(start);
    expect(h.canUndo).toBe(false);
    const moved = moveNodes(start, new Map([['a', { x: 100, y: 100 }]]));
    expect(h.push(moved)).toBe(true);
    expect(h.push(moved)).toBe(false);
    const removed = removeNodes(moved, ['b']);
    h.push(removed);
    expect(h.undo()).toBe(moved);
    expect(h.undo()).toBe(start);
    expect(h.canUndo).toBe(false);
    expect(h.undo()).toBe(start);
    expect(h.redo()).toBe(moved);
    expect(h.canRedo).toBe(true);
    // a new edit drops the redo stack
    h.push(updateNode(moved, 'a', { label: 'A' }));
    expect(h.canRedo).toBe(false);
    // undoing back to the original nodes writes the original file
    const file = parse(TEXT);
    const h2 = new History(file);
    h2.push(updateNode(file, 'a', { label: 'changed' }));
    expect(serialize(h2.undo())).toBe(TEXT);
  });

  it('lays nodes out left to right', () => {
    // jsdom has no structuredClone (browsers do); dagre needs it.
    const g0 = globalThis as any;
    g0.structuredClone ??= (v: unknown) => JSON.parse(JSON.stringify(v));
    const g = autoLayout(chain('a', 'b', 'c'));
    const [a, b, c] = g.nodes;
    expect(a.x).toBeLessThan(b.x);
    expect(b.x).toBeLessThan(c.x);
  });
});
