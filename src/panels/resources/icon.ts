/** The Resources icon (a gauge) and the Notifications icon (a bell): 24 x 24, `jp-icon3`. */
import { LabIcon } from '@jupyterlab/ui-components';

const gauge = `<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <path d="M12 4a10 10 0 0 0-8.66 15h2.4A8 8 0 1 1 18.26 19h2.4A10 10 0 0 0 12 4Z"/>
    <path d="M16.6 8.3 12.9 13.4a2 2 0 1 1-1.4-1.4l5.1-3.7Z"/>
    <rect x="3" y="20" width="18" height="1.6" rx=".8"/>
  </g>
</svg>`;

const bell = `<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <path d="M12 3a1.5 1.5 0 0 0-1.5 1.5v.7A6 6 0 0 0 6 11v4.2L4 17.5V19h16v-1.5l-2-2.3V11a6 6 0 0 0-4.5-5.8v-.7A1.5 1.5 0 0 0 12 3Z"/>
    <path d="M9.8 20a2.2 2.2 0 0 0 4.4 0Z"/>
  </g>
</svg>`;

export const resourcesIcon = new LabIcon({
  name: 'cube-lab:resources',
  svgstr: gauge
});

export const notificationsIcon = new LabIcon({
  name: 'cube-lab:notifications',
  svgstr: bell
});
