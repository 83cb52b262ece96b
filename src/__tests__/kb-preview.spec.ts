/**
 * The chunk preview before an add (src/panels/kb/previewlogic.ts and the
 * client calls): the options as typed checked as the server checks them,
 * whether a shown preview still matches them, each file with its chunks,
 * what an Add would do, a chunk's metadata and excerpt in words, and the
 * preview and the add posting the same options.
 */
import { ServerConnection } from '@jupyterlab/services';

import {
  addKbSources,
  KbPreview,
  KbPreviewChunk,
  previewKbSources
} from '../api';
import {
  checkChunking,
  chunkMetaText,
  draftOf,
  excerpt,
  previewRows,
  previewSummary,
  previewSummaryText,
  sameChunking,
  stagedNames
} from '../panels/kb/previewlogic';

/** An English bundle: fills %1, %2... and picks the plural by n. */
const en = {
  __: (msgid: string, ...args: any[]) =>
    msgid.replace(/%(\d+)/g, (m, i) => String(args[Number(i) - 1] ?? m)),
  _n: (one: string, many: string, n: number, ...args: any[]) =>
    (n === 1 ? one : many).replace(/%(\d+)/g, (m, i) =>
      String([n, ...args][Number(i) - 1] ?? m)
    )
};

function chunk(
  source: string,
  position: number,
  over: Partial<KbPreviewChunk> = {}
): KbPreviewChunk {
  return {
    source,
    position,
    text: `text ${position}`,
    page: null,
    heading: '',
    heading_path: [],
    tokens: 2,
    meta: {},
    ...over
  };
}

function preview(): KbPreview {
  return {
    chunking: 'headings',
    chunk_size: 64,
    overlap: 8,
    files: [
      {
        source: 'docs/a.md',
        status: 'ok',
        chunks: 3,
        tokens: 90,
        error: '',
        detail: ''
      },
      {
        source: 'docs/b.md',
        status: 'ok',
        chunks: 1,
        tokens: 20,
        error: '',
        detail: '',
        unchanged: true
      },
      {
        source: 'docs/broken.pdf',
        status: 'failed',
        chunks: 0,
        tokens: 0,
        error: 'cannot read broken.pdf as a PDF',
        detail: 'Is it a PDF?'
      }
    ],
    // out of order, interleaved: as a server might send them
    chunks: [
      chunk('docs/a.md', 2),
      chunk('docs/b.md', 0),
      chunk('docs/a.md', 0),
      chunk('docs/a.md', 1)
    ],
    total_chunks: 4,
    truncated: false
  };
}

describe('checkChunking', () => {
  it('takes whole numbers: a size of at least 8, an overlap below it', () => {
    expect(
      checkChunking(
        { chunking: 'tokens', chunk_size: ' 120 ', overlap: '20' },
        en
      )
    ).toEqual({
      options: { chunking: 'tokens', chunk_size: 120, overlap: 20 },
      errors: {}
    });
    expect(
      checkChunking({ chunking: 'pages', chunk_size: '8', overlap: '0' }, en)
        .options
    ).toEqual({ chunking: 'pages', chunk_size: 8, overlap: 0 });
  });

  it('says what is wrong on the field it is wrong in', () => {
    const small = checkChunking(
      { chunking: 'tokens', chunk_size: '7', overlap: '0' },
      en
    );
    expect(small.options).toBeNull();
    expect(small.errors.chunk_size).toBe(
      'A whole number of at least 8 tokens.'
    );
    expect(small.errors.overlap).toBeUndefined();

    const overlap = checkChunking(
      { chunking: 'tokens', chunk_size: '50', overlap: '50' },
      en
    );
    expect(overlap.options).toBeNull();
    expect(overlap.errors).toEqual({
      overlap: 'Less than the chunk size (50).'
    });

    for (const bad of ['', '1.5', '-3', 'ten']) {
      const checked = checkChunking(
        { chunking: 'tokens', chunk_size: bad, overlap: bad },
        en
      );
      expect(checked.options).toBeNull();
      expect(checked.errors.chunk_size).toBeTruthy();
      expect(checked.errors.overlap).toBeTruthy();
    }
  });

  it('refuses a strategy the server does not know', () => {
    expect(
      checkChunking(
        { chunking: 'words' as any, chunk_size: '50', overlap: '5' },
        en
      ).options
    ).toBeNull();
  });

  it('starts from the knowledge base settings', () => {
    const draft = draftOf({ chunking: 'headings', chunk_size: 64, overlap: 8 });
    expect(draft).toEqual({
      chunking: 'headings',
      chunk_size: '64',
      overlap: '8'
    });
    expect(checkChunking(draft, en).options).toEqual({
      chunking: 'headings',
      chunk_size: 64,
      overlap: 8
    });
  });
});

describe('sameChunking', () => {
  const a = { chunking: 'tokens' as const, chunk_size: 100, overlap: 10 };
  it('is true only for the same three settings', () => {
    expect(sameChunking(a, { ...a })).toBe(true);
    expect(sameChunking(a, { ...a, overlap: 11 })).toBe(false);
    expect(sameChunking(a, { ...a, chunk_size: 99 })).toBe(false);
    expect(sameChunking(a, { ...a, chunking: 'pages' })).toBe(false);
    expect(sameChunking(a, null)).toBe(false);
    expect(sameChunking(null, null)).toBe(false);
  });
});

describe('the preview shown', () => {
  it('gives each file its own chunks in order, a failed file none', () => {
    const rows = previewRows(preview());
    expect(rows.map(r => r.file.source)).toEqual([
      'docs/a.md',
      'docs/b.md',
      'docs/broken.pdf'
    ]);
    expect(rows[0].chunks.map(c => c.position)).toEqual([0, 1, 2]);
    expect(rows[1].chunks).toHaveLength(1);
    expect(rows[2].chunks).toEqual([]);
    expect(rows[2].file.error).toMatch(/PDF/);
  });

  it('counts what an Add would do: new chunks, unchanged and failed files', () => {
    const summary = previewSummary(preview());
    expect(summary).toEqual({
      files: 3,
      adding: 1,
      unchanged: 1,
      failed: 1,
      chunks: 3
    });
    expect(previewSummaryText(summary, en)).toBe(
      '3 files · 3 new chunks · 1 unchanged · 1 failed'
    );
    expect(
      previewSummaryText(
        { files: 1, adding: 1, unchanged: 0, failed: 0, chunks: 1 },
        en
      )
    ).toBe('1 file · 1 new chunk');
  });

  it('names a chunk by number, page, row, heading path and tokens', () => {
    expect(
      chunkMetaText(
        chunk('a.pdf', 4, {
          page: 2,
          heading_path: ['Guide', 'Install'],
          tokens: 30
        }),
        en
      )
    ).toBe('#5 · page 2 · Guide › Install · 30 tokens');
    expect(
      chunkMetaText(chunk('q.csv', 0, { meta: { row: 7 }, tokens: 1 }), en)
    ).toBe('#1 · row 7 · 1 token');
    expect(chunkMetaText(chunk('a.md', 0, { heading: 'Only' }), en)).toBe(
      '#1 · Only · 2 tokens'
    );
  });

  it('cuts a long chunk at a word, and flattens its white space', () => {
    expect(excerpt('one\n\ntwo   three')).toBe('one two three');
    const long = Array.from({ length: 100 }, (_, i) => `word${i}`).join(' ');
    const cut = excerpt(long, 50);
    expect(cut.endsWith('…')).toBe(true);
    expect(cut.length).toBeLessThanOrEqual(51);
    expect(long.startsWith(cut.slice(0, -1))).toBe(true);
    expect(cut.slice(0, -1).endsWith(' ')).toBe(false);
  });

  it('lists what is staged: paths, then uploads by name', () => {
    expect(
      stagedNames(['docs'], [{ name: 'a.md' }, { name: 'b.pdf' }])
    ).toEqual(['docs', 'a.md', 'b.pdf']);
  });
});

describe('previewKbSources and addKbSources', () => {
  let makeRequest: jest.SpyInstance;
  const settings = ServerConnection.makeSettings({
    baseUrl: 'http://localhost:8888/',
    token: ''
  });

  beforeEach(() => {
    makeRequest = jest
      .spyOn(ServerConnection, 'makeRequest')
      .mockResolvedValue({
        ok: true,
        status: 200,
        statusText: 'OK',
        headers: new Headers({ 'Content-Type': 'application/json' }),
        text: async () => JSON.stringify(preview())
      } as unknown as Response);
  });

  afterEach(() => makeRequest.mockRestore());

  it('post the same options: the preview to .../preview, the add to .../sources', async () => {
    const options = { chunking: 'tokens' as const, chunk_size: 40, overlap: 4 };
    const body = {
      paths: ['docs'],
      documents: [{ name: 'a.md', content: '# A' }]
    };
    const shown = await previewKbSources(
      'alice',
      'my kb',
      { ...body, ...options },
      settings
    );
    expect(shown.files).toHaveLength(3);
    await addKbSources('alice', 'my kb', { ...body, ...options }, settings);
    const [previewUrl, previewInit] = makeRequest.mock.calls[0];
    const [addUrl, addInit] = makeRequest.mock.calls[1];
    expect(previewUrl).toBe(
      'http://localhost:8888/cube/api/v1/kb/alice/my%20kb/preview'
    );
    expect(addUrl).toBe(
      'http://localhost:8888/cube/api/v1/kb/alice/my%20kb/sources'
    );
    expect(previewInit.method).toBe('POST');
    expect(JSON.parse(previewInit.body)).toEqual({ ...body, ...options });
    expect(JSON.parse(addInit.body)).toEqual(JSON.parse(previewInit.body));
  });
});
