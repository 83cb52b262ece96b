/** The Chat icon: a speech bubble with three dots (24 x 24, `jp-icon3`: follows the theme). */
import { LabIcon } from '@jupyterlab/ui-components';

const svgstr = `<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161" fill-rule="evenodd">
    <path d="M5 3h14a2.5 2.5 0 0 1 2.5 2.5v9A2.5 2.5 0 0 1 19 17h-8.2L6 21v-4H5a2.5 2.5 0 0 1-2.5-2.5v-9A2.5 2.5 0 0 1 5 3Zm2.5 6a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3Zm4.5 0a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3Zm4.5 0a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3Z"/>
  </g>
</svg>`;

export const chatIcon = new LabIcon({ name: 'cube-lab:chat', svgstr });
