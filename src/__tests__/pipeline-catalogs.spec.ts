/**
 * Elyra catalog components in the pipeline editor: palette entries under the
 * catalog's name, the input form, and the {widget, value} parameters Elyra writes.
 */
import type { CatalogComponent, NodeKind } from '../api';
import {
  catalogInputSchema,
  catalogPaletteEntries,
  catalogValues,
  kindLabel,
  parentOutputs,
  pluginSchema,
  withCatalogValues
} from '../panels/pipelines/kinds';

const trans = {
  __: (msgid: string, ...args: any[]) =>
    msgid.replace(/%(\d)/g, (_, i) => String(args[Number(i) - 1]))
};

const GREET: CatalogComponent = {
  op: 'local-directory-catalog:0123456789ab',
  name: 'Write greeting',
  description: 'Writes a greeting to a file.',
  catalog: 'My components',
  image: 'busybox:1.36',
  inputs: [
    {
      name: 'Greeting',
      ref: 'greeting',
      type: 'String',
      json_type: 'string',
      default: 'hello',
      optional: false,
      description: 'What to write',
      path: false
    },
    {
      name: 'Times',
      ref: 'times',
      type: 'Integer',
      json_type: 'integer',
      default: 2,
      optional: true,
      description: '',
      path: false
    },
    {
      name: 'Text',
      ref: 'text',
      type: 'String',
      json_type: 'string',
      default: null,
      optional: false,
      description: '',
      path: true
    }
  ],
  outputs: [
    {
      name: 'Greeting file',
      ref: 'output_greeting_file',
      type: '',
      description: ''
    }
  ],
  default_parameters: {
    greeting: { widget: 'string', value: 'hello' },
    times: { widget: 'integer', value: 2 }
  }
};

const KINDS: NodeKind[] = [
  { op: 'execute-notebook-node', name: 'notebook', display_name: 'Notebook' },
  {
    op: GREET.op,
    name: 'catalog',
    display_name: GREET.name,
    component: GREET
  }
];

describe('catalog components', () => {
  it('are palette entries under their catalog, with the defaults filled in', () => {
    const entries = catalogPaletteEntries(KINDS);
    expect(entries).toHaveLength(1);
    const [entry] = entries;
    expect(entry.category).toBe('My components');
    expect(entry.label).toBe('Write greeting');
    expect(entry.spec.op).toBe(GREET.op);
    expect(entry.spec.params).toEqual(GREET.default_parameters);
    // a copy: editing a new node's parameters leaves the listing alone
    (entry.spec.params.greeting as any).value = 'changed';
    expect(GREET.default_parameters.greeting.value).toBe('hello');
  });

  it('give a form of their value inputs, file inputs left to links', () => {
    const schema = catalogInputSchema(GREET, trans);
    expect(Object.keys(schema.properties!)).toEqual(['greeting', 'times']);
    expect(schema.required).toEqual(['greeting']);
    expect(schema.properties!.times).toMatchObject({
      type: 'integer',
      title: 'Times',
      default: 2
    });
    expect(schema.properties!.greeting.description).toBe(
      'What to write (String)'
    );
    expect(schema.properties!.times.description).toBe('Type: Integer');
  });

  it('read and write parameters as Elyra writes them', () => {
    const params = {
      greeting: { widget: 'string', value: 'hi' },
      text: { widget: 'inputpath', value: { value: 'a', option: 'output_x' } },
      env_vars: []
    };
    expect(catalogValues(params)).toEqual({ greeting: 'hi' });
    const next = withCatalogValues(params, GREET, { greeting: 'yo', times: 5 });
    expect(next).toEqual({
      greeting: { widget: 'string', value: 'yo' },
      times: { widget: 'integer', value: 5 },
      text: params.text,
      env_vars: []
    });
    expect(withCatalogValues(params, GREET, {}).times).toEqual({
      widget: 'integer',
      value: null
    });
  });

  it('offer the outputs of linked catalog parents and name the kind', () => {
    const parents = [
      { id: 'p1', label: 'greet', op: GREET.op },
      { id: 'p2', label: 'nb', op: 'execute-notebook-node' }
    ];
    expect(parentOutputs(parents, KINDS)).toEqual([
      {
        node: 'p1',
        option: 'output_greeting_file',
        label: 'greet: Greeting file'
      }
    ]);
    expect(kindLabel({ op: GREET.op }, trans, [], KINDS)).toBe(
      'Write greeting (catalog My components)'
    );
  });
});

describe('plug-in node kinds', () => {
  const INGEST: NodeKind = {
    op: 'cube-lab:kb-ingest',
    name: 'kb_ingest',
    display_name: 'Knowledge base ingest',
    schema: {
      type: 'object',
      required: ['kb', 'folder'],
      properties: { kb: { type: 'string' }, folder: { type: 'string' } }
    }
  };
  const kinds = [...KINDS, INGEST];

  it('gives the parameter form of a kind that has one', () => {
    expect(pluginSchema(INGEST.op, kinds)?.required).toEqual(['kb', 'folder']);
  });

  it('gives none for built-in ops, catalog components and unknown ops', () => {
    expect(pluginSchema('execute-notebook-node', kinds)).toBeUndefined();
    expect(pluginSchema(GREET.op, kinds)).toBeUndefined();
    expect(pluginSchema('cube-lab:nothing', kinds)).toBeUndefined();
    const bare = { ...INGEST, schema: { type: 'object' } };
    expect(pluginSchema(INGEST.op, [bare])).toBeUndefined();
  });
});
