/**
 * "New Pipeline": ask for the pipeline's name and its `.pipeline` file name,
 * then write an empty Elyra pipeline document with that name.
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { PathExt } from '@jupyterlab/coreutils';
import { Contents } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

import { ITrans } from './kinds';
import { newDocument } from './serializer';

export const PIPELINE_EXT = '.pipeline';

/** A file name for a pipeline called `name`: "Train & evaluate" -> "train-evaluate.pipeline". */
export function pipelineFileName(name: string): string {
  const stem = name
    .trim()
    .replace(/\.pipeline$/i, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}._-]+/gu, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '')
    .slice(0, 100);
  return (stem || 'pipeline') + PIPELINE_EXT;
}

/** The file name as typed, with `.pipeline` added when it has no such ending. */
export function withPipelineExt(file: string): string {
  const trimmed = file.trim();
  return trimmed.toLowerCase().endsWith(PIPELINE_EXT)
    ? trimmed
    : trimmed + PIPELINE_EXT;
}

/** Why a name / file name pair cannot be used (null: it can). */
export function checkPipelineNames(
  name: string,
  file: string,
  trans: ITrans
): string | null {
  if (!name.trim()) {
    return trans.__('Give the pipeline a name.');
  }
  const f = withPipelineExt(file);
  if (f === PIPELINE_EXT) {
    return trans.__('Give the file a name, e.g. %1.', pipelineFileName(name));
  }
  if (/[/\\]/.test(f)) {
    return trans.__(
      'A file name has no "/" or "\\": the pipeline is created in the folder shown in the file browser.'
    );
  }
  if (f.startsWith('.')) {
    return trans.__('A file name that starts with "." would be hidden.');
  }
  if (f.length > 255) {
    return trans.__('A file name has at most 255 characters.');
  }
  return null;
}

export interface IPipelineNames {
  /** The pipeline's display name (`properties.name`). */
  name: string;
  /** The file name, ending in `.pipeline`. */
  file: string;
}

/** The dialog's body: the name and the file name (which follows the name until edited). */
class NamesBody extends Widget implements Dialog.IBodyWidget<IPipelineNames> {
  constructor(trans: ITrans, initial: IPipelineNames, error: string | null) {
    super();
    this.addClass('cube-NewPipeline');
    const nameLabel = document.createElement('label');
    nameLabel.className = 'cube-NewPipeline-field';
    nameLabel.textContent = trans.__('Pipeline name');
    this._name = document.createElement('input');
    this._name.className = 'jp-mod-styled';
    this._name.name = 'pipeline-name';
    this._name.value = initial.name;
    this._name.placeholder = trans.__('e.g. Train and evaluate');
    nameLabel.appendChild(this._name);

    const fileLabel = document.createElement('label');
    fileLabel.className = 'cube-NewPipeline-field';
    fileLabel.textContent = trans.__('File name');
    this._file = document.createElement('input');
    this._file.className = 'jp-mod-styled';
    this._file.name = 'pipeline-file';
    this._file.value = initial.file;
    this._file.placeholder = 'pipeline.pipeline';
    fileLabel.appendChild(this._file);

    this._followName =
      !initial.file || initial.file === pipelineFileName(initial.name);
    this._name.addEventListener('input', () => {
      if (this._followName) {
        this._file.value = this._name.value.trim()
          ? pipelineFileName(this._name.value)
          : '';
      }
    });
    this._file.addEventListener('input', () => {
      this._followName = false;
    });

    const hint = document.createElement('p');
    hint.className = 'cube-NewPipeline-hint';
    hint.textContent = trans.__(
      'The name is what the runs list and Kubeflow show; the file is created in the current folder.'
    );
    this.node.append(nameLabel, fileLabel, hint);
    if (error) {
      const problem = document.createElement('p');
      problem.className = 'cube-NewPipeline-error';
      problem.setAttribute('role', 'alert');
      problem.textContent = error;
      this.node.appendChild(problem);
    }
  }

  getValue(): IPipelineNames {
    return { name: this._name.value.trim(), file: this._file.value.trim() };
  }

  protected onAfterAttach(): void {
    this._name.focus();
    this._name.select();
  }

  private _name: HTMLInputElement;
  private _file: HTMLInputElement;
  private _followName: boolean;
}

/**
 * The names taken in `folder`, from one listing of it (probing each candidate
 * with a GET would log a 404 in the browser's console for every free name).
 */
async function takenNames(
  contents: Contents.IManager,
  folder: string
): Promise<Set<string>> {
  const listing = await contents.get(folder, { content: true });
  const items = Array.isArray(listing.content) ? listing.content : [];
  return new Set(items.map((item: Contents.IModel) => item.name));
}

/** A free path in `folder` for `file`: "a.pipeline", then "a-1.pipeline", ... */
async function freePath(
  contents: Contents.IManager,
  folder: string,
  file: string
): Promise<string> {
  const taken = await takenNames(contents, folder);
  const stem = file.slice(0, -PIPELINE_EXT.length);
  for (let i = 0; i < 1000; i++) {
    const candidate = i ? `${stem}-${i}${PIPELINE_EXT}` : file;
    if (!taken.has(candidate)) {
      return PathExt.join(folder, candidate);
    }
  }
  throw new Error(`no free file name for ${file} in ${folder || '/'}`);
}

/**
 * Ask for the names (unless `names` is given), create the file in `folder`
 * and return its path; null when the user cancelled.
 *
 * Asked, a taken file name is an error shown in the dialog again; given
 * (from a command's arguments), it gets a number added.
 */
export async function createPipeline(options: {
  contents: Contents.IManager;
  folder: string;
  trans: ITrans;
  names?: Partial<IPipelineNames>;
}): Promise<string | null> {
  const { contents, folder, trans } = options;
  let names: IPipelineNames | null = null;
  let path = '';
  if (options.names?.name || options.names?.file) {
    const name =
      options.names.name?.trim() ||
      PathExt.basename(options.names.file!, PIPELINE_EXT);
    const file = withPipelineExt(options.names.file || pipelineFileName(name));
    const problem = checkPipelineNames(name, file, trans);
    if (problem) {
      throw new Error(problem);
    }
    names = { name, file };
    path = await freePath(contents, folder, file);
  } else {
    let current: IPipelineNames = { name: '', file: '' };
    let error: string | null = null;
    for (;;) {
      const result = await showDialog<IPipelineNames>({
        title: trans.__('New Pipeline'),
        body: new NamesBody(trans, current, error),
        buttons: [
          Dialog.cancelButton(),
          Dialog.okButton({ label: trans.__('Create') })
        ],
        focusNodeSelector: 'input[name="pipeline-name"]'
      });
      if (!result.button.accept || !result.value) {
        return null;
      }
      current = result.value;
      const file = withPipelineExt(
        current.file || pipelineFileName(current.name)
      );
      error = checkPipelineNames(current.name, file, trans);
      if (!error) {
        path = PathExt.join(folder, file);
        if ((await takenNames(contents, folder)).has(file)) {
          error = trans.__(
            '%1 already exists in this folder: choose another file name.',
            file
          );
        } else {
          names = { name: current.name, file };
          break;
        }
      }
    }
  }
  if (!names) {
    return null;
  }
  await contents.save(path, {
    type: 'file',
    format: 'text',
    content: JSON.stringify(newDocument(names.name), null, 2) + '\n'
  });
  return path;
}
