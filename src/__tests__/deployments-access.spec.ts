/**
 * The Deployments Access section: the settings form -> PUT .../access, the
 * new-key form -> POST .../keys, address lists, the summary line, and the API
 * calls (paths, methods, bodies) for keys and access.
 */
import { ServerConnection } from '@jupyterlab/services';

import {
  createDeploymentKey,
  Deployment,
  DeploymentAccess,
  DeploymentKey,
  getDeploymentAccess,
  listDeploymentKeys,
  revokeDeploymentKey,
  setDeploymentAccess
} from '../api';
import {
  accessForm,
  accessOf,
  accessSummary,
  curlExample,
  isAddress,
  OPEN_ACCESS,
  parseAddressList,
  planAccess,
  planNewKey,
  sortKeys
} from '../panels/deployments/accessLogic';

const REQUIRED: DeploymentAccess = {
  auth: 'required',
  rate_limit: null,
  allow: [],
  deny: []
};

function key(over: Partial<DeploymentKey>): DeploymentKey {
  return {
    id: 'k1',
    name: 'ci',
    prefix: 'cube_abcdefg',
    state: 'active',
    created_by: 'alice',
    created_at: '2030-01-01T00:00:00+00:00',
    expires_at: null,
    revoked_at: null,
    last_used_at: null,
    key: null,
    ...over
  };
}

describe('address lists', () => {
  it('takes IPv4 / IPv6 addresses and CIDR networks', () => {
    for (const ok of [
      '127.0.0.1',
      '10.0.0.0/8',
      '0.0.0.0/0',
      '::1',
      '2001:db8::/32',
      '::ffff:10.0.0.1'
    ]) {
      expect(isAddress(ok)).toBe(true);
    }
    for (const bad of [
      '',
      '10.0.0.300',
      '10.0.0',
      '10.0.0.0/33',
      '::1/129',
      'example.com',
      '10.0.0.0/8/1',
      '10.0.0.0/x'
    ]) {
      expect(isAddress(bad)).toBe(false);
    }
  });

  it('splits on lines, commas and spaces, drops repeats, names the bad one', () => {
    expect(
      parseAddressList('10.0.0.0/8\n 127.0.0.1, ::1  10.0.0.0/8\n')
    ).toEqual({
      ok: true,
      list: ['10.0.0.0/8', '127.0.0.1', '::1']
    });
    expect(parseAddressList('')).toEqual({ ok: true, list: [] });
    expect(parseAddressList('127.0.0.1\nlocalhost')).toEqual({
      ok: false,
      bad: 'localhost'
    });
  });
});

describe('planAccess', () => {
  it('sends nothing when nothing changed', () => {
    expect(planAccess(accessForm(REQUIRED), REQUIRED)).toEqual({
      ok: true,
      changes: {}
    });
    const limited: DeploymentAccess = {
      auth: 'none',
      rate_limit: { rps: 2, burst: 4, per_key: true },
      allow: ['10.0.0.0/8'],
      deny: ['10.0.0.13']
    };
    expect(planAccess(accessForm(limited), limited)).toEqual({
      ok: true,
      changes: {}
    });
  });

  it('sends only the fields that changed', () => {
    const form = {
      ...accessForm(REQUIRED),
      auth: 'none' as const,
      limit: true,
      rps: '20',
      burst: '',
      deny: '192.0.2.0/24'
    };
    expect(planAccess(form, REQUIRED)).toEqual({
      ok: true,
      changes: {
        auth: 'none',
        rate_limit: { rps: 20, burst: 20, per_key: false },
        deny: ['192.0.2.0/24']
      }
    });
    const limited: DeploymentAccess = {
      ...REQUIRED,
      rate_limit: { rps: 2, burst: 4, per_key: false },
      allow: ['127.0.0.1']
    };
    expect(
      planAccess({ ...accessForm(limited), limit: false, allow: '' }, limited)
    ).toEqual({ ok: true, changes: { rate_limit: null, allow: [] } });
    expect(
      planAccess({ ...accessForm(limited), perKey: true }, limited)
    ).toEqual({
      ok: true,
      changes: { rate_limit: { rps: 2, burst: 4, per_key: true } }
    });
  });

  it('says what is wrong with each field', () => {
    const plan = planAccess(
      {
        ...accessForm(REQUIRED),
        limit: true,
        rps: '0',
        burst: '1.5',
        allow: '10.0.0.0/8 nope',
        deny: '1.2.3.4/40'
      },
      REQUIRED
    );
    expect(plan.ok).toBe(false);
    if (!plan.ok) {
      expect(Object.keys(plan.errors).sort()).toEqual([
        'allow',
        'burst',
        'deny',
        'rps'
      ]);
      expect(plan.errors.allow).toEqual([
        '%1 is not an IP address or CIDR network.',
        'nope'
      ]);
      expect(plan.errors.deny![1]).toBe('1.2.3.4/40');
    }
    const empty = planAccess(
      { ...accessForm(REQUIRED), limit: true, rps: '' },
      REQUIRED
    );
    expect(empty.ok).toBe(false);
  });
});

describe('planNewKey', () => {
  it('asks for a valid name and optional days', () => {
    expect(planNewKey({ name: ' ci ', days: '' })).toEqual({
      ok: true,
      request: { name: 'ci' }
    });
    expect(planNewKey({ name: 'web-app.2', days: '30' })).toEqual({
      ok: true,
      request: { name: 'web-app.2', expires_in_days: 30 }
    });
    expect(planNewKey({ name: '', days: '' }).ok).toBe(false);
    expect(planNewKey({ name: 'two words', days: '' }).ok).toBe(false);
    expect(planNewKey({ name: '-x', days: '' }).ok).toBe(false);
    for (const days of ['0', '-3', 'soon', '4000']) {
      expect(planNewKey({ name: 'ci', days }).ok).toBe(false);
    }
  });
});

describe('keys and the summary', () => {
  it('lists keys in force first, newest first, then expired, then revoked', () => {
    const keys = [
      key({ id: 'a', state: 'revoked', created_at: '2030-01-05T00:00:00Z' }),
      key({ id: 'b', state: 'active', created_at: '2030-01-01T00:00:00Z' }),
      key({ id: 'c', state: 'expired', created_at: '2030-01-04T00:00:00Z' }),
      key({ id: 'd', state: 'active', created_at: '2030-01-03T00:00:00Z' })
    ];
    expect(sortKeys(keys).map(k => k.id)).toEqual(['d', 'b', 'c', 'a']);
    expect(keys.map(k => k.id)).toEqual(['a', 'b', 'c', 'd']); // not in place
  });

  it('summarizes auth, limit and lists as translatable parts', () => {
    expect(accessSummary(REQUIRED, 2)).toEqual([
      ['API key required (%1 in force)', 2]
    ]);
    expect(
      accessSummary(
        {
          auth: 'none',
          rate_limit: { rps: 5, burst: 10, per_key: true },
          allow: ['10.0.0.0/8', '::1'],
          deny: ['10.0.0.13']
        },
        0
      )
    ).toEqual([
      ['open: no key asked'],
      ['%1 requests/s per key, bursts of %2', 5, 10],
      ['only %1 address range(s)', 2],
      ['%1 denied', 1]
    ]);
  });

  it('treats a deployment from an older server as open', () => {
    expect(accessOf({})).toEqual(OPEN_ACCESS);
    expect(accessOf({ access: REQUIRED })).toBe(REQUIRED);
  });

  it('shows how to call with a key', () => {
    expect(curlExample('http://127.0.0.1:8500', 'iris')).toBe(
      'curl -H "Authorization: Bearer $CUBE_KEY" -H "Content-Type: application/json" ' +
        'http://127.0.0.1:8500/v2/models/iris/infer -d @request.json'
    );
  });
});

describe('access API calls', () => {
  const settings = ServerConnection.makeSettings({
    baseUrl: 'http://localhost:8888/',
    token: ''
  });
  const base =
    'http://localhost:8888/cube/api/v1/projects/team%20a/deployments/iris';

  async function calls(
    answer: unknown,
    run: () => Promise<unknown>
  ): Promise<[string, RequestInit, unknown]> {
    const makeRequest = jest
      .spyOn(ServerConnection, 'makeRequest')
      .mockResolvedValue({
        ok: true,
        status: 200,
        statusText: 'OK',
        text: async () => JSON.stringify(answer)
      } as unknown as Response);
    try {
      const got = await run();
      const [url, init] = makeRequest.mock.calls[0];
      return [url, init as RequestInit, got];
    } finally {
      makeRequest.mockRestore();
    }
  }

  it('makes, lists and revokes keys', async () => {
    const made = key({ key: 'cube_secret' });
    let [url, init, got] = await calls(made, () =>
      createDeploymentKey(
        'team a',
        'iris',
        { name: 'ci', expires_in_days: 7 },
        settings
      )
    );
    expect(url).toBe(`${base}/keys`);
    expect(init.method).toBe('POST');
    expect(JSON.parse(init.body as string)).toEqual({
      name: 'ci',
      expires_in_days: 7
    });
    expect((got as DeploymentKey).key).toBe('cube_secret');
    [url, init] = await calls({ keys: [] }, () =>
      listDeploymentKeys('team a', 'iris', settings)
    );
    expect(url).toBe(`${base}/keys`);
    expect(init.method ?? 'GET').toBe('GET');
    [url, init] = await calls(key({ state: 'revoked' }), () =>
      revokeDeploymentKey('team a', 'iris', 'k/1', settings)
    );
    expect(url).toBe(`${base}/keys/k%2F1`);
    expect(init.method).toBe('DELETE');
  });

  it('reads and changes the access settings', async () => {
    let [url, init] = await calls(REQUIRED, () =>
      getDeploymentAccess('team a', 'iris', settings)
    );
    expect(url).toBe(`${base}/access`);
    const dep = { name: 'iris', access: REQUIRED } as unknown as Deployment;
    let got: unknown;
    [url, init, got] = await calls(dep, () =>
      setDeploymentAccess(
        'team a',
        'iris',
        { rate_limit: null, deny: ['10.0.0.13'] },
        settings
      )
    );
    expect(url).toBe(`${base}/access`);
    expect(init.method).toBe('PUT');
    expect(JSON.parse(init.body as string)).toEqual({
      rate_limit: null,
      deny: ['10.0.0.13']
    });
    expect((got as Deployment).access).toEqual(REQUIRED);
  });
});
