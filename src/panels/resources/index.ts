/**
 * The resources plugin: the "Resources" side panel (what runs now, what it
 * holds, the project's quota use), the status-bar item (this server's CPU /
 * memory / GPUs) and the Notifications tab (a project's alert rules).
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
import { IStatusBar } from '@jupyterlab/statusbar';
import { ITranslator } from '@jupyterlab/translation';

import { LiveObject } from '../../api';
import { CATEGORY, CommandIDs, ICubeSidebar } from '../../tokens';
import { notificationsIcon, resourcesIcon } from './icon';
import { NotificationsView } from './notifications';
import { ResourcesPanel, ServerStatus } from './panel';

export { ResourcesPanel, ServerStatus } from './panel';
export { NotificationsView } from './notifications';
export { ResourceStrip, ResourceCharts } from './strip';
export * as resourcesLogic from './logic';

export const RESOURCES_PANEL_ID = 'cube-lab-resources-panel';
const RESOURCES_PANEL_RANK = 680;

export namespace ResourcesCommandIDs {
  export const show = 'cube-lab:show-resources';
  /** The Notifications tab; args: project. */
  export const notifications = 'cube-lab:open-notifications';
}

export const resourcesPlugin: JupyterFrontEndPlugin<void> = {
  id: 'cube-lab:resources',
  description:
    'cube-lab resources: what runs now and what it holds, this server in the status bar, alert rules.',
  autoStart: true,
  requires: [ICubeSidebar, ITranslator],
  optional: [ICommandPalette, IStatusBar, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    sidebar: ICubeSidebar,
    translator: ITranslator,
    palette: ICommandPalette | null,
    statusBar: IStatusBar | null,
    restorer: ILayoutRestorer | null
  ) => {
    const trans = translator.load('cube_lab');
    const { commands, shell } = app;
    const open = (obj: LiveObject) => {
      if (obj.kind === 'training') {
        void commands.execute('cube-lab:open-training-job', {
          id: obj.id,
          name: obj.name
        });
      } else if (obj.kind === 'trial') {
        void commands.execute('cube-lab:open-tuning-experiment', {
          id: obj.id,
          name: obj.name
        });
      } else if (obj.kind === 'kernel' && obj.path) {
        void commands.execute('docmanager:open', { path: obj.path });
      } else if (obj.kind === 'pipeline' && obj.path) {
        void commands.execute(CommandIDs.openPipelineRun, {
          path: obj.path,
          runId: obj.id
        });
      }
    };
    const panel = new ResourcesPanel({ translator, open });
    panel.id = 'cube-lab-resources';
    sidebar.addPanel(panel, {
      id: RESOURCES_PANEL_ID,
      rank: RESOURCES_PANEL_RANK,
      icon: resourcesIcon,
      label: trans.__('Resources'),
      caption: trans.__('What runs now and what it holds')
    });
    commands.addCommand(ResourcesCommandIDs.show, {
      label: trans.__('Resources'),
      caption: trans.__('What runs now and what it holds'),
      icon: args => (args.isPalette ? undefined : resourcesIcon),
      execute: () => sidebar.reveal(panel)
    });

    if (statusBar) {
      const status = new ServerStatus(translator);
      status.node.addEventListener('click', () => sidebar.reveal(panel));
      statusBar.registerStatusItem('cube-lab:server-status', {
        item: status,
        align: 'left',
        rank: 4
      });
    }

    const tracker = new WidgetTracker<MainAreaWidget<NotificationsView>>({
      namespace: 'cube-lab-notifications'
    });
    commands.addCommand(ResourcesCommandIDs.notifications, {
      label: trans.__('Notifications'),
      caption: trans.__('Alert rules of a project'),
      icon: args => (args.isPalette ? undefined : notificationsIcon),
      execute: args => {
        const existing = tracker.currentWidget;
        if (existing && !existing.isDisposed) {
          shell.activateById(existing.id);
          return existing;
        }
        const project = args.project ? String(args.project) : undefined;
        const content = new NotificationsView({ translator, project });
        const widget = new MainAreaWidget({ content });
        widget.id = 'cube-lab-notifications';
        widget.title.label = trans.__('Notifications');
        widget.title.icon = notificationsIcon;
        widget.title.closable = true;
        void tracker.add(widget);
        shell.add(widget, 'main');
        shell.activateById(widget.id);
        return widget;
      }
    });
    if (restorer) {
      void restorer.restore(tracker, {
        command: ResourcesCommandIDs.notifications,
        args: w => ({ project: w.content.project }),
        name: () => 'notifications'
      });
    }
    if (palette) {
      for (const command of [
        ResourcesCommandIDs.show,
        ResourcesCommandIDs.notifications
      ]) {
        palette.addItem({
          command,
          args: { isPalette: true },
          category: CATEGORY
        });
      }
    }
  }
};
