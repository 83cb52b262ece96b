/**
 * Deep links into cube-lab's views: `lab?cube-open=<kind>&...` opens the view
 * of one job, run, experiment, deployment, model or labeling project. The
 * Python SDK's handles give these as `.url` (cube_lab/lab_links.py), the live
 * views in the notebook link to them (a click there opens the view in place),
 * and a colleague can be sent one.
 *
 * JupyterLab's router matches the query when the page loads (or on
 * `router.navigate`); the link's command opens the view once the layout is
 * restored and then takes the link's query off the address bar (a reload
 * then keeps the view as the restored layout does, without opening it twice).
 */
import {
  IRouter,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';

import { DeploymentCommandIDs } from './panels/deployments';
import { LabelingCommandIDs } from './panels/labeling';
import { TrainingCommandIDs } from './panels/training';
import { TuningCommandIDs } from './panels/tuning';
import { CommandIDs } from './tokens';

/** The query parameter that names the view to open. */
export const LINK_PARAM = 'cube-open';

/** The command that follows a deep link (the router runs it). */
export const OPEN_LINK = 'cube-lab:open-link';

/** A deep link resolved: the command that opens its view, with its args. */
export interface ILinkTarget {
  command: string;
  args: ReadonlyPartialJSONObject;
}

/** The parameters each kind needs, and how they become the command's args. */
const KINDS: Record<
  string,
  {
    command: string;
    needs: string[];
    args: (q: URLSearchParams) => ReadonlyPartialJSONObject;
  }
> = {
  job: {
    command: TrainingCommandIDs.openJob,
    needs: ['id'],
    args: q => ({ id: q.get('id')! })
  },
  experiment: {
    command: TuningCommandIDs.openExperiment,
    needs: ['id'],
    args: q => ({ id: q.get('id')! })
  },
  run: {
    command: CommandIDs.openPipelineRun,
    needs: ['id', 'path'],
    args: q => ({ runId: q.get('id')!, path: q.get('path')! })
  },
  deployment: {
    command: DeploymentCommandIDs.open,
    needs: ['project', 'name'],
    args: q => ({ project: q.get('project')!, name: q.get('name')! })
  },
  model: {
    command: CommandIDs.openModelTab,
    needs: ['project', 'name'],
    args: q => {
      const version = Number(q.get('version'));
      return {
        project: q.get('project')!,
        name: q.get('name')!,
        ...(Number.isInteger(version) && version > 0 ? { version } : {})
      };
    }
  },
  labeling: {
    command: LabelingCommandIDs.openProject,
    needs: ['project', 'name'],
    args: q => ({ project: q.get('project')!, name: q.get('name')! })
  },
  // a quota.usage alert's link (cube_lab/alerts/watch.py): the Resources panel
  resources: {
    command: 'cube-lab:show-resources',
    needs: ['project'],
    args: q => ({ project: q.get('project')! })
  }
};

/**
 * The view a location's query asks for; null when it names no known kind or
 * lacks what the kind needs (the page then opens as it would without it).
 */
export function resolveLink(search: string): ILinkTarget | null {
  const query = new URLSearchParams(search);
  const kind = KINDS[query.get(LINK_PARAM) ?? ''];
  if (!kind || kind.needs.some(key => !query.get(key))) {
    return null;
  }
  return { command: kind.command, args: kind.args(query) };
}

/** The location without the deep link's parameters (what the address bar keeps). */
export function withoutLink(path: string, search: string, hash = ''): string {
  const query = new URLSearchParams(search);
  const kind = KINDS[query.get(LINK_PARAM) ?? ''];
  query.delete(LINK_PARAM);
  for (const key of kind?.needs ?? []) {
    query.delete(key);
  }
  query.delete('version');
  const rest = query.toString();
  return `${path}${rest ? `?${rest}` : ''}${hash}`;
}

/**
 * The in-app location (path + query + hash) of a link to a cube-lab view of
 * this lab, or null: another origin, another server under the hub (outside
 * `base`), or no cube-open query.
 */
export function inLabLink(
  href: string,
  here: string,
  base: string
): string | null {
  const url = new URL(href, here);
  if (
    url.origin !== new URL(here).origin ||
    !url.pathname.startsWith(base) ||
    !resolveLink(url.search)
  ) {
    return null;
  }
  return url.pathname + url.search + url.hash;
}

export const linksPlugin: JupyterFrontEndPlugin<void> = {
  id: 'cube-lab:links',
  description: 'Opens a cube-lab view from a lab?cube-open=... link.',
  autoStart: true,
  requires: [IRouter],
  activate: (app: JupyterFrontEnd, router: IRouter): void => {
    app.commands.addCommand(OPEN_LINK, {
      execute: args => {
        const location = args as unknown as IRouter.ILocation;
        const target = resolveLink(location.search ?? '');
        if (!target) {
          return;
        }
        // Not awaited: the router runs its rules one after another, and the
        // layout is restored only after the workspace's own rule has run.
        void app.restored
          .then(() => app.commands.execute(target.command, target.args))
          .then(() =>
            router.navigate(
              withoutLink(location.path, location.search ?? '', location.hash),
              { skipRouting: true }
            )
          )
          .catch(reason =>
            console.error(`cube-lab: cannot open ${location.request}`, reason)
          );
      }
    });
    router.register({
      command: OPEN_LINK,
      pattern: new RegExp(`[?&]${LINK_PARAM}=`)
    });
    // A click on such a link inside the lab (a notebook's live view) opens the
    // view here instead of loading JupyterLab again.
    document.addEventListener(
      'click',
      event => {
        const anchor = (event.target as Element | null)?.closest?.('a[href]');
        if (
          !anchor ||
          event.defaultPrevented ||
          event.button !== 0 ||
          event.metaKey ||
          event.ctrlKey ||
          event.shiftKey ||
          event.altKey
        ) {
          return;
        }
        const href = (anchor as HTMLAnchorElement).href;
        const location = inLabLink(href, window.location.href, router.base);
        if (location) {
          event.preventDefault();
          event.stopPropagation();
          router.navigate(location);
        }
      },
      true
    );
  }
};
