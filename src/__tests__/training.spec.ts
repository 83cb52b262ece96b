/**
 * Training panel logic: launch form -> request, shell-like argument
 * splitting, env parsing, the per-rank log buffer and chart scaling.
 */
import type { TrainingJob } from '../api';
import {
  chartGeometry,
  dataForm,
  emptyForm,
  formatDuration,
  formatNumber,
  formToRequest,
  joinArgs,
  jobToForm,
  niceTicks,
  orderMetrics,
  parseEnv,
  parseLine,
  RankedLog,
  splitArgs
} from '../panels/training/logic';

describe('splitArgs', () => {
  it('splits on whitespace and keeps quoted words whole', () => {
    expect(splitArgs('  --epochs 3   --lr=0.1 ')).toEqual([
      '--epochs',
      '3',
      '--lr=0.1'
    ]);
    expect(splitArgs(`--name "my run" --tag 'a b' x\\ y`)).toEqual([
      '--name',
      'my run',
      '--tag',
      'a b',
      'x y'
    ]);
    expect(splitArgs(`"say \\"hi\\"" '' ""`)).toEqual(['say "hi"', '', '']);
    expect(splitArgs('')).toEqual([]);
  });

  it('rejects an unclosed quote', () => {
    expect(() => splitArgs('--name "oops')).toThrow('unclosed double quote');
    expect(() => splitArgs("it's")).toThrow('unclosed single quote');
  });

  it('joinArgs quotes so that splitArgs gives the words back', () => {
    const words = ['--name', 'my run', "it's", '', '--lr=0.1', 'a/b.py'];
    expect(splitArgs(joinArgs(words))).toEqual(words);
    expect(joinArgs(['--epochs', '3'])).toBe('--epochs 3');
  });
});

describe('dataForm', () => {
  it('puts an exported dataset version in the job environment', () => {
    const form = dataForm({
      project: 'course',
      dataset: 'Pets_imgs',
      version: 3,
      path: '/data/datasets/7/v3'
    });
    expect(form).toEqual({
      env: 'CUBE_LAB_DATASET=/data/datasets/7/v3',
      project: 'course',
      name: 'pets-imgs-v3'
    });
    expect(parseEnv(form.env!).env).toEqual({
      CUBE_LAB_DATASET: '/data/datasets/7/v3'
    });
  });
});

describe('parseEnv', () => {
  it('reads KEY=value lines, skipping blanks and comments', () => {
    const { env, errors } = parseEnv(
      'OMP_NUM_THREADS=1\n\n# a comment\n  NCCL_DEBUG = INFO \nURL=a=b'
    );
    expect(errors).toEqual([]);
    expect(env).toEqual({
      OMP_NUM_THREADS: '1',
      NCCL_DEBUG: 'INFO',
      URL: 'a=b'
    });
  });

  it('names each bad line', () => {
    const { errors } = parseEnv('GOOD=1\nnoequals\n1BAD=2');
    expect(errors).toHaveLength(2);
    expect(errors[0]).toMatch(/^line 2: .*no "="/);
    expect(errors[1]).toMatch(/^line 3: "1BAD" is not a variable name/);
  });
});

describe('formToRequest', () => {
  it('maps a full form; the job runs in the script folder', () => {
    const form = {
      ...emptyForm(),
      framework: 'pytorch' as const,
      script: 'experiments/mnist/train.py',
      args: '--epochs 3 --name "run a"',
      workers: '2',
      nproc: '4',
      gpus: '1',
      gpuType: 'nvidia-mig-1g.10gb',
      env: 'OMP_NUM_THREADS=1',
      project: 'vision',
      name: ' mnist '
    };
    const { request, errors } = formToRequest(form);
    expect(errors).toEqual({});
    expect(request).toEqual({
      framework: 'pytorch',
      script: 'train.py',
      working_dir: 'experiments/mnist',
      args: ['--epochs', '3', '--name', 'run a'],
      workers: 2,
      nproc_per_worker: 4,
      resources: { gpus: 1, gpu_type: 'nvidia-mig-1g.10gb' },
      env: { OMP_NUM_THREADS: '1' },
      project: 'vision',
      name: 'mnist'
    });
  });

  it('leaves out what is empty (CPU job at the root, personal project)', () => {
    const { request } = formToRequest({
      ...emptyForm(),
      framework: 'plain',
      script: '/train.py',
      nproc: '2'
    });
    expect(request).toEqual({
      framework: 'plain',
      script: 'train.py',
      workers: 1,
      nproc_per_worker: 2
    });
  });

  it('reports every bad field at once and sends nothing', () => {
    const { request, errors } = formToRequest({
      ...emptyForm(),
      script: '',
      args: '"open',
      workers: '0',
      nproc: '1.5',
      gpus: '-1',
      env: 'no-equals'
    });
    expect(request).toBeNull();
    expect(Object.keys(errors).sort()).toEqual([
      'args',
      'env',
      'gpus',
      'nproc',
      'script',
      'workers'
    ]);
    expect(errors.script).toMatch(/Pick the script/);
  });

  it('rejects folders, parent paths and GPUs without a type', () => {
    expect(
      formToRequest({ ...emptyForm(), script: 'data/' }).errors.script
    ).toMatch(/folder/);
    expect(
      formToRequest({ ...emptyForm(), script: '../x.py' }).errors.script
    ).toMatch(/"\.\."/);
    expect(
      formToRequest({ ...emptyForm(), script: 'x.py', gpus: '2', gpuType: ' ' })
        .errors.gpuType
    ).toBeTruthy();
  });

  it('round-trips a job back into the form', () => {
    const form = {
      ...emptyForm(),
      script: 'exp/train.py',
      args: "--tag 'a b'",
      nproc: '2',
      env: 'A=1\nB=2',
      project: 'vision',
      name: 'n'
    };
    const request = formToRequest(form).request!;
    const job = {
      framework: 'pytorch',
      workers: 1,
      nproc_per_worker: 2,
      project: 'vision',
      name: 'n',
      spec: { ...request, resources: { gpus: 0, gpu_type: 'nvidia-gpu' } }
    } as unknown as TrainingJob;
    expect(formToRequest(jobToForm(job)).request).toEqual(request);
  });
});

describe('log lines per rank', () => {
  it('parses rank prefixes (ours and torchrun style) and launcher lines', () => {
    expect(parseLine('[rank 1] loss=0.5')).toEqual({
      rank: 1,
      text: 'loss=0.5'
    });
    expect(parseLine('[rank0]: hello')).toEqual({ rank: 0, text: 'hello' });
    expect(parseLine('W0101 torchrun says')).toEqual({
      rank: null,
      text: 'W0101 torchrun says'
    });
    // A progress bar keeps only what the terminal would show.
    expect(parseLine('[rank 0] 10%\r 50%\r100%\r')).toEqual({
      rank: 0,
      text: '100%'
    });
  });

  it('joins lines split across chunks and filters by rank', () => {
    const log = new RankedLog();
    log.append('launcher starting\n[rank 0] a');
    expect(log.lines.map(l => l.text)).toEqual(['launcher starting', 'a']);
    log.append('bc\n[rank 1] x\n[ra');
    log.append('nk 1] y\n[rank 0] d\n');
    expect(log.filter(0).map(l => l.text)).toEqual(['abc', 'd']);
    expect(log.filter(1).map(l => l.text)).toEqual(['x', 'y']);
    expect(log.filter('launcher').map(l => l.text)).toEqual([
      'launcher starting'
    ]);
    expect(log.ranks).toEqual([0, 1]);
    expect(log.hasLauncherLines).toBe(true);
    expect(log.text('all')).toBe(
      'launcher starting\n[0] abc\n[1] x\n[1] y\n[0] d'
    );
    expect(log.text(1)).toBe('x\ny');
  });

  it('keeps only the last maxLines lines and counts the dropped ones', () => {
    const log = new RankedLog(3);
    log.append('[rank 0] 1\n[rank 0] 2\n[rank 0] 3\n[rank 0] 4\n[rank 0] 5\n');
    expect(log.lines.map(l => l.text)).toEqual(['3', '4', '5']);
    expect(log.dropped).toBe(2);
    log.clear();
    expect(log.lines).toEqual([]);
    expect(log.ranks).toEqual([]);
  });
});

describe('chart scaling', () => {
  it('picks round ticks covering the range', () => {
    expect(niceTicks(0, 1, 4)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(0.23, 0.97, 4)).toEqual([0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(3, 117, 4)).toEqual([0, 20, 40, 60, 80, 100, 120]);
    expect(niceTicks(0, 0.9, 4)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(-2, 3, 5)).toEqual([-2, -1, 0, 1, 2, 3]);
    // A flat series still gets an axis around its value.
    const flat = niceTicks(5, 5, 4);
    expect(flat[0]).toBeLessThan(5);
    expect(flat[flat.length - 1]).toBeGreaterThan(5);
    expect(niceTicks(NaN, 1)).toEqual([]);
  });

  const box = {
    width: 120,
    height: 70,
    left: 10,
    right: 10,
    top: 10,
    bottom: 10
  };

  it('maps steps to x and values to y inside the box', () => {
    const g = chartGeometry(
      [
        [2, 0],
        [0, 1],
        [1, 0.5]
      ],
      box
    );
    // Sorted by step; y=1 at the top, y=0 at the bottom.
    expect(g.path).toBe('M10,10L60,35L110,60');
    expect(g.last).toEqual({ step: 2, value: 0, x: 110, y: 60 });
    expect(g.yTicks[0]).toEqual({ value: 0, pos: 60 });
    expect(g.yTicks[g.yTicks.length - 1]).toEqual({ value: 1, pos: 10 });
    expect(g.xTicks.map(t => t.value)).toEqual([0, 0.5, 1, 1.5, 2]);
    expect(g.dots).toEqual([]);
  });

  it('copes with one point, non-finite values and no points', () => {
    const one = chartGeometry(
      [
        [3, 0.7],
        [4, NaN],
        [5, Infinity]
      ],
      box
    );
    expect(one.path).toMatch(/^M60,[\d.]+$/);
    expect(one.dots).toHaveLength(1);
    expect(one.last?.step).toBe(3);
    expect(chartGeometry([], box).path).toBe('');
    expect(chartGeometry([], box).last).toBeNull();
  });

  it('orders losses first, accuracies next', () => {
    expect(orderMetrics(['lr', 'val_acc', 'val_loss', 'loss', 'acc'])).toEqual([
      'loss',
      'val_loss',
      'acc',
      'val_acc',
      'lr'
    ]);
  });
});

describe('formatting', () => {
  it('formats numbers and durations briefly', () => {
    expect(formatNumber(0.123456)).toBe('0.123');
    expect(formatNumber(12345)).toBe('12.3k');
    expect(formatNumber(2500000)).toBe('2.5M');
    expect(formatNumber(0.0001234)).toBe('1.2e-4');
    expect(formatNumber(0)).toBe('0');
    expect(formatDuration(3.21)).toBe('3.2 s');
    expect(formatDuration(42.4)).toBe('42 s');
    expect(formatDuration(75)).toBe('1 min 15 s');
    expect(formatDuration(3720)).toBe('1 h 2 min');
    expect(formatDuration(null)).toBe('');
  });
});
