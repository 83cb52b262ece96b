/**
 * "Export as preference data": the dialog that asks the dataset's name and
 * which conversations (this one, or all of the project's).
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

export interface IExportChoice {
  dataset: string;
  /** Only the current conversation (else every one of the project). */
  onlyCurrent: boolean;
}

class ExportBody extends Widget implements Dialog.IBodyWidget<IExportChoice> {
  constructor(trans: TranslationBundle, name: string, hasCurrent: boolean) {
    super();
    this.addClass('cube-ChatExport');
    const label = document.createElement('label');
    label.className = 'cube-NewPipeline-field';
    label.textContent = trans.__('Dataset name');
    this._name = document.createElement('input');
    this._name.className = 'jp-mod-styled';
    this._name.name = 'dataset';
    this._name.value = name;
    label.appendChild(this._name);

    const scope = document.createElement('label');
    scope.className = 'cube-ChatExport-scope';
    this._current = document.createElement('input');
    this._current.type = 'checkbox';
    this._current.name = 'only-current';
    this._current.checked = false;
    this._current.disabled = !hasCurrent;
    scope.append(
      this._current,
      document.createTextNode(' ' + trans.__('Only this conversation'))
    );

    const hint = document.createElement('p');
    hint.className = 'cube-NewPipeline-hint';
    hint.textContent = trans.__(
      'Thumbs up / down, edited answers and regenerated answers become prompt / chosen / rejected pairs in a new version of the dataset, which a DPO fine-tune reads as it is.'
    );
    this.node.append(label, scope, hint);
  }

  getValue(): IExportChoice {
    return {
      dataset: this._name.value.trim(),
      onlyCurrent: this._current.checked
    };
  }

  protected onAfterAttach(): void {
    this._name.focus();
    this._name.select();
  }

  private _name: HTMLInputElement;
  private _current: HTMLInputElement;
}

/** Ask the dataset's name (null: cancelled). */
export async function askExport(
  trans: TranslationBundle,
  name: string,
  hasCurrent: boolean
): Promise<IExportChoice | null> {
  const result = await showDialog({
    title: trans.__('Export as preference data'),
    body: new ExportBody(trans, name, hasCurrent),
    buttons: [
      Dialog.cancelButton({ label: trans.__('Cancel') }),
      Dialog.okButton({ label: trans.__('Export') })
    ]
  });
  return result.button.accept && result.value ? result.value : null;
}
