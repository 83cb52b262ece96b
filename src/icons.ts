import { LabIcon } from '@jupyterlab/ui-components';

import cubeSvgStr from '../style/icons/cube.svg';

/** The cube-lab icon: a small isometric cube. */
export const cubeIcon = new LabIcon({
  name: 'cube-lab:cube',
  svgstr: cubeSvgStr
});
