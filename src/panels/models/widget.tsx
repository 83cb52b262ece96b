/**
 * The Models panel: a React widget that polls the registry while visible.
 * Used as the list of the "Models" side panel and in main-area model tabs.
 */
import {
  Clipboard,
  Dialog,
  InputDialog,
  Notification,
  ReactWidget,
  showDialog
} from '@jupyterlab/apputils';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { refreshIcon, Toolbar, ToolbarButton } from '@jupyterlab/ui-components';
import { CommandRegistry } from '@lumino/commands';
import { Message } from '@lumino/messaging';
import { Debouncer, Poll } from '@lumino/polling';
import { Signal } from '@lumino/signaling';
import * as React from 'react';

import {
  deleteAlias,
  deleteModel,
  deleteVersion,
  describeError,
  downloadUrl,
  Model,
  ModelVersion,
  patchModel,
  patchVersion,
  setAlias
} from '../../api';
import { ICubeSettings } from '../../tokens';
import { validateAlias } from '../../validate';
import { ModelsModel, ModelsRoute } from './model';
import { IModelsActions, ModelsView } from './view';

/** The longest interval the poll backs off to after failures. */
const MAX_BACKOFF_MS = 2 * 60 * 1000;
/** Registered by the deployments plugin (src/panels/deployments). */
const DEPLOY_COMMAND = 'cube-lab:deploy-model';

export class ModelsPanel extends ReactWidget {
  constructor(options: ModelsPanel.IOptions) {
    super();
    this.addClass('cube-ModelsPanel');
    this._settings = options.settings;
    this._commands = options.commands;
    this._trans = options.translator.load('cube_lab');
    this._openInTab = options.openInTab;
    this.model = new ModelsModel(options.route);

    this.title.label = this._trans.__('Models');
    this.title.caption = this._trans.__('Model registry');

    this.toolbar = new Toolbar();
    this.toolbar.addItem(
      'refresh',
      new ToolbarButton({
        icon: refreshIcon,
        tooltip: this._trans.__('Refresh models'),
        onClick: () => this.refresh()
      })
    );

    this._poll = new Poll({
      auto: false,
      factory: () => this.model.refresh(),
      frequency: {
        interval: this._settings.refreshInterval,
        backoff: true,
        max: MAX_BACKOFF_MS
      },
      name: 'cube-lab:models',
      standby: () => !this.isVisible || 'when-hidden'
    });
    this._settings.changed.connect(this._onSettingsChanged, this);

    this._debouncer = new Debouncer(() => this._poll.refresh(), 250);
    this.model.invalidated.connect(this._onInvalidated, this);

    this._actions = this._makeActions();
  }

  readonly model: ModelsModel;

  /** The toolbar shown in the side panel's header. */
  readonly toolbar: Toolbar;

  /** Fetch now (and ask who I am again: projects may have changed). */
  refresh(): Promise<void> {
    this.model.resetIdentity();
    return this._poll.refresh();
  }

  /** Go to a route and fetch its data. */
  navigate(route: ModelsRoute): void {
    this.model.navigate(route);
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._settings.changed.disconnect(this._onSettingsChanged, this);
    this._debouncer.dispose();
    this._poll.dispose();
    Signal.clearData(this);
    super.dispose();
  }

  protected render(): JSX.Element {
    return (
      <ModelsView
        model={this.model}
        actions={this._actions}
        trans={this._trans}
      />
    );
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._wake();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (this.isVisible) {
      this._wake();
    }
  }

  private _wake(): void {
    if (!this._started) {
      this._started = true;
      void this._poll.start();
    } else {
      void this._poll.refresh();
    }
  }

  private _onInvalidated(): void {
    // Typing in the search box is debounced; navigation is immediate.
    if (this.model.state.route.kind === 'list') {
      void this._debouncer.invoke();
    } else {
      void this._poll.refresh();
    }
  }

  private _onSettingsChanged(): void {
    this._poll.frequency = {
      ...this._poll.frequency,
      interval: this._settings.refreshInterval
    };
  }

  private _makeActions(): IModelsActions {
    const trans = this._trans;
    const run = async (what: string, action: () => Promise<unknown>) => {
      try {
        await action();
        return true;
      } catch (reason) {
        await reportError(trans, what, reason);
        return false;
      } finally {
        void this._poll.refresh();
      }
    };
    const actions: IModelsActions = {
      // With `openInTab` (the side panel) this view stays a list and opens
      // a model or a version in a main-area tab.
      navigate: route =>
        this._openInTab && route.kind !== 'list'
          ? this._openInTab(route)
          : this.navigate(route),
      refresh: () => void this.refresh(),
      openPath: path => {
        void this._commands
          .execute('docmanager:open', { path })
          .catch(reason =>
            reportError(trans, trans.__('Cannot open %1', path), reason)
          );
      },
      copy: (text, what) => {
        Clipboard.copyToSystem(text);
        Notification.info(trans.__('%1 copied to the clipboard.', what), {
          autoClose: 2000
        });
      },
      downloadUrl: v => downloadUrl(v.project, v.model, v.version),
      // the serving plugin registers the command and shows the dialog
      canDeploy: () => this._commands.hasCommand(DEPLOY_COMMAND),
      deploy: v =>
        void this._commands
          .execute(DEPLOY_COMMAND, {
            project: v.project,
            name: v.model,
            version: v.version,
            flavor: v.flavor
          })
          .catch(reason =>
            reportError(trans, trans.__('Cannot deploy'), reason)
          ),
      setAlias: async (v: ModelVersion) => {
        const result = await InputDialog.getText({
          title: trans.__('Set an alias for %1 v%2', v.model, v.version),
          label: trans.__(
            'Alias (e.g. production, staging). An alias points at one version; setting it moves it here.'
          ),
          placeholder: 'production',
          okLabel: trans.__('Set alias'),
          cancelLabel: trans.__('Cancel')
        });
        if (!result.button.accept || result.value === null) {
          return;
        }
        const alias = result.value.trim();
        const problem = validateAlias(alias, trans);
        if (problem) {
          await reportError(
            trans,
            trans.__('Cannot set alias'),
            new Error(problem)
          );
          return;
        }
        const current = this.model.state.model;
        const expected =
          current && current.name === v.model && current.project === v.project
            ? (current.aliases?.[alias] ?? null)
            : undefined;
        const ok = await run(trans.__('Cannot set alias "%1"', alias), () =>
          setAlias(v.project, v.model, alias, v.version, expected)
        );
        if (ok) {
          Notification.success(
            trans.__(
              'Alias "%1" now points at %2 v%3.',
              alias,
              v.model,
              v.version
            ),
            { autoClose: 4000 }
          );
        }
      },
      removeAlias: async (project, name, alias) => {
        const answer = await showDialog({
          title: trans.__('Remove alias "%1"?', alias),
          body: trans.__(
            'Code that loads %1@%2 will stop working until the alias is set again. The version itself is kept.',
            name,
            alias
          ),
          buttons: [
            Dialog.cancelButton({ label: trans.__('Cancel') }),
            Dialog.warnButton({ label: trans.__('Remove') })
          ]
        });
        if (answer.button.accept) {
          await run(trans.__('Cannot remove alias "%1"', alias), () =>
            deleteAlias(project, name, alias)
          );
        }
      },
      setVersionArchived: async (v, archived) => {
        await run(
          archived ? trans.__('Cannot archive') : trans.__('Cannot unarchive'),
          () => patchVersion(v.project, v.model, v.version, { archived })
        );
      },
      deleteVersion: async v => {
        const answer = await showDialog({
          title: trans.__('Delete %1 v%2?', v.model, v.version),
          body: trans.__(
            'The version, its metrics and its stored artifact are removed. This cannot be undone.'
          ),
          buttons: [
            Dialog.cancelButton({ label: trans.__('Cancel') }),
            Dialog.warnButton({ label: trans.__('Delete') })
          ]
        });
        if (!answer.button.accept) {
          return;
        }
        const ok = await run(trans.__('Cannot delete the version'), () =>
          deleteVersion(v.project, v.model, v.version)
        );
        if (ok) {
          this.navigate({ kind: 'model', project: v.project, name: v.model });
          Notification.success(
            trans.__('Deleted %1 v%2.', v.model, v.version),
            { autoClose: 4000 }
          );
        }
      },
      setModelArchived: async (m: Model, archived) => {
        await run(
          archived ? trans.__('Cannot archive') : trans.__('Cannot unarchive'),
          () => patchModel(m.project, m.name, { archived })
        );
      },
      deleteModel: async (m: Model) => {
        const answer = await showDialog({
          title: trans.__('Delete model %1?', m.name),
          body: trans._n(
            'Its %1 version and stored artifact are removed. This cannot be undone.',
            'All %1 versions and their stored artifacts are removed. This cannot be undone.',
            m.version_count
          ),
          buttons: [
            Dialog.cancelButton({ label: trans.__('Cancel') }),
            Dialog.warnButton({ label: trans.__('Delete model') })
          ]
        });
        if (!answer.button.accept) {
          return;
        }
        const ok = await run(trans.__('Cannot delete the model'), () =>
          deleteModel(m.project, m.name)
        );
        if (ok) {
          this.navigate({ kind: 'list' });
          Notification.success(trans.__('Deleted model %1.', m.name), {
            autoClose: 4000
          });
        }
      }
    };
    if (this._openInTab) {
      const open = this._openInTab;
      actions.openInTab = route => open(route);
    }
    return actions;
  }

  private _settings: ICubeSettings;
  private _commands: CommandRegistry;
  private _trans: TranslationBundle;
  private _openInTab?: (route: ModelsRoute) => void;
  private _poll: Poll;
  private _debouncer: Debouncer;
  private _actions: IModelsActions;
  private _started = false;
}

export namespace ModelsPanel {
  export interface IOptions {
    settings: ICubeSettings;
    commands: CommandRegistry;
    translator: ITranslator;
    route?: ModelsRoute;
    openInTab?: (route: ModelsRoute) => void;
  }
}

/** Show a server error (`error` and `detail`) in a dialog. */
export async function reportError(
  trans: TranslationBundle,
  title: string,
  reason: unknown
): Promise<void> {
  const { error, detail } = describeError(reason);
  await showDialog({
    title,
    body: (
      <div className="cube-ErrorDialog">
        <p className="cube-Error-title">{error}</p>
        {detail && <pre className="cube-Error-detail">{detail}</pre>}
      </div>
    ),
    buttons: [Dialog.okButton({ label: trans.__('Close') })]
  });
}
