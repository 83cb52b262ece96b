/**
 * The labeling plugin: the "Labeling" section of the cube-lab sidebar
 * (datasets, labeling projects and their progress, the create forms), the
 * main-area project view (progress per person and per label, assign,
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
import { ITranslator } from '@jupyterlab/translation';
import { LabIcon, refreshIcon, ToolbarButton } from '@jupyterlab/ui-components';

import { CATEGORY, ICubeSidebar } from '../../tokens';
import { AnnotatorView } from './annotator';
import { LabelingPanel } from './panel';
import { LabelingProjectView } from './project';

export { AnnotatorView } from './annotator';
export { LabelingPanel } from './panel';
export { LabelingProjectView } from './project';
export * as labelingGeometry from './geometry';
export * as labelingLogic from './logic';

/** Last: the newest capability, after Tuning. */
export const LABELING_SECTION_RANK = 400;

export namespace LabelingCommandIDs {
  export const show = 'cube-lab:open-labeling';
  export const refresh = 'cube-lab:refresh-labeling';
  /** Args: project, name. */
  export const openProject = 'cube-lab:open-labeling-project';
  /** Args: project, name, mode ("annotate" | "review"). */
  export const annotate = 'cube-lab:open-annotator';
  export const newDataset = 'cube-lab:new-dataset';
  export const newProject = 'cube-lab:new-labeling-project';
}

/** A tag with a box: labeling. */
export const labelingIcon = new LabIcon({
  name: 'cube-lab:labeling',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">' +
    '<g class="jp-icon3" fill="#616161">' +
    '<path d="M3 3h8v2H5v6H3zM21 21h-8v-2h6v-6h2z"/>' +
    '<path d="M8 8h8v8H8zm2 2v4h4v-4z"/>' +
    '</g></svg>'
});

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
    IFileBrowserFactory
  ],
  activate: (
    app: JupyterFrontEnd,
    sidebar: ICubeSidebar,
    translator: ITranslator,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    defaultBrowser: IDefaultFileBrowser | null,
    browserFactory: IFileBrowserFactory | null
  ) => {
    const trans = translator.load('cube_lab');
    const { commands, shell, serviceManager } = app;
    const projects = new WidgetTracker<MainAreaWidget<LabelingProjectView>>({
      namespace: 'cube-lab-labeling-project'
    });
    const annotators = new WidgetTracker<MainAreaWidget<AnnotatorView>>({
      namespace: 'cube-lab-annotator'
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
      currentFolder
    });
    panel.id = 'cube-lab-labeling';
    sidebar.addSection(panel, {
      rank: LABELING_SECTION_RANK,
      collapsed: true
    });

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
      label: trans.__('New Dataset…'),
      execute: () => {
        sidebar.reveal(panel);
        panel.showForm('dataset');
      }
    });
    commands.addCommand(LabelingCommandIDs.newProject, {
      label: trans.__('New Labeling Project…'),
      execute: () => {
        sidebar.reveal(panel);
        panel.showForm('project');
      }
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
    }

    if (palette) {
      for (const command of [
        LabelingCommandIDs.show,
        LabelingCommandIDs.refresh,
        LabelingCommandIDs.newDataset,
        LabelingCommandIDs.newProject
      ]) {
        palette.addItem({ command, category: CATEGORY });
      }
    }
  }
};
