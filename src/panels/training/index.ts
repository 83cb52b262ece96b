/**
 * The training plugin: the "Training" side panel (the job list), the
 * "Launch training" tab (the launch form), main-area job views (live logs per
 * rank, metric charts, stop / re-run / register model) and "Train with
 * cube-lab" on Python files.
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
import {
  FileDialog,
  IDefaultFileBrowser,
  IFileBrowserFactory
} from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { refreshIcon, ToolbarButton } from '@jupyterlab/ui-components';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';

import { getTrainingJob, TrainingJob } from '../../api';
import { trainingIcon } from '../../icons';
import { CATEGORY, CommandIDs, ICubeSidebar, PanelRanks } from '../../tokens';
import { LaunchFormView } from './form';
import { FinetuneFormView } from './finetune-form';
import { finetuneJobToForm, IFinetuneForm } from './finetune-logic';
import { TrainingJobView } from './job';
import {
  basename,
  dataForm,
  FRAMEWORKS,
  ILaunchForm,
  jobToForm
} from './logic';
import { TrainingPanel } from './panel';
import { addFormTab, lastDocument, openForm } from '../shell';

export { TrainingPanel } from './panel';
export { TrainingJobView } from './job';
export { LaunchFormView } from './form';
export { FinetuneFormView } from './finetune-form';
export * as trainingLogic from './logic';
export { trainingIcon } from '../../icons';

/** The id of the Training side panel (the left sidebar tab). */
export const TRAINING_PANEL_ID = 'cube-lab-training-panel';

export namespace TrainingCommandIDs {
  export const open = 'cube-lab:open-training';
  export const openJob = 'cube-lab:open-training-job';
  export const refresh = 'cube-lab:refresh-training-jobs';
  export const trainFile = 'cube-lab:train-file';
  /** The "Launch training" tab; args: any launch form field (script, args...). */
  export const launch = 'cube-lab:launch-training';
  /** The launch form with a dataset version as its data (args: project, dataset, version, path). */
  export const trainWithData = 'cube-lab:train-with-data';
  /** The "Fine-tune" tab (a language model with TRL and PEFT). */
  export const finetune = 'cube-lab:finetune';
}

/** A job tab's title: the job's name (its script's, unless named). */
export function jobTabLabel(
  job: Pick<TrainingJob, 'name' | 'command'> | { name?: string }
): string {
  const name = (job.name ?? '').trim();
  if (name) {
    return name;
  }
  const command = 'command' in job ? job.command : '';
  const script = command.split(/\s+/).find(w => /\.(py|sh)$/.test(w));
  return script ? basename(script) : '';
}

/** The launch form fields among a command's args (strings only). */
export function formFromArgs(
  args: ReadonlyPartialJSONObject
): Partial<ILaunchForm> {
  const fill: Partial<ILaunchForm> = {};
  const keys: (keyof ILaunchForm)[] = [
    'script',
    'args',
    'workers',
    'nproc',
    'gpus',
    'gpuType',
    'env',
    'project',
    'name'
  ];
  for (const key of keys) {
    const value = args[key];
    if (typeof value === 'string') {
      (fill as Record<string, string>)[key] = value;
    }
  }
  const framework = args.framework;
  if (
    typeof framework === 'string' &&
    (FRAMEWORKS as string[]).includes(framework)
  ) {
    fill.framework = framework as ILaunchForm['framework'];
  }
  return fill;
}

function jobCaption(
  job: Pick<TrainingJob, 'id' | 'command'>,
  trans: TranslationBundle
): string {
  return job.command
    ? trans.__('Training job %1: %2', job.id, job.command)
    : trans.__('Training job %1', job.id);
}

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

    const openJob = (job: Pick<TrainingJob, 'id'> & Partial<TrainingJob>) =>
      void commands.execute(TrainingCommandIDs.openJob, {
        id: job.id,
        ...(job.name ? { name: jobTabLabel(job as TrainingJob) } : {}),
        ...(job.command ? { command: job.command } : {})
      });

    const currentDocument = lastDocument(shell);
    /** The file open in the main area, else the one selected in the file browser. */
    const pickCurrent = (): string | null => {
      const current = currentDocument();
      if (current) {
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

    /** What the job tabs show, as the server gave it (their titles). */
    const shown = new WeakMap<
      MainAreaWidget<TrainingJobView>,
      { name: string; command: string }
    >();
    const forms = new WidgetTracker<MainAreaWidget<LaunchFormView>>({
      namespace: 'cube-lab-training-form'
    });

    const panel = new TrainingPanel({
      settings: sidebar.settings,
      translator,
      openJob,
      newJob: () => void commands.execute(TrainingCommandIDs.launch),
      finetune: () => void commands.execute(TrainingCommandIDs.finetune)
    });
    panel.id = 'cube-lab-training';
    sidebar.addPanel(panel, {
      id: TRAINING_PANEL_ID,
      rank: PanelRanks.training,
      icon: trainingIcon,
      label: trans.__('Training'),
      caption: trans.__('Training jobs')
    });

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

    /** The one "Launch training" tab, filled with `fill`. */
    const launch = (fill: Partial<ILaunchForm>) => {
      const existing = openForm(forms);
      if (existing) {
        existing.content.fill(fill);
        shell.activateById(existing.id);
        existing.content.focusScript();
        return existing;
      }
      const content: LaunchFormView = new LaunchFormView({
        translator,
        fill,
        launched: job => {
          openJob(job);
          widget.dispose();
          void panel.refresh();
          sidebar.reveal(panel);
        },
        close: () => widget.dispose(),
        pickCurrent,
        browse
      });
      const widget = addFormTab(shell, forms, content, {
        id: 'cube-lab-training-launch',
        icon: trainingIcon
      });
      content.focusScript();
      return widget;
    };

    commands.addCommand(TrainingCommandIDs.launch, {
      label: args =>
        args.isPalette
          ? trans.__('Launch Training…')
          : trans.__('Launch training'),
      caption: trans.__('Open the training launch form'),
      icon: args => (args.isPalette ? undefined : trainingIcon),
      execute: args => launch(formFromArgs(args))
    });

    const finetuneForms = new WidgetTracker<MainAreaWidget<FinetuneFormView>>({
      namespace: 'cube-lab-finetune-form'
    });
    /** The one "Fine-tune" tab, filled with `fill` when given. */
    const finetune = (fill?: IFinetuneForm) => {
      const existing = openForm(finetuneForms);
      if (existing) {
        if (fill) {
          existing.content.fill(fill);
        }
        shell.activateById(existing.id);
        return existing;
      }
      const content: FinetuneFormView = new FinetuneFormView({
        translator,
        fill,
        launched: job => {
          openJob(job);
          widget.dispose();
          void panel.refresh();
          sidebar.reveal(panel);
        },
        close: () => widget.dispose()
      });
      const widget = addFormTab(shell, finetuneForms, content, {
        id: 'cube-lab-finetune',
        icon: trainingIcon
      });
      return widget;
    };

    commands.addCommand(TrainingCommandIDs.finetune, {
      label: args =>
        args.isPalette
          ? trans.__('Fine-tune a Language Model…')
          : trans.__('Fine-tune'),
      caption: trans.__('Open the fine-tune form'),
      icon: args => (args.isPalette ? undefined : trainingIcon),
      execute: () => finetune()
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
            const filled = finetuneJobToForm(job);
            void (filled ? finetune(filled) : launch(jobToForm(job)));
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
        // Titled by the job's name; read from the server when not given.
        const named = typeof args.name === 'string' ? args.name : '';
        const command = typeof args.command === 'string' ? args.command : '';
        widget.title.label = named || trans.__('Training job');
        widget.title.caption = jobCaption({ id, command }, trans);
        if (named && command) {
          shown.set(widget, { name: named, command });
        } else {
          getTrainingJob(id)
            .then(job => {
              widget.title.label = jobTabLabel(job) || job.id;
              widget.title.caption = jobCaption(job, trans);
              shown.set(widget, {
                name: widget.title.label,
                command: job.command
              });
              void tracker.save(widget);
            })
            .catch(() => {
              widget.title.label = named || id;
            });
        }
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
        args: w => {
          const job = w.content.job;
          const known = job
            ? { name: jobTabLabel(job), command: job.command }
            : shown.get(w);
          return known
            ? { id: w.content.jobId, ...known }
            : { id: w.content.jobId };
        },
        name: w => w.content.jobId
      });
      void restorer.restore(finetuneForms, {
        command: TrainingCommandIDs.finetune,
        name: () => 'finetune'
      });
      void restorer.restore(forms, {
        command: TrainingCommandIDs.launch,
        args: w => ({ ...w.content.form }),
        name: () => 'launch'
      });
    }

    commands.addCommand(TrainingCommandIDs.trainWithData, {
      label: trans.__('Train from a Dataset Version'),
      caption: trans.__('Open the training launch form with this data'),
      execute: args =>
        launch(
          dataForm({
            project: String(args.project ?? ''),
            dataset: String(args.dataset ?? ''),
            version: Number(args.version ?? 0),
            path: String(args.path ?? '')
          })
        )
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
          launch({ script: local(item.path) });
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
        args: { isLauncher: true },
        category: CATEGORY,
        rank: 3
      });
    }
    if (palette) {
      for (const command of [
        TrainingCommandIDs.open,
        TrainingCommandIDs.launch,
        TrainingCommandIDs.finetune
      ]) {
        palette.addItem({
          command,
          args: { isPalette: true },
          category: CATEGORY
        });
      }
      palette.addItem({
        command: TrainingCommandIDs.refresh,
        category: CATEGORY
      });
    }
  }
};
