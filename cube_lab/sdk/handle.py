"""What every SDK handle shares: REST JSON state, ``refresh``, ``wait``, ``url``, the live view.

A handle (``Run``, ``Job``, ``Experiment``, ``Deployment``) holds what its last refresh saw
(``.data``, the REST API's JSON for it). ``wait()`` polls until the handle leaves its active
statuses; in a notebook the handle displays as a live ipywidgets view (``views.py``) that
refreshes in a thread of its own until the handle is done, and as its text elsewhere.
"""

from __future__ import annotations

import abc
import sys
import time
from typing import Any, ClassVar

from .. import lab_links
from ..errors import CubeError
from ..locale.messages import _t
from .view_locale import view_locale

Json = dict[str, Any]
POLL_S = 0.25


class WaitTimeout(CubeError):
    """``wait(timeout=...)`` ran out of time; the work goes on."""

    status = 408


class Handle(abc.ABC):
    """The common part of the handles; subclasses name their active statuses and refresh."""

    ACTIVE: ClassVar[tuple[str, ...]] = ("queued", "running")
    kind: ClassVar[str] = "handle"

    def __init__(self, data: Json) -> None:
        self.data = data

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def status(self) -> str:
        return str(self.data["status"])

    @property
    def done(self) -> bool:
        """True once the status is no longer an active one (a later refresh cannot undo it)."""
        return self.status not in self.ACTIVE

    @property
    def live(self) -> bool:
        """Whether its live view keeps refreshing (while the work goes on)."""
        return not self.done

    @property
    def error(self) -> str | None:
        return self.data.get("error")

    @property
    def url(self) -> str | None:
        """The link that opens this handle's view in JupyterLab (``lab_links``); None where
        this process does not know the lab (a script outside a lab server)."""
        return lab_links.link(self.kind, **self.link_params())

    def link_params(self) -> dict[str, str | int | None]:
        """What the view's link names this handle by (see ``cube_lab.lab_links``)."""
        return {"id": self.id}

    @abc.abstractmethod
    def refresh(self) -> Any:
        """Read the state again (``.data``); self."""

    def wait(self, timeout: float | None = None) -> Any:
        """Block until done; self. A ``timeout`` (seconds) that runs out raises
        ``WaitTimeout``; an interrupt (Ctrl-C, the stop button) stops the waiting (the
        ``KeyboardInterrupt`` goes on up), not the work: ``wait()`` again or ``stop()`` it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        self.refresh()
        try:
            while not self.done:
                if deadline is not None and time.monotonic() >= deadline:
                    raise WaitTimeout(
                        _t(
                            "{kind} {id} is still {status} after {timeout:g}s",
                            kind=self.kind,
                            id=self.id,
                            status=self.status,
                            timeout=timeout,
                        ),
                        _t("It goes on: wait() again, or stop() it."),
                    )
                left = (
                    POLL_S
                    if deadline is None
                    else max(0.0, min(POLL_S, deadline - time.monotonic()))
                )
                time.sleep(left)
                self.refresh()
        except KeyboardInterrupt:  # the cell (or script) stops here; the work does not
            stopped = _t(
                "Stopped waiting; {kind} {id} goes on ({status}): wait() again, or stop() it.",
                kind=self.kind,
                id=self.id,
                status=self.status,
            )
            print(stopped.translated(view_locale()), file=sys.stderr)
            raise
        return self

    def view_state(self) -> Json:
        """What the live view shows (``views.LiveView``): title, status, progress, table."""
        return {
            "title": f"{self.kind} {self.id}",
            "status": self.status,
            "error": self.error,
            "url": self.url,
        }

    def failure_log(self) -> tuple[str, str] | None:
        """What failed and its last log lines (a failed ``--wait`` cell prints them)."""
        return self.view_state().get("log")

    def view_parts(self) -> list[Any]:
        """The live view's parts that only this kind of handle has (``view_parts.py``)."""
        return []

    def _ipython_display_(self) -> None:
        from . import views

        views.show(self)
