/**
 * The labeling plugin: the "Labeling" side panel (labeling projects and
 * their progress, datasets), the "New dataset" / "New labeling project" tab,
 * the main-area project view (progress per person and per label, assign,
 * pre-label, export) and the annotator (label, review).
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  ICommandPalette,
  MainAreaWidget,
  ReactWidget,
  WidgetTracker
} from '@jupyterlab/apputils';
import {
  IDefaultFileBrowser,
  IFileBrowserFactory
} from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { ITranslator } from '@jupyterlab/translation';
import { refreshIcon, ToolbarButton } from '@jupyterlab/ui-components';

import { labelingIcon } from '../../icons';
import { CATEGORY, ICubeSidebar, PanelRanks } from '../../tokens';
import { AnnotatorView } from './annotator';
import { LabelingFormMode, LabelingFormView } from './forms';
import { LabelingPanel } from './panel';
import { openForm } from '../shell';
import { LabelingProjectView } from './project';

export { AnnotatorView } from './annotator';
export { LabelingPanel } from './panel';
export { LabelingProjectView } from './project';
export { LabelingFormView } from './forms';
export { labelingIcon } from '../../icons';
export * as labelingGeometry from './geometry';
export * as labelingLogic from './logic';

/** The id of the Labeling side panel (the left sidebar tab). */
export const LABELING_PANEL_ID = 'cube-lab-labeling-panel';

export namespace LabelingCommandIDs {
  export const show = 'cube-lab:open-labeling';
  export const refresh = 'cube-lab:refresh-labeling';
  /** Args: project, name. */
  export const openProject = 'cube-lab:open-labeling-project';
  /** Args: project, name, mode ("annotate" | "review"). */
  export const annotate = 'cube-lab:open-annotator';
  export const newDataset = 'cube-lab:new-dataset';
  export const newProject = 'cube-lab:new-labeling-project';
  /** The forms' tab as it was (args: mode, "dataset" | "project"). */
  export const form = 'cube-lab:labeling-form';
}

function key(project: string, name: string): string {
  return `${encodeURIComponent(project)}-${encodeURIComponent(name)}`;
}

export const labelingPlugin: JupyterFrontEndPlugin<void> = {
  id: 'cube-lab:labeling',
  description:
    'cube-lab data labeling: datasets, labeling projects, the annotator, review and exports.',
  autoStart: true,
  requires: [ICubeSidebar, ITranslator],
  optional: [
    ICommandPalette,
    ILayoutRestorer,
    IDefaultFileBrowser,
    IFileBrowserFactory,
    ILauncher
  ],
  activate: (
    app: JupyterFrontEnd,
    sidebar: ICubeSidebar,
    translator: ITranslator,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    defaultBrowser: IDefaultFileBrowser | null,
    browserFactory: IFileBrowserFactory | null,
    launcher: ILauncher | null
  ) => {
    const trans = translator.load('cube_lab');
    const { commands, shell, serviceManager } = app;
    const projects = new WidgetTracker<MainAreaWidget<LabelingProjectView>>({
      namespace: 'cube-lab-labeling-project'
    });
    const annotators = new WidgetTracker<MainAreaWidget<AnnotatorView>>({
      namespace: 'cube-lab-annotator'
    });
    const forms = new WidgetTracker<MainAreaWidget<LabelingFormView>>({
      namespace: 'cube-lab-labeling-form'
    });

    const open = (
      p: { project: string; name: string },
      mode: LabelingPanel.OpenMode
    ) =>
      void commands.execute(
        mode === 'project'
          ? LabelingCommandIDs.openProject
          : LabelingCommandIDs.annotate,
        { project: p.project, name: p.name, mode }
      );

    /** The folder selected in the file browser (or of the selected file). */
    const currentFolder = (): string | null => {
      const browser = browserFactory?.tracker.currentWidget ?? defaultBrowser;
      if (!browser) {
        return null;
      }
      const local = (path: string) => serviceManager.contents.localPath(path);
      // A folder of images or a CSV / JSONL file: either may be selected.
      const item = browser.selectedItems().next().value;
      if (item) {
        return local(item.path);
      }
      return local(browser.model.path) || null;
    };

    const panel = new LabelingPanel({
      settings: sidebar.settings,
      translator,
      open,
      newForm: mode =>
        void commands.execute(
          mode === 'dataset'
            ? LabelingCommandIDs.newDataset
            : LabelingCommandIDs.newProject
        )
    });
    panel.id = 'cube-lab-labeling';
    sidebar.addPanel(panel, {
      id: LABELING_PANEL_ID,
      rank: PanelRanks.labeling,
      icon: labelingIcon,
      label: trans.__('Labeling'),
      caption: trans.__('Datasets and labeling projects')
    });

    /** The one tab of the labeling forms, showing `mode`'s. */
    const showForm = (mode: LabelingFormMode) => {
      const existing = openForm(forms);
      if (existing) {
        existing.content.showForm(mode);
        shell.activateById(existing.id);
        void forms.save(existing);
        return existing;
      }
      const content: LabelingFormView = new LabelingFormView({
        translator,
        mode,
        created: project => {
          widget.dispose();
          void panel.refresh();
          sidebar.reveal(panel);
          open(project, 'project');
        },
        datasetCreated: () => {
          void panel.refresh();
          void forms.save(widget);
        },
        close: () => widget.dispose(),
        currentFolder
      });
      const widget = new MainAreaWidget({ content });
      widget.id = 'cube-lab-labeling-new';
      widget.addClass('cube-LTab');
      widget.title.icon = labelingIcon;
      widget.title.closable = true;
      void forms.add(widget);
      shell.add(widget, 'main');
      shell.activateById(widget.id);
      return widget;
    };

    const changed = () => {
      void panel.refresh();
      projects.forEach(w => void w.content.refresh());
    };

    commands.addCommand(LabelingCommandIDs.show, {
      label: trans.__('Labeling'),
      caption: trans.__('Datasets and labeling projects'),
      icon: args => (args.isPalette ? undefined : labelingIcon),
      execute: () => sidebar.reveal(panel)
    });
    commands.addCommand(LabelingCommandIDs.refresh, {
      label: trans.__('Refresh labeling projects'),
      execute: () => panel.refresh()
    });
    commands.addCommand(LabelingCommandIDs.newDataset, {
      label: args =>
        args.isPalette ? trans.__('New Dataset…') : trans.__('New dataset'),
      caption: trans.__('Register a folder of images or a file of texts'),
      execute: () => showForm('dataset')
    });
    commands.addCommand(LabelingCommandIDs.newProject, {
      label: args =>
        args.isPalette
          ? trans.__('New Labeling Project…')
          : trans.__('New labeling project'),
      caption: trans.__('Start labeling a dataset'),
      execute: () => showForm('project')
    });

    commands.addCommand(LabelingCommandIDs.form, {
      label: trans.__('Labeling Forms'),
      execute: args => showForm(args.mode === 'project' ? 'project' : 'dataset')
    });

    const addTab = (
      widget: MainAreaWidget<ReactWidget>,
      refresh: () => void,
      tooltip: string
    ) => {
      widget.title.icon = labelingIcon;
      widget.title.closable = true;
      widget.toolbar.addItem(
        'refresh',
        new ToolbarButton({
          icon: refreshIcon,
          label: trans.__('Refresh'),
          tooltip,
          onClick: refresh
        })
      );
      shell.add(widget, 'main');
      shell.activateById(widget.id);
    };

    commands.addCommand(LabelingCommandIDs.openProject, {
      label: trans.__('Open Labeling Project'),
      execute: args => {
        const project = String(args.project ?? '');
        const name = String(args.name ?? '');
        const existing = projects.find(
          w => w.content.project === project && w.content.name === name
        );
        if (existing) {
          shell.activateById(existing.id);
          void existing.content.refresh();
          return existing;
        }
        const content = new LabelingProjectView({
          project,
          name,
          translator,
          open,
          changed: () => void panel.refresh(),
          trainFrom: data =>
            void commands.execute('cube-lab:train-with-data', { ...data })
        });
        const widget = new MainAreaWidget({ content });
        widget.id = `cube-lab-labeling-${key(project, name)}`;
        widget.addClass('cube-LTab');
        widget.title.label = name;
        void projects.add(widget);
        addTab(
          widget,
          () => void content.refresh(),
          trans.__('Read the project and its progress again')
        );
        return widget;
      }
    });

    commands.addCommand(LabelingCommandIDs.annotate, {
      label: args =>
        args.mode === 'review'
          ? trans.__('Review Labeling Tasks')
          : trans.__('Label Tasks'),
      execute: args => {
        const project = String(args.project ?? '');
        const name = String(args.name ?? '');
        const mode = args.mode === 'review' ? 'review' : 'annotate';
        const existing = annotators.find(
          w =>
            w.content.project === project &&
            w.content.name === name &&
            w.content.mode === mode
        );
        if (existing) {
          shell.activateById(existing.id);
          return existing;
        }
        const content = new AnnotatorView({
          project,
          name,
          mode,
          translator,
          changed
        });
        const widget = new MainAreaWidget({ content });
        widget.id = `cube-lab-annotator-${mode}-${key(project, name)}`;
        widget.addClass('cube-LTab');
        widget.title.label =
          mode === 'review'
            ? trans.__('Review %1', name)
            : trans.__('Label %1', name);
        void annotators.add(widget);
        addTab(
          widget,
          () => void content.refresh(),
          trans.__('Load the project and your queue again')
        );
        return widget;
      }
    });

    if (restorer) {
      void restorer.restore(projects, {
        command: LabelingCommandIDs.openProject,
        args: w => ({ project: w.content.project, name: w.content.name }),
        name: w => `${w.content.project}/${w.content.name}`
      });
      void restorer.restore(annotators, {
        command: LabelingCommandIDs.annotate,
        args: w => ({
          project: w.content.project,
          name: w.content.name,
          mode: w.content.mode
        }),
        name: w => `${w.content.mode}:${w.content.project}/${w.content.name}`
      });
      void restorer.restore(forms, {
        command: LabelingCommandIDs.form,
        args: w => ({ mode: w.content.mode }),
        name: () => 'new'
      });
    }

    if (launcher) {
      launcher.add({
        command: LabelingCommandIDs.show,
        args: { isLauncher: true },
        category: CATEGORY,
        rank: 6
      });
    }
    if (palette) {
      for (const command of [
        LabelingCommandIDs.show,
        LabelingCommandIDs.refresh,
        LabelingCommandIDs.newDataset,
        LabelingCommandIDs.newProject
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
