import {
  holdsText,
  quotaText,
  objectLabel,
  ruleRequest,
  emptyRuleForm,
  serverSummary,
  seriesColumns,
  sparkPath,
  channelText,
  ALERT_EVENTS
} from '../panels/resources/logic';
import type { LiveObject, ResourceSeries } from '../api';
import type { ITrans } from '../validate';

const FIELDS = [
  't',
  'dt',
  'cpu_percent',
  'rss_bytes',
  'procs',
  'gpu_util_percent',
  'gpu_memory_bytes'
];

function series(points: (number | null)[][], gpu = false): ResourceSeries {
  return {
    kind: 'training',
    id: 'j1',
    node: null,
    running: true,
    interval_s: 1,
    started_at: 0,
    updated_at: 0,
    gpu,
    latest: null,
    peak: {},
    fields: FIELDS,
    points
  };
}

describe('seriesColumns', () => {
  it('reads the columns by name and drops nulls; no GPU without GPU figures', () => {
    const cols = seriesColumns(
      series([
        [10, 1, null, 100, 1, null, null],
        [11, 1, 50, 200, 1, null, null]
      ])
    );
    expect(cols.cpu).toEqual([[11, 50]]);
    expect(cols.rss).toEqual([
      [10, 100],
      [11, 200]
    ]);
    expect(cols.hasGpu).toBe(false);
    expect(cols.gpuUtil).toEqual([]);
  });

  it('has GPU columns when the points carry them', () => {
    const cols = seriesColumns(series([[10, 1, 5, 1, 1, 30, 2048]]));
    expect(cols.hasGpu).toBe(true);
    expect(cols.gpuMemory).toEqual([[10, 2048]]);
  });

  it('keeps the last points only, and copes with nothing', () => {
    const many = Array.from({ length: 10 }, (_, i) => [
      i,
      1,
      i,
      i,
      1,
      null,
      null
    ]);
    expect(seriesColumns(series(many), 3).cpu.map(p => p[0])).toEqual([
      7, 8, 9
    ]);
    expect(seriesColumns(null).cpu).toEqual([]);
  });
});

describe('sparkPath', () => {
  it('scales time to the width and values to the height', () => {
    expect(sparkPath([], 100, 10)).toBe('');
    expect(
      sparkPath(
        [
          [0, 0],
          [5, 50],
          [10, 100]
        ],
        100,
        10
      )
    ).toBe('M0.0,10.0 L50.0,5.0 L100.0,0.0');
    // a floor keeps small values low (CPU against 100 %)
    expect(
      sparkPath(
        [
          [0, 50],
          [1, 50]
        ],
        10,
        10,
        100
      )
    ).toBe('M0.0,5.0 L10.0,5.0');
  });
});

describe('summaries', () => {
  const totals = {
    cpu_percent: 12.5,
    cpu_count: 2,
    memory_used_bytes: 2 * 2 ** 30,
    memory_total_bytes: 8 * 2 ** 30,
    gpus: [],
    time: 0
  };
  it('shows no GPU part without GPUs', () => {
    const s = serverSummary(totals);
    expect(s.cpu).toBe('CPU 12.5 %');
    expect(s.memory).toBe('Mem 2 GiB / 8 GiB');
    expect(s.gpus).toBe('');
  });
  it('counts busy GPUs and their memory', () => {
    const s = serverSummary({
      ...totals,
      gpus: [
        {
          uuid: 'GPU-a',
          name: 'A',
          parent: null,
          memory_bytes: 2 ** 30,
          util_percent: 5,
          processes: 1
        },
        {
          uuid: 'GPU-b',
          name: 'B',
          parent: null,
          memory_bytes: 0,
          util_percent: null,
          processes: 0
        }
      ]
    });
    expect(s.gpus).toBe('GPU 1/2 busy, 1 GiB');
    expect(s.title).toContain('A (GPU-a): 1 GiB in use by 1 processes');
  });
  it('says the quota use', () => {
    const use = {
      project: 'p',
      objects: 1,
      gpus_in_use: 2,
      gpu_quota: 4,
      quota: null,
      usage: null,
      gpu_hours_month: null,
      gpu_hours_limit: null
    };
    expect(quotaText(use)).toBe('2 of 4 GPUs in use');
    expect(quotaText({ ...use, gpu_quota: null })).toBe(
      '2 GPUs in use (no GPU quota)'
    );
    expect(quotaText({ ...use, gpu_hours_month: 3.25 })).toContain(
      '3.3 GPU-hours this month'
    );
    expect(
      quotaText({ ...use, gpu_hours_month: 3.25, gpu_hours_limit: 100 })
    ).toBe('2 of 4 GPUs in use · 3.3 of 100 GPU-hours this month');
    // a limit with nothing used yet says 0 of it
    expect(quotaText({ ...use, gpu_hours_limit: 12.5 })).toBe(
      '2 of 4 GPUs in use · 0 of 12.5 GPU-hours this month'
    );
  });
  it('names a deployment replica as it names a job', () => {
    const base: LiveObject = {
      kind: 'deployment',
      id: 'd1',
      node: 'replica-0',
      name: 'iris',
      path: null,
      project: 'p',
      user: 'u',
      gpus_requested: 0,
      cpu_percent: 1,
      rss_bytes: 1,
      procs: 1,
      gpus: [],
      updated_at: null,
      started_at: null
    };
    expect(objectLabel(base)).toBe('Deployment iris · replica replica-0');
    expect(objectLabel({ ...base, name: '', node: '' })).toBe('Deployment d1');
    expect(objectLabel({ ...base, kind: 'training' })).toBe(
      'Training job iris'
    );
    const zh: ITrans = {
      __: (s: string, ...a: unknown[]) => `ZH:${s}:${a.join(',')}`
    };
    expect(objectLabel(base, zh)).toBe(
      'ZH:Deployment %1 · replica %2:iris,replica-0'
    );
  });
  it('names a kernel by its notebook', () => {
    const kernel: LiveObject = {
      kind: 'kernel',
      id: 'k-1',
      node: '',
      name: 'busy.ipynb',
      path: 'work/busy.ipynb',
      project: 'p',
      user: 'u',
      gpus_requested: 0,
      cpu_percent: 1,
      rss_bytes: 1,
      procs: 1,
      gpus: [],
      updated_at: null,
      started_at: null
    };
    expect(objectLabel(kernel)).toBe('Notebook kernel · work/busy.ipynb');
    expect(objectLabel({ ...kernel, path: null })).toBe('Kernel busy.ipynb');
  });
  it('says what an object holds', () => {
    const obj: LiveObject = {
      kind: 'training',
      id: 'j',
      node: '',
      name: 'n',
      path: null,
      project: 'p',
      user: 'u',
      ranks: 2,
      gpus_requested: 0,
      cpu_percent: 150,
      rss_bytes: 64 * 2 ** 20,
      procs: 3,
      gpus: [],
      updated_at: null,
      started_at: null
    };
    expect(holdsText(obj)).toBe('CPU 150 % · 64 MiB · 2 ranks');
  });
});

describe('ruleRequest', () => {
  const form = {
    ...emptyRuleForm(),
    name: 'ops',
    url: 'http://127.0.0.1:9/hook'
  };
  it('makes a webhook rule', () => {
    expect(ruleRequest(form)).toEqual({
      request: {
        name: 'ops',
        events: ['job.failed', 'run.failed'],
        channel: { type: 'webhook', url: 'http://127.0.0.1:9/hook' },
        enabled: true
      }
    });
  });
  it('says what is wrong', () => {
    expect('problem' in ruleRequest({ ...form, name: '-x' })).toBe(true);
    expect('problem' in ruleRequest({ ...form, events: [] })).toBe(true);
    expect('problem' in ruleRequest({ ...form, url: 'ftp://x' })).toBe(true);
    expect(
      'problem' in ruleRequest({ ...form, events: ['job.duration'] })
    ).toBe(true);
    expect(
      'problem' in
        ruleRequest({
          ...form,
          events: ['deployment.p99', 'deployment.error_rate'],
          threshold: '1'
        })
    ).toBe(true);
  });
  it('adds a duration, a secret for signing bots, and e-mail fields', () => {
    const dur = ruleRequest({
      ...form,
      events: ['job.duration'],
      durationMinutes: '90'
    });
    expect('request' in dur && dur.request.duration_s).toBe(5400);
    const ding = ruleRequest({ ...form, type: 'dingtalk', secret: 's3' });
    expect('request' in ding && ding.request.channel.secret).toBe('s3');
    const slack = ruleRequest({ ...form, type: 'slack', secret: 's3' });
    expect('request' in slack && slack.request.channel.secret).toBeUndefined();
    const mail = ruleRequest({
      ...form,
      type: 'email',
      host: 'smtp.local',
      sender: 'a@x',
      to: 'b@x, c@x'
    });
    expect('request' in mail && mail.request.channel).toEqual({
      type: 'email',
      host: 'smtp.local',
      port: 25,
      sender: 'a@x',
      to: ['b@x', 'c@x'],
      starttls: false
    });
    expect(
      channelText({ type: 'email', sender: 'a@x', to: ['b@x'], host: 'h' })
    ).toBe('a@x → b@x (h)');
  });
  it('lists the server events', () => {
    expect(ALERT_EVENTS).toContain('experiment.duration');
    expect(ALERT_EVENTS).toContain('deployment.p99');
    expect(ALERT_EVENTS).toContain('quota.usage');
    expect(ALERT_EVENTS.length).toBe(16);
  });
});

describe('ruleRequest for quota use', () => {
  const form = {
    ...emptyRuleForm(),
    name: 'quota',
    events: ['quota.usage'],
    url: 'https://hooks.example/x'
  };
  it('sends the percentage and the quota watched', () => {
    const checked = ruleRequest({ ...form, quotaResource: 'gpus' });
    expect('request' in checked && checked.request).toMatchObject({
      events: ['quota.usage'],
      threshold_pct: 80,
      resource: 'gpus'
    });
  });
  it('refuses a bad percentage or other events with it', () => {
    expect('problem' in ruleRequest({ ...form, thresholdPct: '0' })).toBe(true);
    expect('problem' in ruleRequest({ ...form, thresholdPct: 'x' })).toBe(true);
    expect('problem' in ruleRequest({ ...form, thresholdPct: '5000' })).toBe(
      true
    );
    expect(
      'problem' in
        ruleRequest({ ...form, events: ['quota.usage', 'job.failed'] })
    ).toBe(true);
  });
});
