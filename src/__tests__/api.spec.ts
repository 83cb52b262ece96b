import { ServerConnection } from '@jupyterlab/services';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';

import {
  compareVersions,
  CubeApiError,
  deleteAlias,
  deleteVersion,
  describeError,
  downloadUrl,
  encodePath,
  errorFromResponse,
  getModel,
  getVersion,
  lineageDatasetLabel,
  listModels,
  patchVersion,
  queryString,
  registerModel,
  requestAPI,
  setAlias,
  whoami
} from '../api';
import { setUiTranslator, uiLanguage } from '../locale';

const BASE = 'http://localhost:8888/user/alice/';

function fakeResponse(
  status: number,
  body: unknown,
  statusText = ''
): Response {
  const text =
    body === undefined
      ? ''
      : typeof body === 'string'
        ? body
        : JSON.stringify(body);
  return {
    ok: status >= 200 && status < 300,
    status,
    statusText,
    text: async () => text
  } as unknown as Response;
}

describe('cube-lab REST client', () => {
  let settings: ServerConnection.ISettings;
  let makeRequest: jest.SpyInstance;

  beforeEach(() => {
    settings = ServerConnection.makeSettings({ baseUrl: BASE, token: '' });
    makeRequest = jest
      .spyOn(ServerConnection, 'makeRequest')
      .mockResolvedValue(fakeResponse(200, {}));
  });

  afterEach(() => {
    makeRequest.mockRestore();
  });

  const lastCall = () => {
    const [url, init] =
      makeRequest.mock.calls[makeRequest.mock.calls.length - 1];
    return { url: url as string, init: init as RequestInit };
  };

  describe('URL building', () => {
    it('encodes each path segment', () => {
      expect(encodePath('projects', 'team a/b', 'models', 'résumé#1')).toBe(
        'projects/team%20a%2Fb/models/r%C3%A9sum%C3%A9%231'
      );
    });

    it('builds query strings and skips empty values', () => {
      expect(
        queryString({ q: 'a b&c', project: '', limit: 10, x: undefined })
      ).toBe('?q=a%20b%26c&limit=10');
      expect(queryString({})).toBe('');
    });

    it('calls whoami under the server base URL', async () => {
      makeRequest.mockResolvedValueOnce(
        fakeResponse(200, { user: 'alice', backend: 'local', projects: [] })
      );
      const me = await whoami(settings);
      expect(me.user).toBe('alice');
      expect(lastCall().url).toBe(`${BASE}cube/api/v1/whoami`);
      expect(lastCall().init.method).toBeUndefined();
    });

    it('puts list filters into the query string', async () => {
      makeRequest.mockResolvedValueOnce(
        fakeResponse(200, { models: [], total: 0, limit: 20, offset: 40 })
      );
      await listModels(
        {
          q: '  bert base ',
          project: 'nlp team',
          includeArchived: true,
          limit: 20,
          offset: 40
        },
        settings
      );
      expect(lastCall().url).toBe(
        `${BASE}cube/api/v1/models?q=bert%20base&project=nlp%20team&include_archived=true&limit=20&offset=40`
      );
    });

    it('leaves out filters that are not set', async () => {
      makeRequest.mockResolvedValueOnce(
        fakeResponse(200, { models: [], total: 0, limit: 50, offset: 0 })
      );
      await listModels({ q: '', includeArchived: false }, settings);
      expect(lastCall().url).toBe(`${BASE}cube/api/v1/models`);
    });

    it('encodes project, model and alias in model routes', async () => {
      makeRequest.mockResolvedValue(fakeResponse(200, { versions: [] }));
      await getModel('team/x', 'my model', settings);
      expect(lastCall().url).toBe(
        `${BASE}cube/api/v1/projects/team%2Fx/models/my%20model`
      );
      await getVersion('alice', 'm', 'prod?', settings);
      expect(lastCall().url).toBe(
        `${BASE}cube/api/v1/projects/alice/models/m/versions/prod%3F`
      );
      await compareVersions('alice', 'm', [1, 3, 4], settings);
      expect(lastCall().url).toBe(
        `${BASE}cube/api/v1/projects/alice/models/m/compare?versions=1%2C3%2C4`
      );
    });

    it('builds download URLs, with the token when there is one', () => {
      expect(downloadUrl('alice', 'm 1', 2, settings)).toBe(
        `${BASE}cube/api/v1/projects/alice/models/m%201/versions/2/download`
      );
      const withToken = ServerConnection.makeSettings({
        baseUrl: BASE,
        token: 'abc'
      });
      expect(downloadUrl('alice', 'm', 'production', withToken)).toBe(
        `${BASE}cube/api/v1/projects/alice/models/m/versions/production/download?token=abc`
      );
    });
  });

  describe('bodies and methods', () => {
    it('POSTs the register body as JSON', async () => {
      makeRequest.mockResolvedValueOnce(
        fakeResponse(201, { model: 'iris', version: 1, project: 'alice' })
      );
      const v = await registerModel(
        { name: 'iris', path: 'models/iris.pkl', project: 'alice' },
        settings
      );
      expect(v.version).toBe(1);
      const { url, init } = lastCall();
      expect(url).toBe(`${BASE}cube/api/v1/models`);
      expect(init.method).toBe('POST');
      expect(JSON.parse(init.body as string)).toEqual({
        name: 'iris',
        path: 'models/iris.pkl',
        project: 'alice'
      });
      expect((init.headers as Record<string, string>)['Content-Type']).toBe(
        'application/json'
      );
    });

    it('PUTs an alias with expected_version only when given', async () => {
      makeRequest.mockResolvedValue(fakeResponse(200, { aliases: {} }));
      await setAlias('alice', 'iris', 'production', 3, undefined, settings);
      expect(lastCall().init.method).toBe('PUT');
      expect(lastCall().url).toBe(
        `${BASE}cube/api/v1/projects/alice/models/iris/aliases/production`
      );
      expect(JSON.parse(lastCall().init.body as string)).toEqual({
        version: 3
      });

      await setAlias('alice', 'iris', 'production', 4, null, settings);
      expect(JSON.parse(lastCall().init.body as string)).toEqual({
        version: 4,
        expected_version: null
      });

      await setAlias('alice', 'iris', 'production', 5, 4, settings);
      expect(JSON.parse(lastCall().init.body as string)).toEqual({
        version: 5,
        expected_version: 4
      });
    });

    it('PATCHes and DELETEs', async () => {
      makeRequest.mockResolvedValue(fakeResponse(200, {}));
      await patchVersion('alice', 'iris', 2, { archived: true }, settings);
      expect(lastCall().init.method).toBe('PATCH');
      expect(JSON.parse(lastCall().init.body as string)).toEqual({
        archived: true
      });

      makeRequest.mockResolvedValue(fakeResponse(204, undefined));
      await expect(
        deleteVersion('alice', 'iris', 2, settings)
      ).resolves.toBeUndefined();
      expect(lastCall().init.method).toBe('DELETE');
      expect(lastCall().url).toBe(
        `${BASE}cube/api/v1/projects/alice/models/iris/versions/2`
      );

      makeRequest.mockResolvedValue(fakeResponse(200, { aliases: {} }));
      await deleteAlias('alice', 'iris', 'staging', settings);
      expect(lastCall().init.method).toBe('DELETE');
    });
  });

  describe('errors', () => {
    it('parses {error, detail} into a CubeApiError', async () => {
      makeRequest.mockResolvedValueOnce(
        fakeResponse(
          409,
          {
            error: 'alias "production" moved',
            detail: { expected_version: 2, actual_version: 3 }
          },
          'Conflict'
        )
      );
      const failure = setAlias('alice', 'iris', 'production', 4, 2, settings);
      await expect(failure).rejects.toBeInstanceOf(CubeApiError);
      const err = (await failure.catch(e => e)) as CubeApiError;
      expect(err.status).toBe(409);
      expect(err.error).toBe('alias "production" moved');
      expect(err.message).toBe('alias "production" moved');
      expect(err.detail).toEqual({ expected_version: 2, actual_version: 3 });
      expect(err.detailText).toContain('"actual_version": 3');
    });

    it('keeps a string detail as is', async () => {
      makeRequest.mockResolvedValueOnce(
        fakeResponse(400, {
          error: 'invalid model name',
          detail: 'Use letters, digits, ".", "_" and "-".'
        })
      );
      const err = (await registerModel(
        { name: '-bad', path: 'x' },
        settings
      ).catch(e => e)) as CubeApiError;
      expect(err.status).toBe(400);
      expect(describeError(err)).toEqual({
        error: 'invalid model name',
        detail: 'Use letters, digits, ".", "_" and "-".'
      });
    });

    it('falls back to tornado-style {message} bodies', () => {
      const err = errorFromResponse(403, 'Forbidden', {
        message: 'Forbidden',
        reason: 'xsrf missing'
      });
      expect(err.error).toBe('Forbidden');
      expect(err.detail).toBe('xsrf missing');
    });

    it('explains a 404 HTML page (server extension missing)', async () => {
      makeRequest.mockResolvedValueOnce(
        fakeResponse(404, '<html>404 Not Found</html>', 'Not Found')
      );
      const err = (await whoami(settings).catch(e => e)) as CubeApiError;
      expect(err.status).toBe(404);
      expect(err.error).toMatch(/server extension/);
      expect(err.detail).toBeNull();
    });

    it('turns network failures into status 0 errors', async () => {
      makeRequest.mockRejectedValueOnce(new TypeError('Failed to fetch'));
      const err = (await requestAPI('whoami', {}, settings).catch(
        e => e
      )) as CubeApiError;
      expect(err).toBeInstanceOf(CubeApiError);
      expect(err.status).toBe(0);
      expect(err.detail).toBe('Failed to fetch');
    });

    it('asks for the language JupyterLab shows and translates its fallbacks', async () => {
      const zh: Record<string, string> = {
        'Cannot reach the Jupyter server': '无法连接 Jupyter 服务器'
      };
      const translator = {
        languageCode: 'zh-CN',
        load: () => ({ __: (msgid: string) => zh[msgid] ?? msgid })
      } as unknown as ITranslator;
      await requestAPI('whoami', {}, settings);
      expect(
        (lastCall().init.headers as Record<string, string>)['Accept-Language']
      ).toBe('en');
      setUiTranslator(translator);
      try {
        expect(uiLanguage()).toBe('zh-CN');
        await requestAPI('whoami', {}, settings);
        expect(
          (lastCall().init.headers as Record<string, string>)['Accept-Language']
        ).toBe('zh-CN, en;q=0.5');
        makeRequest.mockRejectedValueOnce(new TypeError('Failed to fetch'));
        const err = (await requestAPI('whoami', {}, settings).catch(
          e => e
        )) as CubeApiError;
        expect(err.error).toBe('无法连接 Jupyter 服务器');
      } finally {
        setUiTranslator(nullTranslator);
      }
      expect(uiLanguage()).toBe('en');
    });

    it('describes non-API errors too', () => {
      expect(describeError(new Error('boom'))).toEqual({
        error: 'boom',
        detail: ''
      });
      expect(describeError('plain')).toEqual({ error: 'plain', detail: '' });
    });
  });
});

describe('lineage datasets', () => {
  it('reads "name vN", and the bare name for a dataset used as registered', () => {
    expect(
      lineageDatasetLabel({
        name: 'pets',
        version: 2
      })
    ).toBe('pets v2');
    expect(lineageDatasetLabel({ name: 'pets', version: null })).toBe('pets');
  });
});
