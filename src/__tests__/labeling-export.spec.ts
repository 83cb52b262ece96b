/**
 * Labeling exports: the Python shown to load a version, and copying.
 */
import { Clipboard } from '@jupyterlab/apputils';

import { copyText, loadSnippet, pyString } from '../panels/labeling/export';

describe('load snippet', () => {
  it('loads a version of the personal project without naming it', () => {
    expect(
      loadSnippet({
        dataset: 'pets',
        version: 3,
        project: 'alice',
        personalProject: 'alice'
      })
    ).toBe(
      [
        'import cube_lab',
        '',
        'df = cube_lab.datasets.load("pets", version=3)',
        'path = cube_lab.datasets.path("pets", version=3)'
      ].join('\n')
    );
  });

  it('names a team project, and quotes names safely', () => {
    const code = loadSnippet({
      dataset: 'say "hi"',
      version: 1,
      project: 'vision-team',
      personalProject: 'alice'
    });
    expect(code).toContain(
      'cube_lab.datasets.load("say \\"hi\\"", version=1, project="vision-team")'
    );
    expect(pyString('a\\b')).toBe('"a\\\\b"');
  });

  it('names what load returns: a DataFrame, or Label Studio tasks', () => {
    const tasks = loadSnippet({
      dataset: 'pets',
      version: 2,
      format: 'labelstudio'
    });
    expect(tasks).toContain(
      'tasks = cube_lab.datasets.load("pets", version=2)'
    );
    const coco = loadSnippet({ dataset: 'pets', version: 2, format: 'coco' });
    expect(coco).toContain('df = cube_lab.datasets.load("pets", version=2)');
  });
});

describe('copyText', () => {
  const original = Object.getOwnPropertyDescriptor(navigator, 'clipboard');
  afterEach(() => {
    if (original) {
      Object.defineProperty(navigator, 'clipboard', original);
    } else {
      delete (navigator as any).clipboard;
    }
    jest.restoreAllMocks();
  });

  it('uses the Clipboard API when there is one', async () => {
    const writeText = jest.fn().mockResolvedValue(undefined);
    Object.defineProperty(navigator, 'clipboard', {
      value: { writeText },
      configurable: true
    });
    const fallback = jest
      .spyOn(Clipboard, 'copyToSystem')
      .mockImplementation(() => undefined);
    await copyText('/data/pets/v3');
    expect(writeText).toHaveBeenCalledWith('/data/pets/v3');
    expect(fallback).not.toHaveBeenCalled();
  });

  it("falls back to JupyterLab's copy when the API refuses", async () => {
    Object.defineProperty(navigator, 'clipboard', {
      value: { writeText: jest.fn().mockRejectedValue(new Error('denied')) },
      configurable: true
    });
    const fallback = jest
      .spyOn(Clipboard, 'copyToSystem')
      .mockImplementation(() => undefined);
    await copyText('x');
    expect(fallback).toHaveBeenCalledWith('x');
  });
});
