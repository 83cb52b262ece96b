/**
 * Confirm dialogs of the Knowledge bases panel: deleting a knowledge base
 * (its index goes; the files it was made from stay) and removing a source.
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';

import type { KnowledgeBase } from '../../api';

/** Ask whether to delete the knowledge base; true when the user agreed. */
export async function confirmDelete(
  kb: Pick<KnowledgeBase, 'name' | 'project' | 'sources' | 'chunks'>,
  trans: TranslationBundle
): Promise<boolean> {
  const result = await showDialog({
    title: trans.__('Delete knowledge base %1?', kb.name),
    body: trans.__(
      'Knowledge base "%1" of project %2 and its index (%3 sources, %4 chunks) are deleted. The files it was made from stay where they are.',
      kb.name,
      kb.project,
      kb.sources,
      kb.chunks
    ),
    buttons: [
      Dialog.cancelButton({ label: trans.__('Cancel') }),
      Dialog.warnButton({ label: trans.__('Delete') })
    ]
  });
  return result.button.accept;
}

/** Ask whether to remove a source and its chunks; true when the user agreed. */
export async function confirmRemoveSource(
  source: string,
  chunks: number,
  trans: TranslationBundle
): Promise<boolean> {
  const result = await showDialog({
    title: trans.__('Remove %1?', source),
    body: trans.__(
      'Its %1 chunks leave the index; the file itself stays.',
      chunks
    ),
    buttons: [
      Dialog.cancelButton({ label: trans.__('Cancel') }),
      Dialog.warnButton({ label: trans.__('Remove') })
    ]
  });
  return result.button.accept;
}
