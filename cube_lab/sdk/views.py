"""Live ipywidgets views of SDK handles: status, a progress bar, a small table.

``LiveView(handle)`` builds the widgets from ``handle.view_state()`` and, once started,
refreshes the handle in a thread of its own until it is done (then stops): the cell that
displayed it returns at once and the user goes on running other cells. Outside a kernel (a
terminal IPython, a script) a handle shows as its text; ``jupyter nbconvert --execute`` keeps
that text beside the widget.

Every string a user sees is in ``TEXT`` (English; a translation can replace the values).
"""

from __future__ import annotations

import html
import threading
from typing import Any, Protocol

from ..errors import CubeError
from ..locale.messages import _t, localize
from .charts import charts_html
from .view_locale import view_locale

REFRESH_S = 1.0
MAX_ROWS = 20

# The words the views show; translated where they are shown (``tr``), to JupyterLab's
# language (view_locale.py). Texts with fields are ``_t(...)`` where they are filled in.
TEXT = {
    "status": _t("Status"),
    "progress": _t("Progress"),
    "nodes": _t("nodes"),
    "steps": _t("steps"),
    "trials": _t("trials"),
    "error": _t("Error"),
    "finished": _t("Finished"),
    "node": _t("Node"),
    "duration": _t("Duration (s)"),
    "attempts": _t("Attempts"),
    "metric": _t("Metric"),
    "step": _t("Step"),
    "last": _t("Last value"),
    "trial": _t("Trial"),
    "final": _t("Result"),
    "parameters": _t("Parameters"),
    "version": _t("Version"),
    "weight": _t("Traffic"),
    "endpoint": _t("Endpoint"),
    "open": _t("Open in JupyterLab"),
    "rank": _t("Rank"),
    "all_ranks": _t("All ranks"),
    "model_name": _t("Model"),
    "register": _t("Register"),
    "send": _t("Send"),
    "test_rows": _t("Rows as JSON, e.g. [[5.1, 3.5, 1.4, 0.2]], or an OIP v2 request"),
    "test_llm": _t("A message to the model"),
    "not_json": _t("The test input is not JSON"),
    "person": _t("Person"),
    "assigned": _t("Assigned"),
    "submitted": _t("Submitted"),
    "accepted": _t("Accepted"),
    "rejected": _t("Rejected"),
    "label": _t("Label"),
    "items": _t("Items"),
    "sample": _t("Sample"),
    "tasks": _t("tasks"),
    "new": _t("New"),
    "files": _t("files"),
    "file": _t("File"),
    "chunks": _t("Chunks"),
}

_STYLE = {
    "succeeded": "success",
    "done": "success",
    "running": "info",
    "failed": "danger",
    "interrupted": "danger",
    "cancelled": "warning",
    "stopped": "warning",
}


def tr(value: Any) -> Any:
    """``value`` (a ``_t`` text, or lists / dicts of them) in the views' language."""
    return localize(value, view_locale())


class Viewable(Protocol):
    """What a live view needs of what it shows: the SDK's handles, a labeling project."""

    @property
    def id(self) -> str: ...
    @property
    def done(self) -> bool: ...
    @property
    def live(self) -> bool: ...
    def refresh(self) -> Any: ...
    def view_state(self) -> dict[str, Any]: ...
    def view_parts(self) -> list[Any]: ...


def in_kernel() -> bool:
    """Whether this process is a Jupyter kernel (widgets can render somewhere)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def table_html(columns: list[str], rows: list[list[Any]]) -> str:
    """A small HTML table (the first ``MAX_ROWS`` rows, then how many more)."""
    if not rows:
        return ""
    esc = html.escape
    head = "".join(f"<th style='text-align:left;padding:0 8px'>{esc(c)}</th>" for c in columns)
    body = "".join(
        "<tr>"
        + "".join(f"<td style='padding:0 8px'>{esc('' if v is None else str(v))}</td>" for v in row)
        + "</tr>"
        for row in rows[:MAX_ROWS]
    )
    more = (
        f"<div>{esc(tr(_t('… and {count} more', count=len(rows) - MAX_ROWS)))}</div>"
        if len(rows) > MAX_ROWS
        else ""
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


def _fill(widget: Any, value: str) -> None:
    """Show ``value`` in an HTML widget; an empty one takes no room (an empty HTML widget
    keeps a line's height, which left gaps in views without charts, errors or logs)."""
    widget.value = value
    widget.layout.display = None if value else "none"


def link_html(url: str | None) -> str:
    """The link to the handle's view in JupyterLab (src/links.ts opens it in place)."""
    if not url:
        return ""
    return (
        f" <a href='{html.escape(url, quote=True)}' "
        f"style='margin-left:8px;color:var(--jp-content-link-color, #1976d2)'>"
        f"{html.escape(tr(TEXT['open']))}</a>"
    )


class LiveView:
    """The widgets of one handle; ``start()`` refreshes them in the background until done."""

    def __init__(self, handle: Viewable, refresh_s: float = REFRESH_S) -> None:
        import ipywidgets as w

        self.handle = handle
        self.refresh_s = refresh_s
        self.title = w.HTML()
        self.status = w.HTML()
        self.bar = w.FloatProgress(min=0.0, max=1.0, value=0.0, description=tr(TEXT["progress"]))
        self.count = w.Label()
        self.table = w.HTML()
        self.charts = w.HTML()
        self.problem = w.HTML()
        self.log = w.HTML()
        self.footer = w.Label()
        self.progress = w.HBox([self.bar, self.count])
        self.parts = handle.view_parts()  # view_parts.py: what only this kind of handle shows
        self.widget = w.VBox(
            [
                self.title,
                self.status,
                self.progress,
                self.charts,
                self.table,
                *(part.widget for part in self.parts),
                self.problem,
                self.log,
                self.footer,
            ]
        )
        self.thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.update()

    def update(self) -> None:
        """Show what the handle's last refresh saw."""
        state = self.handle.view_state()
        status = str(state["status"])
        self.title.value = f"<b>{html.escape(str(tr(state['title'])))}</b>" + link_html(
            state.get("url")
        )
        self.status.value = f"{html.escape(tr(TEXT['status']))}: <b>{html.escape(status)}</b>"
        progress = state.get("progress")
        if progress is None:
            self.progress.layout.display = "none"
        else:
            done, total, unit = progress
            self.progress.layout.display = None
            if total:
                self.bar.max = float(total)
                self.bar.value = float(min(done, total))
                self.count.value = tr(
                    _t("{done} of {total} {unit}", done=done, total=total, unit=TEXT[unit])
                )
            else:  # no total known: the bar fills when the handle ends
                self.bar.max = 1.0
                self.bar.value = 1.0 if self.handle.done else 0.0
                self.count.value = tr(_t("{done} {unit}", done=done, unit=TEXT[unit]))
        self.bar.bar_style = _STYLE.get(status, "")
        _fill(self.charts, charts_html(state.get("charts") or {}))
        _fill(
            self.table,
            table_html([tr(TEXT[c]) for c in state.get("columns", [])], state.get("rows", [])),
        )
        error = state.get("error")
        _fill(
            self.problem,
            f"<span style='color:var(--jp-error-color1, #c00)'>"
            f"{html.escape(tr(TEXT['error']))}: {html.escape(str(error))}</span>"
            if error
            else "",
        )
        log = state.get("log")
        _fill(
            self.log,
            f"<div>{html.escape(tr(_t('Log of {name} (last lines)', name=log[0])))}</div>"
            f"<pre style='margin:0'>{html.escape(log[1])}</pre>"
            if log
            else "",
        )
        for part in self.parts:
            part.update()
        self.footer.value = (
            tr(_t("Refreshing every {seconds:g} s", seconds=self.refresh_s))
            if self.handle.live
            else tr(TEXT["finished"])
        )

    def start(self) -> LiveView:
        """Refresh in a daemon thread while the handle is live (or until ``stop()``)."""
        if self.thread is None and self.handle.live:
            self.thread = threading.Thread(
                target=self._loop, name=f"cube-lab view {self.handle.id}", daemon=True
            )
            self.thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.wait(self.refresh_s):
            try:
                self.handle.refresh()
            except CubeError as exc:  # the server went away: say so, try again later
                self.footer.value = tr(_t("Cannot refresh: {error}", error=exc.error))
                continue
            # taken before the update: an end that comes during it (a stop from another
            # thread) gets one more refresh and update, so the view never ends on a stale one
            live = self.handle.live
            self.update()
            if not live:
                return


def show(handle: Viewable) -> Any:
    """Display ``handle``: a live view in a kernel, its text elsewhere. Returns the
    ``DisplayHandle`` of what was shown in IPython (``settle`` updates it), else None."""
    try:
        from IPython.display import display
    except ImportError:
        print(repr(handle))
        return None
    view: LiveView | None = None
    if in_kernel():
        try:
            view = LiveView(handle)
        except ImportError:  # no ipywidgets: the text still says it all
            view = None
    if view is None:
        from IPython import get_ipython

        if get_ipython() is None:  # a plain script: display() would print the dict
            print(repr(handle))
            return None
        return display({"text/plain": repr(handle)}, raw=True, display_id=True)
    shown = display(_bundle(view), raw=True, display_id=True)
    handle._live_view = view  # type: ignore[attr-defined]  (the last one shown, for tests)
    view.start()
    return shown


def _bundle(view: LiveView) -> dict[str, Any]:
    bundle: dict[str, Any] = view.widget._repr_mimebundle_()
    bundle["text/plain"] = repr(view.handle)
    return bundle


def settle(handle: Viewable, shown: Any) -> None:
    """After ``handle.wait()``: the view shows the end now (not a refresh later), and the text
    kept beside the widget (what ``nbconvert`` / papermill save) is the final one."""
    view: LiveView | None = getattr(handle, "_live_view", None)
    if view is not None:
        view.stop()
        view.update()
    if shown is None:
        return
    if view is not None:
        shown.update(_bundle(view), raw=True)
    else:
        shown.update({"text/plain": repr(handle)}, raw=True)
