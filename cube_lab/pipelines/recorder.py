"""Persists run and node state changes from a background thread.

The runner's critical path (a node ends, the next starts) never waits for the
database: changes are queued, coalesced per node, and written in one transaction
per batch. ``close()`` drains the queue, so a finished run is fully on disk.

The thread also opens the store, and may write the run record first (``setup``):
the CLI starts nodes while this thread imports SQLAlchemy and migrates the store.
Changes queued before then are written once the record exists.

The process groups a node runs in (``process_groups``) go the same way: a node that starts
and ends within one batch window costs the database nothing; a longer one is one row
inserted with the batch that says it runs, and deleted with the one that says it ended.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .runner import NodeState, now

if TYPE_CHECKING:
    from ..processes import Group
    from ..store import Store

_STOP = object()
BATCH_WINDOW_S = 0.1


class StoreRecorder:
    def __init__(
        self,
        open_store: Callable[[], Store],
        run_id: str,
        setup: Callable[[], object] | None = None,
    ) -> None:
        self.run_id = run_id
        self.error: BaseException | None = None  # why nothing could be recorded
        self._open_store = open_store
        self._setup = setup
        self._on_error: Callable[[BaseException], None] | None = None
        self._queue: queue.Queue[Any] = queue.Queue()
        self._recorded: set[str] = set()  # nodes with process-group rows in the store
        self._thread = threading.Thread(target=self._loop, name=f"recorder-{run_id}", daemon=True)

    def start(self, on_error: Callable[[BaseException], None] | None = None) -> None:
        """Start the thread; ``on_error`` is called from it if the store cannot be opened or
        the run record cannot be written."""
        self._on_error = on_error
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

    def groups_changed(self, node_id: str, groups: list[tuple[str, Group]]) -> None:
        self._queue.put(("groups", node_id, {"groups": groups}))

    def close(self) -> None:
        if self._thread.ident is None:  # never started: still write what was queued
            self._thread.start()
        self._queue.put(_STOP)
        self._thread.join()

    def _loop(self) -> None:
        try:
            self.store = self._open_store()
            if self._setup:
                self._setup()
        except Exception as exc:
            self.error = exc
            if self._on_error:
                self._on_error(exc)
            while self._queue.get() is not _STOP:  # nothing can be written: drop changes
                pass
            return
        while True:
            batch = [self._queue.get()]
            # Gather what else arrives within the window: one transaction per window, not
            # per change (a chain of short nodes would otherwise write every few ms, and
            # this thread's ORM work takes the GIL from the runner starting nodes).
            deadline = time.monotonic() + BATCH_WINDOW_S
            while batch[-1] is not _STOP:
                try:
                    batch.append(self._queue.get(timeout=max(0.0, deadline - time.monotonic())))
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
        from sqlalchemy import delete, update

        from ..store.models import NodeRun, PipelineRun, ProcessGroup

        with self.store.write() as s:
            for (what, key), fields in changes.items():
                if what == "groups":
                    if key in self._recorded:
                        s.execute(
                            delete(ProcessGroup).where(
                                ProcessGroup.owner_kind == "pipeline",
                                ProcessGroup.owner_id == self.run_id,
                                ProcessGroup.part == key,
                            )
                        )
                        self._recorded.discard(key)
                    for role, group in fields["groups"]:
                        s.add(
                            ProcessGroup(
                                owner_kind="pipeline",
                                owner_id=self.run_id,
                                part=key,
                                role=role,
                                **group.as_dict(),
                            )
                        )
                        self._recorded.add(key)
                elif what == "node":
                    where = (NodeRun.run_id == self.run_id) & (NodeRun.node_id == key)
                    s.execute(update(NodeRun).where(where).values(**fields))
                else:
                    s.execute(update(PipelineRun).where(PipelineRun.id == key).values(**fields))
