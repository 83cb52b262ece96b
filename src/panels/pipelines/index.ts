/**
 * The pipelines plugin: the `.pipeline` editor (document widget), "New
 * Pipeline" in the launcher and the File menu, and the "Pipeline runs" side
 * panel.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, WidgetTracker } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { IMainMenu } from '@jupyterlab/mainmenu';
import { ITranslator } from '@jupyterlab/translation';

import { pipelineIcon, runsIcon } from '../../icons';
import { CATEGORY, CommandIDs, ICubeSidebar, PanelRanks } from '../../tokens';
import { createPipeline } from './create';
import { PipelineRunsPanel } from './runs';
import { PipelineDocument, PipelineEditorFactory } from './widget';

export { PipelineEditor, PipelineEditorFactory } from './widget';
export * as serializer from './serializer';
export * as graph from './graph';

/** The id of the Pipeline runs side panel (the left sidebar tab). */
export const RUNS_PANEL_ID = 'cube-lab-pipeline-runs-panel';

const FACTORY = 'cube-lab Pipeline Editor';
const FILE_TYPE = 'cube-lab-pipeline';

export const pipelinesPlugin: JupyterFrontEndPlugin<void> = {
  id: 'cube-lab:pipelines',
  description:
    'The cube-lab pipeline editor for .pipeline files and the pipeline runs panel.',
  autoStart: true,
  requires: [ICubeSidebar, ITranslator],
  optional: [
    ICommandPalette,
    ILauncher,
    IMainMenu,
    IDefaultFileBrowser,
    ILayoutRestorer,
    IDocumentManager
  ],
  activate: (
    app: JupyterFrontEnd,
    sidebar: ICubeSidebar,
    translator: ITranslator,
    palette: ICommandPalette | null,
    launcher: ILauncher | null,
    mainMenu: IMainMenu | null,
    browser: IDefaultFileBrowser | null,
    restorer: ILayoutRestorer | null,
    docManager: IDocumentManager | null
  ) => {
    const trans = translator.load('cube_lab');
    const { commands, docRegistry, serviceManager } = app;

    docRegistry.addFileType({
      name: FILE_TYPE,
      displayName: trans.__('Pipeline'),
      extensions: ['.pipeline'],
      mimeTypes: ['application/json'],
      contentType: 'file',
      fileFormat: 'text',
      icon: pipelineIcon
    });

    const factory = new PipelineEditorFactory({
      name: FACTORY,
      label: trans.__('Pipeline Editor'),
      fileTypes: [FILE_TYPE],
      defaultFor: [FILE_TYPE],
      modelName: 'text',
      translator,
      contents: serviceManager.contents,
      docManager: docManager ?? undefined
    });
    const tracker = new WidgetTracker<PipelineDocument>({
      namespace: 'cube-lab-pipeline'
    });
    factory.widgetCreated.connect((_, widget) => {
      widget.title.icon = pipelineIcon;
      widget.context.pathChanged.connect(() => void tracker.save(widget));
      void tracker.add(widget);
    });
    docRegistry.addWidgetFactory(factory);

    if (restorer) {
      void restorer.restore(tracker, {
        command: 'docmanager:open',
        args: w => ({ path: w.context.path, factory: FACTORY }),
        name: w => w.context.path
      });
    }

    commands.addCommand(CommandIDs.newPipeline, {
      label: args =>
        args.isPalette
          ? trans.__('New Pipeline')
          : args.isLauncher
            ? trans.__('Pipeline')
            : trans.__('Pipeline'),
      caption: trans.__('Create a new pipeline'),
      icon: args => (args.isPalette ? undefined : pipelineIcon),
      execute: async args => {
        const cwd =
          typeof args.cwd === 'string' ? args.cwd : (browser?.model.path ?? '');
        // Asks for the name and file name, unless given (scripts, tests).
        const path = await createPipeline({
          contents: serviceManager.contents,
          folder: cwd,
          trans,
          names: {
            name: typeof args.name === 'string' ? args.name : undefined,
            file: typeof args.file === 'string' ? args.file : undefined
          }
        });
        if (!path) {
          return;
        }
        return commands.execute('docmanager:open', {
          path,
          factory: FACTORY
        });
      }
    });

    const openRun = async (path: string, runId: string) => {
      const widget = (await commands.execute('docmanager:open', {
        path,
        factory: FACTORY
      })) as PipelineDocument | undefined;
      if (widget) {
        await widget.context.ready;
        await widget.content.openRun(runId);
      }
    };

    commands.addCommand(CommandIDs.openPipelineRun, {
      label: trans.__('Open Pipeline Run'),
      execute: args =>
        openRun(String(args.path ?? ''), String(args.runId ?? ''))
    });

    const runs = new PipelineRunsPanel({
      settings: sidebar.settings,
      translator,
      openRun: run => void openRun(run.pipeline_path, run.id)
    });
    runs.id = 'cube-lab-pipeline-runs';
    sidebar.addPanel(runs, {
      id: RUNS_PANEL_ID,
      rank: PanelRanks.pipelineRuns,
      icon: runsIcon,
      label: trans.__('Pipeline runs'),
      caption: trans.__('Pipeline runs: status, logs, re-run')
    });

    commands.addCommand(CommandIDs.openPipelineRuns, {
      label: trans.__('Pipeline runs'),
      caption: trans.__('Recent pipeline runs, their status and logs'),
      icon: args => (args.isPalette ? undefined : runsIcon),
      execute: () => sidebar.reveal(runs)
    });

    commands.addCommand(CommandIDs.refreshPipelineRuns, {
      label: trans.__('Refresh pipeline runs'),
      execute: () => runs.refresh()
    });

    if (launcher) {
      launcher.add({
        command: CommandIDs.newPipeline,
        category: CATEGORY,
        rank: 2
      });
    }
    if (mainMenu) {
      mainMenu.fileMenu.newMenu.addGroup(
        [{ command: CommandIDs.newPipeline }],
        30
      );
    }
    if (palette) {
      palette.addItem({ command: CommandIDs.newPipeline, category: CATEGORY });
      palette.addItem({
        command: CommandIDs.openPipelineRuns,
        category: CATEGORY
      });
      palette.addItem({
        command: CommandIDs.refreshPipelineRuns,
        category: CATEGORY
      });
    }
  }
};
