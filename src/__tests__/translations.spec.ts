/**
 * The checks behind the panels' forms hand back their messages through the
 * translator they are given, so a user who picked 中文 (简体) reads them in
 * Chinese: every message here must come from `trans.__`.
 */
import { planDeploy, parseRequestBody } from '../panels/deployments/logic';
import {
  assignRequest,
  datasetFormToRequest,
  emptyDatasetForm,
  emptyProjectForm,
  parseLabels,
  projectFormToRequest
} from '../panels/labeling/logic';
import { kindLabel, serverText } from '../panels/pipelines/kinds';
import {
  Ops,
  parse,
  PipelineFormatError
} from '../panels/pipelines/serializer';
import { emptyForm, formToRequest, parseEnv } from '../panels/training/logic';
import {
  checkSpaceText,
  emptyExperimentForm,
  formToExperiment
} from '../panels/tuning/logic';
import { identity } from '../validate';

/** A stand-in bundle: marks what it translated, fills %1, %2... */
const seen: string[] = [];
const marking = {
  __: (msgid: string, ...args: any[]) => {
    seen.push(msgid);
    return `«${identity.__(msgid, ...args)}»`;
  }
};
const translated = (text: string | undefined | null) =>
  expect(text).toMatch(/^«.*»$/s);

beforeEach(() => {
  seen.length = 0;
});

describe('form checks translate their messages', () => {
  it('training: every field error, env lines and unclosed quotes', () => {
    const { errors } = formToRequest(
      {
        ...emptyForm(),
        script: '',
        args: '"open',
        workers: '0',
        nproc: 'x',
        gpus: '99',
        env: 'NO_EQUALS\n1BAD=x'
      },
      marking
    );
    for (const field of ['script', 'args', 'workers', 'nproc', 'gpus']) {
      translated(errors[field as keyof typeof errors]);
    }
    expect(errors.args).toBe('«Arguments: «unclosed double quote».»');
    expect(parseEnv('NO_EQUALS\n1BAD=x', marking).errors).toEqual([
      '«line 1: "NO_EQUALS" has no "=" (write KEY=value)»',
      '«line 2: "1BAD" is not a variable name (letters, digits, _)»'
    ]);
    expect(
      formToRequest(
        { ...emptyForm(), script: 'a.py', gpus: '1', gpuType: '' },
        marking
      ).errors.gpuType
    ).toMatch(/^«Name the GPU type/);
  });

  it('without a translator the English is the same text', () => {
    expect(formToRequest({ ...emptyForm(), args: "'x" }).errors.args).toBe(
      'Arguments: unclosed single quote.'
    );
    expect(parseRequestBody('[1]')).toEqual({
      ok: false,
      error: 'The request must be a JSON object, e.g. {"inputs": [...]}.'
    });
  });

  it('tuning: the search space and the fields', () => {
    translated(checkSpaceText('', marking).problems[0].message);
    translated(checkSpaceText('{"a": ', marking).problems[0].message);
    const shape = checkSpaceText(
      '{"lr": {"_type": "uniform", "_value": [3, 1]}, "x": 1, "y": {"_type": "nope", "_value": 1}}',
      marking
    ).problems.map(p => p.message);
    expect(shape).toEqual([
      '«searchSpace.lr: uniform needs _value = «[low, high] with low < high»»',
      '«searchSpace.x must be an object with _type and _value»',
      expect.stringMatching(
        /^«searchSpace\.y: unknown _type "nope"; use one of choice, /
      )
    ]);
    const { errors } = formToExperiment(
      {
        ...emptyExperimentForm(),
        searchSpace: '{}',
        trialCommand: '',
        maxTrials: '0',
        concurrency: '',
        maxDuration: 'soon',
        metric: ' '
      },
      marking
    );
    expect(Object.keys(errors).sort()).toEqual([
      'concurrency',
      'maxDuration',
      'maxTrials',
      'metric',
      'searchSpace',
      'trialCommand'
    ]);
    Object.values(errors).forEach(translated);
  });

  it('deployments: the deploy dialog and the request body', () => {
    const target = { project: 'p', model: 'iris', version: 2 };
    const form = {
      name: '',
      mode: 'new' as const,
      percent: '',
      batching: false,
      replicas: '0',
      port: '80',
      samples: '200',
      runtime: 'auto' as const
    };
    const { errors } = planDeploy(form, target, null, marking);
    expect(Object.keys(errors).sort()).toEqual([
      'name',
      'port',
      'replicas',
      'samples'
    ]);
    Object.values(errors).forEach(translated);
    const parsed = parseRequestBody('{', marking);
    expect(parsed.ok).toBe(false);
    translated(parsed.ok ? '' : parsed.error);
  });

  it('labeling: datasets, projects, labels and assignment', () => {
    const ds = datasetFormToRequest(emptyDatasetForm(), marking).errors;
    translated(ds.name);
    translated(ds.path);
    const pr = projectFormToRequest(
      { ...emptyProjectForm(), name: '-x', labels: '' },
      marking
    ).errors;
    [pr.name, pr.dataset, pr.labels].forEach(translated);
    expect(parseLabels('cat, cat, dog=xy', marking).problems).toEqual([
      '«"cat" is listed twice.»',
      expect.stringMatching(/^«Hotkey "xy" of "dog": use one character/)
    ]);
    translated(assignRequest([], 'round_robin', '', marking).error);
    translated(assignRequest(['a'], 'batch', '0', marking).error);
  });

  it('pipelines: a .pipeline file that cannot be read', () => {
    for (const text of [
      '{',
      '[]',
      '{"doc_type": "x"}',
      '{"pipelines": []}',
      '{"pipelines": [{"app_data": {"version": 99}}]}',
      '{"pipelines": [{"nodes": [1]}]}'
    ]) {
      let message = '';
      try {
        parse(text, 'p', marking);
      } catch (err) {
        expect(err).toBeInstanceOf(PipelineFormatError);
        message = (err as Error).message;
      }
      translated(message);
    }
    expect(seen).toContain('%1 must be an object');
  });

  it("pipelines: the server's template and node kind texts", () => {
    const template = {
      name: 'train-sklearn',
      display_name: 'Train a scikit-learn model',
      category: 'Training',
      description: 'Fits an estimator.',
      image: null,
      parameters: { type: 'object' as const, properties: {} },
      outputs: []
    };
    expect(
      kindLabel(
        { op: Ops.template, params: { template: 'train-sklearn' } },
        marking,
        [template]
      )
    ).toBe('«Job template: «Train a scikit-learn model»»');
    expect(
      kindLabel(
        { op: 'acme:etl' },
        marking,
        [],
        [{ op: 'acme:etl', name: 'etl', display_name: 'Extract and load' }]
      )
    ).toBe('«Extract and load»');
    // an op nobody registers: the op itself, nothing to translate
    expect(kindLabel({ op: 'acme:gone' }, marking)).toBe('acme:gone');
    expect(serverText('', marking)).toBe('');
    expect(serverText(undefined, marking)).toBe('');
  });
});
