import { ISignal } from '@lumino/signaling';
import { Token } from '@lumino/coreutils';
import { Widget } from '@lumino/widgets';

/** Command ids of cube-lab. */
export namespace CommandIDs {
  export const openSidebar = 'cube-lab:open-sidebar';
  export const openModels = 'cube-lab:open-models';
  export const refreshModels = 'cube-lab:refresh-models';
  export const registerModel = 'cube-lab:register-model';
  export const openModelTab = 'cube-lab:open-model-tab';
  export const newPipeline = 'cube-lab:new-pipeline';
  export const openPipelineRun = 'cube-lab:open-pipeline-run';
  export const refreshPipelineRuns = 'cube-lab:refresh-pipeline-runs';
}

/** The launcher / palette category of cube-lab. */
export const CATEGORY = 'cube-lab';

/** Options for a sidebar section. */
export interface ISectionOptions {
  /**
   * Sections are ordered by rank, lowest first (default 500).
   * The models section has rank 100.
   */
  rank?: number;
  /**
   * Start folded (the title only); `reveal(section)` unfolds it. Each open
   * section takes a share of the sidebar's height, so the later ones start
   * folded to leave the first ones room.
   */
  collapsed?: boolean;
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
 * The cube-lab left sidebar. Capability plugins (models, pipelines,
 * training, ...) add their own collapsible sections to it.
 */
export interface ICubeSidebar {
  /** The sidebar widget id (to use with `app.shell.activateById`). */
  readonly id: string;

  /** Shared settings (refresh interval...). */
  readonly settings: ICubeSettings;

  /**
   * Add a section. The widget's `title.label` is the section header; a
   * widget with a `toolbar` gets it shown in the header.
   */
  addSection(widget: Widget, options?: ISectionOptions): void;

  /** Show the sidebar and expand `section` (when given). */
  reveal(section?: Widget): void;
}

export const ICubeSidebar = new Token<ICubeSidebar>(
  'cube-lab:ICubeSidebar',
  'The cube-lab sidebar: add a section for a capability panel.'
);
