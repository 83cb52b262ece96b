import {
  isValidModelName,
  suggestModelName,
  suggestName,
  validateAlias,
  validateModelName
} from '../validate';

describe('model name validation', () => {
  it.each(['iris', 'A', '0model', 'bert-base.v2_final', 'x'.repeat(128)])(
    'accepts %s',
    name => {
      expect(validateModelName(name)).toBeNull();
      expect(isValidModelName(name)).toBe(true);
    }
  );

  it.each([
    ['', /required/],
    ['-leading-dash', /starts with a letter or a digit/],
    ['.hidden', /starts with a letter or a digit/],
    ['_x', /starts with a letter or a digit/],
    ['has space', /only contain/],
    ['slash/name', /only contain/],
    ['ünïcode', /starts with/],
    ['x'.repeat(129), /at most 128/]
  ])('rejects %j', (name, reason) => {
    expect(validateModelName(name)).toMatch(reason);
    expect(isValidModelName(name)).toBe(false);
  });

  it('translates messages through the bundle', () => {
    const trans = { __: (s: string) => `T:${s}` };
    expect(validateModelName('', trans)).toBe('T:A model name is required.');
  });
});

describe('alias validation', () => {
  it('accepts usual aliases', () => {
    expect(validateAlias('production')).toBeNull();
    expect(validateAlias('v2-candidate')).toBeNull();
  });

  it('rejects numbers, blanks and odd characters', () => {
    expect(validateAlias('')).toMatch(/required/);
    expect(validateAlias('3')).toMatch(/starts with a letter/);
    expect(validateAlias('prod env')).toMatch(/only contain/);
    expect(validateAlias('prod.v1')).toMatch(/only contain/);
    expect(validateAlias('latest')).toMatch(/reserved/);
    expect(validateAlias('a'.repeat(65))).toMatch(/at most 64/);
  });
});

describe('suggested model names', () => {
  it.each([
    ['models/iris.pkl', 'iris'],
    ['weights.bin', 'weights'],
    ['runs/exp 1/model.tar.gz', 'model.tar'],
    ['checkpoints/bert-base/', 'bert-base'],
    ['.hidden', 'hidden'],
    ['my model (final).onnx', 'my-model-final'],
    ['___', 'model']
  ])('%s -> %s', (path, name) => {
    const suggested = suggestModelName(path);
    expect(suggested).toBe(name);
    expect(validateModelName(suggested)).toBeNull();
  });
});

describe('names from display names', () => {
  it.each([
    ['Two notebooks', 'Two-notebooks'],
    ['v1.2 flow', 'v1.2-flow'],
    ['训练流程', 'schedule']
  ])('%s -> %s', (text, name) => {
    const suggested = suggestName(text, 'schedule');
    expect(suggested).toBe(name);
    expect(validateModelName(suggested)).toBeNull();
  });
});
