/**
 * The tuning plugin: the "Tuning" section of the cube-lab sidebar (new
 * experiment form, experiment list) and main-area experiment views (live
 * trials table, intermediate curves, parallel coordinates, trial logs).
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
import { DocumentWidget } from '@jupyterlab/docregistry';
import {
  IDefaultFileBrowser,
  IFileBrowserFactory
} from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { ITranslator } from '@jupyterlab/translation';
import { LabIcon, refreshIcon, ToolbarButton } from '@jupyterlab/ui-components';

import type { TuningExperiment } from '../../api';
import { CATEGORY, ICubeSidebar } from '../../tokens';
import { dirname } from '../training/logic';
import { ExperimentView } from './experiment';
import { TuningPanel } from './panel';

export { TuningPanel } from './panel';
export { ExperimentView } from './experiment';
export * as tuningLogic from './logic';

/** The rank of the Tuning section (after Training). */
export const TUNING_SECTION_RANK = 350;

export namespace TuningCommandIDs {
  export const open = 'cube-lab:open-tuning';
  export const openExperiment = 'cube-lab:open-tuning-experiment';
  export const refresh = 'cube-lab:refresh-tuning-experiments';
}

/** Three parallel axes crossed by a line: tuning. */
export const tuningIcon = new LabIcon({
  name: 'cube-lab:tuning',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">' +
    '<g class="jp-icon3" fill="#616161">' +
    '<path d="M4 3h2v18H4zM11 3h2v18h-2zM18 3h2v18h-2z"/>' +
    '<path d="M3.4 16.2l8.1-9.1 7 5.6 1.3-1.5-8.5-6.8-9.4 10.5z"/>' +
    '</g></svg>'
});

export const tuningPlugin: JupyterFrontEndPlugin<void> = {
  id: 'cube-lab:tuning',
  description:
    'cube-lab hyperparameter tuning: NNI experiments, live trials and charts.',
  autoStart: true,
  requires: [ICubeSidebar, ITranslator],
  optional: [
    ICommandPalette,
    ILauncher,
    IDefaultFileBrowser,
    IFileBrowserFactory,
    ILayoutRestorer
  ],
  activate: (
    app: JupyterFrontEnd,
    sidebar: ICubeSidebar,
    translator: ITranslator,
    palette: ICommandPalette | null,
    launcher: ILauncher | null,
    defaultBrowser: IDefaultFileBrowser | null,
    browserFactory: IFileBrowserFactory | null,
    restorer: ILayoutRestorer | null
  ) => {
    const trans = translator.load('cube_lab');
    const { commands, shell, serviceManager } = app;
    const local = (path: string) => serviceManager.contents.localPath(path);
    const tracker = new WidgetTracker<MainAreaWidget<ExperimentView>>({
      namespace: 'cube-lab-tuning-experiment'
    });
    const openExperiment = (exp: Pick<TuningExperiment, 'id'>) =>
      void commands.execute(TuningCommandIDs.openExperiment, { id: exp.id });

    /** The folder of the open file, else of the file (or the folder) selected in the browser. */
    const currentFolder = (): string | null => {
      const current = shell.currentWidget;
      if (current instanceof DocumentWidget) {
        return dirname(local(current.context.path));
      }
      const browser = browserFactory?.tracker.currentWidget ?? defaultBrowser;
      if (!browser) {
        return null;
      }
      const item = browser.selectedItems().next().value;
      if (item) {
        return item.type === 'directory'
          ? local(item.path)
          : dirname(local(item.path));
      }
      return null;
    };

    const panel = new TuningPanel({
      settings: sidebar.settings,
      translator,
      openExperiment,
      currentFolder
    });
    panel.id = 'cube-lab-tuning';
    sidebar.addSection(panel, { rank: TUNING_SECTION_RANK });

    commands.addCommand(TuningCommandIDs.open, {
      label: args =>
        args.isLauncher ? trans.__('Tuning') : trans.__('Tuning experiments'),
      caption: trans.__('Search hyperparameters and follow the trials'),
      icon: args => (args.isPalette ? undefined : tuningIcon),
      execute: () => sidebar.reveal(panel)
    });
    commands.addCommand(TuningCommandIDs.refresh, {
      label: trans.__('Refresh tuning experiments'),
      execute: () => panel.refresh()
    });
    commands.addCommand(TuningCommandIDs.openExperiment, {
      label: trans.__('Open Tuning Experiment'),
      execute: args => {
        const id = String(args.id ?? '');
        const existing = tracker.find(w => w.content.experimentId === id);
        if (existing) {
          shell.activateById(existing.id);
          void existing.content.refresh();
          return existing;
        }
        const content = new ExperimentView({ experimentId: id, translator });
        const widget = new MainAreaWidget({ content });
        widget.id = `cube-lab-tuning-experiment-${id}`;
        widget.addClass('cube-TuTab');
        widget.title.label = id;
        widget.title.icon = tuningIcon;
        widget.title.closable = true;
        widget.toolbar.addItem(
          'refresh',
          new ToolbarButton({
            icon: refreshIcon,
            label: trans.__('Refresh'),
            tooltip: trans.__('Read the experiment and its trials again'),
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
        command: TuningCommandIDs.openExperiment,
        args: w => ({ id: w.content.experimentId }),
        name: w => w.content.experimentId
      });
    }
    if (launcher) {
      launcher.add({
        command: TuningCommandIDs.open,
        category: CATEGORY,
        rank: 4
      });
    }
    if (palette) {
      palette.addItem({ command: TuningCommandIDs.open, category: CATEGORY });
      palette.addItem({
        command: TuningCommandIDs.refresh,
        category: CATEGORY
      });
    }
  }
};
