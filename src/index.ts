/**
 * cube-lab front end: the core plugin (settings, side panels) and the
 * capability plugins, each with its own left-sidebar panel.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator } from '@jupyterlab/translation';
import { setUiTranslator } from './locale';

import { chatPlugin } from './panels/chat';
import { coursePlugin } from './panels/course';
import { deploymentsPlugin } from './panels/deployments';
import { kbPlugin } from './panels/kb';
import { linksPlugin } from './links';
import { labelingPlugin } from './panels/labeling';
import { modelsPlugin } from './panels/models';
import { pipelinesPlugin } from './panels/pipelines';
import { resourcesPlugin } from './panels/resources';
import { trainingPlugin } from './panels/training';
import { tuningPlugin } from './panels/tuning';
import { CubeSettings, CubeSidebar } from './sidebar';
import { ICubeSidebar } from './tokens';

export * from './tokens';
export * as api from './api';

const PLUGIN_ID = 'cube-lab:plugin';

/**
 * The core plugin: the shared settings, and the service the capability
 * plugins use to add their side panels to the left sidebar.
 */
const sidebarPlugin: JupyterFrontEndPlugin<ICubeSidebar> = {
  id: PLUGIN_ID,
  description:
    'The cube-lab side panels (one per capability) and the shared settings.',
  autoStart: true,
  provides: ICubeSidebar,
  requires: [ITranslator],
  optional: [ISettingRegistry, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    translator: ITranslator,
    settingRegistry: ISettingRegistry | null,
    restorer: ILayoutRestorer | null
  ): ICubeSidebar => {
    setUiTranslator(translator); // Intl dates and the REST client follow JupyterLab's language
    const settings = new CubeSettings();
    const sidebar = new CubeSidebar({
      settings,
      translator,
      restorer,
      shell: {
        add: (widget, area, options) => app.shell.add(widget, area, options),
        activateById: id => app.shell.activateById(id)
      }
    });

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
  chatPlugin,
  labelingPlugin,
  kbPlugin,
  resourcesPlugin,
  coursePlugin,
  linksPlugin
];

export default plugins;
