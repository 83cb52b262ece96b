/**
 * Deployments panel logic: Prometheus text -> counters -> rates, latency
 * quantiles, example OIP v2 requests from model metadata, and the deploy
 * dialog's form -> the request it sends.
 */
import { ServerConnection } from '@jupyterlab/services';

import { Deployment, isDeploymentActive, undeploy } from '../api';
import {
  buildExampleRequest,
  canaryPercent,
  computeRates,
  defaultDeployForm,
  defaultRuntime,
  endAction,
  exampleShape,
  findActive,
  histogramQuantile,
  isRemovable,
  mayBeLlm,
  metadataInputs,
  parsePrometheus,
  parseRequestBody,
  prettyJson,
  planDeploy,
  RateHistory,
  readCounters,
  summarizeAnswer,
  withoutDeployment
} from '../panels/deployments/logic';

/** What cube_lab/serving/metrics.py renders, with these numbers. */
function exposition(opts: {
  ok: number;
  bad: number;
  buckets: number[];
  sum: number;
  v2ok?: number;
  shadowOk?: number;
}): string {
  const bounds = [
    '0.001',
    '0.0025',
    '0.005',
    '0.01',
    '0.025',
    '0.05',
    '0.1',
    '0.25',
    '0.5',
    '1.0',
    '2.5',
    '5.0',
    '10.0',
    '+Inf'
  ];
  const count = opts.buckets[opts.buckets.length - 1];
  const lines = [
    '# HELP cube_serving_requests_total Inference requests answered, by version and status code.',
    '# TYPE cube_serving_requests_total counter',
    `cube_serving_requests_total{deployment="iris",version="1",code="200"} ${opts.ok}`,
    `cube_serving_requests_total{deployment="iris",version="1",code="400"} ${opts.bad}`
  ];
  if (opts.v2ok !== undefined) {
    lines.push(
      `cube_serving_requests_total{deployment="iris",version="2",code="200"} ${opts.v2ok}`
    );
  }
  lines.push(
    '# TYPE cube_serving_request_errors_total counter',
    `cube_serving_request_errors_total{deployment="iris",version="1"} ${opts.bad}`,
    '# TYPE cube_serving_request_duration_seconds histogram'
  );
  bounds.forEach((b, i) =>
    lines.push(
      `cube_serving_request_duration_seconds_bucket{deployment="iris",version="1",le="${b}"} ${opts.buckets[i]}`
    )
  );
  lines.push(
    `cube_serving_request_duration_seconds_sum{deployment="iris",version="1"} ${opts.sum}`,
    `cube_serving_request_duration_seconds_count{deployment="iris",version="1"} ${count}`,
    '# TYPE cube_serving_shadow_requests_total counter',
    `cube_serving_shadow_requests_total{deployment="iris",version="2",code="200"} ${opts.shadowOk ?? 0}`,
    `cube_serving_in_flight{deployment="iris"} 0`
  );
  return lines.join('\n') + '\n';
}

// 14 cumulative buckets (13 bounds + Inf)
const cum = (perBucket: number[]) => {
  let run = 0;
  return perBucket.map(n => (run += n));
};

describe('parsePrometheus', () => {
  it('reads names, labels (escaped quotes too) and values, skipping comments', () => {
    const s = parsePrometheus(
      '# HELP x y\nfoo_total{a="1",b="say \\"hi\\""} 3\nbar 2.5\nbaz{le="+Inf"} +Inf\n\n'
    );
    expect(s).toEqual([
      { name: 'foo_total', labels: { a: '1', b: 'say "hi"' }, value: 3 },
      { name: 'bar', labels: {}, value: 2.5 },
      { name: 'baz', labels: { le: '+Inf' }, value: Infinity }
    ]);
  });
});

describe('readCounters', () => {
  it('sums the primary versions and leaves the shadow out', () => {
    const c = readCounters(
      exposition({
        ok: 8,
        bad: 2,
        v2ok: 5,
        shadowOk: 40,
        buckets: cum([0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
        sum: 0.05
      }),
      100
    );
    expect(c.requests).toBe(15);
    expect(c.errors).toBe(2);
    expect(c.byVersion).toEqual({ '1': 10, '2': 5 });
    expect(c.latencyCount).toBe(10);
    expect(c.latencySum).toBeCloseTo(0.05);
    expect(c.buckets).toHaveLength(14);
    expect(c.buckets[13]).toEqual([Infinity, 10]);
  });
});

describe('histogramQuantile', () => {
  it('interpolates inside the bucket like Prometheus', () => {
    // 10 in (0.0025, 0.005]: the median is half way
    const b: [number, number][] = [
      [0.0025, 0],
      [0.005, 10],
      [Infinity, 10]
    ];
    expect(histogramQuantile(0.5, b)).toBeCloseTo(0.00375);
    expect(histogramQuantile(1, b)).toBeCloseTo(0.005);
  });

  it('answers the last finite bound for the +Inf bucket and null when empty', () => {
    expect(
      histogramQuantile(0.99, [
        [10, 1],
        [Infinity, 100]
      ])
    ).toBe(10);
    expect(histogramQuantile(0.5, [[Infinity, 0]])).toBeNull();
    expect(histogramQuantile(0.5, [])).toBeNull();
  });
});

describe('computeRates', () => {
  const a = readCounters(
    exposition({
      ok: 10,
      bad: 0,
      buckets: cum([0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
      sum: 0.04
    }),
    100
  );
  const b = readCounters(
    exposition({
      ok: 48,
      bad: 2,
      // 40 more: 30 in (0.0025,0.005], 10 in (0.01,0.025]
      buckets: cum([0, 0, 40, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
      sum: 0.24
    }),
    102
  );

  it('turns counter deltas into per-second rates and interval quantiles', () => {
    const r = computeRates(a, b);
    expect(r.qps).toBeCloseTo(20); // 40 requests in 2 s
    expect(r.errorsPerSec).toBeCloseTo(1);
    expect(r.errorRatio).toBeCloseTo(0.05);
    expect(r.meanMs).toBeCloseTo(5); // 0.2 s / 40
    // rank 20 of 40 lies in the 30 of (2.5, 5] ms
    expect(r.p50Ms).toBeCloseTo(2.5 + (2.5 * 20) / 30);
    // rank 39.6: in the 10 of (10, 25] ms
    expect(r.p99Ms).toBeCloseTo(10 + (15 * 9.6) / 10);
  });

  it('has no latency for an idle interval, and restarts from zero after a reset', () => {
    const idle = computeRates(b, { ...b, at: 104 });
    expect(idle.qps).toBe(0);
    expect(idle.meanMs).toBeNull();
    expect(idle.p99Ms).toBeNull();
    const reset = computeRates(b, { ...a, at: 104 });
    expect(reset.qps).toBeCloseTo(5); // 10 new requests since the restart, in 2 s
  });

  it('keeps a bounded series whose first read is the baseline', () => {
    const h = new RateHistory(2);
    expect(h.push(a)).toBeNull();
    h.push(b);
    h.push({ ...b, at: 104 });
    h.push({ ...b, at: 106 });
    expect(h.points).toHaveLength(2);
    expect(h.series(r => r.qps)).toEqual([
      [4, 0],
      [6, 0]
    ]);
    expect(h.series(r => r.p50Ms)).toEqual([]);
  });
});

describe('example requests', () => {
  it('builds 2 rows from the scikit-learn metadata', () => {
    const inputs = metadataInputs({
      name: 'iris',
      inputs: [{ name: 'input-0', datatype: 'FP64', shape: [-1, 4] }]
    });
    const req = buildExampleRequest(inputs);
    expect(req.inputs).toHaveLength(1);
    expect(req.inputs[0].name).toBe('input-0');
    expect(req.inputs[0].shape).toEqual([2, 4]);
    expect(req.inputs[0].datatype).toBe('FP64');
    expect(req.inputs[0].data).toHaveLength(8);
    expect(req.inputs[0].data.every(v => typeof v === 'number')).toBe(true);
  });

  it('follows datatypes and several inputs', () => {
    const req = buildExampleRequest(
      metadataInputs({
        inputs: [
          { name: 'text', datatype: 'bytes', shape: [-1] },
          { name: 'ids', datatype: 'INT64', shape: [-1, 3] },
          { name: 'mask', datatype: 'BOOL', shape: [2, 2] }
        ]
      })
    );
    expect(req.inputs.map(t => [t.name, t.datatype, t.shape])).toEqual([
      ['text', 'BYTES', [2]],
      ['ids', 'INT64', [2, 3]],
      ['mask', 'BOOL', [2, 2]]
    ]);
    expect(req.inputs[0].data.every(v => typeof v === 'string')).toBe(true);
    expect(req.inputs[1].data.every(v => Number.isInteger(v))).toBe(true);
    expect(req.inputs[2].data).toEqual([true, false, true, false]);
  });

  it('falls back to one FP64 tensor of 2 x 4 without metadata', () => {
    expect(metadataInputs('nope')).toEqual([]);
    expect(metadataInputs({ inputs: [{ name: 3 }] })).toEqual([]);
    const req = buildExampleRequest([]);
    expect(req.inputs[0]).toMatchObject({
      name: 'input-0',
      shape: [2, 4],
      datatype: 'FP64'
    });
    expect(exampleShape([])).toEqual([2]);
    expect(exampleShape([-1, -1, 3])).toEqual([2, 4, 3]);
  });

  it('prints tensors compactly and parses back to the same value', () => {
    const value = {
      inputs: [{ name: 'x', shape: [2, 2], data: [1, 2.5, 'a', null] }],
      empty: [],
      obj: {}
    };
    const text = prettyJson(value);
    expect(text).toContain('"shape": [2, 2]');
    expect(text).toContain('"data": [1, 2.5, "a", null]');
    expect(text.split('\n')[1]).toBe('  "inputs": [');
    expect(JSON.parse(text)).toEqual(value);
  });

  it('checks the editor text and summarizes answers', () => {
    expect(parseRequestBody('{"inputs": []}')).toEqual({
      ok: true,
      body: { inputs: [] }
    });
    const bad = parseRequestBody('{"inputs": [');
    expect(bad.ok).toBe(false);
    expect(parseRequestBody('[1]')).toMatchObject({ ok: false });
    expect(
      summarizeAnswer({ outputs: [{ name: 'predict', data: [0, 2] }] })
    ).toBe('predict: [0, 2]');
    expect(summarizeAnswer({ error: 'x' })).toBeNull();
  });
});

function deployment(over: Partial<Deployment> = {}): Deployment {
  return {
    id: 'd1',
    name: 'iris',
    project: 'alice',
    owner: 'alice',
    model: 'iris',
    version: 1,
    backend: 'local',
    status: 'running',
    replicas: 1,
    endpoint: 'http://127.0.0.1:40000',
    traffic: [{ version: 1, weight: 100, shadow: false }],
    previous_version: null,
    batching: null,
    samples_percent: 0,
    processes: [],
    error: null,
    created_at: '',
    updated_at: '',
    stopped_at: null,
    ...over
  };
}

describe('planDeploy', () => {
  const target = { project: 'alice', model: 'iris', version: 2 };

  it('maps the defaults to POST /deployments', () => {
    const form = defaultDeployForm('iris');
    expect(planDeploy(form, target, null)).toEqual({
      plan: {
        kind: 'deploy',
        request: { model: 'iris:2', project: 'alice', replicas: 1 }
      },
      errors: {}
    });
    const { plan } = planDeploy(
      { ...form, name: 'iris-b', replicas: '3', port: '9123' },
      target,
      null
    );
    expect(plan).toEqual({
      kind: 'deploy',
      request: {
        model: 'iris:2',
        project: 'alice',
        replicas: 3,
        name: 'iris-b',
        port: 9123
      }
    });
  });

  it('asks for batching and samples only when chosen', () => {
    const form = { ...defaultDeployForm('iris'), batching: true, samples: '5' };
    expect(planDeploy(form, target, null).plan).toEqual({
      kind: 'deploy',
      request: {
        model: 'iris:2',
        project: 'alice',
        replicas: 1,
        batch_max_rows: 64,
        samples_percent: 5
      }
    });
    const off = { ...defaultDeployForm('iris'), samples: '0' };
    expect(planDeploy(off, target, null).plan).toEqual({
      kind: 'deploy',
      request: { model: 'iris:2', project: 'alice', replicas: 1 }
    });
  });

  it('sends the runtime when one is chosen, and no batching for an LLM', () => {
    const auto = defaultDeployForm('tiny', 'transformers');
    expect(auto.runtime).toBe('auto');
    expect(planDeploy(auto, target, null).plan).toEqual({
      kind: 'deploy',
      request: { model: 'iris:2', project: 'alice', replicas: 1, name: 'tiny' }
    });
    const llm = {
      ...auto,
      name: 'iris',
      runtime: 'llm' as const,
      batching: true
    };
    expect(planDeploy(llm, target, null).plan).toEqual({
      kind: 'deploy',
      request: {
        model: 'iris:2',
        project: 'alice',
        replicas: 1,
        runtime: 'llm'
      }
    });
    const oip = {
      ...auto,
      name: 'iris',
      runtime: 'oip' as const,
      batching: true
    };
    expect(planDeploy(oip, target, null).plan).toEqual({
      kind: 'deploy',
      request: {
        model: 'iris:2',
        project: 'alice',
        replicas: 1,
        runtime: 'oip',
        batch_max_rows: 64
      }
    });
  });

  it('starts a peft adapter on the LLM runtime, others on auto', () => {
    expect(defaultRuntime('peft')).toBe('llm');
    expect(defaultRuntime('transformers')).toBe('auto');
    expect(defaultRuntime('sklearn')).toBe('auto');
    expect(defaultRuntime(null)).toBe('auto');
    expect(mayBeLlm('auto', 'transformers')).toBe(true);
    expect(mayBeLlm('auto', 'sklearn')).toBe(false);
    expect(mayBeLlm('oip', 'transformers')).toBe(false);
    expect(mayBeLlm('llm', 'sklearn')).toBe(true);
  });

  it('says what is wrong with each field', () => {
    const { plan, errors } = planDeploy(
      {
        name: ' ',
        replicas: '0',
        port: '80',
        mode: 'new',
        percent: '10',
        batching: false,
        samples: '101',
        runtime: 'auto'
      },
      target,
      null
    );
    expect(plan).toBeNull();
    expect(Object.keys(errors).sort()).toEqual([
      'name',
      'port',
      'replicas',
      'samples'
    ]);
    expect(
      planDeploy({ ...defaultDeployForm('iris'), name: '-x' }, target, null)
        .errors.name
    ).toMatch(/letters/);
  });

  it('switches or starts a canary when that name already runs the model', () => {
    const existing = deployment();
    const form = {
      ...defaultDeployForm('iris'),
      mode: 'canary' as const,
      percent: '25'
    };
    expect(planDeploy(form, target, existing).plan).toEqual({
      kind: 'traffic',
      project: 'alice',
      name: 'iris',
      change: { action: 'canary', version: 2, percent: 25 }
    });
    expect(
      planDeploy({ ...form, mode: 'switch' }, target, existing).plan
    ).toEqual({
      kind: 'traffic',
      project: 'alice',
      name: 'iris',
      change: { action: 'switch', version: 2 }
    });
    expect(
      planDeploy({ ...form, percent: '100' }, target, existing).errors.percent
    ).toBeTruthy();
    // a second deployment under the same name is refused before asking the server
    expect(
      planDeploy({ ...form, mode: 'new' }, target, existing).errors.name
    ).toMatch(/already running v1/);
    // the version it already serves
    expect(
      planDeploy(form, { ...target, version: 1 }, existing).errors.name
    ).toMatch(/already serves v1/);
  });

  it('finds only running deployments of that project and name', () => {
    const list = [
      deployment({ id: 'a', status: 'stopped' }),
      deployment({ id: 'b', project: 'team' }),
      deployment({ id: 'c', status: 'updating' })
    ];
    expect(findActive(list, 'alice', 'iris')?.id).toBe('c');
    expect(findActive(list, 'alice', 'other')).toBeNull();
    expect(canaryPercent(deployment())).toBeNull();
    expect(
      canaryPercent(
        deployment({
          traffic: [
            { version: 1, weight: 80, shadow: false },
            { version: 2, weight: 20, shadow: false }
          ]
        })
      )
    ).toBe(20);
  });
});

describe('undeploy and remove', () => {
  const statuses = [
    'starting',
    'running',
    'updating',
    'stopped',
    'failed',
    'dead',
    'removed'
  ];

  it('offers Undeploy while active and Remove once failed, dead or stopped', () => {
    const actions = Object.fromEntries(
      statuses.map(status => [status, endAction(deployment({ status }))])
    );
    expect(actions).toEqual({
      starting: 'undeploy',
      running: 'undeploy',
      updating: 'undeploy',
      stopped: 'remove',
      failed: 'remove',
      dead: 'remove',
      removed: null
    });
    expect(endAction(deployment({ status: 'exploded' }))).toBeNull();
  });

  it('never offers both: removable is exactly "not active, not removed"', () => {
    for (const status of statuses) {
      const d = deployment({ status });
      expect(isRemovable(d)).toBe(
        !isDeploymentActive(d) && status !== 'removed'
      );
    }
  });

  it('drops the removed deployment (same project and name) from the list', () => {
    const list = [
      deployment({ id: 'a', name: 'iris', project: 'alice', status: 'failed' }),
      deployment({ id: 'b', name: 'iris', project: 'team' }),
      deployment({ id: 'c', name: 'bert', project: 'alice' })
    ];
    expect(
      withoutDeployment(list, { project: 'alice', name: 'iris' }).map(d => d.id)
    ).toEqual(['b', 'c']);
    expect(withoutDeployment(list, { project: 'x', name: 'iris' })).toEqual(
      list
    );
  });

  it('removes with the same DELETE as undeploy and reads the "removed" answer', async () => {
    const settings = ServerConnection.makeSettings({
      baseUrl: 'http://localhost:8888/',
      token: ''
    });
    const last = deployment({
      name: 'broken',
      project: 'team a',
      status: 'removed',
      endpoint: null
    });
    const makeRequest = jest
      .spyOn(ServerConnection, 'makeRequest')
      .mockResolvedValue({
        ok: true,
        status: 200,
        statusText: 'OK',
        text: async () => JSON.stringify(last)
      } as unknown as Response);
    try {
      const answer = await undeploy('team a', 'broken', settings);
      const [url, init] = makeRequest.mock.calls[0];
      expect(url).toBe(
        'http://localhost:8888/cube/api/v1/projects/team%20a/deployments/broken'
      );
      expect((init as RequestInit).method).toBe('DELETE');
      expect(answer.status).toBe('removed');
      expect(endAction(answer)).toBeNull();
    } finally {
      makeRequest.mockRestore();
    }
  });
});
