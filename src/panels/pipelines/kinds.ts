/**
 * What a node is, in words a user reads: "Notebook", "Python script",
 * "Job template: Train a scikit-learn model", "Training job"... instead of the
 * op ids stored in the `.pipeline` file (`execute-notebook-node`).
 */
import type { JobTemplate, NodeKind } from '../../api';
import { Ops } from './serializer';

/** Translates a message (a `TranslationBundle` or a stand-in in tests). */
export interface ITrans {
  __(msgid: string, ...args: any[]): string;
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
      return trans.__('Job template: %1', template?.display_name || name);
    }
    case PluginOps.training:
      return trans.__('Training job');
    case PluginOps.tuning:
      return trans.__('Hyperparameter search');
  }
  const kind = kinds.find(k => k.op === node.op);
  // A plug-in's own title (not in our catalog), else the op itself: the
  // validator names an op nobody registers as unknown.
  return kind?.display_name || node.op;
}
