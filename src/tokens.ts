import { ISignal } from '@lumino/signaling';
import { Token } from '@lumino/coreutils';
import { Widget } from '@lumino/widgets';
import type { LabIcon } from '@jupyterlab/ui-components';

/** Command ids of cube-lab. */
export namespace CommandIDs {
  export const openModels = 'cube-lab:open-models';
  export const refreshModels = 'cube-lab:refresh-models';
  export const registerModel = 'cube-lab:register-model';
  export const openModelTab = 'cube-lab:open-model-tab';
  export const newPipeline = 'cube-lab:new-pipeline';
  export const openPipelineRun = 'cube-lab:open-pipeline-run';
  export const openPipelineRuns = 'cube-lab:open-pipeline-runs';
  export const refreshPipelineRuns = 'cube-lab:refresh-pipeline-runs';
}

/** The launcher / palette category of cube-lab. */
export const CATEGORY = 'cube-lab';

/**
 * Ranks of the cube-lab panels in the left sidebar, after JupyterLab's own
 * (File Browser 100, Running 200, Table of Contents 400) and before the
 * Extension Manager (1000).
 */
export namespace PanelRanks {
  export const models = 600;
  export const pipelineRuns = 610;
  export const training = 620;
  export const tuning = 630;
  export const deployments = 640;
  export const labeling = 650;
}

/** Options for a cube-lab side panel. */
export interface IPanelOptions {
  /**
   * The side panel's id, stable across releases (the layout restorer and
   * `page.sidebar.openTab(id)` use it), e.g. `cube-lab-models-panel`.
   */
  id: string;
  /** Its rank in the left sidebar, lowest first (see `PanelRanks`). */
  rank: number;
  /** The sidebar tab's icon. */
  icon: LabIcon;
  /** The header of the panel (default: the widget's `title.label`). */
  label?: string;
  /** The sidebar tab's tooltip (default: the widget's `title.caption`). */
  caption?: string;
}

/**
 * Settings shared by every cube-lab panel.
 */
export interface ICubeSettings {
  /** How often panels poll the server, in milliseconds. */
  readonly refreshInterval: number;
  /** Emitted when any shared setting changes. */
  readonly changed: ISignal<ICubeSettings, void>;
}

/**
 * cube-lab's place in the left sidebar: each capability (models, pipeline
 * runs, training, ...) adds its own side panel, with its icon, the way
 * File Browser and Running do. Panels hold lists; details and forms open
 * in main-area tabs.
 */
export interface ICubeSidebar {
  /** Shared settings (refresh interval...). */
  readonly settings: ICubeSettings;

  /**
   * Add `widget` to the left sidebar in a side panel of its own: a header
   * with its label and, when the widget has a `toolbar`, its buttons. The
   * layout restorer keeps the panel open across reloads. Returns the panel.
   */
  addPanel(widget: Widget, options: IPanelOptions): Widget;

  /** Show the side panel that holds `widget` (added with `addPanel`). */
  reveal(widget: Widget): void;
}

export const ICubeSidebar = new Token<ICubeSidebar>(
  'cube-lab:ICubeSidebar',
  'The cube-lab side panels: add a left-sidebar panel for a capability.'
);
