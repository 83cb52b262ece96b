/**
 * The training plugin: the "Training" section of the cube-lab sidebar (launch
 * form, job list), main-area job views (live logs per rank, metric charts,
 * stop / re-run / register model) and "Train with cube-lab" on Python files.
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
import { IDocumentManager } from '@jupyterlab/docmanager';
import { DocumentWidget } from '@jupyterlab/docregistry';
import {
  FileDialog,
  IDefaultFileBrowser,
  IFileBrowserFactory
} from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { ITranslator } from '@jupyterlab/translation';
import { LabIcon, refreshIcon, ToolbarButton } from '@jupyterlab/ui-components';

import type { TrainingJob } from '../../api';
import { CATEGORY, CommandIDs, ICubeSidebar } from '../../tokens';
import { TrainingJobView } from './job';
import { dataForm, jobToForm } from './logic';
import { TrainingPanel } from './panel';

export { TrainingPanel } from './panel';
export { TrainingJobView } from './job';
export * as trainingLogic from './logic';

/** The rank of the Training section (after Models and Pipeline runs). */
export const TRAINING_SECTION_RANK = 300;

export namespace TrainingCommandIDs {
  export const open = 'cube-lab:open-training';
  export const openJob = 'cube-lab:open-training-job';
  export const refresh = 'cube-lab:refresh-training-jobs';
  export const trainFile = 'cube-lab:train-file';
  /** The launch form with a dataset version as its data (args: project, dataset, version, path). */
  export const trainWithData = 'cube-lab:train-with-data';
}

/** A rising loss curve on axes: training. */
export const trainingIcon = new LabIcon({
  name: 'cube-lab:training',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">' +
    '<g class="jp-icon3" fill="#616161">' +
    '<path d="M3 3h2v16h16v2H3z"/>' +
    '<path d="M7 7.5l1.4-1.4 3.6 5.4 3.1-2.6 4.5 5.2-1.5 1.3-3.2-3.7-3.3 2.8z"/>' +
    '</g></svg>'
});

export const trainingPlugin: JupyterFrontEndPlugin<void> = {
  id: 'cube-lab:training',
  description:
    'cube-lab distributed training: launch jobs, follow their logs and metrics.',
  autoStart: true,
  requires: [ICubeSidebar, ITranslator],
  optional: [
    ICommandPalette,
    ILauncher,
    IDocumentManager,
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
    docManager: IDocumentManager | null,
    defaultBrowser: IDefaultFileBrowser | null,
    browserFactory: IFileBrowserFactory | null,
    restorer: ILayoutRestorer | null
  ) => {
    const trans = translator.load('cube_lab');
    const { commands, shell, serviceManager } = app;
    const local = (path: string) => serviceManager.contents.localPath(path);

    const tracker = new WidgetTracker<MainAreaWidget<TrainingJobView>>({
      namespace: 'cube-lab-training-job'
    });

    const openJob = (job: Pick<TrainingJob, 'id'>) =>
      void commands.execute(TrainingCommandIDs.openJob, { id: job.id });

    /** The file open in the main area, else the one selected in the file browser. */
    const pickCurrent = (): string | null => {
      const current = shell.currentWidget;
      if (current instanceof DocumentWidget) {
        return local(current.context.path);
      }
      const browser = browserFactory?.tracker.currentWidget ?? defaultBrowser;
      const item = browser
        ? Array.from(browser.selectedItems()).find(i => i.type !== 'directory')
        : undefined;
      return item ? local(item.path) : null;
    };

    const browse = async (): Promise<string | null> => {
      if (!docManager) {
        return null;
      }
      const result = await FileDialog.getOpenFiles({
        manager: docManager,
        translator,
        title: trans.__('Pick the training script'),
        defaultPath: defaultBrowser?.model.path
      });
      const file = result.value?.find(m => m.type !== 'directory');
      return result.button.accept && file ? local(file.path) : null;
    };

    const panel = new TrainingPanel({
      settings: sidebar.settings,
      translator,
      openJob,
      pickCurrent,
      browse
    });
    panel.id = 'cube-lab-training';
    sidebar.addSection(panel, { rank: TRAINING_SECTION_RANK });

    commands.addCommand(TrainingCommandIDs.open, {
      label: args =>
        args.isLauncher ? trans.__('Training') : trans.__('Training jobs'),
      caption: trans.__('Launch distributed training and follow its jobs'),
      icon: args => (args.isPalette ? undefined : trainingIcon),
      execute: () => sidebar.reveal(panel)
    });

    commands.addCommand(TrainingCommandIDs.refresh, {
      label: trans.__('Refresh training jobs'),
      execute: () => panel.refresh()
    });

    commands.addCommand(TrainingCommandIDs.openJob, {
      label: trans.__('Open Training Job'),
      execute: args => {
        const id = String(args.id ?? '');
        const existing = tracker.find(w => w.content.jobId === id);
        if (existing) {
          shell.activateById(existing.id);
          void existing.content.refresh();
          return existing;
        }
        const content = new TrainingJobView({
          jobId: id,
          translator,
          openJob,
          editCopy: job => {
            panel.showForm(jobToForm(job));
            sidebar.reveal(panel);
          },
          openModel: version =>
            void commands.execute(CommandIDs.openModelTab, {
              project: version.project,
              name: version.model,
              version: version.version
            })
        });
        const widget = new MainAreaWidget({ content });
        widget.id = `cube-lab-training-job-${id}`;
        widget.addClass('cube-TJobTab');
        widget.title.label = id;
        widget.title.icon = trainingIcon;
        widget.title.closable = true;
        widget.toolbar.addItem(
          'refresh',
          new ToolbarButton({
            icon: refreshIcon,
            label: trans.__('Refresh'),
            tooltip: trans.__('Read the job, its log and metrics again'),
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
        command: TrainingCommandIDs.openJob,
        args: w => ({ id: w.content.jobId }),
        name: w => w.content.jobId
      });
    }

    commands.addCommand(TrainingCommandIDs.trainWithData, {
      label: trans.__('Train from a Dataset Version'),
      caption: trans.__('Open the training launch form with this data'),
      execute: args => {
        panel.showForm(
          dataForm({
            project: String(args.project ?? ''),
            dataset: String(args.dataset ?? ''),
            version: Number(args.version ?? 0),
            path: String(args.path ?? '')
          })
        );
        sidebar.reveal(panel);
      }
    });

    commands.addCommand(TrainingCommandIDs.trainFile, {
      label: trans.__('Train with cube-lab…'),
      caption: trans.__('Open the training launch form with this script'),
      icon: trainingIcon,
      isVisible: () => {
        const browser = browserFactory?.tracker.currentWidget;
        const items = browser ? Array.from(browser.selectedItems()) : [];
        return items.length === 1 && /\.(py|sh)$/.test(items[0].path);
      },
      execute: () => {
        const browser = browserFactory?.tracker.currentWidget;
        const item = browser ? browser.selectedItems().next().value : undefined;
        if (item) {
          panel.showForm({ script: local(item.path) });
          sidebar.reveal(panel);
        }
      }
    });
    if (browserFactory) {
      app.contextMenu.addItem({
        command: TrainingCommandIDs.trainFile,
        selector: '.jp-DirListing-item[data-isdir="false"]',
        rank: 10
      });
    }

    if (launcher) {
      launcher.add({
        command: TrainingCommandIDs.open,
        category: CATEGORY,
        rank: 3
      });
    }
    if (palette) {
      palette.addItem({ command: TrainingCommandIDs.open, category: CATEGORY });
      palette.addItem({
        command: TrainingCommandIDs.refresh,
        category: CATEGORY
      });
    }
  }
};
