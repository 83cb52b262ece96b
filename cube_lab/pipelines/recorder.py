"""Persists run and node state changes from a background thread.

The runner's critical path (a node ends, the next starts) never waits for the
database: changes are queued, coalesced per node, and written in one transaction
per batch. ``close()`` drains the queue, so a finished run is fully on disk.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

from ..store import Store
from ..store.models import NodeRun, PipelineRun
from .runner import NodeState, now

_STOP = object()


class StoreRecorder:
    def __init__(self, store: Store, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name=f"recorder-{run_id}", daemon=True)
        self._thread.start()

    def node_changed(self, state: NodeState) -> None:
        self._queue.put(
            (
                "node",
                state.node.id,
                {
                    "status": state.status,
                    "attempts": state.attempts,
                    "exit_code": state.exit_code,
                    "started_at": state.started_at,
                    "finished_at": state.finished_at,
                    "values": dict(state.values),
                    "error": state.error,
                    "cache_key": state.cache_key,
                    "reused_from": state.reused_from,
                    "outputs": {
                        "files": [{"path": o.path, "saved": o.saved} for o in state.outputs]
                    },
                },
            )
        )

    def run_changed(self, status: str, error: str | None = None) -> None:
        fields: dict[str, Any] = {"status": status, "error": error}
        if status == "running":
            fields["started_at"] = now()
        else:
            fields["finished_at"] = now()
        self._queue.put(("run", self.run_id, fields))

    def close(self) -> None:
        self._queue.put(_STOP)
        self._thread.join()

    def _loop(self) -> None:
        while True:
            batch = [self._queue.get()]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = any(item is _STOP for item in batch)
            latest: dict[tuple[str, str], dict[str, Any]] = {}
            for item in batch:
                if item is not _STOP:
                    latest.setdefault((item[0], item[1]), {}).update(item[2])
            if latest:
                self._write(latest)
            if stop:
                return

    def _write(self, changes: dict[tuple[str, str], dict[str, Any]]) -> None:
        with self.store.write() as s:
            for (what, key), fields in changes.items():
                row = (
                    s.get(NodeRun, (self.run_id, key))
                    if what == "node"
                    else s.get(PipelineRun, key)
                )
                if row is None:
                    continue
                for name, value in fields.items():
                    setattr(row, name, value)
