/**
 * Tuning view content: statuses in words, labels that are not cut.
 */
import type { TuningTrial } from '../api';
import {
  IBox,
  parallelBox,
  parallelGeometry,
  statusLabel,
  statusSummary,
  tickLabel
} from '../panels/tuning/logic';

const trans = {
  __: (msgid: string, ...args: any[]) =>
    msgid.replace(/%(\d+)/g, (m, i) => String(args[Number(i) - 1] ?? m))
};

function trial(
  seq: number,
  status: TuningTrial['status'],
  parameters: TuningTrial['parameters'] = {},
  final: number | null = 1
): TuningTrial {
  return {
    id: `t${seq}`,
    seq,
    parameters,
    status,
    intermediate: [],
    final,
    exit_code: null,
    error: null,
    started_at: null,
    finished_at: null,
    duration_s: null
  };
}

describe('status words', () => {
  it('says every trial status in words, through the translator', () => {
    const seen: string[] = [];
    const spy = {
      __: (m: string, ...a: any[]) => {
        seen.push(m);
        return trans.__(m, ...a);
      }
    };
    expect(statusLabel('early_stopped', spy)).toBe('early stopped');
    expect(seen).toEqual(['early stopped']);
    expect(statusLabel('some_new_state', trans)).toBe('some new state');
  });

  it('summarises the trials whole, running first', () => {
    const trials = [
      trial(1, 'early_stopped'),
      trial(2, 'succeeded'),
      trial(3, 'early_stopped'),
      trial(4, 'running'),
      trial(5, 'early_stopped'),
      trial(6, 'early_stopped'),
      trial(7, 'early_stopped')
    ];
    expect(statusSummary(trials, trans)).toBe(
      '1 running, 1 succeeded, 5 early stopped'
    );
    expect(statusSummary([], trans)).toBe('');
  });
});

describe('parallel coordinates labels', () => {
  const base: IBox = {
    width: 440,
    height: 230,
    left: 60,
    right: 70,
    top: 24,
    bottom: 16
  };

  it('keeps labels whole up to 24 characters, else cuts the middle', () => {
    expect(tickLabel('rmsprop')).toBe('rmsprop');
    expect(tickLabel('RandomForestClassifier')).toBe('RandomForestClassifier');
    const long = 'sklearn.ensemble.GradientBoostingClassifier';
    const cut = tickLabel(long);
    expect(Array.from(cut)).toHaveLength(24);
    expect(cut.startsWith('sklearn.ens')).toBe(true);
    expect(cut.endsWith('Classifier')).toBe(true);
    expect(cut).toContain('…');
  });

  it('widens the plot so long choices do not run into the next axis', () => {
    const names = ['GradientBoostingClassifier', 'RandomForestClassifier'];
    const space = {
      a: { _type: 'choice', _value: names },
      b: { _type: 'choice', _value: names },
      c: { _type: 'choice', _value: names }
    };
    const ts = [
      trial(1, 'succeeded', { a: names[0], b: names[1], c: names[0] }, 1),
      trial(2, 'succeeded', { a: names[1], b: names[0], c: names[1] }, 2)
    ];
    const params = ['a', 'b', 'c'];
    const plain = parallelGeometry(ts, params, space, 'maximize', base);
    const box = parallelBox(plain.axes, base);
    expect(box.width).toBeGreaterThan(base.width);
    const g = parallelGeometry(ts, params, space, 'maximize', box);
    // "GradientBoostingClassifier" (cut to 24 characters) sits left of its
    // axis at 9 px, about 130 units: it clears the previous axis and the edge.
    const labelWidth = 24 * 9 * 0.6;
    expect(g.axes[0].x).toBeGreaterThanOrEqual(labelWidth);
    for (let i = 1; i < params.length; i++) {
      expect(g.axes[i].x - g.axes[i - 1].x).toBeGreaterThanOrEqual(labelWidth);
    }
    // In the default box they would overlap.
    expect(plain.axes[0].x).toBeLessThan(labelWidth);
    // Short labels keep the default box.
    const short = parallelGeometry(
      [trial(1, 'succeeded', { lr: 0.1 }, 1)],
      ['lr'],
      {},
      'maximize',
      base
    );
    expect(parallelBox(short.axes, base)).toEqual(base);
  });
});
