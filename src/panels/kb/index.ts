/**
 * The knowledge-base plugin: the "Knowledge bases" side panel (the list,
 * create, delete) and a main-area view per knowledge base (sources, ingest
 * progress, retrieval test, questions with citations).
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
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { ITranslator } from '@jupyterlab/translation';
import { refreshIcon, ToolbarButton } from '@jupyterlab/ui-components';

import { CATEGORY, ICubeSidebar } from '../../tokens';
import { kbIcon } from './icon';
import { KnowledgeBasesPanel } from './panel';
import { KnowledgeBaseView } from './view';

/** The Chat panel's command (src/panels/chat): asks a knowledge base there. */
const CHAT_COMMAND = 'cube-lab:open-chat';

export { KnowledgeBasesPanel } from './panel';
export { KnowledgeBaseView } from './view';
export { kbIcon } from './icon';
export * as kbLogic from './logic';

/** The id of the Knowledge bases side panel (the left sidebar tab). */
export const KB_PANEL_ID = 'cube-lab-kb-panel';

/** After Labeling (650) in the left sidebar. */
export const KB_PANEL_RANK = 660;

export namespace KbCommandIDs {
  /** Args: project, name. */
  export const open = 'cube-lab:open-knowledge-base';
  export const show = 'cube-lab:open-knowledge-bases';
  export const create = 'cube-lab:new-knowledge-base';
}

export const kbPlugin: JupyterFrontEndPlugin<void> = {
  id: 'cube-lab:knowledge-bases',
  description:
    'cube-lab knowledge bases: index a project’s documents, test retrieval, ask with citations.',
  autoStart: true,
  requires: [ICubeSidebar, ITranslator],
  optional: [ICommandPalette, ILayoutRestorer, IDefaultFileBrowser],
  activate: (
    app: JupyterFrontEnd,
    sidebar: ICubeSidebar,
    translator: ITranslator,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    browser: IDefaultFileBrowser | null
  ) => {
    const trans = translator.load('cube_lab');
    const { commands, shell } = app;
    const tracker = new WidgetTracker<MainAreaWidget<KnowledgeBaseView>>({
      namespace: 'cube-lab-kb'
    });
    const find = (project: string, name: string) =>
      tracker.find(
        w => w.content.project === project && w.content.name === name
      );

    const panel = new KnowledgeBasesPanel({
      settings: sidebar.settings,
      translator,
      open: kb =>
        void commands.execute(KbCommandIDs.open, {
          project: kb.project,
          name: kb.name
        }),
      deleted: kb => find(kb.project, kb.name)?.content.markDeleted()
    });
    panel.id = 'cube-lab-knowledge-bases';
    sidebar.addPanel(panel, {
      id: KB_PANEL_ID,
      rank: KB_PANEL_RANK,
      icon: kbIcon,
      label: trans.__('Knowledge bases'),
      caption: trans.__('Documents indexed for search and chat with citations')
    });

    commands.addCommand(KbCommandIDs.show, {
      label: trans.__('Knowledge bases'),
      caption: trans.__('Documents indexed for search and chat with citations'),
      icon: args => (args.isPalette ? undefined : kbIcon),
      execute: () => sidebar.reveal(panel)
    });

    commands.addCommand(KbCommandIDs.create, {
      label: trans.__('New knowledge base'),
      execute: () => {
        sidebar.reveal(panel);
        panel.showCreate();
      }
    });

    const selectedFiles = browser
      ? () => Array.from(browser.selectedItems()).map(item => item.path)
      : undefined;

    commands.addCommand(KbCommandIDs.open, {
      label: trans.__('Open Knowledge Base'),
      execute: args => {
        const project = String(args.project ?? '');
        const name = String(args.name ?? '');
        const existing = find(project, name);
        if (existing && existing.content.deleted) {
          existing.dispose(); // made again under the same name: a fresh view
        } else if (existing) {
          shell.activateById(existing.id);
          void existing.content.refresh();
          return existing;
        }
        const content = new KnowledgeBaseView({
          project,
          name,
          translator,
          selectedFiles,
          changed: () => void panel.refresh(),
          openPath: path => void commands.execute('docmanager:open', { path }),
          // the Chat panel, when its plugin is there
          openChat: commands.hasCommand(CHAT_COMMAND)
            ? () =>
                void commands.execute(CHAT_COMMAND, {
                  project,
                  knowledgeBase: name
                })
            : undefined
        });
        const widget = new MainAreaWidget({ content });
        widget.id = `cube-lab-kb-${encodeURIComponent(project)}-${encodeURIComponent(name)}`;
        widget.addClass('cube-KbTab');
        widget.title.label = name;
        widget.title.caption = trans.__(
          'Knowledge base %1 (project %2)',
          name,
          project
        );
        widget.title.icon = kbIcon;
        widget.title.closable = true;
        widget.toolbar.addItem(
          'refresh',
          new ToolbarButton({
            icon: refreshIcon,
            label: trans.__('Refresh'),
            tooltip: trans.__('Read the knowledge base and its sources again'),
            onClick: () => void content.refresh(true)
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
        command: KbCommandIDs.open,
        args: w => ({ project: w.content.project, name: w.content.name }),
        name: w => `${w.content.project}/${w.content.name}`
      });
    }
    if (palette) {
      for (const command of [KbCommandIDs.show, KbCommandIDs.create]) {
        palette.addItem({
          command,
          args: { isPalette: true },
          category: CATEGORY
        });
      }
    }
  }
};
