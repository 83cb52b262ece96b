/**
 * What a node is, in words a user reads: "Notebook", "Python script",
 * "Job template: Train a scikit-learn model", "Training job"... instead of the
 * op ids stored in the `.pipeline` file (`execute-notebook-node`).
 */
import type {
  CatalogComponent,
  JobTemplate,
  JSONSchema,
  NodeKind
} from '../../api';
import { Ops } from './serializer';

/** Translates a message (a `TranslationBundle` or a stand-in in tests). */
export interface ITrans {
  __(msgid: string, ...args: any[]): string;
}

/**
 * A text the server sends about a job template or a node kind (its title,
 * category, description, a parameter's title or description), in the
 * user's language: scripts/extract_strings.py takes these texts from
 * templates/<name>/template.yaml and the node kinds' `display_name`, so the
 * catalog has them; a text it does not know (a user's own template) stays
 * as written.
 */
export function serverText(text: string | undefined, trans: ITrans): string {
  return text ? trans.__(text) : '';
}

/** Ops of the node kinds cube-lab itself registers on the server. */
export namespace PluginOps {
  export const training = 'cube-lab:training';
  export const tuning = 'cube-lab:tuning';
}

/** The op of a node and what the label needs of its parameters. */
export interface IKindNode {
  op: string;
  params?: Readonly<Record<string, unknown>>;
}

/**
 * A translated label for a node's kind.
 *
 * @param templates the job templates known (for a template node's title)
 * @param kinds the node kinds the server registers (for plug-in ops)
 */
export function kindLabel(
  node: IKindNode,
  trans: ITrans,
  templates: readonly JobTemplate[] = [],
  kinds: readonly NodeKind[] = []
): string {
  switch (node.op) {
    case Ops.notebook:
      return trans.__('Notebook');
    case Ops.python:
      return trans.__('Python script');
    case Ops.r:
      return trans.__('R script');
    case Ops.shell:
      return trans.__('Shell command');
    case Ops.template: {
      const name = node.params?.template;
      if (typeof name !== 'string' || !name) {
        return trans.__('Job template');
      }
      const template = templates.find(t => t.name === name);
      return trans.__(
        'Job template: %1',
        serverText(template?.display_name, trans) || name
      );
    }
    case PluginOps.training:
      return trans.__('Training job');
    case PluginOps.tuning:
      return trans.__('Hyperparameter search');
  }
  const kind = kinds.find(k => k.op === node.op);
  if (kind?.component) {
    return trans.__(
      '%1 (catalog %2)',
      kind.component.name,
      kind.component.catalog
    );
  }
  // A plug-in's own title (not in our catalog), else the op itself: the
  // validator names an op nobody registers as unknown.
  return serverText(kind?.display_name, trans) || node.op;
}

/** The catalog component an op names, when the server lists one. */
export function catalogComponent(
  op: string,
  kinds: readonly NodeKind[]
): CatalogComponent | undefined {
  return kinds.find(k => k.op === op)?.component;
}

/**
 * The parameter form of a plug-in node kind (one registered through the
 * `cube_lab.node_kinds` entry point, such as fine-tune or kb-ingest), or
 * undefined for built-in ops and catalog components.
 */
export function pluginSchema(
  op: string,
  kinds: readonly NodeKind[]
): JSONSchema | undefined {
  const kind = kinds.find(k => k.op === op);
  return kind && !kind.component && kind.schema?.properties
    ? kind.schema
    : undefined;
}

/** What the palette shows for a catalog component, under its catalog's name. */
export interface ICatalogPaletteEntry {
  category: string;
  key: string;
  label: string;
  description: string;
  spec: { op: string; label: string; params: Record<string, unknown> };
}

/** Palette entries for the catalog components among `kinds`, in the server's order. */
export function catalogPaletteEntries(
  kinds: readonly NodeKind[]
): ICatalogPaletteEntry[] {
  const out: ICatalogPaletteEntry[] = [];
  for (const kind of kinds) {
    const c = kind.component;
    if (!c) {
      continue;
    }
    out.push({
      category: c.catalog,
      key: `catalog:${c.op}`,
      label: c.name,
      description: c.description || c.image,
      spec: {
        op: c.op,
        label: c.name,
        // the {widget, value} form Elyra's editor writes, defaults filled in
        params: JSON.parse(JSON.stringify(c.default_parameters))
      }
    });
  }
  return out;
}

/** A form schema of a component's value inputs (file inputs take a parent's output). */
export function catalogInputSchema(
  component: CatalogComponent,
  trans: ITrans
): JSONSchema {
  const properties: Record<string, JSONSchema> = {};
  const required: string[] = [];
  for (const input of component.inputs) {
    if (input.path) {
      continue;
    }
    properties[input.ref] = {
      type: input.json_type,
      title: input.name,
      description: input.description
        ? trans.__('%1 (%2)', input.description, input.type)
        : trans.__('Type: %1', input.type),
      ...(input.default !== null && input.default !== undefined
        ? { default: input.default as any }
        : {})
    };
    if (!input.optional) {
      required.push(input.ref);
    }
  }
  return { type: 'object', properties, required };
}

/** The plain values of a node's component parameters ({widget, value} unwrapped). */
export function catalogValues(
  params: Readonly<Record<string, unknown>>
): Record<string, any> {
  const out: Record<string, any> = {};
  for (const [key, entry] of Object.entries(params)) {
    if (entry && typeof entry === 'object' && 'widget' in (entry as any)) {
      const { widget, value } = entry as { widget: string; value: unknown };
      if (widget !== 'inputpath' && value !== null && value !== undefined) {
        out[key] = value;
      }
    }
  }
  return out;
}

/** Component parameters with the form's values written back as Elyra writes them. */
export function withCatalogValues(
  params: Readonly<Record<string, unknown>>,
  component: CatalogComponent,
  values: Record<string, unknown>
): Record<string, unknown> {
  const next: Record<string, unknown> = { ...params };
  for (const input of component.inputs) {
    if (input.path) {
      continue;
    }
    const value = values[input.ref];
    next[input.ref] = {
      widget: input.json_type,
      value: value === undefined || value === '' ? null : value
    };
  }
  return next;
}

/** The outputs of the upstream catalog nodes a file input may take. */
export function parentOutputs(
  upstream: readonly { id: string; label: string; op: string }[],
  kinds: readonly NodeKind[]
): { node: string; option: string; label: string }[] {
  const out: { node: string; option: string; label: string }[] = [];
  for (const parent of upstream) {
    const c = catalogComponent(parent.op, kinds);
    for (const o of c?.outputs ?? []) {
      out.push({
        node: parent.id,
        option: o.ref,
        label: `${parent.label}: ${o.name}`
      });
    }
  }
  return out;
}
