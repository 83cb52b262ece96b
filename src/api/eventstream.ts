/**
 * A POST whose answer is server-sent events (the Chat panel's messages, a
 * knowledge base's streamed answer): the events, parsed, as they arrive.
 */
import { ServerConnection } from '@jupyterlab/services';

import { decodeBody, errorFromResponse, fetchAPI } from './request';
import { readSse } from './sse';

/**
 * POST `body` to `path` and yield each event `parse` accepts (null: skipped).
 * A server that answered in one piece gives its `data:` lines as events.
 *
 * @throws CubeApiError when the server refuses before streaming.
 */
export async function* postForEvents<T>(
  path: string,
  body: object,
  parse: (data: string) => T | null,
  signal?: AbortSignal,
  settings?: ServerConnection.ISettings
): AsyncGenerator<T, void, undefined> {
  const response = await fetchAPI(
    path,
    { method: 'POST', body, signal, headers: { Accept: 'text/event-stream' } },
    settings
  );
  const type = response.headers.get('Content-Type') ?? '';
  if (!response.ok || !type.includes('text/event-stream') || !response.body) {
    const data = await decodeBody(response);
    if (!response.ok) {
      throw errorFromResponse(
        response.status,
        response.statusText,
        data,
        response.url
      );
    }
    if (typeof data === 'string') {
      for (const line of data.split('\n')) {
        const event = line.startsWith('data:')
          ? parse(line.slice(5).trim())
          : null;
        if (event) {
          yield event;
        }
      }
    }
    return;
  }
  for await (const sse of readSse(response.body)) {
    const event = parse(sse.data);
    if (event) {
      yield event;
    }
  }
}
