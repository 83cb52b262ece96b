import { SESSION_ELEMENT } from '../service_session';

/** A fetch answer with a status, a JSON body and headers. */
function answer(
  status: number,
  body: unknown,
  headers: Record<string, string> = {}
): Response {
  const lower = Object.fromEntries(
    Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])
  );
  return {
    ok: status >= 200 && status < 300,
    status,
    statusText: '',
    headers: { has: (name: string) => name.toLowerCase() in lower },
    text: async () => JSON.stringify(body)
  } as unknown as Response;
}

/**
 * Serve the hidden frame the page loads: each frame appended gets `page` (the session page's
 * markup, or a login page's) and its load event.
 */
function serveFrames(page: () => string): jest.SpyInstance {
  const append = document.body.appendChild.bind(document.body);
  return jest
    .spyOn(document.body, 'appendChild')
    .mockImplementation(<T extends Node>(node: T): T => {
      append(node);
      if (node instanceof HTMLIFrameElement) {
        const doc = node.contentDocument!;
        doc.open();
        doc.write(page());
        doc.close();
        node.dispatchEvent(new Event('load'));
      }
      return node;
    });
}

const sessionPage = (user: string) =>
  `<script type="application/json" id="${SESSION_ELEMENT}">` +
  `${JSON.stringify({ user, xsrf: 'xsrf-1' })}</script>`;

describe('under the hub the panels call the cube-lab service straight', () => {
  let fetchMock: jest.Mock;
  let frames: jest.SpyInstance;
  let pages: () => string;

  beforeEach(() => {
    (globalThis as any).Headers = class {
      private values = new Map<string, string>();
      constructor(init?: Record<string, string>) {
        Object.entries(init ?? {}).forEach(([k, v]) => this.set(k, v));
      }
      set(name: string, value: string) {
        this.values.set(name.toLowerCase(), value);
      }
      get(name: string) {
        return this.values.get(name.toLowerCase()) ?? null;
      }
    };
    fetchMock = jest.fn();
    (globalThis as any).fetch = fetchMock;
    pages = () => sessionPage('alice');
    frames = serveFrames(() => pages());
  });

  afterEach(() => {
    frames.mockRestore();
    document.body.querySelectorAll('iframe').forEach(f => f.remove());
  });

  /** The REST client as a fresh page loads it (no session yet), with this page config. */
  async function load(service = '/services/cube-lab/') {
    jest.resetModules();
    const { PageConfig } = await import('@jupyterlab/coreutils');
    PageConfig.setOption('cubeLabService', service);
    PageConfig.setOption('hubUser', 'alice');
    const { ServerConnection } = await import('@jupyterlab/services');
    const makeRequest = jest
      .spyOn(ServerConnection, 'makeRequest')
      .mockResolvedValue(answer(200, { via: 'lab server' }));
    return { api: await import('../api'), makeRequest };
  }

  it('opens one session in a hidden frame and sends its XSRF token', async () => {
    fetchMock.mockResolvedValue(answer(200, { via: 'service' }));
    const { api, makeRequest } = await load();
    expect(await api.requestAPI('models')).toEqual({ via: 'service' });
    await api.requestAPI('projects', { method: 'POST', body: { name: 'p' } });
    expect(frames.mock.calls.length).toBe(1);
    const frame = frames.mock.calls[0][0] as HTMLIFrameElement;
    expect(frame.src).toContain('/services/cube-lab/browser-session');
    expect(document.body.contains(frame)).toBe(false); // removed once read
    const [url, init] = fetchMock.mock.calls[1];
    expect(url).toBe('/services/cube-lab/cube/api/v1/projects');
    expect(init.headers.get('X-XSRFToken')).toBe('xsrf-1');
    expect(init.headers.get('Content-Type')).toBe('application/json');
    expect(init.credentials).toBe('same-origin');
    expect(init.body).toBe(JSON.stringify({ name: 'p' }));
    expect(makeRequest).not.toHaveBeenCalled();
  });

  it("passes the service's own refusals on, as the lab server would", async () => {
    fetchMock.mockResolvedValue(
      answer(403, { error: 'not a member of project x', detail: 'Ask...' })
    );
    const { api, makeRequest } = await load();
    await expect(api.requestAPI('projects/x')).rejects.toMatchObject({
      status: 403,
      message: 'not a member of project x'
    });
    expect(makeRequest).not.toHaveBeenCalled();
  });

  it('goes through the lab server when the service drops the cookie, then reopens', async () => {
    fetchMock
      .mockResolvedValueOnce(
        answer(
          403,
          { error: 'Forbidden', detail: null },
          { 'WWW-Authenticate': 'token realm="cube-lab"' }
        )
      )
      .mockResolvedValue(answer(200, { via: 'service' }));
    const { api, makeRequest } = await load();
    expect(await api.requestAPI('models')).toEqual({ via: 'lab server' });
    expect(makeRequest).toHaveBeenCalledTimes(1);
    expect(await api.requestAPI('models')).toEqual({ via: 'service' });
    expect(frames.mock.calls.length).toBe(2); // a new session
  });

  it('keeps to the lab server when the session cannot be had', async () => {
    pages = () => '<form id="login"></form>'; // the hub's login page instead
    const { api } = await load();
    expect(await api.requestAPI('models')).toEqual({ via: 'lab server' });
    await api.requestAPI('models');
    expect(fetchMock).not.toHaveBeenCalled();
    expect(frames.mock.calls.length).toBe(1); // not asked again
  });

  it("does not act as the browser's user in someone else's lab", async () => {
    pages = () => sessionPage('admin'); // the admin, visiting alice's server
    const { api } = await load();
    expect(await api.requestAPI('models')).toEqual({ via: 'lab server' });
    expect(fetchMock).not.toHaveBeenCalled();
  });

  it('is not used when the page names no service (embedded)', async () => {
    const { api } = await load('');
    expect(await api.requestAPI('models')).toEqual({ via: 'lab server' });
    expect(frames).not.toHaveBeenCalled();
  });
});
