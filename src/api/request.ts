/**
 * What every part of the cube-lab REST client (`/cube/api/v1`) shares: the
 * request helper (language header, JSON bodies, the hub's direct service
 * session), the error type, the URL and query helpers, and the answer shapes
 * more than one capability uses. The capability modules build on it;
 * `index.ts` re-exports what is public.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { uiLanguage, uiTrans } from '../locale';

import {
  IServiceSession,
  noteServiceAnswer,
  serviceSession
} from '../service_session';

/** The URL prefix of the cube-lab REST API, relative to the server base URL. */
export const API_PREFIX = 'cube/api/v1';

/* -------------------------------------------------------------------------- */
/* Shared answer shapes                                                       */
/* -------------------------------------------------------------------------- */

/** A JSON value as stored in params and tags. */
export type JSONValue =
  string | number | boolean | null | JSONValue[] | { [key: string]: JSONValue };

export interface LogChunk {
  text: string;
  offset: number;
  size: number;
  done: boolean;
}

/* -------------------------------------------------------------------------- */
/* Errors                                                                     */
/* -------------------------------------------------------------------------- */

/**
 * An error answered by the cube-lab server (or a network failure, status 0).
 *
 * `error` says what is wrong, `detail` how to fix it or extra data.
 */
export class CubeApiError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly detail: unknown = null,
    readonly url = ''
  ) {
    super(error);
    this.name = 'CubeApiError';
  }

  /** `detail` as display text ('' when there is none). */
  get detailText(): string {
    return formatDetail(this.detail);
  }
}

/** Render an error `detail` (string, list or object) as text. */
export function formatDetail(detail: unknown): string {
  if (detail === null || detail === undefined || detail === '') {
    return '';
  }
  if (typeof detail === 'string') {
    return detail;
  }
  if (Array.isArray(detail) && detail.every(d => typeof d === 'string')) {
    return detail.join('\n');
  }
  try {
    return JSON.stringify(detail, null, 2);
  } catch {
    return String(detail);
  }
}

/** The `Accept-Language` asking for `language` first, then English. */
export function acceptLanguage(language: string): string {
  return language.startsWith('en') ? language : `${language}, en;q=0.5`;
}

/** Turn anything thrown into `{error, detail}` for display. */
export function describeError(err: unknown): { error: string; detail: string } {
  if (err instanceof CubeApiError) {
    return { error: err.error, detail: err.detailText };
  }
  if (err instanceof Error) {
    return { error: err.message, detail: '' };
  }
  return { error: String(err), detail: '' };
}

/* -------------------------------------------------------------------------- */
/* Transport                                                                  */
/* -------------------------------------------------------------------------- */

/** Encode each path segment and join them with `/`. */
export function encodePath(...segments: (string | number)[]): string {
  return segments.map(s => encodeURIComponent(String(s))).join('/');
}

/** Build a query string (with leading `?`), skipping undefined/null/'' values. */
export function queryString(
  params: Record<string, string | number | boolean | undefined | null>
): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === '') {
      continue;
    }
    parts.push(
      `${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`
    );
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

let defaultSettings: ServerConnection.ISettings | null = null;

/** `settings`, or the page's (made once); for the capability modules only. */
export function serverSettings(
  settings?: ServerConnection.ISettings
): ServerConnection.ISettings {
  if (settings) {
    return settings;
  }
  if (!defaultSettings) {
    defaultSettings = ServerConnection.makeSettings();
  }
  return defaultSettings;
}

/** The absolute URL of an API path (already encoded, may include a query). */
export function apiUrl(
  path: string,
  settings?: ServerConnection.ISettings
): string {
  return URLExt.join(serverSettings(settings).baseUrl, API_PREFIX, path);
}

/**
 * Call the cube-lab REST API.
 *
 * @param path - path under `/cube/api/v1`, segments already encoded
 *   (use `encodePath`), optionally followed by a query string.
 * @param init - fetch options; a plain object `body` is sent as JSON.
 * @returns the decoded JSON answer (`undefined` for 204 / empty bodies).
 * @throws CubeApiError on a non-2xx answer or a network failure.
 */
export async function requestAPI<T = unknown>(
  path = '',
  init: Omit<RequestInit, 'body'> & { body?: BodyInit | object | null } = {},
  settings?: ServerConnection.ISettings
): Promise<T> {
  const response = await fetchAPI(path, init, settings);
  const data = await decodeBody(response);
  if (!response.ok) {
    throw errorFromResponse(
      response.status,
      response.statusText,
      data,
      response.url || apiUrl(path, serverSettings(settings))
    );
  }
  return data as T;
}

/** A response's body as JSON (text when it is not JSON, `undefined` when empty). */
export async function decodeBody(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text.length === 0) {
    return undefined;
  }
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Send a request to the cube-lab REST API and return the raw answer, whatever its
 * status, its body unread (a stream of server-sent events, say): the transport of
 * `requestAPI` (language header, JSON bodies, the hub's direct service session).
 *
 * @throws CubeApiError (status 0) when the server cannot be reached; an aborted
 *   request (`init.signal`) throws the fetch's own abort error.
 */
export async function fetchAPI(
  path = '',
  init: Omit<RequestInit, 'body'> & { body?: BodyInit | object | null } = {},
  settings?: ServerConnection.ISettings
): Promise<Response> {
  const s = serverSettings(settings);
  const url = apiUrl(path, s);
  const { body, ...rest } = init;
  const request: RequestInit = { ...rest };
  // the server's error messages in JupyterLab's language (cube_lab/locale/messages.py)
  const headers: Record<string, string> = {
    'Accept-Language': acceptLanguage(uiLanguage())
  };
  if (body !== undefined && body !== null) {
    if (isPlainObject(body)) {
      request.body = JSON.stringify(body);
      headers['Content-Type'] = 'application/json';
    } else {
      request.body = body as BodyInit;
    }
  }
  request.headers = {
    ...headers,
    ...(init.headers as Record<string, string> | undefined)
  };

  let response: Response | null = null;
  const direct = settings ? null : await serviceSession();
  if (direct) {
    response = await requestService(direct, path, request);
  }
  try {
    response ??= await ServerConnection.makeRequest(url, request, s);
  } catch (reason) {
    if (request.signal?.aborted) {
      throw reason;
    }
    const message =
      reason instanceof Error ? reason.message : String(reason ?? '');
    const trans = uiTrans();
    throw new CubeApiError(
      0,
      trans.__('Cannot reach the Jupyter server'),
      message || trans.__('Check that the server is running and try again.'),
      url
    );
  }
  return response;
}

/**
 * The same request sent to the cube-lab service straight (under the hub), or `null` when it
 * should go through the lab server after all: the service could not be reached, or it did
 * not take the session's cookie (its 401/403 then carries `WWW-Authenticate`: the cookie
 * expired or the XSRF token is stale; the next request opens a new session). Any other
 * answer, refusals included, is the service's, as the lab server would have passed it on.
 */
async function requestService(
  session: IServiceSession,
  path: string,
  request: RequestInit
): Promise<Response | null> {
  const headers = new Headers(request.headers);
  headers.set('X-XSRFToken', session.xsrf);
  try {
    const response = await fetch(URLExt.join(session.base, API_PREFIX, path), {
      ...request,
      headers,
      credentials: 'same-origin',
      cache: 'no-store'
    });
    const refused =
      (response.status === 401 || response.status === 403) &&
      response.headers.has('WWW-Authenticate');
    noteServiceAnswer(!refused);
    return refused ? null : response;
  } catch (reason) {
    if (request.signal?.aborted) {
      throw reason; // stopped by the caller, not unreachable
    }
    noteServiceAnswer(false); // unreachable: through the lab server instead
    return null;
  }
}

/** Build a CubeApiError from a failed answer's status and decoded body. */
export function errorFromResponse(
  status: number,
  statusText: string,
  data: unknown,
  url = ''
): CubeApiError {
  if (isPlainObject(data)) {
    const body = data as Record<string, unknown>;
    const error =
      typeof body.error === 'string' && body.error
        ? body.error
        : typeof body.message === 'string' && body.message
          ? body.message
          : `${status} ${statusText}`.trim();
    const detail =
      body.detail !== undefined
        ? body.detail
        : typeof body.reason === 'string'
          ? body.reason
          : null;
    return new CubeApiError(status, error, detail, url);
  }
  const fallback =
    status === 404
      ? 'Not found: is the cube-lab server extension enabled?'
      : `${status} ${statusText}`.trim() || `HTTP ${status}`;
  const detail =
    typeof data === 'string' && data.length > 0 && !/^\s*</.test(data)
      ? data.slice(0, 2000)
      : null;
  return new CubeApiError(status, fallback, detail, url);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') {
    return false;
  }
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** An absolute URL for a path the server gives relative to its base URL. */
export function serverUrl(
  relative: string,
  settings?: ServerConnection.ISettings
): string {
  if (/^https?:\/\//.test(relative)) {
    return relative;
  }
  const base = serverSettings(settings).baseUrl;
  const basePath = new URL(base, 'http://localhost').pathname;
  // Tolerate a path that already carries the base (e.g. /user/alice/cube/...).
  const path =
    basePath !== '/' && relative.startsWith(basePath)
      ? relative.slice(basePath.length)
      : relative.replace(/^\/+/, '');
  return URLExt.join(base, path);
}
