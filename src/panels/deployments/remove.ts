/**
 * "Remove" a failed, dead or stopped deployment: a confirm dialog that says
 * what goes. The caller then sends the same DELETE as undeploy (which
 * removes a deployment that is not running). Shared by the Deployments panel
 * and the view.
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';

import type { Deployment } from '../../api';

/** Ask whether to remove the deployment; true when the user agreed. */
export async function confirmRemove(
  d: Pick<Deployment, 'name' | 'model' | 'version' | 'status'>,
  trans: TranslationBundle
): Promise<boolean> {
  const result = await showDialog({
    title: trans.__('Remove %1?', d.name),
    body: trans.__(
      'Deployment "%1" (%2 v%3, status: %4) goes: whatever of it still runs stops, its resources go back to the project quota, and its record and log are deleted, so it leaves the Deployments list. The model version stays in the registry.',
      d.name,
      d.model,
      d.version,
      d.status
    ),
    buttons: [
      Dialog.cancelButton({ label: trans.__('Cancel') }),
      Dialog.warnButton({ label: trans.__('Remove') })
    ]
  });
  return result.button.accept;
}
