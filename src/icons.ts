import { LabIcon } from '@jupyterlab/ui-components';

import cubeSvgStr from '../style/icons/cube.svg';

/** The cube-lab icon: a small isometric cube. */
export const cubeIcon = new LabIcon({
  name: 'cube-lab:cube',
  svgstr: cubeSvgStr
});

import pipelineSvgStr from '../style/icons/pipeline.svg';

/** A pipeline: three linked boxes. */
export const pipelineIcon = new LabIcon({
  name: 'cube-lab:pipeline',
  svgstr: pipelineSvgStr
});
