/**
 * cube-lab's icons. Each is an SVG under style/icons/ drawn on a 24 x 24 grid
 * with the `jp-icon3` class, so it follows the light and dark themes.
 */
import { LabIcon } from '@jupyterlab/ui-components';

import cubeSvgStr from '../style/icons/cube.svg';
import deploymentsSvgStr from '../style/icons/deployments.svg';
import labelingSvgStr from '../style/icons/labeling.svg';
import modelsSvgStr from '../style/icons/models.svg';
import pipelineSvgStr from '../style/icons/pipeline.svg';
import runsSvgStr from '../style/icons/runs.svg';
import trainingSvgStr from '../style/icons/training.svg';
import tuningSvgStr from '../style/icons/tuning.svg';

/** The cube-lab icon: a small isometric cube. */
export const cubeIcon = new LabIcon({
  name: 'cube-lab:cube',
  svgstr: cubeSvgStr
});

/** A pipeline: three linked boxes. */
export const pipelineIcon = new LabIcon({
  name: 'cube-lab:pipeline',
  svgstr: pipelineSvgStr
});

/** Stacked layers, the versions of a model: the model registry. */
export const modelsIcon = new LabIcon({
  name: 'cube-lab:models',
  svgstr: modelsSvgStr
});

/** Linked boxes feeding a play triangle: pipeline runs. */
export const runsIcon = new LabIcon({
  name: 'cube-lab:pipeline-runs',
  svgstr: runsSvgStr
});

/** A falling loss curve on axes: training. */
export const trainingIcon = new LabIcon({
  name: 'cube-lab:training',
  svgstr: trainingSvgStr
});

/** Three sliders: hyperparameter tuning. */
export const tuningIcon = new LabIcon({
  name: 'cube-lab:tuning',
  svgstr: tuningSvgStr
});

/** Two stacked servers: models served as deployments. */
export const deploymentIcon = new LabIcon({
  name: 'cube-lab:deployment',
  svgstr: deploymentsSvgStr
});

/** A tag: data labeling. */
export const labelingIcon = new LabIcon({
  name: 'cube-lab:labeling',
  svgstr: labelingSvgStr
});
