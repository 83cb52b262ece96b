/**
 * The pure logic of the Knowledge bases panel: query terms and highlighting,
 * an ingest's progress in words, scores per mode, citation markers in an
 * answer, typed paths.
 */
import {
  answerParts,
  fileOutcomeText,
  formatScore,
  highlight,
  hitScores,
  ingestActive,
  ingestPercent,
  ingestProgressText,
  parsePaths,
  queryTerms,
  reflow,
  sourceLabel,
  splitSource
} from '../panels/kb/logic';

/** An English bundle: fills %1, %2... and picks the plural by n. */
const en = {
  __: (msgid: string, ...args: any[]) =>
    msgid.replace(/%(\d+)/g, (m, i) => String(args[Number(i) - 1] ?? m)),
  _n: (one: string, many: string, n: number, ...args: any[]) =>
    (n === 1 ? one : many).replace(/%(\d+)/g, (m, i) =>
      String([n, ...args][Number(i) - 1] ?? m)
    )
};

const marked = (text: string, terms: string[]) =>
  highlight(text, terms)
    .map(s => (s.match ? `<${s.text}>` : s.text))
    .join('');

describe('queryTerms', () => {
  it('lower-cases, keeps each word once, longest first, drops one letter and common words', () => {
    expect(queryTerms('How do I index an Index? a b refunds')).toEqual([
      'refunds',
      'index'
    ]);
    expect(queryTerms('how long until my refund is paid')).toEqual([
      'refund',
      'long',
      'paid'
    ]);
  });

  it('keeps Chinese words and single characters', () => {
    expect(queryTerms('退款 多久 的')).toEqual(['多久', '退款', '的']);
  });

  it('gives nothing for punctuation only', () => {
    expect(queryTerms(' ?! ')).toEqual([]);
  });
});

describe('highlight', () => {
  it('marks every occurrence in any case, the text between kept', () => {
    const text = 'Refunds: a refund is paid. REFUND!';
    expect(marked(text, queryTerms('refund'))).toBe(
      '<Refund>s: a <refund> is paid. <REFUND>!'
    );
    expect(
      highlight(text, ['refund'])
        .map(s => s.text)
        .join('')
    ).toBe(text);
  });

  it('matches Latin terms at the start of a word only', () => {
    expect(marked('reindex the index', ['index'])).toBe('reindex the <index>');
  });

  it('prefers the longer term where two overlap', () => {
    expect(marked('indexing index', queryTerms('index indexing'))).toBe(
      '<indexing> <index>'
    );
  });

  it('matches Chinese terms inside a run of characters', () => {
    expect(marked('申请退款需要三十天', ['退款'])).toBe('申请<退款>需要三十天');
  });

  it('escapes what a regular expression would read', () => {
    expect(marked('a (c++) b', ['c++'])).toBe('a (<c++>) b');
  });

  it('gives the text unmarked without terms, nothing for no text', () => {
    expect(highlight('plain', [])).toEqual([{ text: 'plain', match: false }]);
    expect(highlight('', ['x'])).toEqual([]);
  });
});

describe('ingest progress', () => {
  const running = {
    status: 'running' as const,
    files_total: 4,
    files_done: 1,
    chunks: 1,
    failed: 0
  };

  it('says files done of total and the chunks', () => {
    expect(ingestProgressText(running, en)).toBe('1 of 4 files · 1 chunk');
    expect(
      ingestProgressText(
        { ...running, files_done: 3, chunks: 12, failed: 1 },
        en
      )
    ).toBe('3 of 4 files · 12 chunks · 1 failed');
    expect(
      ingestProgressText({ ...running, files_total: 1, files_done: 1 }, en)
    ).toBe('1 of 1 file · 1 chunk');
  });

  it('is active while queued or running; the bar is full once ended', () => {
    expect(ingestActive(running)).toBe(true);
    expect(ingestActive({ status: 'queued' })).toBe(true);
    expect(ingestActive({ status: 'failed' })).toBe(false);
    expect(ingestPercent(running)).toBe(25);
    expect(ingestPercent({ ...running, files_total: 0 })).toBe(0);
    expect(ingestPercent({ ...running, status: 'succeeded' })).toBe(100);
  });

  it("says each file's outcome", () => {
    expect(fileOutcomeText({ status: 'added', chunks: 3 }, en)).toBe(
      'added, 3 chunks'
    );
    expect(fileOutcomeText({ status: 'replaced', chunks: 1 }, en)).toBe(
      'replaced, 1 chunk'
    );
    expect(fileOutcomeText({ status: 'unchanged', chunks: 0 }, en)).toBe(
      'unchanged'
    );
    expect(fileOutcomeText({ status: 'failed', chunks: 0 }, en)).toBe('failed');
  });
});

describe('scores', () => {
  const hit = { score: 0.0328, vector_score: 0.61, keyword_score: 2.5 };

  it('hybrid shows the fused score and both halves', () => {
    expect(hitScores(hit, 'hybrid')).toEqual([
      { kind: 'fused', value: 0.0328 },
      { kind: 'vector', value: 0.61 },
      { kind: 'keyword', value: 2.5 }
    ]);
  });

  it("vector and keyword show the mode's score under its own name", () => {
    expect(
      hitScores(
        { score: 0.7, vector_score: null, keyword_score: null },
        'vector'
      )
    ).toEqual([{ kind: 'vector', value: 0.7 }]);
    expect(
      hitScores({ score: 3.1, vector_score: null, keyword_score: null }, 'bm25')
    ).toEqual([{ kind: 'keyword', value: 3.1 }]);
  });

  it('a hybrid hit found by one half only has no score for the other', () => {
    expect(
      hitScores(
        { score: 0.016, vector_score: 0.4, keyword_score: null },
        'hybrid'
      )
    ).toEqual([
      { kind: 'fused', value: 0.016 },
      { kind: 'vector', value: 0.4 }
    ]);
  });

  it("a reranked hit shows the reranker's score first", () => {
    expect(hitScores({ ...hit, rerank: -0.25 }, 'hybrid')).toEqual([
      { kind: 'rerank', value: -0.25 },
      { kind: 'fused', value: 0.0328 },
      { kind: 'vector', value: 0.61 },
      { kind: 'keyword', value: 2.5 }
    ]);
    expect(hitScores({ ...hit, rerank: null }, 'hybrid')[0].kind).toBe('fused');
  });

  it('formats three decimals, small ones with two significant digits', () => {
    expect(formatScore(0.61234)).toBe('0.612');
    expect(formatScore(0.003278)).toBe('0.0033');
    expect(formatScore(0)).toBe('0.000');
    expect(formatScore(null)).toBe('–');
    expect(formatScore(NaN)).toBe('–');
  });
});

describe('answerParts', () => {
  it('cuts an answer at its citation markers', () => {
    expect(answerParts('Thirty days [1]. Or credit [2][1].', [1, 2])).toEqual([
      { text: 'Thirty days ' },
      { cite: 1 },
      { text: '. Or credit ' },
      { cite: 2 },
      { cite: 1 },
      { text: '.' }
    ]);
  });

  it('splits "[1, 3]" into two citations', () => {
    expect(answerParts('Yes [1, 3]', [1, 2, 3])).toEqual([
      { text: 'Yes ' },
      { cite: 1 },
      { cite: 3 }
    ]);
  });

  it('leaves brackets that cite no passage as text', () => {
    expect(answerParts('see [7] and [x] [1]', [1])).toEqual([
      { text: 'see [7] and [x] ' },
      { cite: 1 }
    ]);
    expect(answerParts('No answer in the documents.', [])).toEqual([
      { text: 'No answer in the documents.' }
    ]);
  });
});

describe('paths and names', () => {
  it('splits typed paths on commas and lines, each once', () => {
    expect(parsePaths(' docs, notes/a.md\n\nnotes/a.md ,')).toEqual([
      'docs',
      'notes/a.md'
    ]);
  });

  it('names a source by its last segment', () => {
    expect(sourceLabel('docs/guide/intro.md')).toBe('intro.md');
    expect(sourceLabel('upload:notes.md')).toBe('notes.md');
  });

  it('cuts a source into its folder and its file', () => {
    expect(splitSource('docs/guide/intro.md')).toEqual({
      dir: 'docs/guide/',
      file: 'intro.md'
    });
    expect(splitSource('upload:notes.md')).toEqual({
      dir: '',
      file: 'notes.md'
    });
  });

  it("joins a paragraph's wrapped lines, keeps blank lines", () => {
    expect(reflow('# Title\n\nline one\nline two\n\nnext  \n para\n')).toBe(
      '# Title\n\nline one line two\n\nnext para'
    );
  });
});
