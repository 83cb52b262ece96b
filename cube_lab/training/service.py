"""Training jobs as a service: submit, list, get, follow logs and metrics, stop, rerun, register.

A job is a record (``training_jobs``) and a folder ``<data_dir>/training/<job id>/``
holding ``log.txt`` (every rank, prefixed), ``ranks/`` (torchrun's per-rank files, when
it runs more than one), ``metrics.jsonl`` and ``output/`` (``$CUBE_OUTPUT_DIR``, for
checkpoints). The job runs in the process that submitted it (the server, or
``cube-lab train``); that pid is recorded so a job whose process died is marked
``interrupted`` at the next server start, and the process groups it ran (``process_groups``)
are ended then, if they are still ours.

A job with backend ``kubernetes`` is the same record; its objects are created on the
cluster (``cluster.py``), and the process that submitted it follows their status and
appends their pods' logs to ``log.txt``. Its state lives in the cluster, so a server that
starts again follows such jobs again instead of marking them interrupted.

Before anything is recorded, ``admission`` may refuse a job by raising a ``CubeError``;
by default it asks the hub's quota service when the server runs under the cube-lab hub
(``admission.py``), and the reservation it returns is released when the job ends.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from .. import accounts, containment, job_credentials
from ..alerts import events
from ..config import ENV_DATA_DIR, ENV_DB_URL, ENV_USER, Settings
from ..datasets import ENV_DATASET
from ..errors import Conflict, Forbidden, InvalidInput, NotFound
from ..identity import Caller
from ..k8s import ClusterConfig, k8s_name, pod_labels, require
from ..k8s.objects import object_refs
from ..labeling.dataset_service import datasets_root, find_by_path
from ..locale.messages import _t
from ..logtail import LOG_CHUNK, LogChunk, read_chunk
from ..processes import end_recorded, orphaned, pid_alive, record_groups
from ..projects import ProjectService, check_page_limit
from ..registry.validation import EmptyArtifact
from ..serialize import aware
from ..store import Store
from ..store.models import TrainingJob
from . import admission, gpus, kubernetes, metrics
from .cluster import POLL_S, TERMINAL, ClusterJob, delete_objects
from .local import ENV_OUTPUT_DIR, LocalJob, build_plan, check_local, check_packages, kill_marked
from .spec import JobSpec

ACTIVE = ("queued", "running")
MAX_LOG_PARSE = 16 * 1024 * 1024

AdmissionHook = Callable[[Caller, str, JobSpec, str], Any]
"""Called with (caller, project name, spec, job id) before a job is recorded or submitted;
raise a ``CubeError`` (e.g. ``QuotaExceeded``) to refuse it; what it returns (a
reservation, or None) is handed to ``admission.release`` when the job ends."""


@dataclass(frozen=True)
class JobView:
    id: str
    name: str
    project: str
    owner: str
    framework: str
    backend: str
    status: str
    workers: int
    nproc_per_worker: int
    gpus: list[int]
    attempts: int
    exit_code: int | None
    error: str | None
    working_dir: str | None
    output_dir: str | None
    last_checkpoint: str | None
    command: str
    spec: dict[str, Any]
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    duration_s: float | None
    cluster: dict[str, str] | None  # kubernetes jobs: namespace, kind, name, server
    # the dataset versions it was given ($CUBE_LAB_DATASET): [{"project", "name", "version",
    # "path"}]; a model registered from the job carries them in its lineage
    datasets: list[dict[str, Any]]

    @classmethod
    def of(cls, job: TrainingJob, project: str) -> JobView:
        spec, info = job.spec or {}, job.info or {}
        end = job.finished_at or (datetime.now(UTC) if job.started_at else None)
        duration = (
            (aware(end) - aware(job.started_at)).total_seconds() if end and job.started_at else None
        )
        return cls(
            job.id,
            job.name,
            project,
            job.owner,
            job.framework,
            job.backend,
            job.status,
            int(spec.get("workers", 1)),
            int(spec.get("nproc_per_worker", 1)),
            list(info.get("gpus") or []),
            job.attempts,
            job.exit_code,
            job.error,
            info.get("cwd"),
            info.get("output_dir"),
            info.get("last_checkpoint"),
            " ".join([*(spec.get("command") or [spec.get("script") or ""]), *spec.get("args", [])]),
            spec,
            job.created_at,
            job.started_at,
            job.finished_at,
            duration,
            info.get("cluster"),
            list(info.get("datasets") or []),
        )


@dataclass(frozen=True)
class MetricsView:
    job_id: str
    source: str  # "report" (cube_lab.report) | "log" (key=value lines) | "none"
    series: dict[str, list[list[float]]]
    last: dict[str, float]
    last_checkpoint: str | None


def _new_job_id() -> str:
    return f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


def check_claims(caller: Caller, spec: JobSpec) -> None:
    """Under the hub the service's own credentials create the pods, so a job mounts only the
    volumes its owner has anyway: their home's claim and their project groups' claims (an
    admin any). Elsewhere the caller's own credentials decide."""
    if job_credentials.issuer() is None or caller.admin:
        return
    from ..k8s.names import project_claim, user_claim

    allowed = {user_claim(caller.username), *(project_claim(g) for g in caller.groups)}
    for mount in spec.mounts:
        if mount.claim not in allowed:
            raise Forbidden(
                _t("the job may not mount the volume claim {claim!r}", claim=mount.claim),
                _t(
                    "Under the hub a job mounts your own volume ({mine}) or a volume of your "
                    "project groups ({groups}).",
                    mine=user_claim(caller.username),
                    groups=", ".join(sorted(project_claim(g) for g in caller.groups)) or "-",
                ),
            )


class TrainingService:
    def __init__(
        self, store: Store, projects: ProjectService, settings: Settings, registry: Any
    ) -> None:
        self.store = store
        self.projects = projects
        self.settings = settings
        self.registry = registry
        self.jobs_root = settings.data_dir / "training"
        self.admission: AdmissionHook = admission.hub_admission
        self._reservations: dict[str, Any] = {}
        self.cluster_config: ClusterConfig | None = None  # None: from the environment
        self.cluster_poll_s = POLL_S
        self._running: dict[str, LocalJob] = {}
        self._cluster: dict[str, ClusterJob] = {}
        self._orphans: list[str] = []  # cluster jobs whose follower died: follow them again
        self._tasks: dict[str, asyncio.Task[str]] = {}

    @property
    def cluster(self) -> ClusterConfig:
        return self.cluster_config or ClusterConfig.from_env()

    # -- submitting ------------------------------------------------------------------------

    def parse(self, data: JobSpec | dict[str, Any]) -> JobSpec:
        """A spec; one that names no backend runs where the server is configured to."""
        if isinstance(data, JobSpec):
            return data
        if isinstance(data, dict) and not data.get("backend"):
            data = {**data, "backend": self.settings.backend}
        return JobSpec.from_dict(data)

    def prepare(
        self,
        caller: Caller,
        data: JobSpec | dict[str, Any],
        root: Path | None = None,
        *,
        cwd: Path | None = None,
        on_line: Callable[[str], None] | None = None,
        cluster: ClusterConfig | None = None,
    ) -> LocalJob | ClusterJob:
        """Check the spec, write the record, hold GPUs; the returned job is not started.

        ``root``: the folder the job may not leave (the server's root; None for the CLI).
        ``cwd``: where a relative working_dir starts (default: root, else this process').
        A kubernetes job is checked and recorded here; ``launch`` submits it."""
        spec = self.parse(data)
        if spec.backend == "kubernetes":
            return self._prepare_cluster(caller, spec, on_line=on_line, cluster=cluster)
        check_local(spec)
        workdir, script = self._resolve_paths(spec, root, cwd)
        env = self._env(caller)
        # the job's account when it runs as its owner (``Settings.os_accounts``)
        who = accounts.run_as(caller.username, caller.groups) if self.settings.os_accounts else None
        check_packages(spec, env | spec.env, workdir, who)  # in the Python, env, folder it gets
        used = self._datasets(caller, spec)
        job_id = _new_job_id()
        self._admit(caller, spec, job_id)
        job_dir = self.jobs_root / job_id
        try:
            held = gpus.assign(job_id, spec.gpus_total)
        except BaseException:
            self._release(job_id)
            raise
        try:
            plan = build_plan(spec, job_id, job_dir, workdir, env, held)
            with self.store.write() as s:
                project = self.projects.resolve(s, caller, spec.project)
                s.add(
                    TrainingJob(
                        id=job_id,
                        project_id=project.id,
                        owner=caller.username,
                        name=spec.name or Path(script or spec.argv()[0]).stem,
                        framework=spec.framework,
                        backend=spec.backend,
                        status="queued",
                        spec=spec.to_dict(),
                        info={
                            "gpus": held,
                            "cwd": str(workdir),
                            "root": str(root) if root else None,
                            "output_dir": plan.procs[0].env[ENV_OUTPUT_DIR],
                            "launch": plan.describe(),
                            "datasets": used,
                        },
                        job_dir=str(job_dir),
                        runner_pid=os.getpid(),
                        runner_host=socket.gethostname(),
                        attempts=0,
                    )
                )
        except BaseException:
            gpus.release(job_id)
            self._release(job_id)
            raise
        if who is not None:
            # the job runs as its owner's account, in a folder only it (and root) enters
            plan.run_as = who.for_job("training", job_id, caller.username, job_dir)
            accounts.job_folder(
                job_dir, plan.run_as, self.settings.data_dir, ("log.txt", "metrics.jsonl")
            )
            accounts.make_dirs(Path(plan.procs[0].env[ENV_OUTPUT_DIR]), plan.run_as)
        else:
            job_dir.mkdir(parents=True, exist_ok=True)
            Path(plan.procs[0].env[ENV_OUTPUT_DIR]).mkdir(parents=True, exist_ok=True)
        return LocalJob(
            plan,
            retries=spec.retries,
            timeout_s=spec.timeout_s,
            on_line=on_line,
            on_attempt=lambda n: self._update(job_id, status="running", attempts=n),
            on_groups=lambda groups: record_groups(
                self.store, "training", job_id, "", [("launcher", g) for g in groups]
            ),
        )

    def dry_run(self, data: JobSpec | dict[str, Any], cwd: Path | None = None) -> list[str]:
        """The command lines a local job would run, without recording or starting it."""
        spec = self.parse(data)
        check_local(spec)
        workdir, _ = self._resolve_paths(spec, None, cwd)
        fake = list(range(spec.gpus_total))  # what assignment would hand out, at best
        plan = build_plan(spec, "dry-run", self.jobs_root / "dry-run", workdir, {}, fake)
        return [shlex.join(p.argv) for p in plan.procs]

    def _admit(self, caller: Caller, spec: JobSpec, job_id: str) -> None:
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            project = self.projects.resolve(s, caller, spec.project).name
        reservation = self.admission(caller, project, spec, job_id)
        if reservation is not None:
            self._reservations[job_id] = reservation

    def _release(self, job_id: str) -> None:
        """Give the job's quota back (it ended, or never started)."""
        admission.release(self._reservations.pop(job_id, None))

    def _datasets(self, caller: Caller, spec: JobSpec) -> list[dict[str, Any]]:
        """The dataset version the job is given in ``$CUBE_LAB_DATASET``, as lineage."""
        value = spec.env.get(ENV_DATASET)
        if not value:
            return []
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            found = find_by_path(
                s, self.projects.visible_ids(s, caller), datasets_root(self.settings), value
            )
        return [found.lineage()] if found else []

    def _prepare_cluster(
        self,
        caller: Caller,
        spec: JobSpec,
        *,
        on_line: Callable[[str], None] | None,
        cluster: ClusterConfig | None,
        unique: bool = False,
    ) -> ClusterJob:
        require()  # a clear error if the extra is missing; and the slow import off the loop
        check_claims(caller, spec)
        config = cluster or self.cluster
        job_id = _new_job_id()
        display = spec.name or Path(spec.argv()[0]).stem
        # a given name names the object (so a clash is the user's to see); else it is unique
        base = spec.name if spec.name and not unique else k8s_name(display, 40)
        object_name = base if spec.name and not unique else f"{base}-{job_id[-6:]}"
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            project_name = self.projects.resolve(s, caller, spec.project).name
        # the job object and every pod it makes (cube_lab.k8s.pod_labels' vocabulary)
        labels = pod_labels.job(project_name, caller.username, job_id)
        docs = kubernetes.manifests(
            spec, object_name, namespace=config.default_namespace(), labels=labels
        )
        # under the hub the pods reach the cube-lab service as the owner, while the job runs
        job_ref = job_credentials.JobRef("training", job_id, caller.username)
        reach = job_credentials.service_vars(job_ref)
        if reach is not None:
            docs = kubernetes.with_service_access(docs, reach)
        used = self._datasets(caller, spec)
        self._admit(caller, spec, job_id)
        job_dir = self.jobs_root / job_id
        refs = object_refs(docs)
        with self.store.write() as s:
            project = self.projects.resolve(s, caller, spec.project)
            s.add(
                TrainingJob(
                    id=job_id,
                    project_id=project.id,
                    owner=caller.username,
                    name=display,
                    framework=spec.framework,
                    backend=spec.backend,
                    status="queued",
                    spec=spec.to_dict(),
                    info={
                        "gpus": [],
                        "cluster": {
                            "namespace": refs[-1]["namespace"],
                            "kind": refs[-1]["kind"],
                            "name": refs[-1]["name"],
                            "server": config.describe(),
                        },
                        "objects": refs,
                        "datasets": used,
                    },
                    job_dir=str(job_dir),
                    runner_pid=os.getpid(),
                    runner_host=socket.gethostname(),
                    attempts=0,
                )
            )
        return self._cluster_job(job_id, job_dir, refs, config, docs, on_line)

    def _cluster_job(
        self,
        job_id: str,
        job_dir: Path,
        refs: list[dict[str, str]],
        config: ClusterConfig,
        manifests: list[dict[str, Any]] | None = None,
        on_line: Callable[[str], None] | None = None,
        logs_since_s: int | None = None,
    ) -> ClusterJob:
        return ClusterJob(
            job_id,
            job_dir,
            refs,
            config,
            manifests=manifests,
            on_line=on_line,
            on_status=lambda status, error: self._cluster_status(job_id, status, error),
            poll_s=self.cluster_poll_s,
            logs_since_s=logs_since_s,
        )

    async def submit(self, job: ClusterJob) -> None:
        """Create the job's objects on the cluster; on failure the record goes away too."""
        try:
            await job.submit()
        except BaseException:
            await asyncio.to_thread(self._discard, job.job_id)
            raise

    async def launch(self, job: LocalJob | ClusterJob) -> str:
        """Start a prepared job in the background of this event loop (the server's):
        a cluster job is submitted first, so its errors reach the caller."""
        if isinstance(job, ClusterJob):
            await self.submit(job)
        return self.start(job)

    def _discard(self, job_id: str) -> None:
        self._release(job_id)
        with self.store.write() as s:
            row = s.get(TrainingJob, job_id)
            if row is not None:
                s.delete(row)

    def _cluster_status(self, job_id: str, status: str, error: str | None) -> None:
        """What the cluster says, into the record (never over an ended job's)."""
        with self.store.write() as s:
            row = s.get(TrainingJob, job_id)
            if row is None or row.status not in ACTIVE:
                return
            row.status = status
            if status == "running" and row.started_at is None:
                row.started_at = datetime.now(UTC)
                row.attempts = max(1, row.attempts)
            if status in TERMINAL:
                row.finished_at = datetime.now(UTC)
                row.error = None if status == "succeeded" else error

    async def _follow(self, job: ClusterJob) -> str:
        self._cluster[job.job_id] = job
        try:
            return await job.follow()
        except Exception as exc:
            why = f"following the job stopped: {type(exc).__name__}: {exc}"
            await asyncio.to_thread(self._cluster_status, job.job_id, "interrupted", why)
            raise
        finally:
            self._cluster.pop(job.job_id, None)
            await asyncio.to_thread(self._release, job.job_id)
            events.finished(self.store, "job", job.job_id)

    def resume_cluster_jobs(self) -> list[str]:
        """Follow again the cluster jobs ``recover`` found without a follower (call it in
        the server's event loop). Their log goes on from the log file's last change."""
        ids, self._orphans = self._orphans, []
        if not ids:
            return []
        with self.store.write() as s:
            rows = list(s.scalars(select(TrainingJob).where(TrainingJob.id.in_(ids))))
            for row in rows:
                row.runner_pid, row.runner_host = os.getpid(), socket.gethostname()
            found = [
                (r.id, Path(r.job_dir), list((r.info or {}).get("objects") or [])) for r in rows
            ]
        for job_id, job_dir, refs in found:
            log = job_dir / "log.txt"
            since = max(1, int(time.time() - log.stat().st_mtime)) if log.exists() else None
            self.start(self._cluster_job(job_id, job_dir, refs, self.cluster, logs_since_s=since))
        return [job_id for job_id, _, _ in found]

    def _resolve_paths(
        self, spec: JobSpec, root: Path | None, cwd: Path | None
    ) -> tuple[Path, str | None]:
        base = (cwd or root or Path.cwd()).resolve()

        def inside(raw: str, start: Path, what: str) -> Path:
            if root is None:  # the command line: any folder of the user's, still a real path
                return containment.real(start / containment.check_text(raw, what))
            return containment.resolve(root, raw, base=start, what=what, where=str(root))

        workdir = inside(spec.working_dir, base, "working_dir") if spec.working_dir else base
        if not workdir.is_dir():
            raise InvalidInput(_t("working_dir {workdir} does not exist", workdir=workdir))
        script = spec.script
        if script and (spec.framework != "plain" or script.endswith(".py")):
            path = inside(script, workdir, "script")
            if not path.is_file():
                raise InvalidInput(
                    _t("script {script!r} not found", script=script),
                    _t(
                        "Looked for {path}; give a path relative to the working directory.",
                        path=path,
                    ),
                )
        return workdir, script

    def _env(self, caller: Caller) -> dict[str, str]:
        env = dict(os.environ)
        for key in [k for k in env if k.startswith(("TORCHELASTIC_", "CUBE_TRAINING_"))]:
            env.pop(key)  # a job started from inside another job is a job of its own
        env.update(
            {
                ENV_DATA_DIR: str(self.settings.data_dir),
                ENV_DB_URL: self.settings.db_url,
                ENV_USER: caller.username,
            }
        )
        if self.settings.os_accounts:  # a job run as its owner holds no keys to the store
            env.pop(ENV_DATA_DIR)
            env.pop(ENV_DB_URL)
        return env

    async def execute(self, job: LocalJob) -> str:
        """Run to the end; the record is final when this returns."""
        job_id = job.plan.job_id
        self._running[job_id] = job
        await asyncio.to_thread(self._update, job_id, status="running", started=True)
        status = "failed"
        try:
            status = await job.run()
            return status
        except BaseException as exc:
            job.cancel()
            job.error = f"the launcher stopped: {type(exc).__name__}: {exc}"
            raise
        finally:
            self._running.pop(job_id, None)
            gpus.release(job_id)
            await asyncio.to_thread(self._release, job_id)
            await asyncio.to_thread(self._finish, job, status)

    def start(self, job: LocalJob | ClusterJob) -> str:
        """Run in the background of the current event loop (the server's); a cluster job
        must have been submitted (``launch`` does both)."""
        loop = asyncio.get_running_loop()
        if isinstance(job, ClusterJob):
            job_id = job.job_id
            self._cluster[job_id] = job
            task = loop.create_task(self._follow(job))
        else:
            job_id = job.plan.job_id
            self._running[job_id] = job  # a stop before the task first runs must still find it
            task = loop.create_task(self.execute(job))
        self._tasks[job_id] = task
        task.add_done_callback(lambda _t: self._tasks.pop(job_id, None))
        return job_id

    def run_foreground(self, job: LocalJob | ClusterJob) -> str:
        """Run in this process (the CLI); Ctrl-C or SIGTERM stop the job cleanly (a cluster
        job is submitted, followed, and deleted on Ctrl-C)."""

        async def main() -> str:
            loop = asyncio.get_running_loop()
            if threading.current_thread() is threading.main_thread():
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.add_signal_handler(sig, job.cancel)
            if isinstance(job, ClusterJob):
                await self.submit(job)
                return await self._follow(job)
            return await self.execute(job)

        return asyncio.run(main())

    async def wait(self, job_id: str) -> str | None:
        """The job's final status: once its follower ends, or at once when it has ended
        already (then from the record); None for a job this service does not know."""
        task = self._tasks.get(job_id)
        if task is not None:
            return await task
        with self.store.read() as s:
            row = s.get(TrainingJob, job_id)
            return row.status if row is not None else None

    def _update(self, job_id: str, *, started: bool = False, **fields: Any) -> None:
        with self.store.write() as s:
            job = s.get(TrainingJob, job_id)
            if job is None:
                return
            if started:
                job.started_at = datetime.now(UTC)
            for key, value in fields.items():
                setattr(job, key, value)

    def _finish(self, job: LocalJob, status: str) -> None:
        job_dir = job.plan.job_dir
        reports = metrics.read_reports(job_dir / "metrics.jsonl")
        with self.store.write() as s:
            row = s.get(TrainingJob, job.plan.job_id)
            if row is None:
                return
            info = dict(row.info or {})
            info["last_checkpoint"] = metrics.last_checkpoint(reports) or _newest(
                Path(info.get("output_dir") or job_dir / "output")
            )
            if job.first_output_at is not None:
                info["had_output"] = True
            row.info = info
            row.status = status
            row.attempts = job.attempts
            row.exit_code = job.exit_code
            row.error = None if status == "succeeded" else _with_reason(job.error, job_dir)
            row.finished_at = datetime.now(UTC)
        events.finished(self.store, "job", job.plan.job_id)  # alert rules (queued, not sent here)

    # -- reading ----------------------------------------------------------------------------

    def list(self, caller: Caller, *, project: str | None = None, limit: int = 50) -> list[JobView]:
        check_page_limit(limit)
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            rows = s.execute(
                self.projects.visible(s, caller, TrainingJob, project)
                .order_by(TrainingJob.created_at.desc())
                .limit(limit)
            )
            return [JobView.of(job, name) for job, name in rows]

    def get(self, caller: Caller, job_id: str) -> JobView:
        with self.store.read() as s:
            job, project = self._job(s, caller, job_id)
            return JobView.of(job, project)

    def _job(self, s: Session, caller: Caller, job_id: str) -> tuple[TrainingJob, str]:
        self.projects.ensure_personal(caller)
        row = s.execute(
            self.projects.visible(s, caller, TrainingJob).where(TrainingJob.id == job_id)
        ).first()
        if row is None:
            raise NotFound(
                _t("training job {job_id!r} not found", job_id=job_id),
                _t("GET /cube/api/v1/training/jobs lists the jobs you can see."),
            )
        return row[0], row[1]

    def tail_log(
        self, caller: Caller, job_id: str, offset: int = 0, limit: int = LOG_CHUNK
    ) -> LogChunk:
        """The aggregated log from ``offset``; call again with the returned offset to follow."""
        if offset < 0:
            raise InvalidInput(_t("offset must be 0 or more"))
        with self.store.read() as s:
            job, _ = self._job(s, caller, job_id)
            done = job.status not in ACTIVE
            path = Path(job.job_dir) / "log.txt"
        return read_chunk(path, offset, limit, done)

    def metrics(self, caller: Caller, job_id: str) -> MetricsView:
        """Series for charts: what the job reported, else what its log printed."""
        with self.store.read() as s:
            job, _ = self._job(s, caller, job_id)
            job_dir, info = Path(job.job_dir), dict(job.info or {})
        records = metrics.read_reports(job_dir / "metrics.jsonl")
        source = "report"
        if not records:
            records, source = self._log_records(job_dir / "log.txt"), "log"
        found = metrics.series(records)
        return MetricsView(
            job_id,
            source if found else "none",
            found,
            {k: v[-1][1] for k, v in found.items()},
            metrics.last_checkpoint(records) or info.get("last_checkpoint"),
        )

    @staticmethod
    def _log_records(path: Path) -> list[dict[str, Any]]:
        if not path.is_file():
            return []
        with open(path, "rb") as fh:
            size = path.stat().st_size
            fh.seek(max(0, size - MAX_LOG_PARSE))
            text = fh.read().decode("utf-8", "replace")
        return metrics.parse_log(text.splitlines())

    # -- stopping, re-running, recovering -----------------------------------------------------

    def stop(self, caller: Caller, job_id: str) -> JobView:
        with self.store.read() as s:
            job, _ = self._job(s, caller, job_id)
            status, pid, host = job.status, job.runner_pid, job.runner_host
            backend, refs = job.backend, list((job.info or {}).get("objects") or [])
        if status not in ACTIVE:
            raise Conflict(
                _t("job {job_id} already ended ({status})", job_id=job_id, status=status)
            )
        if backend == "kubernetes":
            following = self._cluster.get(job_id)
            if following is not None:
                following.cancelled = True
            _run(delete_objects(self.cluster, refs))  # a refusal reaches the caller
            self._cluster_status(job_id, "cancelled", "stopped")
            return self.get(caller, job_id)
        local = self._running.get(job_id)
        if local is not None:
            local.cancel()
        elif host == socket.gethostname() and pid_alive(pid) and pid != os.getpid():
            os.kill(pid, signal.SIGTERM)  # `cube-lab train` stops its job on SIGTERM
        else:
            self._mark_interrupted([job_id], "its launcher is gone; marked when stopped")
        return self.get(caller, job_id)

    def rerun(self, caller: Caller, job_id: str, root: Path | None = None) -> LocalJob | ClusterJob:
        """A new job with the same spec (and the same working directory)."""
        with self.store.read() as s:
            job, _ = self._job(s, caller, job_id)
            spec, info = dict(job.spec), dict(job.info or {})
        parsed = JobSpec.from_dict(_spec_input(spec))
        if parsed.backend == "kubernetes":  # the old object may still be there: a new name
            return self._prepare_cluster(caller, parsed, on_line=None, cluster=None, unique=True)
        cwd = Path(info["cwd"]) if info.get("cwd") else None
        return self.prepare(caller, replace(parsed, working_dir=None), root, cwd=cwd)

    def recover(self) -> list[str]:
        """Mark jobs whose launcher died (a crash, a restart) as interrupted; kill leftovers."""
        with self.store.read() as s:
            rows = s.execute(
                select(
                    TrainingJob.id,
                    TrainingJob.runner_pid,
                    TrainingJob.runner_host,
                    TrainingJob.backend,
                ).where(TrainingJob.status.in_(ACTIVE))
            ).all()
        gone = set(orphaned(rows, {**self._running, **self._cluster}))
        # a cluster job runs on without its follower: resume_cluster_jobs follows it again
        self._orphans = [r.id for r in rows if r.id in gone and r.backend == "kubernetes"]
        dead = [r.id for r in rows if r.id in gone and r.backend != "kubernetes"]
        if dead:
            self._mark_interrupted(dead, "the process running it stopped before it finished")
        return dead

    def _mark_interrupted(self, job_ids: list[str], why: str) -> None:
        """Mark local jobs whose launcher is gone, and end what they left running: the
        recorded process groups still ours, then any process carrying a job's marker
        (ranks torchrun started in sessions of their own)."""
        with self.store.write() as s:
            for job in s.scalars(select(TrainingJob).where(TrainingJob.id.in_(job_ids))):
                job.status, job.error, job.finished_at = "interrupted", why, datetime.now(UTC)
        end_recorded(self.store, "training", job_ids)
        for job_id in job_ids:
            kill_marked(job_id)

    # -- the model registry ----------------------------------------------------------------

    def register_model(
        self,
        caller: Caller,
        job_id: str,
        name: str,
        path: str | None = None,
        *,
        project: str | None = None,
        description: str = "",
    ) -> Any:
        """Register the job's checkpoint (or ``path``) with the job id in its lineage."""
        job = self.get(caller, job_id)
        if job.status != "succeeded":
            raise Conflict(
                _t("job {job_id} has not succeeded ({status})", job_id=job_id, status=job.status)
            )
        target = path or job.last_checkpoint or job.output_dir
        if not target:
            raise InvalidInput(
                _t("the job recorded no checkpoint"), _t("Give the path to register.")
            )
        resolved = Path(containment.check_text(target))
        if not resolved.is_absolute():
            resolved = Path(job.working_dir or ".") / resolved
        if not resolved.exists():
            raise InvalidInput(
                _t("{resolved} does not exist", resolved=resolved), _t("Give the path to register.")
            )
        found = self.metrics(caller, job_id)
        try:
            return self.registry.register(
                caller,
                name=name,
                path=resolved,
                project=project or job.project,
                description=description,
                metrics=found.last,
                params={
                    "framework": job.framework,
                    "processes": job.workers * job.nproc_per_worker,
                },
                source=job.spec.get("script") or job.command,
                training_job_id=job.id,
                datasets=job.datasets,
            )
        except EmptyArtifact as exc:
            raise exc.with_hint(
                _t(
                    "Job {job_id} saved nothing there: a training script saves its model under "
                    "${env} (for this job {output_dir}), e.g. "
                    "torch.save(model.state_dict(), os.path.join(os.environ['{env}'], "
                    "'model.pt')), or register the path it did save to.",
                    job_id=job.id,
                    env=ENV_OUTPUT_DIR,
                    output_dir=job.output_dir,
                )
            ) from None


def _spec_input(spec: dict[str, Any]) -> dict[str, Any]:
    """A stored spec back into ``JobSpec.from_dict`` input (empty optionals dropped)."""
    out = {k: v for k, v in spec.items() if v not in (None, [], {})}
    out["resources"] = {k: v for k, v in (spec.get("resources") or {}).items() if v is not None}
    return out


# The last line of a Python traceback ("ValueError: bad shape"), with or without a rank prefix;
# and an error named inside a line ("python: Error while finding module specification for
# 'torch.distributed.run' (ModuleNotFoundError: No module named 'torch')").
_REASON_LINE = re.compile(
    r"^(?:\[rank \d+\]:?\s*)?((?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception)(?::\s.*)?)$"
)
_REASON_INSIDE = re.compile(r"\b(\w+(?:Error|Exception): [^()]*)")
_NOT_A_REASON = ("ChildFailedError",)  # torchrun's summary: the rank's own line says why
REASON_SCAN = 64 * 1024


def _with_reason(error: str | None, job_dir: Path) -> str | None:
    """The error ("exit code 1") with the last exception line of the log, when there is one:
    a job that failed at start (a missing module, a bad argument) says why in its record."""
    if not error or not error.startswith("exit code"):
        return error
    path = job_dir / "log.txt"
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, path.stat().st_size - REASON_SCAN))
            lines = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return error
    fallback = None
    for line in reversed(lines):
        text = line.strip()
        match = _REASON_LINE.match(text)
        if match and not any(n in match.group(1) for n in _NOT_A_REASON):
            return f"{error}: {match.group(1)[:300]}"
        inside = fallback is None and _REASON_INSIDE.search(text)
        if inside and not any(n in inside.group(1) for n in _NOT_A_REASON):
            fallback = inside.group(1).strip()
    return f"{error}: {fallback[:300]}" if fallback else error


def _newest(folder: Path) -> str | None:
    """The newest entry of the output folder: the last checkpoint, as a rule."""
    if not folder.is_dir():
        return None
    entries = [p for p in folder.iterdir() if not p.name.startswith(".")]
    if not entries:
        return None
    return str(max(entries, key=lambda p: p.stat().st_mtime))


def _run(coro: Coroutine[Any, Any, Any]) -> Any:
    """Await ``coro`` from synchronous code, also where this thread runs an event loop
    (a kernel): then in a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, name="cube-lab-k8s")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")
