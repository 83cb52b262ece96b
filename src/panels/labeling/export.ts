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
 * The Python that loads version `version` of dataset `dataset`.
 *
 * The project is named only when it is not the user's own (personal) one,
 * which the helper uses by default.
 */
export function loadSnippet(options: {
  dataset: string;
  version: number;
  project?: string;
  personalProject?: string;
}): string {
  const { dataset, version, project, personalProject } = options;
  const inProject =
    project && project !== personalProject
      ? `, project=${pyString(project)}`
      : '';
  return [
    'import cube_lab',
    '',
    `df = cube_lab.datasets.load(${pyString(dataset)}, version=${version}${inProject})`,
    `path = cube_lab.datasets.path(${pyString(dataset)}, version=${version}${inProject})`
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
