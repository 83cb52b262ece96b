/** The Course icon (a mortarboard): 24 x 24, `jp-icon3`. */
import { LabIcon } from '@jupyterlab/ui-components';

import courseSvg from '../../../style/icons/course.svg';

export const courseIcon = new LabIcon({
  name: 'cube-lab:course',
  svgstr: courseSvg
});
