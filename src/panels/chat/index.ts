/**
 * The Chat plugin: one "Chat" tab in the main area (conversations, targets,
 * streaming answers, compare, feedback, preference export), opened from the
 * launcher, the command palette, and a deployment's view.
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
import { ILauncher } from '@jupyterlab/launcher';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ITranslator } from '@jupyterlab/translation';

import { CATEGORY } from '../../tokens';
import { chatIcon } from './icon';
import { ChatView } from './view';

export { ChatView } from './view';
export { chatIcon } from './icon';
export * as chatLogic from './logic';
export { openaiSnippet } from './snippet';

export namespace ChatCommandIDs {
  /** Args (optional): project, deployment (a deployment to chat with). */
  export const open = 'cube-lab:open-chat';
}

export const chatPlugin: JupyterFrontEndPlugin<void> = {
  id: 'cube-lab:chat',
  description:
    'cube-lab chat: talk to the project’s LLM deployments (or any OpenAI-compatible server), compare them, give feedback, export it as preference data.',
  autoStart: true,
  requires: [ITranslator],
  optional: [IRenderMimeRegistry, ICommandPalette, ILayoutRestorer, ILauncher],
  activate: (
    app: JupyterFrontEnd,
    translator: ITranslator,
    rendermime: IRenderMimeRegistry | null,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    launcher: ILauncher | null
  ) => {
    const trans = translator.load('cube_lab');
    const { commands, shell } = app;
    const tracker = new WidgetTracker<MainAreaWidget<ChatView>>({
      namespace: 'cube-lab-chat'
    });

    commands.addCommand(ChatCommandIDs.open, {
      label: args =>
        args.deployment
          ? trans.__('Chat with %1', String(args.deployment))
          : trans.__('Chat'),
      caption: trans.__(
        'Chat with a language model deployment or any OpenAI-compatible server'
      ),
      icon: args => (args.isPalette ? undefined : chatIcon),
      execute: args => {
        const project = args.project ? String(args.project) : '';
        const deployment = args.deployment ? String(args.deployment) : '';
        const kb = args.knowledgeBase ? String(args.knowledgeBase) : '';
        const existing = tracker.find(w => !w.isDisposed && w.isAttached);
        if (existing) {
          shell.activateById(existing.id);
          if (deployment || kb) {
            void existing.content.chatWith(project, deployment, kb);
          }
          return existing;
        }
        tracker.forEach(w => w.dispose()); // restored but not placed: stale
        const content = new ChatView({
          translator,
          rendermime,
          project: project || undefined,
          deployment: deployment || undefined,
          knowledgeBase: kb || undefined,
          openPath: path => void commands.execute('docmanager:open', { path })
        });
        const widget = new MainAreaWidget({ content });
        widget.id = 'cube-lab-chat';
        widget.addClass('cube-ChatTab');
        widget.title.label = trans.__('Chat');
        widget.title.caption = trans.__('Chat with language models');
        widget.title.icon = chatIcon;
        widget.title.closable = true;
        void tracker.add(widget);
        shell.add(widget, 'main');
        shell.activateById(widget.id);
        return widget;
      }
    });

    if (restorer) {
      void restorer.restore(tracker, {
        command: ChatCommandIDs.open,
        args: w => ({ project: w.content.project }),
        name: () => 'chat'
      });
    }
    if (launcher) {
      launcher.add({
        command: ChatCommandIDs.open,
        args: { isLauncher: true },
        category: CATEGORY,
        rank: 6
      });
    }
    if (palette) {
      palette.addItem({
        command: ChatCommandIDs.open,
        args: { isPalette: true },
        category: CATEGORY
      });
    }
  }
};
