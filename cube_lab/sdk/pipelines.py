"""``cl.pipelines``: start runs without blocking; ``Run`` handles to watch, wait and stop."""

from __future__ import annotations

import os
import time
from typing import Any

from ..errors import CubeError, InvalidInput
from . import current

Json = dict[str, Any]
ACTIVE = ("queued", "running")
POLL_S = 0.25


class WaitTimeout(CubeError):
    """``Run.wait(timeout=...)`` ran out of time; the run goes on."""

    status = 408


class Run:
    """A pipeline run: ``.status``, ``.nodes``, ``.refresh()``, ``.wait()``, ``.logs(node)``,
    ``.stop()``. The state is what the last refresh saw (``.data``, the REST JSON)."""

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
        return self.status not in ACTIVE

    @property
    def error(self) -> str | None:
        return self.data.get("error")

    @property
    def nodes(self) -> list[Json]:
        """Per node: id, label, kind, status, attempts, exit_code, duration_s, error..."""
        return list(self.data.get("nodes") or [])

    @property
    def url(self) -> str | None:
        """The JupyterLab view of this run; None until the front end has a URL for it."""
        return None

    def refresh(self) -> Run:
        self.data = current().get_run(self.id)
        return self

    def wait(self, timeout: float | None = None) -> Run:
        """Block until the run ends; self. A ``timeout`` (seconds) that runs out raises
        ``WaitTimeout``; an interrupt (Ctrl-C, the stop button) stops the waiting, not the run."""
        deadline = None if timeout is None else time.monotonic() + timeout
        self.refresh()
        while not self.done:
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeout(
                    f"run {self.id} is still {self.status} after {timeout:g}s",
                    "It goes on: wait() again, or stop() it.",
                )
            left = (
                POLL_S if deadline is None else max(0.0, min(POLL_S, deadline - time.monotonic()))
            )
            time.sleep(left)
            self.refresh()
        return self

    def _node_id(self, node: str) -> str:
        if not self.nodes:
            self.refresh()
        for n in self.nodes:
            if node in (n["id"], n["label"]):
                return str(n["id"])
        raise InvalidInput(
            f"run {self.id} has no node {node!r}",
            "Nodes: " + ", ".join(str(n["label"]) for n in self.nodes),
        )

    def logs(self, node: str) -> str:
        """The log of ``node`` (its id or label) so far."""
        node_id = self._node_id(node)
        transport = current()
        text, offset = "", 0
        while True:
            chunk = transport.log_chunk(self.id, node_id, offset)
            text += chunk["text"]
            if chunk["done"] or chunk["offset"] == offset or chunk["offset"] >= chunk["size"]:
                return text
            offset = chunk["offset"]

    def stop(self) -> Run:
        """Cancel the run (its running nodes are killed); self."""
        self.data = current().cancel_run(self.id)
        return self

    def __repr__(self) -> str:
        counts = self.data.get("counts") or {}
        shown = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if v)
        return f"<Run {self.id} {self.data.get('pipeline')}: {self.status}" + (
            f" ({shown})>" if shown else ">"
        )


def run(
    path: str | os.PathLike[str],
    params: dict[str, Any] | None = None,
    only: str | None = None,
    cache: bool | None = None,
    project: str | None = None,
) -> Run:
    """Start a run of the ``.pipeline`` file ``path``; returns at once (``.wait()`` blocks).
    ``only`` runs one node (id or label); ``cache`` reuses unchanged nodes' outputs."""
    if params is not None and not isinstance(params, dict):
        raise InvalidInput("params must be a dict of name -> value", f"got {type(params).__name__}")
    body = {"params": params, "only": only, "cache": cache, "project": project}
    return Run(current().start_run(path, body))


def runs(
    path: str | os.PathLike[str] | None = None, project: str | None = None, limit: int = 50
) -> list[Run]:
    """Recent runs you can see, newest first (of one pipeline file when ``path`` is given)."""
    return [Run(r) for r in current().list_runs(path, project, limit)]


def get(run_id: str) -> Run:
    """The run ``run_id``."""
    return Run(current().get_run(run_id))
