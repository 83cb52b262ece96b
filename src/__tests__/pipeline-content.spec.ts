/**
 * Pipeline editor content: node kind labels, the New Pipeline names and
 * file creation, the runs list's words.
 */
import type { Contents } from '@jupyterlab/services';

import type { JobTemplate, PipelineRun } from '../api';
import {
  checkPipelineNames,
  createPipeline,
  pipelineFileName,
  withPipelineExt
} from '../panels/pipelines/create';
import { kindLabel } from '../panels/pipelines/kinds';
import { runMeta, runStatusLabel } from '../panels/pipelines/runs';
import { Ops } from '../panels/pipelines/serializer';

/** A stand-in translator that marks what went through it. */
const trans = {
  __: (msgid: string, ...args: any[]) =>
    '«' +
    msgid.replace(/%(\d+)/g, (m, i) => String(args[Number(i) - 1] ?? m)) +
    '»'
};

const TEMPLATE: JobTemplate = {
  name: 'train-sklearn',
  display_name: 'Train a scikit-learn model',
  category: 'Training',
  description: '',
  image: null,
  parameters: { type: 'object' },
  outputs: []
};

describe('node kind labels', () => {
  it('names the built-in ops in words, translated, never by op id', () => {
    const cases: [string, string][] = [
      [Ops.notebook, '«Notebook»'],
      [Ops.python, '«Python script»'],
      [Ops.r, '«R script»'],
      [Ops.shell, '«Shell command»'],
      ['cube-lab:training', '«Training job»'],
      ['cube-lab:tuning', '«Hyperparameter search»']
    ];
    for (const [op, label] of cases) {
      expect(kindLabel({ op }, trans)).toBe(label);
    }
  });

  it('names a template node by the template title', () => {
    expect(
      kindLabel(
        { op: Ops.template, params: { template: 'train-sklearn' } },
        trans,
        [TEMPLATE]
      )
    ).toBe('«Job template: «Train a scikit-learn model»»'); // both translated
    // Before the catalog loads (or a template the server lacks): its id.
    expect(
      kindLabel({ op: Ops.template, params: { template: 'gone' } }, trans)
    ).toBe('«Job template: gone»');
    expect(kindLabel({ op: Ops.template, params: {} }, trans)).toBe(
      '«Job template»'
    );
  });

  it("uses a plug-in kind's own title (translated), else the op", () => {
    const kinds = [{ op: 'acme:etl', name: 'etl', display_name: 'ETL step' }];
    expect(kindLabel({ op: 'acme:etl' }, trans, [], kinds)).toBe('«ETL step»');
    expect(kindLabel({ op: 'acme:other' }, trans, [], kinds)).toBe(
      'acme:other'
    );
  });
});

describe('new pipeline names', () => {
  it('derives a file name from the display name', () => {
    expect(pipelineFileName('Train & evaluate')).toBe(
      'train-evaluate.pipeline'
    );
    expect(pipelineFileName('  Nightly ETL v2 ')).toBe(
      'nightly-etl-v2.pipeline'
    );
    expect(pipelineFileName('数据 清洗')).toBe('数据-清洗.pipeline');
    expect(pipelineFileName('a/b\\c')).toBe('a-b-c.pipeline');
    expect(pipelineFileName('...')).toBe('pipeline.pipeline');
    expect(pipelineFileName('report.pipeline')).toBe('report.pipeline');
  });

  it('adds the extension once', () => {
    expect(withPipelineExt('flow')).toBe('flow.pipeline');
    expect(withPipelineExt('flow.pipeline')).toBe('flow.pipeline');
    expect(withPipelineExt(' Flow.PIPELINE ')).toBe('Flow.PIPELINE');
  });

  it('says what is wrong with a name or file name', () => {
    expect(checkPipelineNames('Train', 'train.pipeline', trans)).toBeNull();
    expect(checkPipelineNames('  ', 'x.pipeline', trans)).toBe(
      '«Give the pipeline a name.»'
    );
    expect(checkPipelineNames('Train', '', trans)).toBe(
      '«Give the file a name, e.g. train.pipeline.»'
    );
    expect(checkPipelineNames('Train', 'sub/train', trans)).toMatch(/"\/"/);
    expect(checkPipelineNames('Train', '.hidden', trans)).toMatch(/hidden/);
  });
});

/** An in-memory contents manager: the calls createPipeline makes. */
function memoryContents(files: Record<string, string>) {
  return {
    files,
    // createPipeline lists the folder; a GET of anything else is a test failure
    get: async (path: string, options?: { content?: boolean }) => {
      const inside = (p: string) =>
        path ? p.startsWith(`${path}/`) : !p.includes('/');
      if (!options?.content) {
        throw new Error(`unexpected GET ${path}: list the folder instead`);
      }
      const content = Object.keys(files)
        .filter(inside)
        .map(p => ({ name: p.split('/').pop(), path: p }));
      return { path, type: 'directory', content } as Contents.IModel;
    },
    save: async (path: string, model: Partial<Contents.IModel>) => {
      files[path] = String(model.content);
      return { path } as Contents.IModel;
    }
  };
}

describe('createPipeline with names given', () => {
  it('writes an empty Elyra pipeline carrying the display name', async () => {
    const contents = memoryContents({});
    const path = await createPipeline({
      contents: contents as unknown as Contents.IManager,
      folder: 'work',
      trans,
      names: { name: 'Train & evaluate' }
    });
    expect(path).toBe('work/train-evaluate.pipeline');
    const doc = JSON.parse(contents.files[path!]);
    expect(doc.doc_type).toBe('pipeline');
    expect(doc.pipelines[0].app_data.properties.name).toBe('Train & evaluate');
    expect(doc.pipelines[0].nodes).toEqual([]);
  });

  it('never overwrites: a taken file name gets a number', async () => {
    const contents = memoryContents({
      'flow.pipeline': '{}',
      'flow-1.pipeline': '{}'
    });
    const path = await createPipeline({
      contents: contents as unknown as Contents.IManager,
      folder: '',
      trans,
      names: { name: 'Flow', file: 'flow' }
    });
    expect(path).toBe('flow-2.pipeline');
    expect(contents.files['flow.pipeline']).toBe('{}');
  });

  it('refuses a file name with a folder in it', async () => {
    const contents = memoryContents({});
    await expect(
      createPipeline({
        contents: contents as unknown as Contents.IManager,
        folder: '',
        trans,
        names: { name: 'x', file: '../x.pipeline' }
      })
    ).rejects.toThrow(/"\/"/);
    expect(Object.keys(contents.files)).toEqual([]);
  });
});

describe('pipeline runs list', () => {
  const run = (over: Partial<PipelineRun>): PipelineRun =>
    ({
      id: 'r1',
      pipeline: 'p',
      pipeline_path: 'p.pipeline',
      status: 'succeeded',
      trigger: 'manual',
      duration_s: 65,
      ...over
    }) as PipelineRun;

  it('puts duration and trigger on the second line, translated', () => {
    expect(runMeta(run({}), trans)).toBe('1m 05s · «manual»');
    expect(runMeta(run({ trigger: 'cli', duration_s: null }), trans)).toBe(
      '«command line»'
    );
    expect(runMeta(run({ trigger: 'webhook' }), trans)).toBe(
      '1m 05s · webhook'
    );
  });

  it('translates run statuses', () => {
    expect(runStatusLabel('failed', trans)).toBe('«failed»');
    expect(runStatusLabel('weird', trans)).toBe('weird');
  });
});
