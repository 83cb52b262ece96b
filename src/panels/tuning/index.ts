/**
 * The tuning plugin: the "Tuning" side panel (the experiment list), the "New
 * tuning experiment" tab (the form) and main-area experiment views (live
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
import {
  IDefaultFileBrowser,
  IFileBrowserFactory
} from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { ITranslator } from '@jupyterlab/translation';
import { TranslationBundle } from '@jupyterlab/translation';
import { refreshIcon, ToolbarButton } from '@jupyterlab/ui-components';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';

import { getExperiment, TuningExperiment } from '../../api';
import { tuningIcon } from '../../icons';
import { CATEGORY, ICubeSidebar, PanelRanks } from '../../tokens';
import { addFormTab, lastDocument, openForm } from '../shell';
import { dirname } from '../training/logic';
import { ExperimentView } from './experiment';
import { ExperimentFormView } from './form';
import { emptyExperimentForm, IExperimentForm } from './logic';
import { TuningPanel } from './panel';

export { TuningPanel } from './panel';
export { ExperimentView } from './experiment';
export { ExperimentFormView } from './form';
export * as tuningLogic from './logic';
export { tuningIcon } from '../../icons';

/** The id of the Tuning side panel (the left sidebar tab). */
export const TUNING_PANEL_ID = 'cube-lab-tuning-panel';

export namespace TuningCommandIDs {
  export const open = 'cube-lab:open-tuning';
  export const openExperiment = 'cube-lab:open-tuning-experiment';
  export const refresh = 'cube-lab:refresh-tuning-experiments';
  /** The "New tuning experiment" tab; args: any form field. */
  export const create = 'cube-lab:new-tuning-experiment';
}

/** The form fields among a command's args (strings only). */
export function experimentFormFromArgs(
  args: ReadonlyPartialJSONObject
): Partial<IExperimentForm> {
  const fill: Record<string, string> = {};
  for (const key of Object.keys(emptyExperimentForm())) {
    const value = args[key];
    if (typeof value === 'string') {
      fill[key] = value;
    }
  }
  if (
    fill.mode !== undefined &&
    !['maximize', 'minimize'].includes(fill.mode)
  ) {
    delete fill.mode;
  }
  return fill as Partial<IExperimentForm>;
}

function experimentCaption(id: string, trans: TranslationBundle): string {
  return trans.__('Tuning experiment %1', id);
}

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
    /** The names of the experiments shown, as the server gave them. */
    const names = new WeakMap<MainAreaWidget<ExperimentView>, string>();
    const forms = new WidgetTracker<MainAreaWidget<ExperimentFormView>>({
      namespace: 'cube-lab-tuning-form'
    });
    const openExperiment = (
      exp: Pick<TuningExperiment, 'id'> & Partial<TuningExperiment>
    ) =>
      void commands.execute(TuningCommandIDs.openExperiment, {
        id: exp.id,
        ...(exp.name ? { name: exp.name } : {})
      });

    const currentDocument = lastDocument(shell);
    /** The folder of the open file, else of the file (or the folder) selected in the browser. */
    const currentFolder = (): string | null => {
      const current = currentDocument();
      if (current) {
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
      newExperiment: () => void commands.execute(TuningCommandIDs.create)
    });
    panel.id = 'cube-lab-tuning';
    sidebar.addPanel(panel, {
      id: TUNING_PANEL_ID,
      rank: PanelRanks.tuning,
      icon: tuningIcon,
      label: trans.__('Tuning'),
      caption: trans.__('Hyperparameter tuning experiments')
    });

    /** The one "New tuning experiment" tab, filled with `fill`. */
    const create = (fill: Partial<IExperimentForm>) => {
      const existing = openForm(forms);
      if (existing) {
        existing.content.fill(fill);
        shell.activateById(existing.id);
        return existing;
      }
      const content: ExperimentFormView = new ExperimentFormView({
        translator,
        fill,
        started: exp => {
          openExperiment(exp);
          widget.dispose();
          void panel.refresh();
          sidebar.reveal(panel);
        },
        close: () => widget.dispose(),
        currentFolder
      });
      const widget = addFormTab(shell, forms, content, {
        id: 'cube-lab-tuning-new',
        icon: tuningIcon
      });
      return widget;
    };
    commands.addCommand(TuningCommandIDs.create, {
      label: args =>
        args.isPalette
          ? trans.__('New Tuning Experiment…')
          : trans.__('New tuning experiment'),
      caption: trans.__('Open the new tuning experiment form'),
      icon: args => (args.isPalette ? undefined : tuningIcon),
      execute: args => create(experimentFormFromArgs(args))
    });

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
        // Titled by the experiment's name; read from the server when not given.
        const named = typeof args.name === 'string' ? args.name : '';
        widget.title.label = named || trans.__('Tuning experiment');
        widget.title.caption = experimentCaption(id, trans);
        if (named) {
          names.set(widget, named);
        } else {
          getExperiment(id)
            .then(exp => {
              widget.title.label = exp.name || exp.id;
              names.set(widget, widget.title.label);
              void tracker.save(widget);
            })
            .catch(() => {
              widget.title.label = id;
            });
        }
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
        args: w => {
          const name = names.get(w);
          return name
            ? { id: w.content.experimentId, name }
            : { id: w.content.experimentId };
        },
        name: w => w.content.experimentId
      });
      void restorer.restore(forms, {
        command: TuningCommandIDs.create,
        args: w => ({ ...w.content.form }),
        name: () => 'new'
      });
    }
    if (launcher) {
      launcher.add({
        command: TuningCommandIDs.open,
        args: { isLauncher: true },
        category: CATEGORY,
        rank: 4
      });
    }
    if (palette) {
      for (const command of [TuningCommandIDs.open, TuningCommandIDs.create]) {
        palette.addItem({
          command,
          args: { isPalette: true },
          category: CATEGORY
        });
      }
      palette.addItem({
        command: TuningCommandIDs.refresh,
        category: CATEGORY
      });
    }
  }
};
