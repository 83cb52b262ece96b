/**
 * Chat panel logic: server-sent events cut anywhere, the chat stream's
 * events, turns and their shown answers, the parameters form, the targets
 * picker, and the Python `openai` snippet of "Copy as code".
 */
import { ChatMessage, parseChatEvent } from '../api';
import { readSse, SseParser } from '../api/sse';
import {
  contextMessages,
  readParams,
  regenerable,
  sameTarget,
  targetFromValue,
  targetOptions,
  targetValue,
  titleFrom,
  toTurns
} from '../panels/chat/logic';
import {
  deploymentBaseUrl,
  openaiSnippet,
  pyValue
} from '../panels/chat/snippet';

function message(over: Partial<ChatMessage>): ChatMessage {
  return {
    id: 1,
    role: 'assistant',
    content: '',
    turn: 0,
    active: true,
    status: 'complete',
    rating: null,
    edited: null,
    params: null,
    usage: null,
    model: 'tiny',
    created_at: '2026-12-03T15:00:00+00:00',
    ...over
  };
}

describe('SseParser', () => {
  const stream =
    'data: {"type": "delta", "delta": "Hi"}\r\n\r\n' +
    ': a comment\n' +
    'event: note\nid: 7\ndata: one\ndata: two\n\n' +
    'data: last';

  it('reads events however the text is cut', () => {
    for (let cut = 1; cut < stream.length; cut++) {
      const p = new SseParser();
      const events = [
        ...p.push(stream.slice(0, cut)),
        ...p.push(stream.slice(cut)),
        ...p.end()
      ];
      expect(events).toEqual([
        { event: 'message', data: '{"type": "delta", "delta": "Hi"}', id: '' },
        { event: 'note', data: 'one\ntwo', id: '7' },
        { event: 'message', data: 'last', id: '7' }
      ]);
    }
  });

  it('waits for the LF of a CRLF cut in two', () => {
    const p = new SseParser();
    expect(p.push('data: a\r')).toEqual([]);
    expect(p.push('\n\r\n')).toEqual([{ event: 'message', data: 'a', id: '' }]);
  });

  it('ignores blank lines without data', () => {
    const p = new SseParser();
    expect(p.push('\n\n\nevent: x\n\n')).toEqual([]);
  });

  it('decodes a stream whose UTF-8 characters are cut between chunks', async () => {
    const bytes = new TextEncoder().encode('data: 你好\n\ndata: ok\n\n');
    const chunks = [bytes.slice(0, 8), bytes.slice(8, 9), bytes.slice(9)];
    // jsdom has no ReadableStream: a reader is all readSse takes of one
    let released = false;
    const body = {
      getReader: () => ({
        read: async () =>
          chunks.length
            ? { done: false, value: chunks.shift() }
            : { done: true, value: undefined },
        releaseLock: () => {
          released = true;
        }
      })
    } as unknown as ReadableStream<Uint8Array>;
    const got: string[] = [];
    for await (const e of readSse(body)) {
      got.push(e.data);
    }
    expect(got).toEqual(['你好', 'ok']);
    expect(released).toBe(true);
  });
});

describe('parseChatEvent', () => {
  it('reads the four event types of docs/chat.md', () => {
    const m = message({ id: 3 });
    expect(parseChatEvent('{"type": "delta", "delta": "x"}')).toEqual({
      type: 'delta',
      delta: 'x'
    });
    expect(
      parseChatEvent(JSON.stringify({ type: 'user', message: m }))
    ).toEqual({ type: 'user', message: m });
    expect(
      parseChatEvent(JSON.stringify({ type: 'done', done: true, message: m }))
    ).toEqual({ type: 'done', message: m, usage: null });
    expect(
      parseChatEvent(
        JSON.stringify({
          type: 'error',
          error: 'boom',
          detail: 'why',
          message: m
        })
      )
    ).toEqual({ type: 'error', error: 'boom', detail: 'why', message: m });
  });

  it('skips what is no chat event', () => {
    expect(parseChatEvent('[DONE]')).toBeNull();
    expect(parseChatEvent('{"type": "other"}')).toBeNull();
    expect(parseChatEvent('{"type": "delta"}')).toBeNull();
    expect(parseChatEvent('null')).toBeNull();
  });
});

describe('turns', () => {
  const messages = [
    message({ id: 5, turn: 1, role: 'user', content: 'again' }),
    message({ id: 2, turn: 0, content: 'first', active: false }),
    message({ id: 1, turn: 0, role: 'user', content: 'hello' }),
    message({ id: 3, turn: 0, content: 'second', edited: 'better' }),
    message({ id: 6, turn: 1, content: 'ok' })
  ];

  it('groups messages by turn with the active answer shown', () => {
    const turns = toTurns(messages);
    expect(turns.map(t => t.turn)).toEqual([0, 1]);
    expect(turns[0].user?.id).toBe(1);
    expect(turns[0].answer?.id).toBe(3);
    expect(turns[0].answers.map(a => a.id)).toEqual([2, 3]);
    expect(regenerable(turns)?.id).toBe(6);
  });

  it('sends the edited answer as context, system first', () => {
    expect(contextMessages('Be brief.', toTurns(messages), 'next')).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'better' },
      { role: 'user', content: 'again' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'next' }
    ]);
    expect(contextMessages('  ', [], '')).toEqual([]);
  });

  it('has nothing to regenerate before an answer', () => {
    expect(regenerable([])).toBeNull();
    expect(regenerable(toTurns([message({ role: 'user' })]))).toBeNull();
  });
});

describe('readParams', () => {
  it('keeps what is set, in range', () => {
    expect(
      readParams({ temperature: '0.7', top_p: '1', max_tokens: '64' })
    ).toEqual({
      params: { temperature: 0.7, top_p: 1, max_tokens: 64 },
      errors: {}
    });
    expect(readParams({ temperature: '', top_p: ' ', max_tokens: '' })).toEqual(
      {
        params: {},
        errors: {}
      }
    );
  });

  it('says which fields are out of range', () => {
    const { params, errors } = readParams({
      temperature: '2.5',
      top_p: '0',
      max_tokens: '1.5'
    });
    expect(params).toEqual({});
    expect(Object.keys(errors).sort()).toEqual([
      'max_tokens',
      'temperature',
      'top_p'
    ]);
    expect(errors.max_tokens?.integer).toBe(true);
  });
});

describe('targets', () => {
  it('round-trips a deployment and its adapters through the picker', () => {
    const options = targetOptions([
      {
        deployment: 'llm',
        model: 'base',
        models: ['base', 'lora-a'],
        runtime: 'llm',
        status: 'running',
        endpoint: 'http://127.0.0.1:4000'
      }
    ]);
    expect(options.map(o => o.value)).toEqual([
      'deployment:llm',
      'deployment:llm:lora-a'
    ]);
    expect(targetFromValue(options[1].value)).toEqual({
      deployment: 'llm',
      model: 'lora-a'
    });
    expect(targetValue({ deployment: 'llm' })).toBe('deployment:llm');
    expect(targetFromValue('url')).toBeNull();
  });

  it('counts a hidden stored key as unchanged', () => {
    const stored = { base_url: 'https://x/v1', model: 'm', api_key: '***' };
    expect(sameTarget(stored, { base_url: 'https://x/v1', model: 'm' })).toBe(
      true
    );
    expect(
      sameTarget(
        { ...stored, api_key: 'sk-new' },
        { ...stored, api_key: '***' }
      )
    ).toBe(false);
    expect(
      sameTarget({ deployment: 'a' }, { deployment: 'a', model: 'b' })
    ).toBe(false);
  });

  it('makes titles from the first message', () => {
    expect(titleFrom('  hello\n  world ')).toBe('hello world');
    expect(titleFrom('x'.repeat(60), 10)).toBe('xxxxxxxxx…');
  });
});

describe('openaiSnippet', () => {
  it('writes a runnable client call for the conversation', () => {
    const code = openaiSnippet({
      baseUrl: deploymentBaseUrl('http://127.0.0.1:4000/'),
      model: 'tiny',
      keyVariable: 'CUBE_LAB_DEPLOYMENT_KEY',
      messages: [
        { role: 'system', content: 'Say "hi"\nthen stop' },
        { role: 'user', content: '你好' }
      ],
      params: { temperature: 0.5, max_tokens: 32, stop: ['\n\n'] }
    });
    expect(code).toContain('base_url="http://127.0.0.1:4000/v1"');
    expect(code).toContain(
      'api_key=os.environ.get("CUBE_LAB_DEPLOYMENT_KEY", "none")'
    );
    expect(code).toContain(
      '{"role": "system", "content": "Say \\"hi\\"\\nthen stop"},'
    );
    expect(code).toContain('{"role": "user", "content": "你好"},');
    expect(code).toContain('    model="tiny",\n    messages=messages,\n');
    expect(code).toContain(
      '    temperature=0.5,\n    max_tokens=32,\n    stop=["\\n\\n"],\n'
    );
    expect(code).not.toContain('top_p');
    expect(code).toContain('stream=True');
  });

  it('writes Python literals', () => {
    expect(pyValue(true)).toBe('True');
    expect(pyValue(null)).toBe('None');
    expect(pyValue(['a', 1])).toBe('["a", 1]');
  });
});
