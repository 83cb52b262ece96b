import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { SidePanel } from '@jupyterlab/ui-components';
import { ISignal, Signal } from '@lumino/signaling';
import { AccordionPanel, Widget } from '@lumino/widgets';

import { cubeIcon } from './icons';
import { ICubeSettings, ICubeSidebar, ISectionOptions } from './tokens';

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

const RANK = Symbol('cube-lab:rank');

/**
 * The cube-lab sidebar: a side panel whose content is an accordion of
 * capability sections, ordered by rank.
 */
export class CubeSidebar extends SidePanel implements ICubeSidebar {
  constructor(options: CubeSidebar.IOptions) {
    const translator = options.translator ?? nullTranslator;
    super({ translator });
    const trans = translator.load('cube_lab');
    this.id = 'cube-lab-sidebar';
    this.addClass('cube-Sidebar');
    this.title.icon = cubeIcon;
    this.title.caption = trans.__('cube-lab');
    this.settings = options.settings;
    this._reveal = options.reveal;

    const header = new Widget();
    header.addClass('cube-Sidebar-header');
    const title = document.createElement('h2');
    title.className = 'cube-Sidebar-title';
    title.textContent = trans.__('cube-lab');
    header.node.appendChild(title);
    this.header.addWidget(header);
    (this.content as AccordionPanel).expansionToggled.connect(
      this._onToggled,
      this
    );
  }

  readonly settings: ICubeSettings;

  addSection(widget: Widget, options: ISectionOptions = {}): void {
    const rank = options.rank ?? 500;
    (widget as any)[RANK] = rank;
    const widgets = this.content.widgets;
    let index = widgets.findIndex(w => ((w as any)[RANK] ?? 500) > rank);
    if (index < 0) {
      index = widgets.length;
    }
    this.insertWidget(index, widget);
    if (options.collapsed) {
      (this.content as AccordionPanel).collapse(index);
    }
  }

  reveal(section?: Widget): void {
    this._reveal();
    if (section) {
      this.expandSection(section);
    }
  }

  /** Expand one section (the others keep their state). */
  expandSection(section: Widget): void {
    const accordion = this.content as AccordionPanel;
    const index = accordion.widgets.indexOf(section);
    if (index >= 0 && !section.isVisible && section.isHidden) {
      accordion.expand(index);
    }
  }

  /**
   * A section folded before the accordion's first layout unfolds to zero
   * height: then share the height evenly among the unfolded sections.
   */
  private _onToggled(accordion: AccordionPanel, index: number): void {
    const widget = accordion.widgets[index];
    if (!widget || widget.isHidden) {
      return;
    }
    requestAnimationFrame(() => {
      if (widget.isHidden || widget.node.clientHeight >= MIN_SECTION_PX) {
        return;
      }
      const open: number[] = accordion.widgets.map(w => (w.isHidden ? 0 : 1));
      const count = open.reduce((a, b) => a + b, 0);
      accordion.setRelativeSizes(open.map(o => o / count));
    });
  }

  private _reveal: () => void;
}

/** Below this height an unfolded section counts as squeezed shut. */
const MIN_SECTION_PX = 40;

export namespace CubeSidebar {
  export interface IOptions {
    settings: ICubeSettings;
    /** Reveal the sidebar in the shell. */
    reveal: () => void;
    translator?: ITranslator;
  }
}
