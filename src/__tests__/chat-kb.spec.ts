/**
 * A knowledge base as the Chat panel's target: picker values, the history a
 * next question sends, and the session (ask, stop, clear) against a mocked
 * streamed POST /kb/{project}/{name}/chat (citations, deltas, done).
 */
import * as api from '../api';
import {
  IKbTurn,
  kbFromValue,
  kbHistory,
  KbChatSession,
  kbTargetValue,
  sortedCitations
} from '../panels/chat/kbchat';
import { isFileSource } from '../panels/kb/answer';

jest.mock('../api', () => {
  const actual = jest.requireActual('../api');
  return { ...actual, streamKnowledgeBaseChat: jest.fn() };
});

const mocked = api as jest.Mocked<typeof api>;

function citation(n: number): api.KbCitation {
  return {
    number: n,
    chunk_id: 10 + n,
    source: `docs/${n}.md`,
    name: `${n}.md`,
    position: 0,
    page: null,
    heading: '',
    text: `passage ${n}`,
    score: 1 / n,
    cosine: null,
    cited: n === 1
  };
}

function answer(text: string, over: Partial<api.KbChatAnswer> = {}) {
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
    usage: null,
    ...over
  } as api.KbChatAnswer;
}

/** The events a streamed answer of `text` sends: citations, a delta per word, done. */
async function* streamed(
  text: string,
  gate?: Promise<void>
): AsyncGenerator<api.KbChatEvent, void, undefined> {
  const whole = answer(text);
  yield { event: 'citations', ...whole };
  await gate;
  for (const word of text.split(/(?<= )/)) {
    yield { event: 'delta', text: word };
  }
  yield { event: 'done', ...whole };
}

function turn(over: Partial<IKbTurn>): IKbTurn {
  return {
    id: 1,
    kb: 'docs',
    query: 'q',
    status: 'complete',
    answer: { answer: 'a', citations: [], query: 'q', answered: true },
    deltas: 1,
    error: null,
    ...over
  };
}

describe('knowledge base targets', () => {
  it('names a knowledge base in the picker', () => {
    expect(kbTargetValue('handbook')).toBe('kb:handbook');
    expect(kbFromValue('kb:handbook')).toBe('handbook');
    expect(kbFromValue('kb:')).toBeNull();
    expect(kbFromValue('deployment:tiny')).toBeNull();
    expect(kbFromValue('url')).toBeNull();
  });

  it('sends the answered turns as history, not the failed or unanswered ones', () => {
    const turns = [
      turn({
        id: 1,
        query: 'one',
        answer: {
          answer: 'A1 [1]',
          citations: [],
          query: 'one',
          answered: true
        }
      }),
      turn({ id: 2, query: 'two', status: 'error' }),
      turn({
        id: 3,
        query: 'three',
        answer: {
          answer: 'nothing',
          citations: [],
          query: 'three',
          answered: false
        }
      }),
      turn({ id: 4, query: 'four', status: 'stopped' })
    ];
    expect(kbHistory(turns)).toEqual([
      { role: 'user', content: 'one' },
      { role: 'assistant', content: 'A1 [1]' }
    ]);
  });

  it('orders citations by number and tells files from uploads', () => {
    expect(
      sortedCitations([citation(3), citation(1)]).map(c => c.number)
    ).toEqual([1, 3]);
    expect(isFileSource('docs/a.md')).toBe(true);
    expect(isFileSource('upload:a.md')).toBe(false);
    expect(isFileSource('')).toBe(false);
  });
});

describe('KbChatSession', () => {
  const stream = mocked.streamKnowledgeBaseChat as jest.Mock;
  beforeEach(() => stream.mockReset());

  it('asks with the history of the same knowledge base and keeps the citations', async () => {
    const session = new KbChatSession('alice');
    const seen: string[] = [];
    session.changed.connect(() => seen.push(session.turns[0].answer.answer));
    stream.mockImplementationOnce(() => streamed('First [1].'));
    const target = { deployment: 'tiny' };
    await session.ask({
      kb: 'docs',
      query: ' refunds? ',
      target,
      system: '',
      params: {}
    });
    expect(stream).toHaveBeenLastCalledWith(
      'alice',
      'docs',
      {
        query: 'refunds?',
        target,
        history: undefined,
        system: undefined,
        params: undefined
      },
      expect.any(AbortSignal)
    );
    expect(session.turns).toHaveLength(1);
    expect(session.turns[0].status).toBe('complete');
    expect(session.turns[0].deltas).toBe(2); // "First " and "[1]."
    expect(seen).toContain('First '); // the answer grew as it came
    expect(session.turns[0].answer.answer).toBe('First [1].');
    expect(session.turns[0].answer.citations.map(c => c.number)).toEqual([
      1, 2
    ]);

    stream.mockImplementationOnce(() => streamed('Second [2].'));
    await session.ask({
      kb: 'docs',
      query: 'and then?',
      target,
      system: 'Be brief.',
      params: { max_tokens: 20 }
    });
    expect(stream.mock.calls[1][2]).toEqual({
      query: 'and then?',
      target,
      history: [
        { role: 'user', content: 'refunds?' },
        { role: 'assistant', content: 'First [1].' }
      ],
      system: 'Be brief.',
      params: { max_tokens: 20 }
    });
    expect(session.busy).toBe(false);
  });

  it('keeps a refusal or an error event as the turn error, and a stopped question stays stopped', async () => {
    const session = new KbChatSession('alice');
    stream.mockImplementationOnce(async function* () {
      throw new Error('boom');
    });
    await session.ask({
      kb: 'docs',
      query: 'q',
      target: { deployment: 'x' },
      system: '',
      params: {}
    });
    expect(session.turns[0].status).toBe('error');
    expect(session.turns[0].error?.error).toContain('boom');

    stream.mockImplementationOnce(async function* () {
      yield { event: 'citations', ...answer('') };
      yield {
        event: 'error',
        error: 'the model server answered 500',
        detail: 'x'
      };
    });
    await session.ask({
      kb: 'docs',
      query: 'q2',
      target: { deployment: 'x' },
      system: '',
      params: {}
    });
    expect(session.turns[1].status).toBe('error');
    expect(session.turns[1].error?.error).toBe('the model server answered 500');
    expect(session.turns[1].answer.citations).toHaveLength(2);

    let release: () => void = () => undefined;
    const gate = new Promise<void>(r => (release = r));
    let signal: AbortSignal | undefined;
    stream.mockImplementationOnce((_p, _k, _b, s: AbortSignal) => {
      signal = s;
      return streamed('late', gate);
    });
    const asked = session.ask({
      kb: 'docs',
      query: 'slow',
      target: { deployment: 'x' },
      system: '',
      params: {}
    });
    await Promise.resolve();
    expect(session.busy).toBe(true);
    session.stop();
    expect(signal?.aborted).toBe(true);
    release();
    await asked;
    expect(session.turns[2].status).toBe('stopped');
    expect(session.turns[2].answer.answer).toBe('');
    session.clear();
    expect(session.turns).toHaveLength(0);
  });
});
