/**
 * The fine-tune form's logic: the request it sends, and the form filled back
 * from a fine-tune job for "Edit & launch".
 */
import type { TrainingJob } from '../api';
import {
  datasetRefs,
  emptyFinetuneForm,
  finetuneJobToForm,
  finetuneToRequest,
  IFinetuneForm
} from '../panels/training/finetune-logic';

function jobOf(
  config: Record<string, unknown>,
  root = '/srv/lab'
): TrainingJob {
  return {
    id: 'j1',
    name: 'finetune-sft',
    project: 'team',
    owner: 'alice',
    framework: 'pytorch',
    backend: 'local',
    status: 'succeeded',
    workers: 1,
    nproc_per_worker: 2,
    gpus: [],
    attempts: 1,
    exit_code: 0,
    error: null,
    working_dir: root,
    output_dir: null,
    last_checkpoint: null,
    command: 'python -m cube_lab.finetune.trainer',
    spec: {
      module: 'cube_lab.finetune.trainer',
      args: ['--config-json', JSON.stringify(config)]
    },
    created_at: '2026-12-03T00:00:00Z',
    started_at: null,
    finished_at: null,
    duration_s: null
  } as TrainingJob;
}

describe('finetuneToRequest', () => {
  it('sends a named chat template, and none for the tokenizer’s own', () => {
    const form: IFinetuneForm = {
      ...emptyFinetuneForm(),
      modelFolder: 'models/base',
      data: 'data/train.jsonl'
    };
    expect(finetuneToRequest(form).request?.config.template).toBeUndefined();
    const named = finetuneToRequest({ ...form, template: 'qwen' });
    expect(named.request?.config.template).toBe('qwen');
  });
});

describe('the data from a registered dataset', () => {
  it('sends data.dataset, and fills it back from the recorded reference', () => {
    const form: IFinetuneForm = {
      ...emptyFinetuneForm(),
      modelFolder: 'models/base',
      dataKind: 'dataset',
      dataset: 'chats:2'
    };
    const sent = finetuneToRequest(form).request!;
    expect(sent.config.data).toEqual({ dataset: 'chats:2', format: 'auto' });
    const recorded = {
      ...sent.config,
      model: '/srv/lab/models/base',
      data: { path: '/data/datasets/chats/2/export.jsonl', format: 'auto' },
      dataset_ref: 'team/chats:2'
    };
    const filled = finetuneJobToForm(jobOf(recorded))!;
    expect([filled.dataKind, filled.dataset, filled.data]).toEqual([
      'dataset',
      'chats:2',
      ''
    ]);
    expect(finetuneToRequest({ ...form, dataset: '' }).errors.dataset).toBe(
      'Pick a registered dataset, or give a file.'
    );
  });

  it('offers text datasets and their versions, not image datasets', () => {
    const refs = datasetRefs([
      {
        name: 'chats',
        project: 'team',
        kind: 'texts',
        versions: [{ version: 1 }]
      },
      { name: 'photos', project: 'team', kind: 'images', versions: [] }
    ]);
    expect(refs.map(r => r.ref)).toEqual(['chats', 'chats:1']);
  });
});

describe('finetuneJobToForm', () => {
  it('fills the form back so that it sends the same config', () => {
    const form: IFinetuneForm = {
      ...emptyFinetuneForm(),
      name: 'my-adapter',
      method: 'dpo',
      modelFolder: 'models/base',
      data: 'data/pairs.jsonl',
      dataFormat: 'preference',
      template: 'chatml',
      loraRank: '16',
      loraAlpha: '32',
      loraTarget: 'q_proj, v_proj',
      precision: 'bf16',
      cutoffLen: '256',
      batchSize: '4',
      learningRate: '0.0002',
      maxSteps: '30',
      nproc: '2',
      project: 'team'
    };
    const sent = finetuneToRequest(form).request!;
    // the server records paths as absolute, under the job's folder
    const recorded = {
      ...sent.config,
      model: '/srv/lab/models/base',
      data: { path: '/srv/lab/data/pairs.jsonl', format: 'preference' },
      lora: { ...(sent.config.lora as object), dropout: 0 },
      quantization_bit: null,
      num_train_epochs: 3
    };
    const filled = finetuneJobToForm(jobOf(recorded))!;
    expect(filled).toEqual({ ...form, epochs: '3' });
    expect(finetuneToRequest(filled).request).toEqual(sent);
  });

  it('picks the registered base by its reference', () => {
    const filled = finetuneJobToForm(
      jobOf({
        model: '/data/artifacts/base',
        base_ref: 'team/tiny-base:3',
        data: { path: '/elsewhere/train.jsonl' },
        method: 'sft'
      })
    )!;
    expect(filled.baseKind).toBe('registered');
    expect(filled.modelVersion).toBe('tiny-base:3');
    expect(filled.data).toBe(''); // outside the job's folder: left to fill
  });

  it('answers null for a job that is no fine-tune', () => {
    const job = jobOf({});
    job.spec = { script: 'train.py', args: ['--epochs', '2'] };
    expect(finetuneJobToForm(job)).toBeNull();
  });
});
