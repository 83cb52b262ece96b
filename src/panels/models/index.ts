/**
 * The model registry plugin: the "Models" side panel (the list of models),
 * main-area model tabs (versions, a version, a comparison), launcher /
 * palette entries and the file browser "Register as model" command.
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
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { ITranslator } from '@jupyterlab/translation';
import { refreshIcon, ToolbarButton } from '@jupyterlab/ui-components';

import { whoami } from '../../api';
import { modelsIcon } from '../../icons';
import { CATEGORY, CommandIDs, ICubeSidebar, PanelRanks } from '../../tokens';
import { ModelsRoute } from './model';
import { registerPathAsModel } from './register';
import { ModelsPanel, reportError } from './widget';

export { ModelsPanel } from './widget';
export { ModelsModel } from './model';

/** The id of the Models side panel (the left sidebar tab). */
export const MODELS_PANEL_ID = 'cube-lab-models-panel';

/** A model tab's title: what it shows. */
export function modelTabLabel(
  route: ModelsRoute,
  trans: { __: (msg: string, ...args: any[]) => string }
): string {
  switch (route.kind) {
    case 'list':
      return trans.__('Models');
    case 'model':
      return route.name;
    case 'version':
      return trans.__('%1 v%2', route.name, route.version);
    case 'compare':
      return trans.__('Compare %1', route.name);
  }
}

export const modelsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'cube-lab:models',
  description:
    'The cube-lab model registry: browse, compare and register models.',
  autoStart: true,
  requires: [ICubeSidebar, ITranslator],
  optional: [ICommandPalette, ILauncher, IFileBrowserFactory, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    sidebar: ICubeSidebar,
    translator: ITranslator,
    palette: ICommandPalette | null,
    launcher: ILauncher | null,
    browserFactory: IFileBrowserFactory | null,
    restorer: ILayoutRestorer | null
  ) => {
    const trans = translator.load('cube_lab');
    const { commands, shell } = app;

    const tracker = new WidgetTracker<MainAreaWidget<ModelsPanel>>({
      namespace: 'cube-lab-model'
    });

    const openInTab = (route: ModelsRoute) => {
      if (route.kind === 'list') {
        return;
      }
      void commands.execute(CommandIDs.openModelTab, {
        project: route.project,
        name: route.name,
        ...(route.kind === 'version' ? { version: route.version } : {})
      });
    };

    // The side panel lists the models; a model opens in a main-area tab.
    const section = new ModelsPanel({
      settings: sidebar.settings,
      commands,
      translator,
      openInTab
    });
    section.id = 'cube-lab-models';
    sidebar.addPanel(section, {
      id: MODELS_PANEL_ID,
      rank: PanelRanks.models,
      icon: modelsIcon,
      label: trans.__('Models'),
      caption: trans.__('Model registry')
    });

    commands.addCommand(CommandIDs.openModels, {
      label: args =>
        args.isLauncher ? trans.__('Models') : trans.__('Model registry'),
      caption: trans.__('Browse, compare and manage registered models'),
      icon: args => (args.isPalette ? undefined : modelsIcon),
      execute: () => {
        sidebar.reveal(section);
      }
    });

    commands.addCommand(CommandIDs.refreshModels, {
      label: trans.__('Refresh models'),
      execute: () => section.refresh()
    });

    commands.addCommand(CommandIDs.openModelTab, {
      label: args =>
        args.name
          ? trans.__('Open model %1 in a tab', String(args.name))
          : trans.__('Open model in a tab'),
      execute: args => {
        const project = String(args.project ?? '');
        const name = String(args.name ?? '');
        const version = Number(args.version);
        const route: ModelsRoute = !name
          ? { kind: 'list' }
          : Number.isInteger(version)
            ? { kind: 'version', project, name, version }
            : { kind: 'model', project, name };
        const existing = tracker.find(w => {
          const shown = w.content.model.state.route;
          return shown.kind === 'list' || route.kind === 'list'
            ? shown.kind === route.kind
            : shown.project === project && shown.name === name;
        });
        if (existing) {
          existing.content.navigate(route);
          shell.activateById(existing.id);
          return existing;
        }
        const content = new ModelsPanel({
          settings: sidebar.settings,
          commands,
          translator,
          route
        });
        const widget = new MainAreaWidget({ content });
        widget.id = `cube-lab-model-${encodeURIComponent(project)}-${encodeURIComponent(name)}`;
        widget.addClass('cube-ModelTab');
        widget.title.icon = modelsIcon;
        widget.title.closable = true;
        // The title follows what the tab shows (a version, a comparison...).
        let shown = '';
        const retitle = () => {
          const now = content.model.state.route;
          widget.title.label = modelTabLabel(now, trans);
          widget.title.caption =
            now.kind === 'list'
              ? trans.__('Model registry')
              : trans.__('Model %1 (project %2)', now.name, now.project);
          const key = JSON.stringify(now);
          if (key !== shown) {
            shown = key;
            if (tracker.has(widget)) {
              void tracker.save(widget);
            }
          }
        };
        retitle();
        content.model.changed.connect(retitle);
        widget.toolbar.addItem(
          'refresh',
          new ToolbarButton({
            icon: refreshIcon,
            label: trans.__('Refresh'),
            tooltip: trans.__('Refresh the model'),
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
        command: CommandIDs.openModelTab,
        args: w => {
          const route = w.content.model.state.route;
          return route.kind === 'list'
            ? {}
            : route.kind === 'version'
              ? {
                  project: route.project,
                  name: route.name,
                  version: route.version
                }
              : { project: route.project, name: route.name };
        },
        name: w => {
          const route = w.content.model.state.route;
          return route.kind === 'list'
            ? 'list'
            : `${route.project}/${route.name}`;
        }
      });
    }

    commands.addCommand(CommandIDs.registerModel, {
      label: trans.__('Register as Model…'),
      caption: trans.__('Register this file or folder in the model registry'),
      icon: modelsIcon,
      isVisible: () => {
        const browser = browserFactory?.tracker.currentWidget;
        if (!browser) {
          return false;
        }
        const items = Array.from(browser.selectedItems());
        return items.length === 1;
      },
      execute: async () => {
        const browser = browserFactory?.tracker.currentWidget;
        const item = browser ? browser.selectedItems().next().value : undefined;
        if (!item) {
          return;
        }
        const path = app.serviceManager.contents.localPath(item.path);
        let me;
        try {
          me = await whoami();
        } catch (reason) {
          await reportError(trans, trans.__('Cannot register a model'), reason);
          return;
        }
        const version = await registerPathAsModel({
          path,
          isDirectory: item.type === 'directory',
          me,
          trans
        });
        if (version) {
          // The list shows the new version; its tab shows the details.
          void section.refresh();
          sidebar.reveal(section);
          await commands.execute(CommandIDs.openModelTab, {
            project: version.project,
            name: version.model,
            version: version.version
          });
        }
      }
    });

    if (browserFactory) {
      app.contextMenu.addItem({
        command: CommandIDs.registerModel,
        selector: '.jp-DirListing-item[data-isdir]',
        rank: 9
      });
    }

    if (launcher) {
      launcher.add({
        command: CommandIDs.openModels,
        args: { isLauncher: true },
        category: CATEGORY,
        rank: 1
      });
    }

    if (palette) {
      const category = CATEGORY;
      palette.addItem({
        command: CommandIDs.openModels,
        args: { isPalette: true },
        category
      });
      palette.addItem({ command: CommandIDs.refreshModels, category });
    }
  }
};
