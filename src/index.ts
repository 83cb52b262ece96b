/**
 * cube-lab front end: the cube-lab sidebar (core plugin) and the capability
 * plugins that add sections to it.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator } from '@jupyterlab/translation';

import { deploymentsPlugin } from './panels/deployments';
import { labelingPlugin } from './panels/labeling';
import { modelsPlugin } from './panels/models';
import { pipelinesPlugin } from './panels/pipelines';
import { trainingPlugin } from './panels/training';
import { tuningPlugin } from './panels/tuning';
import { CubeSettings, CubeSidebar } from './sidebar';
import { CATEGORY, CommandIDs, ICubeSidebar } from './tokens';

export * from './tokens';
export * as api from './api';

const PLUGIN_ID = 'cube-lab:plugin';

/**
 * The core plugin: the cube-lab sidebar and the shared settings.
 */
const sidebarPlugin: JupyterFrontEndPlugin<ICubeSidebar> = {
  id: PLUGIN_ID,
  description: 'The cube-lab sidebar that capability panels add sections to.',
  autoStart: true,
  provides: ICubeSidebar,
  requires: [ITranslator],
  optional: [ISettingRegistry, ILayoutRestorer, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    translator: ITranslator,
    settingRegistry: ISettingRegistry | null,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null
  ): ICubeSidebar => {
    const trans = translator.load('cube_lab');
    const settings = new CubeSettings();
    const sidebar = new CubeSidebar({
      settings,
      translator,
      reveal: () => app.shell.activateById(sidebar.id)
    });
    app.shell.add(sidebar, 'left', { rank: 650, type: 'cube-lab' });
    if (restorer) {
      restorer.add(sidebar, 'cube-lab-sidebar');
    }

    if (settingRegistry) {
      settingRegistry
        .load(PLUGIN_ID)
        .then(loaded => {
          const update = () => settings.update(loaded.composite as any);
          update();
          loaded.changed.connect(update);
        })
        .catch(reason => {
          console.error('cube-lab: cannot load settings.', reason);
        });
    }

    app.commands.addCommand(CommandIDs.openSidebar, {
      label: trans.__('Show the cube-lab Sidebar'),
      execute: () => sidebar.reveal()
    });
    if (palette) {
      palette.addItem({ command: CommandIDs.openSidebar, category: CATEGORY });
    }
    return sidebar;
  }
};

const plugins: JupyterFrontEndPlugin<any>[] = [
  sidebarPlugin,
  modelsPlugin,
  pipelinesPlugin,
  trainingPlugin,
  tuningPlugin,
  deploymentsPlugin,
  labelingPlugin
];

export default plugins;
