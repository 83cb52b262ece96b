/**
 * Pipeline editor, issue 4 pieces: canvas comments in Elyra's format, node
 * result rendering (CSV, JSON metrics, charts) and the schedule form's helpers.
 */
import {
  addComments,
  createComment,
  createNode,
  addNodes,
  moveComments,
  removeComments,
  removeNodes,
  updateComment
} from '../panels/pipelines/graph';
import {
  chartOf,
  metricsOf,
  parseCsv,
  renderText
} from '../panels/pipelines/results';
import { looksLikeCron, scheduleParams } from '../panels/pipelines/schedule';
import {
  newDocument,
  parse,
  serialize,
  toDocument
} from '../panels/pipelines/serializer';

/** A file with a comment as Elyra's editor writes it (fields we do not own kept). */
function fileWithComment(): string {
  const doc: any = newDocument('c');
  doc.pipelines[0].nodes = [
    {
      id: 'a',
      type: 'execution_node',
      op: 'execute-python-node',
      app_data: {
        label: 'a',
        component_parameters: { filename: 'a.py' },
        ui_data: { label: 'a', x_pos: 10, y_pos: 20 }
      },
      inputs: [{ id: 'inPort', links: [] }],
      outputs: [{ id: 'outPort' }]
    }
  ];
  doc.pipelines[0].app_data.ui_data.comments = [
    {
      id: 'c1',
      x_pos: 5,
      y_pos: -80,
      width: 175,
      height: 42,
      content: 'loads the data',
      associated_id_refs: [{ id: 'r1', node_ref: 'a' }],
      class_name: 'd3-comment-rect',
      style: 'fill: #ffffea'
    }
  ];
  return JSON.stringify(doc, null, 2) + '\n';
}

describe('canvas comments', () => {
  it('reads Elyra comments and writes an untouched file back identically', () => {
    const text = fileWithComment();
    const graph = parse(text);
    expect(graph.comments).toHaveLength(1);
    expect(graph.comments[0]).toMatchObject({
      id: 'c1',
      x: 5,
      y: -80,
      width: 175,
      height: 42,
      content: 'loads the data',
      nodeRefs: ['a']
    });
    expect(serialize(graph)).toBe(text);
  });

  it('edits, adds, moves and removes comments; the file stays Elyra', () => {
    let graph = parse(fileWithComment());
    graph = updateComment(graph, 'c1', { content: 'reads the CSV' });
    const fresh = createComment(300, 40, 'new note', ['a']);
    graph = addComments(graph, [fresh]);
    graph = moveComments(graph, new Map([[fresh.id, { x: 320.4, y: 60 }]]));
    const doc = toDocument(graph);
    const comments = doc.pipelines[0].app_data.ui_data.comments;
    expect(comments).toHaveLength(2);
    // The edited comment keeps Elyra's own fields and its link id.
    expect(comments[0]).toMatchObject({
      id: 'c1',
      content: 'reads the CSV',
      class_name: 'd3-comment-rect',
      style: 'fill: #ffffea',
      associated_id_refs: [{ id: 'r1', node_ref: 'a' }]
    });
    expect(comments[1]).toMatchObject({
      id: fresh.id,
      x_pos: 320,
      y_pos: 60,
      content: 'new note',
      associated_id_refs: [{ node_ref: 'a' }]
    });
    // It reopens with the same comments.
    const again = parse(serialize(graph));
    expect(again.comments.map(c => c.content)).toEqual([
      'reads the CSV',
      'new note'
    ]);
    const gone = removeComments(again, ['c1']);
    expect(gone.comments.map(c => c.content)).toEqual(['new note']);
  });

  it('an unchanged edit is no edit (no undo step)', () => {
    const graph = parse(fileWithComment());
    expect(updateComment(graph, 'c1', { content: 'loads the data' })).toBe(
      graph
    );
    expect(updateComment(graph, 'nope', { content: 'x' })).toBe(graph);
  });

  it('removing a node drops it from the comments that pointed at it', () => {
    let graph = parse(fileWithComment());
    graph = addNodes(graph, [
      createNode({ op: 'cube-lab:shell', label: 'b', x: 0, y: 0, id: 'b' })
    ]);
    graph = removeNodes(graph, ['a']);
    expect(graph.comments[0].nodeRefs).toEqual([]);
    const written = toDocument(graph).pipelines[0].app_data.ui_data.comments;
    expect(written[0].associated_id_refs).toEqual([]);
  });
});

describe('node results', () => {
  it('parses CSV with quotes and keeps the first rows', () => {
    const rows = ['name,note', '"a, b","say ""hi"""', 'c,d'];
    for (let i = 0; i < 30; i++) {
      rows.push(`r${i},${i}`);
    }
    const table = parseCsv(rows.join('\r\n') + '\r\n', 5);
    expect(table.header).toEqual(['name', 'note']);
    expect(table.rows[0]).toEqual(['a, b', 'say "hi"']);
    expect(table.rows).toHaveLength(5);
    expect(table.truncated).toBe(true);
    const small = parseCsv('k\tv\n1\t2', 5, '\t');
    expect(small).toEqual({
      header: ['k', 'v'],
      rows: [['1', '2']],
      truncated: false
    });
  });

  it('lists JSON scalars as metrics, nested names joined by dots', () => {
    expect(
      metricsOf({
        accuracy: 0.912345678,
        eval: { f1: 0.5, ok: true },
        loss: [1, 2]
      })
    ).toEqual([
      { name: 'accuracy', value: '0.912346' },
      { name: 'eval.f1', value: '0.5' },
      { name: 'eval.ok', value: 'true' }
    ]);
  });

  it('finds number series in plain JSON and in ECharts options', () => {
    expect(chartOf([3, 2, 1])).toEqual({
      kind: 'line',
      x: [],
      series: [{ name: 'value', values: [3, 2, 1] }]
    });
    expect(chartOf({ loss: [1, 0.5], acc: [0.1, 0.9], n: 3 })?.series).toEqual([
      { name: 'loss', values: [1, 0.5] },
      { name: 'acc', values: [0.1, 0.9] }
    ]);
    const option = {
      xAxis: { type: 'category', data: ['mon', 'tue', 'wed'] },
      series: [
        { name: 'runs', type: 'bar', data: [1, { value: 4 }, 2] },
        { name: 'pie', type: 'pie', data: [{ value: 1 }, { value: 2 }] }
      ]
    };
    expect(chartOf(option)).toEqual({
      kind: 'bar',
      x: ['mon', 'tue', 'wed'],
      series: [{ name: 'runs', values: [1, 4, 2] }]
    });
    expect(chartOf({ series: [{ type: 'pie', data: [1, 2] }] })).toBeNull();
    expect(chartOf({ a: 'text' })).toBeNull();
    expect(chartOf([1, 'x'])).toBeNull();
  });

  it('renders each kind of text result', () => {
    const file = (name: string, kind: any) => ({
      name,
      path: name,
      kind,
      size_bytes: 1
    });
    const table = renderText(file('t.csv', 'table'), 'a,b\n1,2\n');
    expect(table).toEqual({
      type: 'table',
      table: { header: ['a', 'b'], rows: [['1', '2']], truncated: false }
    });
    const json = renderText(
      file('m.json', 'json'),
      '{"acc": 0.9, "loss": [1, 0.5]}'
    );
    expect(json).toMatchObject({
      type: 'json',
      metrics: [{ name: 'acc', value: '0.9' }],
      chart: { series: [{ name: 'loss' }] }
    });
    const echarts = renderText(
      file('c.json', 'echarts'),
      '{"title": {"text": "x"}, "series": [{"type": "line", "data": [1, 2]}]}'
    );
    expect(echarts).toMatchObject({ type: 'json', metrics: [] });
    expect(renderText(file('bad.json', 'json'), '{nope')).toEqual({
      type: 'none'
    });
  });
});

describe('schedule form', () => {
  it('tells cron-looking text', () => {
    expect(looksLikeCron('0 3 * * *')).toBe(true);
    expect(looksLikeCron(' @daily ')).toBe(true);
    expect(looksLikeCron('0 3 * *')).toBe(false);
    expect(looksLikeCron('sometimes')).toBe(false);
  });

  it('sends typed parameter values and leaves blanks to the defaults', () => {
    const parameters = [
      {
        name: 'lr',
        type: 'Float',
        default: 0.1,
        required: false,
        description: ''
      },
      {
        name: 'tag',
        type: 'String',
        default: 'x',
        required: false,
        description: ''
      },
      {
        name: 'epochs',
        type: 'Integer',
        default: 3,
        required: false,
        description: ''
      }
    ];
    expect(
      scheduleParams(parameters, { lr: '0.01', tag: '42', epochs: ' ' })
    ).toEqual({ lr: 0.01, tag: '42' });
  });
});
