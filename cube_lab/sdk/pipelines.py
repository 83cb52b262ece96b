"""``cl.pipelines``: start runs without blocking; ``Run`` handles to watch, wait and stop."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t
from . import current
from .handle import POLL_S, Handle, Json, WaitTimeout

__all__ = ["POLL_S", "Run", "WaitTimeout", "get", "run", "runs"]

NODE_ACTIVE = ("pending", "queued", "running")
LOG_LINES = 10


class Run(Handle):
    """A pipeline run: ``.status``, ``.nodes``, ``.refresh()``, ``.wait()``, ``.logs(node)``,
    ``.outputs(node)``, ``.stop()``. The state is what the last refresh saw (``.data``, the
    REST JSON)."""

    kind = "run"

    def __init__(self, data: Json) -> None:
        super().__init__(data)
        self._tail: str | None = None

    @property
    def nodes(self) -> list[Json]:
        """Per node: id, label, kind, status, attempts, exit_code, duration_s, error..."""
        return list(self.data.get("nodes") or [])

    def link_params(self) -> dict[str, str | int | None]:
        return {"id": self.id, "path": self.data.get("pipeline_path")}

    def refresh(self) -> Run:
        self.data = current().get_run(self.id)
        return self

    def view_state(self) -> Json:
        state = super().view_state()
        state["title"] = _t(
            "Pipeline run {pipeline} ({id})", pipeline=self.data.get("pipeline"), id=self.id
        )
        nodes = self.nodes
        ended = sum(1 for n in nodes if n.get("status") not in NODE_ACTIVE)
        state["progress"] = (ended, len(nodes), "nodes")
        state["columns"] = ["node", "status", "duration", "attempts"]
        state["rows"] = [
            [
                n.get("label"),
                n.get("status"),
                None if n.get("duration_s") is None else round(float(n["duration_s"]), 1),
                n.get("attempts"),
            ]
            for n in nodes
        ]
        failed = [n for n in nodes if n.get("status") == "failed"]
        if failed and self.done:  # the failing node's last lines say why
            label = str(failed[0].get("label"))
            if self._tail is None:
                self._tail = "\n".join(self.logs(label).rstrip().splitlines()[-LOG_LINES:])
            state["log"] = (label, self._tail)
        return state

    def _node_id(self, node: str) -> str:
        if not self.nodes:
            self.refresh()
        for n in self.nodes:
            if node in (n["id"], n["label"]):
                return str(n["id"])
        raise InvalidInput(
            _t("run {run} has no node {node!r}", run=self.id, node=node),
            _t("Nodes: {nodes}", nodes=", ".join(str(n["label"]) for n in self.nodes)),
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

    def outputs(self, node: str) -> list[Path]:
        """The files (or folders) ``node`` (its id or label) declared as outputs, as this run
        saved them, in declared order: paths to read here (over REST they are downloaded
        once into ``$XDG_CACHE_HOME/cube-lab/runs``). Empty while the node has not ended
        well; a reused (cached) node's are the earlier run's."""
        return current().node_outputs(self.id, self._node_id(node))

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
        raise InvalidInput(
            _t("params must be a dict of name -> value"),
            _t("got {kind}", kind=type(params).__name__),
        )
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
