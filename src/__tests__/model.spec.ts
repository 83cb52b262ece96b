import { CubeApiError } from '../api';
import * as api from '../api';
import { ModelsModel } from '../panels/models/model';

jest.mock('../api', () => {
  const actual = jest.requireActual('../api');
  return {
    ...actual,
    whoami: jest.fn(),
    listModels: jest.fn(),
    getModel: jest.fn(),
    getVersion: jest.fn(),
    compareVersions: jest.fn()
  };
});

const mocked = api as jest.Mocked<typeof api>;

const me = {
  user: 'alice',
  backend: 'local',
  projects: [
    {
      name: 'alice',
      kind: 'personal' as const,
      description: '',
      role: 'owner' as const,
      members: [],
      created_at: '2025-01-01T00:00:00Z'
    }
  ]
};

function version(n: number): api.ModelVersion {
  return {
    id: n,
    project: 'alice',
    model: 'iris',
    version: n,
    flavor: 'sklearn',
    format: 'file',
    artifact_name: 'iris.pkl',
    description: '',
    params: {},
    metrics: { accuracy: 0.9 + n / 100 },
    tags: {},
    aliases: [],
    archived: false,
    lineage: { source: null, pipeline_run_id: null, training_job_id: null },
    created_by: 'alice',
    created_at: '2025-01-01T00:00:00Z',
    size_bytes: 10,
    checksum: 'sha256:00'
  };
}

const detail = {
  id: 1,
  project: 'alice',
  name: 'iris',
  description: '',
  owner: 'alice',
  archived: false,
  created_at: '2025-01-01T00:00:00Z',
  updated_at: '2025-01-01T00:00:00Z',
  latest_version: 2,
  version_count: 2,
  flavor: 'sklearn',
  aliases: {},
  versions: [version(2), version(1)]
};

describe('ModelsModel', () => {
  beforeEach(() => {
    jest.resetAllMocks();
    mocked.whoami.mockResolvedValue(me);
    mocked.listModels.mockResolvedValue({
      models: [detail],
      total: 1,
      limit: 50,
      offset: 0
    });
    mocked.getModel.mockResolvedValue(detail);
    mocked.getVersion.mockImplementation(async (_p, _n, v) =>
      version(Number(v))
    );
  });

  it('lists models with the current filters', async () => {
    const model = new ModelsModel();
    model.setQuery('ir');
    model.setProject('alice');
    await model.refresh();
    expect(mocked.listModels).toHaveBeenCalledWith({
      q: 'ir',
      project: 'alice',
      includeArchived: false,
      limit: 50,
      offset: 0
    });
    expect(model.state.list?.models[0].name).toBe('iris');
    expect(model.state.whoami?.user).toBe('alice');
    expect(model.state.loading).toBe(false);
    expect(model.state.error).toBeNull();
  });

  it('asks who I am once, and again after resetIdentity', async () => {
    const model = new ModelsModel();
    await model.refresh();
    await model.refresh();
    expect(mocked.whoami).toHaveBeenCalledTimes(1);
    model.resetIdentity();
    await model.refresh();
    expect(mocked.whoami).toHaveBeenCalledTimes(2);
  });

  it('emits invalidated when the route or a filter changes', () => {
    const model = new ModelsModel();
    const seen = jest.fn();
    model.invalidated.connect(seen);
    model.setQuery('x');
    model.setQuery('x');
    model.setIncludeArchived(true);
    model.navigate({ kind: 'model', project: 'alice', name: 'iris' });
    expect(seen).toHaveBeenCalledTimes(3);
  });

  it('fetches the model and the version for a version route', async () => {
    const model = new ModelsModel({
      kind: 'version',
      project: 'alice',
      name: 'iris',
      version: 1
    });
    await model.refresh();
    expect(mocked.getVersion).toHaveBeenCalledWith('alice', 'iris', 1);
    expect(model.state.version?.version).toBe(1);
    expect(model.state.model?.name).toBe('iris');
  });

  it('drops selected versions that no longer exist', async () => {
    const model = new ModelsModel({
      kind: 'model',
      project: 'alice',
      name: 'iris'
    });
    model.toggleSelected(2);
    model.toggleSelected(7);
    model.toggleSelected(1);
    expect(model.state.selection).toEqual([1, 2, 7]);
    await model.refresh();
    expect(model.state.selection).toEqual([1, 2]);
    model.toggleSelected(2);
    expect(model.state.selection).toEqual([1]);
  });

  it('records the server error and rejects (so polling backs off)', async () => {
    mocked.getModel.mockRejectedValue(
      new CubeApiError(404, 'model not found', 'Check the name.')
    );
    const model = new ModelsModel({
      kind: 'model',
      project: 'alice',
      name: 'nope'
    });
    await expect(model.refresh()).rejects.toBeInstanceOf(CubeApiError);
    expect(model.state.error).toEqual({
      error: 'model not found',
      detail: 'Check the name.',
      status: 404
    });
  });

  it('ignores an answer that arrives after navigating away', async () => {
    let release: (v: api.ModelList) => void = () => undefined;
    mocked.listModels.mockReturnValueOnce(
      new Promise(resolve => {
        release = resolve;
      })
    );
    const model = new ModelsModel();
    const first = model.refresh();
    model.navigate({ kind: 'model', project: 'alice', name: 'iris' });
    const second = model.refresh();
    release({ models: [], total: 0, limit: 50, offset: 0 });
    await Promise.all([first, second]);
    expect(model.state.list).toBeNull();
    expect(model.state.model?.name).toBe('iris');
  });
});
