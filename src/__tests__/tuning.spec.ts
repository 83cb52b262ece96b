/**
 * Tuning panel logic: search-space checks (the server's rules), the form ->
 * NNI config mapping, trial sorting, the best trial, the train command and
 * the chart geometry (intermediate curves, parallel coordinates).
 */
import type { TuningTrial } from '../api';
import {
  bestTrialId,
  checkSpace,
  checkSpaceText,
  curvesGeometry,
  emptyExperimentForm,
  entryOk,
  formToExperiment,
  IBox,
  nextSort,
  parallelGeometry,
  parameterNames,
  sortTrials,
  trainCommand
} from '../panels/tuning/logic';

function trial(
  seq: number,
  parameters: TuningTrial['parameters'],
  final: number | null,
  extra: Partial<TuningTrial> = {}
): TuningTrial {
  return {
    id: `t${seq}`,
    seq,
    parameters,
    status: final === null ? 'running' : 'succeeded',
    intermediate: [],
    final,
    exit_code: null,
    error: null,
    started_at: null,
    finished_at: null,
    duration_s: null,
    ...extra
  };
}

describe('search space', () => {
  it.each([
    ['choice', [1, 'a'], true],
    ['choice', [], false],
    ['choice', 'abc', false],
    ['randint', [1, 5], true],
    ['randint', [1.5, 5], false],
    ['randint', [5, 1], false],
    ['uniform', [-1, 1], true],
    ['uniform', [1, 1], false],
    ['uniform', [0, 1, 2], false],
    ['quniform', [0, 10, 2], true],
    ['quniform', [0, 10, 0], false],
    ['loguniform', [0.001, 1], true],
    ['loguniform', [0, 1], false],
    ['qloguniform', [1, 100, 1], true],
    ['qloguniform', [1, 100], false],
    ['normal', [0, 1], true],
    ['normal', [0, 0], false],
    ['qnormal', [0, 1, 0.5], true],
    ['lognormal', [0, -1], false],
    ['qlognormal', [0, 1, -1], false],
    ['uniform', [0, Infinity], false],
    ['uniform', [true, 2], false]
  ])('%s %j -> %s', (kind, value, ok) => {
    expect(entryOk(kind, value)).toBe(ok);
  });

  it('names every bad entry with what it needs', () => {
    const problems = checkSpace({
      lr: { _type: 'loguniform', _value: [0, 0.1] },
      bs: { _type: 'choice', _value: [16, 32] },
      act: { _type: 'pick', _value: ['relu'] },
      depth: { _value: [1, 2] }
    });
    expect(problems.map(p => p.path)).toEqual([
      'searchSpace.lr',
      'searchSpace.act',
      'searchSpace.depth'
    ]);
    expect(problems[0].message).toBe(
      'searchSpace.lr: loguniform needs _value = [low, high] with 0 < low < high'
    );
    expect(problems[1].message).toContain('unknown _type "pick"');
    expect(problems[2].message).toContain(
      'must be an object with _type and _value'
    );
  });

  it('checks nested spaces inside a choice', () => {
    const problems = checkSpace({
      model: {
        _type: 'choice',
        _value: [
          { _name: 'svm', C: { _type: 'uniform', _value: [1, 0] } },
          { _name: 'tree' }
        ]
      }
    });
    expect(problems).toEqual([
      {
        path: 'searchSpace.model[0].C',
        message:
          'searchSpace.model[0].C: uniform needs _value = [low, high] with low < high'
      }
    ]);
  });

  it('reports JSON errors and empty spaces', () => {
    expect(checkSpaceText('{"a": ').problems[0].message).toMatch(
      /^Not valid JSON/
    );
    expect(checkSpaceText('{}').problems[0].message).toContain('non-empty');
    expect(checkSpaceText('[1]').problems).toHaveLength(1);
    const ok = checkSpaceText('{"x": {"_type": "uniform", "_value": [-3, 3]}}');
    expect(ok.problems).toEqual([]);
    expect(Object.keys(ok.space!)).toEqual(['x']);
  });
});

describe('form', () => {
  it('maps to an NNI v2 config', () => {
    const { request, errors } = formToExperiment({
      ...emptyExperimentForm(),
      searchSpace: '{"x": {"_type": "uniform", "_value": [-3, 3]}}',
      folder: '/hpo/',
      tuner: 'Random',
      assessor: 'Medianstop',
      metric: 'accuracy',
      mode: 'minimize',
      maxTrials: '6',
      concurrency: '2',
      maxDuration: '10 m',
      name: ' demo '
    });
    expect(errors).toEqual({});
    expect(request).toEqual({
      folder: 'hpo',
      config: {
        searchSpace: { x: { _type: 'uniform', _value: [-3, 3] } },
        trialCommand: 'python3 trial.py',
        trialCodeDirectory: '.',
        trialConcurrency: 2,
        maxTrialNumber: 6,
        tuner: { name: 'Random' },
        assessor: { name: 'Medianstop' },
        objective: { metric: 'accuracy', mode: 'minimize' },
        experimentName: 'demo',
        maxExperimentDuration: '10m'
      }
    });
  });

  it('collects field errors', () => {
    const { request, errors } = formToExperiment({
      ...emptyExperimentForm(),
      searchSpace: '{"x": {"_type": "choice", "_value": []}}',
      trialCommand: 'python3 "trial.py',
      maxTrials: '0',
      concurrency: '1.5',
      maxDuration: 'soon'
    });
    expect(request).toBeNull();
    expect(Object.keys(errors).sort()).toEqual([
      'concurrency',
      'maxDuration',
      'maxTrials',
      'searchSpace',
      'trialCommand'
    ]);
    expect(errors.searchSpace).toContain('searchSpace.x: choice needs');
  });
});

describe('trials', () => {
  const trials = [
    trial(1, { x: 0.5, opt: 'sgd' }, 0.2, { duration_s: 3 }),
    trial(2, { x: -1, opt: 'adam' }, null),
    trial(3, { x: 2, opt: 'adam' }, 0.9, { duration_s: 1 }),
    trial(4, { x: 1, opt: 'sgd', extra: 1 }, 0.9, { duration_s: 2 })
  ];

  it('sorts by a column, missing values last, ties by trial order', () => {
    const seqs = (key: any, descending: boolean) =>
      sortTrials(trials, { key, descending }).map(t => t.seq);
    expect(seqs('final', true)).toEqual([3, 4, 1, 2]);
    expect(seqs('final', false)).toEqual([1, 3, 4, 2]);
    expect(seqs('param:x', false)).toEqual([2, 1, 4, 3]);
    expect(seqs('param:opt', false)).toEqual([2, 3, 1, 4]);
    expect(seqs('duration', false)).toEqual([3, 4, 1, 2]);
    expect(seqs('param:extra', true)).toEqual([4, 1, 2, 3]);
  });

  it('cycles sort direction; metric columns start best first', () => {
    const s = nextSort({ key: 'seq', descending: false }, 'final', 'maximize');
    expect(s).toEqual({ key: 'final', descending: true });
    expect(nextSort(s, 'final', 'maximize')).toEqual({
      key: 'final',
      descending: false
    });
    expect(nextSort(s, 'final', 'minimize').descending).toBe(false);
    expect(nextSort(s, 'param:x', 'maximize')).toEqual({
      key: 'param:x',
      descending: false
    });
  });

  it('finds the best trial (first of a tie) for the mode', () => {
    expect(bestTrialId(trials, 'maximize')).toBe('t3');
    expect(bestTrialId(trials, 'minimize')).toBe('t1');
    expect(bestTrialId([trials[1]], 'maximize')).toBeNull();
  });

  it('lists parameter names in first-seen order', () => {
    expect(parameterNames(trials)).toEqual(['x', 'opt', 'extra']);
  });

  it('builds a cube-lab train command with the parameters as arguments', () => {
    expect(
      trainCommand('python3 trial.py --epochs 3', '/srv/my code', {
        lr: 0.01,
        opt: 'adam',
        layers: [1, 2]
      })
    ).toBe(
      "cube-lab train --workdir '/srv/my code' trial.py --epochs 3 --lr 0.01 --opt adam --layers '[1,2]'"
    );
    expect(trainCommand('./run.sh', '/w', { a: 1 })).toBe(
      'cube-lab train --framework plain --workdir /w ./run.sh --a 1'
    );
  });
});

describe('charts', () => {
  const box: IBox = {
    width: 200,
    height: 100,
    left: 10,
    right: 10,
    top: 10,
    bottom: 10
  };

  it('draws one curve per trial on shared axes', () => {
    const g = curvesGeometry(
      [
        { id: 'a', values: [0, 1, 2] },
        { id: 'b', values: [2] },
        { id: 'c', values: [] }
      ],
      box
    );
    expect(g.lines.map(l => l.id)).toEqual(['a', 'b']);
    // x: step 1 at the left edge, step 3 at the right; y: 0 at the bottom, 2 on top.
    expect(g.lines[0].path).toBe('M10,90L100,50L190,10');
    expect(g.lines[1].last).toEqual({ x: 10, y: 10 });
    expect(g.yTicks[0]).toEqual({ value: 0, pos: 90 });
    expect(g.xTicks.map(t => t.value)).toEqual([1, 2, 3]);
    expect(curvesGeometry([], box).lines).toEqual([]);
  });

  it('scales parallel coordinates: numeric, categorical and metric axes', () => {
    const space = {
      x: { _type: 'uniform', _value: [0, 4] },
      opt: { _type: 'choice', _value: ['sgd', 'adam', 'rmsprop'] },
      n: { _type: 'choice', _value: [16, 32] }
    };
    const ts = [
      trial(1, { x: 0, opt: 'sgd', n: 16 }, 1),
      trial(2, { x: 4, opt: 'adam', n: 32 }, 3),
      trial(3, { x: 2, opt: 'rmsprop', n: 32 }, 2),
      trial(4, { x: 1, opt: 'sgd', n: 16 }, null)
    ];
    const g = parallelGeometry(ts, ['x', 'opt', 'n'], space, 'maximize', box);
    expect(g.axes.map(a => [a.name, a.kind, a.x])).toEqual([
      ['x', 'numeric', 10],
      ['opt', 'categorical', 70],
      ['n', 'categorical', 130],
      ['__metric__', 'numeric', 190]
    ]);
    const [x, opt, n, metric] = g.axes;
    expect(x.scale(0)).toBe(90);
    expect(x.scale(4)).toBe(10);
    expect(x.scale('a')).toBeNull();
    // Choice options in their order, evenly from the bottom, even if unseen.
    expect(opt.ticks.map(t => [t.label, t.y])).toEqual([
      ['sgd', 90],
      ['adam', 50],
      ['rmsprop', 10]
    ]);
    expect(n.ticks.map(t => t.label)).toEqual(['16', '32']);
    expect(metric.scale(2)).toBe(50);
    // Finished trials only; the best is drawn last and marked.
    expect(g.lines.map(l => l.id)).toEqual(['t1', 't3', 't2']);
    const best = g.lines[2];
    expect(best.best).toBe(true);
    expect(best.quality).toBe(1);
    expect(best.points).toBe('10,10 70,50 130,10 190,10');
    expect(g.lines[0].quality).toBe(0);

    const min = parallelGeometry(ts, ['x'], space, 'minimize', box);
    expect(min.lines.find(l => l.best)!.id).toBe('t1');
    expect(min.lines.find(l => l.id === 't1')!.quality).toBe(1);
  });

  it('gives a constant axis some room', () => {
    const g = parallelGeometry(
      [trial(1, { x: 5 }, 1), trial(2, { x: 5 }, 1)],
      ['x'],
      {},
      'maximize',
      box
    );
    expect(g.axes[0].scale(5)).toBe(50);
    expect(g.axes[1].scale(1)).toBe(50);
  });
});
