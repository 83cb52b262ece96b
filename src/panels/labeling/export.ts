/**
 * Reaching an exported dataset version from a notebook: the Python that
 * loads it, and copying text to the clipboard.
 */
import { Clipboard } from '@jupyterlab/apputils';

/** A Python string literal for `text` (double quotes, escaped). */
export function pyString(text: string): string {
  return JSON.stringify(text);
}

/**
 * The Python that loads version `version` of dataset `dataset` with
 * `cube_lab.datasets` (cube_lab/datasets.py): `load` gives a DataFrame (a
 * Label Studio export: its list of tasks), `path` the exported file or folder.
 *
 * The project is named only when it is not the user's own (personal) one,
 * where the helper looks first.
 */
export function loadSnippet(options: {
  dataset: string;
  version: number;
  format?: string;
  project?: string;
  personalProject?: string;
}): string {
  const { dataset, version, project, personalProject } = options;
  const inProject =
    project && project !== personalProject
      ? `, project=${pyString(project)}`
      : '';
  const args = `${pyString(dataset)}, version=${version}${inProject}`;
  const value = options.format === 'labelstudio' ? 'tasks' : 'df';
  return [
    'import cube_lab',
    '',
    `${value} = cube_lab.datasets.load(${args})`,
    `path = cube_lab.datasets.path(${args})`
  ].join('\n');
}

/**
 * Copy `text`: the asynchronous Clipboard API where the page may use it,
 * else JupyterLab's copy (a hidden selection and `execCommand`).
 */
export async function copyText(text: string): Promise<void> {
  const api = typeof navigator !== 'undefined' ? navigator.clipboard : null;
  if (api?.writeText) {
    try {
      await api.writeText(text);
      return;
    } catch {
      // Not allowed here (no focus, an insecure origin): the old way.
    }
  }
  Clipboard.copyToSystem(text);
}
