/**
 * The knowledge base view's side-by-side evaluation: the question set as
 * typed, each configuration checked, the two results lined up.
 */
import type { KbEvalScores } from '../api';
import {
  compareScores,
  firstRank,
  formatMetric,
  parseQuestionSet,
  readConfig,
  rerankerChoices,
  rerankLabel
} from '../panels/kb/evaluation';

function scores(recall: number, mrr: number, ndcg: number): KbEvalScores {
  return {
    questions: 2,
    k: 5,
    recall_at_k: recall,
    mrr,
    ndcg_at_10: ndcg,
    per_question: []
  };
}

describe('parseQuestionSet', () => {
  it('reads lines of question => source, several sources by commas', () => {
    const set = parseQuestionSet(
      [
        '# refunds',
        'How long does a refund take? => docs/refunds.md',
        '',
        'When do parcels leave?\tdocs/shipping.md',
        'Either one => docs/a.md, docs/b.md'
      ].join('\n')
    );
    expect(set.errors).toEqual([]);
    expect(set.questions).toEqual([
      { question: 'How long does a refund take?', source: 'docs/refunds.md' },
      { question: 'When do parcels leave?', source: 'docs/shipping.md' },
      { question: 'Either one', sources: ['docs/a.md', 'docs/b.md'] }
    ]);
  });

  it('says which lines lack a source', () => {
    const set = parseQuestionSet('no arrow here\nok => a.md\n=> b.md');
    expect(set.questions).toHaveLength(1);
    expect(set.errors).toHaveLength(2);
    expect(set.errors[0]).toContain('Line 1');
    expect(set.errors[1]).toContain('Line 3');
  });

  it('takes the JSON list the endpoint takes', () => {
    const set = parseQuestionSet(
      '[{"question": "q1", "source": "a.md"}, {"question": "q2", "chunks": [3]}, {"q": 1}]'
    );
    expect(set.questions).toEqual([
      { question: 'q1', source: 'a.md' },
      { question: 'q2', chunks: [3] }
    ]);
    expect(set.errors).toHaveLength(1);
    expect(parseQuestionSet('[oops').errors[0]).toContain('Not valid JSON');
  });
});

describe('the two configurations', () => {
  it('checks k', () => {
    expect(readConfig({ mode: 'hybrid', k: '5' })).toEqual({
      k: 5,
      mode: 'hybrid',
      rerank: false
    });
    for (const k of ['', '0', '101', '2.5', 'x']) {
      expect('error' in readConfig({ mode: 'vector', k })).toBe(true);
    }
  });

  it('asks for no reranker explicitly when none is chosen', () => {
    // false, not absent: the knowledge base's default reranker is not used
    for (const rerank of [undefined, '', '  ']) {
      const c = readConfig({ mode: 'vector', k: '3', rerank, topN: '20' });
      expect(c).toEqual({ k: 3, mode: 'vector', rerank: false });
    }
  });

  it('sends the chosen reranker, with top_n when given', () => {
    expect(
      readConfig({ mode: 'hybrid', k: '5', rerank: 'ce', topN: '' })
    ).toEqual({ k: 5, mode: 'hybrid', rerank: { model: 'ce' } });
    expect(
      readConfig({ mode: 'hybrid', k: '5', rerank: ' ce/2 ', topN: ' 20 ' })
    ).toEqual({ k: 5, mode: 'hybrid', rerank: { model: 'ce/2', top_n: 20 } });
    expect(
      readConfig({ mode: 'hybrid', k: '5', rerank: 'ce', topN: '200' })
    ).toEqual({ k: 5, mode: 'hybrid', rerank: { model: 'ce', top_n: 200 } });
  });

  it('checks top_n only when a reranker is chosen', () => {
    for (const topN of ['0', '201', '2.5', 'x', '-3']) {
      const c = readConfig({ mode: 'hybrid', k: '5', rerank: 'ce', topN });
      expect(c).toEqual({ error: expect.stringContaining('top_n') });
    }
    // k is checked first
    expect(
      readConfig({ mode: 'hybrid', k: '0', rerank: 'ce', topN: '0' })
    ).toEqual({ error: expect.stringContaining('k:') });
  });

  it("offers the project's registered models that have a version", () => {
    const model = (
      name: string,
      project = 'p',
      archived = false,
      latest_version: number | null = 1
    ) => ({ name, project, archived, latest_version });
    expect(
      rerankerChoices(
        [
          model('zeta'),
          model('alpha'),
          model('old', 'p', true),
          model('empty', 'p', false, null),
          model('theirs', 'q'),
          model('alpha')
        ],
        'p'
      )
    ).toEqual(['alpha', 'zeta']);
    expect(rerankerChoices([], 'p')).toEqual([]);
  });

  it('says the reranker a column used', () => {
    expect(rerankLabel(null)).toBe('no reranker');
    expect(rerankLabel(undefined)).toBe('no reranker');
    expect(rerankLabel({ model: 'ce' })).toBe('reranked by ce');
    expect(rerankLabel({ model: 'ce/2', top_n: null })).toBe(
      'reranked by ce/2'
    );
    expect(rerankLabel({ model: 'ce', top_n: 20 })).toBe(
      'reranked by ce (top 20)'
    );
  });

  it('lines the metrics up and marks the better one', () => {
    const rows = compareScores(scores(1, 0.5, 0.6), scores(0.5, 0.75, 0.6));
    expect(rows.map(r => [r.key, r.better])).toEqual([
      ['recall_at_k', 'a'],
      ['mrr', 'b'],
      ['ndcg_at_10', null]
    ]);
    expect(compareScores(null, scores(1, 1, 1))[0]).toEqual({
      key: 'recall_at_k',
      a: null,
      b: 1,
      better: null
    });
  });

  it('formats metrics and finds the best rank', () => {
    expect(formatMetric(0.5)).toBe('0.500');
    expect(formatMetric(null)).toBe('–');
    expect(firstRank([null, 3, 2])).toBe(2);
    expect(firstRank([null])).toBeNull();
    expect(firstRank([])).toBeNull();
  });
});
