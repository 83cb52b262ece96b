/**
 * cube-lab in the left sidebar: one side panel per capability (Models,
 * Pipeline runs, Training, Tuning, Deployments, Labeling), each with its own
 * icon, header and toolbar, the way JupyterLab's File Browser and Running
 * panels sit there.
 */
import type { ILayoutRestorer } from '@jupyterlab/application';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { SidePanel, Toolbar } from '@jupyterlab/ui-components';
import { ISignal, Signal } from '@lumino/signaling';
import { Panel, Widget } from '@lumino/widgets';

import { ICubeSettings, ICubeSidebar, IPanelOptions } from './tokens';

/** Default poll interval, in seconds. */
export const DEFAULT_REFRESH_SECONDS = 5;

/** Shared settings, fed from the `cube-lab:plugin` settings. */
export class CubeSettings implements ICubeSettings {
  get refreshInterval(): number {
    return this._refreshInterval;
  }

  get changed(): ISignal<ICubeSettings, void> {
    return this._changed;
  }

  /** Update from the raw setting (seconds). */
  update(composite: { refreshInterval?: unknown }): void {
    const seconds = Number(composite.refreshInterval);
    const next =
      Number.isFinite(seconds) && seconds >= 1
        ? seconds * 1000
        : DEFAULT_REFRESH_SECONDS * 1000;
    if (next !== this._refreshInterval) {
      this._refreshInterval = next;
      this._changed.emit();
    }
  }

  private _refreshInterval = DEFAULT_REFRESH_SECONDS * 1000;
  private _changed = new Signal<ICubeSettings, void>(this);
}

/**
 * The side panel of one capability: a header (its name, and the section's
 * toolbar on the right) above the section, which fills the rest of the
 * height and scrolls by itself.
 */
export class CubeSidePanel extends SidePanel {
  constructor(section: Widget, options: CubeSidePanel.IOptions) {
    super({ content: new Panel(), translator: options.translator });
    this.id = options.id;
    this.addClass('cube-SidePanel');
    this.section = section;
    const label = options.label ?? section.title.label;
    this.title.icon = options.icon;
    this.title.caption = options.caption ?? (section.title.caption || label);

    const heading = new Widget({ node: document.createElement('h2') });
    heading.addClass('cube-SidePanel-title');
    heading.addClass('jp-text-truncated');
    heading.node.textContent = label;
    heading.node.title = this.title.caption;
    this.header.addClass('cube-SidePanel-header');
    this.header.addWidget(heading);
    const toolbar = (section as { toolbar?: unknown }).toolbar;
    if (toolbar instanceof Toolbar) {
      toolbar.addClass('cube-SidePanel-toolbar');
      this.header.addWidget(toolbar);
    }
    section.addClass('cube-SidePanel-section');
    this.content.addWidget(section);
  }

  /** The capability's widget (e.g. the Models list). */
  readonly section: Widget;
}

export namespace CubeSidePanel {
  export interface IOptions extends IPanelOptions {
    translator?: ITranslator;
  }
}

/**
 * Adds the capability panels to the shell's left area, in rank order, and
 * to the layout restorer.
 */
export class CubeSidebar implements ICubeSidebar {
  constructor(options: CubeSidebar.IOptions) {
    this.settings = options.settings;
    this._translator = options.translator ?? nullTranslator;
    this._shell = options.shell;
    this._restorer = options.restorer ?? null;
  }

  readonly settings: ICubeSettings;

  addPanel(widget: Widget, options: IPanelOptions): CubeSidePanel {
    if (this._panels.has(widget)) {
      throw new Error(`cube-lab: ${options.id} is already in the sidebar`);
    }
    const panel = new CubeSidePanel(widget, {
      ...options,
      translator: this._translator
    });
    this._panels.set(widget, panel);
    this._shell.add(panel, 'left', { rank: options.rank, type: options.id });
    if (this._restorer) {
      this._restorer.add(panel, options.id);
    }
    return panel;
  }

  reveal(widget: Widget): void {
    const panel = this._panels.get(widget);
    if (panel) {
      this._shell.activateById(panel.id);
    }
  }

  /** The side panel that holds `widget`, if it was added here. */
  panelOf(widget: Widget): CubeSidePanel | null {
    return this._panels.get(widget) ?? null;
  }

  private _translator: ITranslator;
  private _shell: CubeSidebar.IShell;
  private _restorer: ILayoutRestorer | null;
  private _panels = new Map<Widget, CubeSidePanel>();
}

export namespace CubeSidebar {
  /** What the sidebar needs of JupyterLab's shell. */
  export interface IShell {
    add(
      widget: Widget,
      area: 'left',
      options: { rank: number; type: string }
    ): void;
    activateById(id: string): void;
  }

  export interface IOptions {
    settings: ICubeSettings;
    shell: IShell;
    restorer?: ILayoutRestorer | null;
    translator?: ITranslator;
  }
}
