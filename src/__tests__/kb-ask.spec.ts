/**
 * The knowledge base view's streaming Ask (src/panels/kb/asking.ts) through
 * the real stream client (streamKnowledgeBaseChat → postForEvents → readSse)
 * against a mocked server: the citations show before the text, the text
 * grows piece by piece, Stop aborts the request and keeps what came, an error
 * event mid-stream and a refusal before it are the turn's error, and each
 * question starts afresh (no history, the previous answer replaced).
 */
import { ServerConnection } from '@jupyterlab/services';

import type { KbChatAnswer, KbCitation } from '../api';
import { KbAsk } from '../panels/kb/asking';

function citation(n: number): KbCitation {
  return {
    number: n,
    chunk_id: 10 + n,
    source: `docs/${n}.md`,
    name: `${n}.md`,
    position: 0,
    page: n === 2 ? 3 : null,
    heading: '',
    text: `passage ${n}`,
    score: 1 / n,
    cosine: null,
    cited: n === 1
  };
}

function whole(text: string): KbChatAnswer {
  return {
    answered: true,
    answer: text,
    query: 'q',
    mode: 'hybrid',
    k: 5,
    threshold: 0,
    retrieved: 2,
    target: {},
    cited: [1],
    citations: [citation(2), citation(1)],
    usage: null
  };
}

const sse = (event: object) => `data: ${JSON.stringify(event)}\n\n`;

/**
 * A streamed answer the test feeds piece by piece (`push`, `end`); a read
 * waiting when the request is aborted fails as fetch's does.
 */
class FakeStream {
  constructor(readonly signal: AbortSignal | undefined) {
    signal?.addEventListener('abort', () => {
      this.aborted = true;
      this._wake();
    });
  }

  aborted = false;

  push(text: string): void {
    this._queue.push(new TextEncoder().encode(text));
    this._wake();
  }

  end(): void {
    this._ended = true;
    this._wake();
  }

  response(): Response {
    const body = {
      getReader: () => ({
        read: async (): Promise<ReadableStreamReadResult<Uint8Array>> => {
          for (;;) {
            if (this.aborted) {
              throw new DOMException(
                'The user aborted a request.',
                'AbortError'
              );
            }
            if (this._queue.length) {
              return { done: false, value: this._queue.shift()! };
            }
            if (this._ended) {
              return { done: true, value: undefined };
            }
            await new Promise<void>(resolve => (this._waiting = resolve));
          }
        },
        releaseLock: () => undefined
      })
    };
    return {
      ok: true,
      status: 200,
      statusText: 'OK',
      url: 'http://localhost/cube/api/v1/kb/alice/docs/chat',
      headers: new Headers({ 'Content-Type': 'text/event-stream' }),
      body
    } as unknown as Response;
  }

  private _wake(): void {
    const waiting = this._waiting;
    this._waiting = null;
    waiting?.();
  }

  private _queue: Uint8Array[] = [];
  private _ended = false;
  private _waiting: (() => void) | null = null;
}

/** Let the stream's reads and the session's updates run. */
const settle = () => new Promise(resolve => setTimeout(resolve, 0));

describe('KbAsk (the KB view streaming Ask)', () => {
  let makeRequest: jest.SpyInstance;
  let streams: FakeStream[];
  let bodies: any[];

  beforeEach(() => {
    streams = [];
    bodies = [];
    makeRequest = jest
      .spyOn(ServerConnection, 'makeRequest')
      .mockImplementation(async (url: string, init: RequestInit) => {
        bodies.push(JSON.parse(String(init.body)));
        const stream = new FakeStream(init.signal ?? undefined);
        streams.push(stream);
        return stream.response();
      });
  });

  afterEach(() => makeRequest.mockRestore());

  it('shows the citations first, then the answer as it streams', async () => {
    const asking = new KbAsk('alice', 'docs');
    let changes = 0;
    asking.changed.connect(() => changes++);
    const done = asking.ask(' How long? ', {
      base_url: 'http://m/v1',
      model: 'm'
    });
    expect(asking.busy).toBe(true);
    expect(asking.turn?.status).toBe('asking');
    await settle();
    expect(bodies[0]).toEqual({
      query: 'How long?',
      target: { base_url: 'http://m/v1', model: 'm' },
      stream: true
    });
    const [url] = makeRequest.mock.calls[0];
    expect(url).toMatch(/cube\/api\/v1\/kb\/alice\/docs\/chat$/);

    const answer = whole('Thirty days [1].');
    const stream = streams[0];
    stream.push(sse({ event: 'citations', ...answer }));
    await settle();
    // the citations, numbered in order, before any text
    expect(asking.turn!.answer.citations.map(c => c.number)).toEqual([1, 2]);
    expect(asking.turn!.answer.answer).toBe('');
    expect(asking.turn!.status).toBe('asking');

    stream.push(sse({ event: 'delta', text: 'Thirty ' }));
    await settle();
    expect(asking.turn!.answer.answer).toBe('Thirty ');
    // a piece cut in the middle of its line arrives whole
    const piece = sse({ event: 'delta', text: 'days [1].' });
    stream.push(piece.slice(0, 9));
    await settle();
    expect(asking.turn!.answer.answer).toBe('Thirty ');
    stream.push(piece.slice(9));
    await settle();
    expect(asking.turn!.answer.answer).toBe('Thirty days [1].');
    expect(asking.turn!.deltas).toBe(2);

    stream.push(sse({ event: 'done', ...answer }));
    stream.end();
    await done;
    expect(asking.turn!.status).toBe('complete');
    expect(asking.turn!.answer.answered).toBe(true);
    expect(asking.busy).toBe(false);
    expect(changes).toBeGreaterThanOrEqual(4);

    // the next question: on its own (no history), the answer replaced
    const next = asking.ask('And store credit?', { deployment: 'tiny' });
    await settle();
    expect(bodies[1]).toEqual({
      query: 'And store credit?',
      target: { deployment: 'tiny' },
      stream: true
    });
    expect(asking.turn!.query).toBe('And store credit?');
    expect(asking.turn!.answer.answer).toBe('');
    streams[1].push(sse({ event: 'done', ...whole('Yes [2].') }));
    streams[1].end();
    await next;
    expect(asking.turn!.answer.answer).toBe('Yes [2].');
  });

  it('stops: the request is aborted and what came so far stays, marked stopped', async () => {
    const asking = new KbAsk('alice', 'docs');
    const done = asking.ask('q', { deployment: 'tiny' });
    await settle();
    streams[0].push(sse({ event: 'citations', ...whole('') }));
    streams[0].push(sse({ event: 'delta', text: 'Partly ' }));
    await settle();
    expect(asking.turn!.answer.answer).toBe('Partly ');
    asking.stop();
    expect(streams[0].aborted).toBe(true);
    await done;
    expect(asking.turn!.status).toBe('stopped');
    expect(asking.turn!.answer.answer).toBe('Partly ');
    expect(asking.turn!.answer.citations).toHaveLength(2);
    expect(asking.turn!.error).toBeNull();
    expect(asking.busy).toBe(false);
  });

  it('shows an error event mid-stream with the text that came before it', async () => {
    const asking = new KbAsk('alice', 'docs');
    const done = asking.ask('q', { deployment: 'tiny' });
    await settle();
    streams[0].push(sse({ event: 'citations', ...whole('') }));
    streams[0].push(sse({ event: 'delta', text: 'Half an ' }));
    streams[0].push(
      sse({
        event: 'error',
        error: 'the model stopped answering',
        detail: 'connection reset'
      })
    );
    streams[0].end();
    await done;
    expect(asking.turn!.status).toBe('error');
    expect(asking.turn!.error).toEqual({
      error: 'the model stopped answering',
      detail: 'connection reset'
    });
    expect(asking.turn!.answer.answer).toBe('Half an ');
  });

  it('shows a refusal before any streaming as the error (424: no model)', async () => {
    makeRequest.mockImplementationOnce(
      async () =>
        ({
          ok: false,
          status: 424,
          statusText: 'Failed Dependency',
          url: 'http://localhost/cube/api/v1/kb/alice/docs/chat',
          headers: new Headers({ 'Content-Type': 'application/json' }),
          text: async () =>
            JSON.stringify({
              error: 'cannot reach http://m/v1',
              detail: 'Start the model server, or pick another.'
            })
        }) as unknown as Response
    );
    const asking = new KbAsk('alice', 'docs');
    await asking.ask('q', { base_url: 'http://m/v1', model: 'm' });
    expect(asking.turn!.status).toBe('error');
    expect(asking.turn!.error).toEqual({
      error: 'cannot reach http://m/v1',
      detail: 'Start the model server, or pick another.'
    });
  });

  it('asks nothing for a blank question, and dispose aborts what is asked', async () => {
    const asking = new KbAsk('alice', 'docs');
    await asking.ask('   ', { deployment: 'tiny' });
    expect(makeRequest).not.toHaveBeenCalled();
    expect(asking.turn).toBeNull();
    const done = asking.ask('q', { deployment: 'tiny' });
    await settle();
    asking.dispose();
    expect(streams[0].aborted).toBe(true);
    await done;
    expect(asking.turn).toBeNull();
  });
});
