/**
 * "Remove" a failed, dead or stopped deployment: a confirm dialog that says
 * what goes, then the same DELETE as undeploy (which removes a deployment
 * that is not running). Shared by the Deployments panel and the view.
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';

import { Deployment, undeploy } from '../../api';

/** Ask, then remove; the deployment's last state (status "removed"), or null if cancelled. */
export async function confirmAndRemove(
  d: Pick<Deployment, 'project' | 'name' | 'model' | 'version' | 'status'>,
  trans: TranslationBundle
): Promise<Deployment | null> {
  const result = await showDialog({
    title: trans.__('Remove %1?', d.name),
    body: trans.__(
      'Deployment "%1" (%2 v%3) is %4. Removing it stops whatever of it still runs, gives its resources back to the project quota, and deletes its record and its log; it leaves the Deployments list. The model version stays in the registry.',
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
  if (!result.button.accept) {
    return null;
  }
  return undeploy(d.project, d.name);
}
