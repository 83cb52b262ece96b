/**
 * The one typed client for the cube-lab REST API (`/cube/api/v1`).
 *
 * Every panel talks to the server through these functions; the contract is
 * documented in `docs/rest-api.md`. One module per capability, as the server's
 * `cube_lab/handlers/` has them, on the shared transport of `request.ts`;
 * import them all from here (`from '../api'`).
 */
export type { JSONValue, LogChunk } from './request';
export {
  acceptLanguage,
  API_PREFIX,
  apiUrl,
  CubeApiError,
  describeError,
  encodePath,
  errorFromResponse,
  formatDetail,
  queryString,
  requestAPI,
  serverUrl
} from './request';

export * from './projects';
export * from './models';
export * from './pipelines';
export * from './training';
export * from './serving';
export * from './tuning';
export * from './labeling';
export * from './chat';
export * from './kb';
export * from './monitoring';
export * from './courses';
