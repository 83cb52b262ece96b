"""Pipelines as a service: validate, run (in the server or the CLI), watch, cancel, recover.

A run is a record (``pipeline_runs`` + ``node_runs``) and a folder under
``<data_dir>/runs/<run id>/`` holding each node's log, published values, saved
outputs and executed notebooks. The runner runs in the process that started it
(the server, or ``cube-lab pipeline run``); its pid is recorded so a run whose
process died is marked ``interrupted`` the next time a server starts, and the process
groups its nodes ran in (``process_groups``) are ended then, if they are still ours.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from .. import containment
from ..config import Settings
from ..errors import Conflict, InvalidInput, NotFound
from ..identity import Caller
from ..locale.messages import _t
from ..logtail import LOG_CHUNK, LogChunk, read_chunk
from ..processes import end_recorded, orphaned, pid_alive
from ..projects import ProjectService, check_page_limit
from ..store import Store
from ..store.models import NodeRun, PipelineRun
from . import validation
from .launch import (
    Launch,
    build_runner,
    execute,
    node_context,
    open_pipeline,
    plan_launch,
    run_foreground,
)
from .model import Pipeline
from .nodekinds import Problem, kind_name
from .recorder import StoreRecorder
from .runner import OK, LocalRunner, NodeState, Prior, SavedOutput, node_folder
from .views import ResultFile, RunView

ACTIVE = ("queued", "running")
# how a run's pipeline path is shown: relative to a folder, or by a function of the path
Display = Path | Callable[[str], str] | None
RESULT_KINDS = {
    ".png": "image",
    ".jpg": "image",
    ".jpeg": "image",
    ".gif": "image",
    ".svg": "image",
    ".csv": "table",
    ".tsv": "table",
    ".json": "json",
    ".ipynb": "notebook",
    ".txt": "text",
    ".log": "text",
    ".md": "text",
}


class PipelineService:
    def __init__(
        self, store: Store, projects: ProjectService, settings: Settings, catalog: Any
    ) -> None:
        self.store = store
        self.projects = projects
        self.settings = settings
        self.catalog = catalog
        self.runs_root = settings.runs_dir
        self.runs_root.mkdir(parents=True, exist_ok=True)
        self._runners: dict[str, LocalRunner] = {}
        self._tasks: dict[str, asyncio.Task[str]] = {}

    # -- reading and checking ---------------------------------------------------------------

    def check(
        self, path: Path, root: Path, caller: Caller | None = None
    ) -> tuple[Pipeline, list[Problem]]:
        """The pipeline and its problems; with ``caller`` nodes that name stored objects
        (a knowledge base) are checked against what the caller sees."""
        pipeline = open_pipeline(path, root)
        ctx = node_context(pipeline, root, self.catalog, caller, self)
        return pipeline, validation.check(pipeline, ctx)

    # -- starting runs ------------------------------------------------------------------------

    def prepare(
        self,
        caller: Caller,
        path: Path,
        root: Path,
        *,
        project: str | None = None,
        params: dict[str, Any] | None = None,
        only: str | None = None,
        from_node: str | None = None,
        cache: bool = False,
        parallelism: int | None = None,
        trigger: str = "manual",
        schedule_id: int | None = None,
        logical_date: str | None = None,
    ) -> tuple[LocalRunner, StoreRecorder]:
        """Validate, write the run record, and build (not start) its runner."""
        launch = plan_launch(
            path,
            root,
            self.catalog,
            params=params,
            only=only,
            from_node=from_node,
            cache=cache,
            parallelism=parallelism,
            logical_date=logical_date,
            caller=caller,
            services=self,
        )
        priors, project_id = self.record(caller, launch, project, trigger, schedule_id)
        recorder = StoreRecorder(lambda: self.store, launch.run_id)
        cache_lookup = (lambda key: self._cached(project_id, key)) if cache else None
        runner = build_runner(
            launch, self.settings, caller, self.catalog, recorder, priors, cache_lookup
        )
        return runner, recorder

    def record(
        self,
        caller: Caller,
        launch: Launch,
        project: str | None,
        trigger: str,
        schedule_id: int | None = None,
    ) -> tuple[dict[str, Prior], int]:
        """Write the run record (status queued, every node pending) and find the outputs a
        partial run reuses. Returns those and the run's project id."""
        pipeline = launch.pipeline
        self.projects.ensure_personal(caller)
        with self.store.write() as s:
            project_row = self.projects.resolve(s, caller, project)
            needed = pipeline.upstream_closure(launch.selected)
            priors = {
                nid: self._prior(s, project_row.id, str(launch.path), nid, pipeline)
                for nid in needed
            }
            run = PipelineRun(
                id=launch.run_id,
                project_id=project_row.id,
                owner=caller.username,
                pipeline_path=str(launch.path),
                pipeline_name=pipeline.name,
                status="queued",
                trigger=trigger,
                schedule_id=schedule_id,
                options=launch.options,
                run_dir=str(self.runs_root / launch.run_id),
                runner_pid=os.getpid(),
                runner_host=socket.gethostname(),
            )
            run.nodes = [
                NodeRun(
                    node_id=n.id,
                    position=i,
                    label=n.label,
                    kind=kind_name(n.op),
                    status="pending",
                    attempts=0,
                    values={},
                    outputs={},
                )
                for i, n in enumerate(pipeline.nodes)
            ]
            s.add(run)
            return priors, project_row.id

    def _prior(
        self, s: Session, project_id: int, path: str, node_id: str, pipeline: Pipeline
    ) -> Prior:
        row = s.execute(
            select(NodeRun, PipelineRun.id)
            .join(PipelineRun, PipelineRun.id == NodeRun.run_id)
            .where(
                PipelineRun.project_id == project_id,
                PipelineRun.pipeline_path == path,
                NodeRun.node_id == node_id,
                NodeRun.status.in_(sorted(OK)),
            )
            .order_by(NodeRun.finished_at.desc())
            .limit(1)
        ).first()
        if row is None:
            label = pipeline.node(node_id).label
            raise Conflict(
                _t("node {label!r} has no successful run to reuse", label=label),
                _t(
                    "Run the whole pipeline once first (a partial run reuses the outputs "
                    "of the latest successful run of its upstream nodes)."
                ),
            )
        return self._to_prior(row[0], row[1])

    def _cached(self, project_id: int, key: str) -> Prior | None:
        with self.store.read() as s:
            row = s.execute(
                select(NodeRun, PipelineRun.id)
                .join(PipelineRun, PipelineRun.id == NodeRun.run_id)
                .where(
                    PipelineRun.project_id == project_id,
                    NodeRun.cache_key == key,
                    NodeRun.status.in_(("succeeded", "cached")),
                )
                .order_by(NodeRun.finished_at.desc())
                .limit(1)
            ).first()
            return self._to_prior(row[0], row[1]) if row else None

    @staticmethod
    def _to_prior(node: NodeRun, run_id: str) -> Prior:
        files = (node.outputs or {}).get("files", [])
        return Prior(
            node.reused_from or run_id,
            dict(node.values or {}),
            [SavedOutput(f["path"], f["saved"]) for f in files],
            node.cache_key,
        )

    async def execute(self, runner: LocalRunner, recorder: StoreRecorder) -> str:
        """Run to the end; the record is complete on disk when this returns."""
        run_id = runner.plan.run_id
        self._runners[run_id] = runner
        try:
            return await execute(runner, recorder)
        finally:
            self._runners.pop(run_id, None)

    def start(self, runner: LocalRunner, recorder: StoreRecorder) -> str:
        """Run in the background of the current event loop (the server's)."""
        task = asyncio.get_running_loop().create_task(self.execute(runner, recorder))
        run_id = runner.plan.run_id
        self._tasks[run_id] = task
        task.add_done_callback(lambda _t: self._tasks.pop(run_id, None))
        return run_id

    def run_foreground(
        self,
        runner: LocalRunner,
        recorder: StoreRecorder,
        listener: Callable[[NodeState], None] | None = None,
    ) -> str:
        """Run in this process (the CLI); Ctrl-C or SIGTERM cancel the run cleanly."""
        return run_foreground(runner, recorder, listener, self.execute)

    async def wait(self, run_id: str) -> str | None:
        task = self._tasks.get(run_id)
        return await task if task else None

    # -- reading runs ---------------------------------------------------------------------------

    def list_runs(
        self,
        caller: Caller,
        *,
        path: Path | None = None,
        project: str | None = None,
        root: Display = None,
        limit: int = 50,
    ) -> list[RunView]:
        check_page_limit(limit)
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            query = (
                self.projects.visible(s, caller, PipelineRun, project)
                .options(selectinload(PipelineRun.nodes))
                .order_by(PipelineRun.created_at.desc())
                .limit(limit)
            )
            if path is not None:
                query = query.where(PipelineRun.pipeline_path == str(path.resolve()))
            return [
                RunView.of(run, name, _display(run.pipeline_path, root))
                for run, name in s.execute(query)
            ]

    def get_run(self, caller: Caller, run_id: str, root: Display = None) -> RunView:
        with self.store.read() as s:
            run, project = self._run(s, caller, run_id)
            return RunView.of(run, project, _display(run.pipeline_path, root), with_nodes=True)

    def _run(self, s: Session, caller: Caller, run_id: str) -> tuple[PipelineRun, str]:
        self.projects.ensure_personal(caller)
        row = s.execute(
            self.projects.visible(s, caller, PipelineRun)
            .where(PipelineRun.id == run_id)
            .options(selectinload(PipelineRun.nodes))
        ).first()
        if row is None:
            raise NotFound(
                _t("run {run_id!r} not found", run_id=run_id),
                _t("GET /cube/api/v1/pipelines/runs lists the runs you can see."),
            )
        return row[0], row[1]

    def _node(
        self, s: Session, caller: Caller, run_id: str, node_id: str
    ) -> tuple[PipelineRun, NodeRun]:
        run, _ = self._run(s, caller, run_id)
        node = next((n for n in run.nodes if n.node_id == node_id), None)
        if node is None:
            raise NotFound(
                _t("run {run_id!r} has no node {node_id!r}", run_id=run_id, node_id=node_id)
            )
        return run, node

    def tail_log(
        self, caller: Caller, run_id: str, node_id: str, offset: int = 0, limit: int = LOG_CHUNK
    ) -> LogChunk:
        """The log from ``offset``: call again with the returned offset to follow it live."""
        if offset < 0:
            raise InvalidInput(_t("offset must be 0 or more"))
        with self.store.read() as s:
            run, node = self._node(s, caller, run_id, node_id)
            done = node.status not in ("pending", "running")
            path = Path(run.run_dir) / "nodes" / node_folder(node_id) / "log.txt"
        return read_chunk(path, offset, limit, done)

    def results(self, caller: Caller, run_id: str, node_id: str) -> list[ResultFile]:
        """Files worth showing for a node: saved outputs, the executed notebook, values."""
        with self.store.read() as s:
            run, node = self._node(s, caller, run_id, node_id)
            saved = [f["saved"] for f in (node.outputs or {}).get("files", [])]
            node_dir = Path(run.run_dir) / "nodes" / node_folder(node_id)
        # Each file is read inside the run folder it was saved in (a reused output lives in
        # the earlier run's): a link leading out of it is not listed, so never served.
        files = [(self.runs_root / rel, self._run_folder(rel)) for rel in saved]
        if node_dir.is_dir():
            files += [
                (p, node_dir)
                for p in sorted(node_dir.iterdir())
                if p.name != "log.txt" and not p.is_dir()
            ]
        out = []
        for path, boundary in files:
            for _, file in containment.walk(path, boundary):
                out.append(
                    ResultFile(
                        file.name,
                        file.relative_to(self.runs_root).as_posix(),
                        _result_kind(file),
                        file.stat().st_size,
                    )
                )
        return out

    def _run_folder(self, rel: str) -> Path:
        """The run folder a result path (relative to the runs folder) lies in."""
        return self.runs_root / (rel.split("/", 1)[0] or ".")

    def result_path(self, caller: Caller, run_id: str, node_id: str, rel: str) -> Path:
        allowed = {r.path for r in self.results(caller, run_id, node_id)}
        if rel not in allowed:
            raise NotFound(_t("no result {rel!r} for node {node_id!r}", rel=rel, node_id=node_id))
        return self.runs_root / rel

    def read_result(self, caller: Caller, run_id: str, node_id: str, rel: str) -> bytes:
        """A result's bytes, read only from inside its run folder (symlinks included)."""
        path = self.result_path(caller, run_id, node_id, rel)
        try:
            return containment.read_inside(path, self._run_folder(rel))
        except (containment.PathRefused, FileNotFoundError):
            raise NotFound(
                _t("no result {rel!r} for node {node_id!r}", rel=rel, node_id=node_id)
            ) from None

    # -- stopping and recovering ------------------------------------------------------------------

    def cancel(self, caller: Caller, run_id: str) -> RunView:
        with self.store.read() as s:
            run, _ = self._run(s, caller, run_id)
            status, pid, host = run.status, run.runner_pid, run.runner_host
        if status not in ACTIVE:
            raise Conflict(
                _t("run {run_id} already ended ({status})", run_id=run_id, status=status)
            )
        runner = self._runners.get(run_id)
        if runner is not None:
            runner.cancel()
        elif host == socket.gethostname() and pid_alive(pid) and pid != os.getpid():
            os.kill(pid, signal.SIGTERM)  # the CLI that runs it cancels on SIGTERM
        else:
            self._mark_interrupted([run_id], "its runner is gone; marked when cancelled")
        return self.get_run(caller, run_id)

    def recover(self) -> list[str]:
        """Mark runs whose runner process died (a crash, a kill) as interrupted, and end
        the node processes they left running."""
        with self.store.read() as s:
            runs = s.execute(
                select(PipelineRun.id, PipelineRun.runner_pid, PipelineRun.runner_host).where(
                    PipelineRun.status.in_(ACTIVE)
                )
            ).all()
        dead = orphaned(runs, self._runners)
        if dead:
            self._mark_interrupted(dead, "the process running it stopped before it finished")
        return dead

    def _mark_interrupted(self, run_ids: list[str], why: str) -> None:
        stamp = datetime.now(UTC)
        with self.store.write() as s:
            for run in s.scalars(
                select(PipelineRun)
                .where(PipelineRun.id.in_(run_ids))
                .options(selectinload(PipelineRun.nodes))
            ):
                run.status, run.error, run.finished_at = "interrupted", why, stamp
                for node in run.nodes:
                    if node.status in ("pending", "running"):
                        node.status, node.finished_at = "interrupted", stamp
        end_recorded(self.store, "pipeline", run_ids)  # what its nodes left running


def _display(path: str, root: Display) -> str:
    """A run's pipeline path as the client names it: relative to ``root``, or as the
    function given says (the REST handlers name shared project folders through links)."""
    if callable(root):
        return root(path)
    if root is not None and Path(path).is_relative_to(root):
        return Path(path).relative_to(root).as_posix()
    return path


def _result_kind(path: Path) -> str:
    kind = RESULT_KINDS.get(path.suffix.lower(), "file")
    if kind == "json" and path.stat().st_size < 2_000_000:
        with contextlib.suppress(ValueError, OSError):
            doc = json.loads(path.read_text())
            if isinstance(doc, dict) and "series" in doc:
                return "echarts"  # an ECharts option object
    return kind
