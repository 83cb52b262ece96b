/**
 * The serving plugin: the "Deployments" side panel (the list), main-area
 * deployment views (test form, traffic, live metrics, log) and the
 * "Deploy" command the Models panel calls on a model version.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  ICommandPalette,
  MainAreaWidget,
  WidgetTracker
} from '@jupyterlab/apputils';
import { ILauncher } from '@jupyterlab/launcher';
import { ITranslator } from '@jupyterlab/translation';
import { refreshIcon, ToolbarButton } from '@jupyterlab/ui-components';

import { deploymentIcon } from '../../icons';
import { CATEGORY, CommandIDs, ICubeSidebar, PanelRanks } from '../../tokens';
import { showDeployDialog } from './dialog';
import { DeploymentsPanel } from './panel';
import { DeploymentView } from './view';

export { DeploymentsPanel } from './panel';
export { DeploymentView } from './view';
export * as deploymentsLogic from './logic';
export { deploymentIcon } from '../../icons';

/** The id of the Deployments side panel (the left sidebar tab). */
export const DEPLOYMENTS_PANEL_ID = 'cube-lab-deployments-panel';

export namespace DeploymentCommandIDs {
  /** Args: project, name (the model), version. Used by the Models panel. */
  export const deploy = 'cube-lab:deploy-model';
  /** Args: project, name (the deployment). */
  export const open = 'cube-lab:open-deployment';
  export const refresh = 'cube-lab:refresh-deployments';
  export const show = 'cube-lab:open-deployments';
}

export const deploymentsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'cube-lab:deployments',
  description:
    'cube-lab serving: deploy model versions, test them, split traffic, watch metrics.',
  autoStart: true,
  requires: [ICubeSidebar, ITranslator],
  optional: [ICommandPalette, ILayoutRestorer, ILauncher],
  activate: (
    app: JupyterFrontEnd,
    sidebar: ICubeSidebar,
    translator: ITranslator,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    launcher: ILauncher | null
  ) => {
    const trans = translator.load('cube_lab');
    const { commands, shell } = app;
    const tracker = new WidgetTracker<MainAreaWidget<DeploymentView>>({
      namespace: 'cube-lab-deployment'
    });

    const open = (project: string, name: string) =>
      void commands.execute(DeploymentCommandIDs.open, { project, name });

    const panel = new DeploymentsPanel({
      settings: sidebar.settings,
      translator,
      open: d => open(d.project, d.name),
      // removed from the list: its open view (if any) says so
      removed: d =>
        tracker
          .find(
            w => w.content.project === d.project && w.content.name === d.name
          )
          ?.content.markRemoved(d)
    });
    panel.id = 'cube-lab-deployments';
    sidebar.addPanel(panel, {
      id: DEPLOYMENTS_PANEL_ID,
      rank: PanelRanks.deployments,
      icon: deploymentIcon,
      label: trans.__('Deployments'),
      caption: trans.__('Models served as inference services')
    });

    commands.addCommand(DeploymentCommandIDs.show, {
      label: trans.__('Deployments'),
      caption: trans.__('Models served as inference services'),
      icon: args => (args.isPalette ? undefined : deploymentIcon),
      execute: () => sidebar.reveal(panel)
    });

    commands.addCommand(DeploymentCommandIDs.refresh, {
      label: trans.__('Refresh deployments'),
      execute: () => panel.refresh()
    });

    commands.addCommand(DeploymentCommandIDs.deploy, {
      label: trans.__('Deploy…'),
      caption: trans.__('Serve this model version as an inference service'),
      icon: deploymentIcon,
      execute: async args => {
        const project = String(args.project ?? '');
        const model = String(args.name ?? '');
        const version = Number(args.version);
        if (!project || !model || !Number.isInteger(version)) {
          return null;
        }
        const flavor = typeof args.flavor === 'string' ? args.flavor : null;
        const dep = await showDeployDialog(
          { project, model, version, flavor },
          trans
        );
        if (!dep) {
          return null;
        }
        void panel.refresh();
        sidebar.reveal(panel);
        open(dep.project, dep.name);
        return dep;
      }
    });

    commands.addCommand(DeploymentCommandIDs.open, {
      label: trans.__('Open Deployment'),
      execute: args => {
        const project = String(args.project ?? '');
        const name = String(args.name ?? '');
        const existing = tracker.find(
          w => w.content.project === project && w.content.name === name
        );
        if (existing && existing.content.removed) {
          existing.dispose(); // a new deployment of that name: a fresh view
        } else if (existing) {
          shell.activateById(existing.id);
          void existing.content.refresh();
          return existing;
        }
        const content = new DeploymentView({
          project,
          name,
          translator,
          openModel: (p, model, version) =>
            void commands.execute(CommandIDs.openModelTab, {
              project: p,
              name: model,
              version
            }),
          openChat: (p, deployment) =>
            void commands.execute('cube-lab:open-chat', {
              project: p,
              deployment
            }),
          changed: () => void panel.refresh(),
          close: () => widget.dispose()
        });
        const widget = new MainAreaWidget({ content });
        widget.id = `cube-lab-deployment-${encodeURIComponent(project)}-${encodeURIComponent(name)}`;
        widget.addClass('cube-DTab');
        widget.title.label = name;
        widget.title.caption = trans.__(
          'Deployment %1 (project %2)',
          name,
          project
        );
        widget.title.icon = deploymentIcon;
        widget.title.closable = true;
        widget.toolbar.addItem(
          'refresh',
          new ToolbarButton({
            icon: refreshIcon,
            label: trans.__('Refresh'),
            tooltip: trans.__('Read the deployment, its metrics and log again'),
            onClick: () => void content.refresh()
          })
        );
        void tracker.add(widget);
        shell.add(widget, 'main');
        shell.activateById(widget.id);
        return widget;
      }
    });

    if (restorer) {
      void restorer.restore(tracker, {
        command: DeploymentCommandIDs.open,
        args: w => ({ project: w.content.project, name: w.content.name }),
        name: w => `${w.content.project}/${w.content.name}`
      });
    }

    if (launcher) {
      launcher.add({
        command: DeploymentCommandIDs.show,
        args: { isLauncher: true },
        category: CATEGORY,
        rank: 5
      });
    }
    if (palette) {
      palette.addItem({
        command: DeploymentCommandIDs.show,
        args: { isPalette: true },
        category: CATEGORY
      });
      palette.addItem({
        command: DeploymentCommandIDs.refresh,
        category: CATEGORY
      });
    }
  }
};
