/**
 * Small helpers for the main-area tabs of the cube-lab panels.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget, type WidgetTracker } from '@jupyterlab/apputils';
import { DocumentWidget } from '@jupyterlab/docregistry';
import type { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

/**
 * The form tab of `tracker` that is in the shell, if any. A tab restored
 * from a saved state that the saved layout does not place (a stale entry)
 * stays out of the shell: it is disposed, so a new tab can take its place.
 */
export function openForm<T extends Widget>(
  tracker: WidgetTracker<T>
): T | null {
  let found: T | null = null;
  const stale: T[] = [];
  tracker.forEach(widget => {
    if (widget.isAttached && !found) {
      found = widget;
    } else if (!widget.isAttached) {
      stale.push(widget);
    }
  });
  stale.forEach(widget => widget.dispose());
  return found;
}

/**
 * Show `content` in a new closable main-area tab (`id`, `icon`) that
 * `tracker` keeps, so that the layout restorer brings it back.
 */
export function addFormTab<T extends Widget>(
  shell: JupyterFrontEnd.IShell,
  tracker: WidgetTracker<MainAreaWidget<T>>,
  content: T,
  options: { id: string; icon: LabIcon }
): MainAreaWidget<T> {
  const widget = new MainAreaWidget({ content });
  widget.id = options.id;
  widget.title.icon = options.icon;
  widget.title.closable = true;
  void tracker.add(widget);
  shell.add(widget, 'main');
  shell.activateById(widget.id);
  return widget;
}

/**
 * Follows the document last active in the main area. A form in a main-area
 * tab asks for "the current file": the tab itself is current then, so the
 * file meant is the document that was current before it.
 */
export function lastDocument(
  shell: JupyterFrontEnd.IShell
): () => DocumentWidget | null {
  let last: DocumentWidget | null = null;
  const note = (widget: Widget | null) => {
    if (widget instanceof DocumentWidget) {
      last = widget;
    }
  };
  note(shell.currentWidget);
  shell.currentChanged?.connect((_, args) => note(args.newValue));
  return () => {
    const current = shell.currentWidget;
    if (current instanceof DocumentWidget) {
      return current;
    }
    return last && !last.isDisposed && last.isAttached ? last : null;
  };
}
