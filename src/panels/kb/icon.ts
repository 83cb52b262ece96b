/** The Knowledge bases icon: a book with a magnifier (24 x 24, `jp-icon3`: follows the theme). */
import { LabIcon } from '@jupyterlab/ui-components';

const svgstr = `<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161" fill-rule="evenodd">
    <path d="M5 2.5h11A1.5 1.5 0 0 1 17.5 4v6.2a5.5 5.5 0 0 0-2-.2V4.5H6v13h4.1a5.5 5.5 0 0 0 .6 2H5A1.5 1.5 0 0 1 3.5 18V4A1.5 1.5 0 0 1 5 2.5ZM8 7h5.5v1.6H8Zm0 3.2h4v1.6H8Z"/>
    <path d="M15.5 11.5a4 4 0 0 1 3.3 6.3l2.4 2.4-1.1 1.1-2.4-2.4a4 4 0 1 1-2.2-7.4Zm0 1.6a2.4 2.4 0 1 0 0 4.8 2.4 2.4 0 0 0 0-4.8Z"/>
  </g>
</svg>`;

export const kbIcon = new LabIcon({ name: 'cube-lab:knowledge-bases', svgstr });
