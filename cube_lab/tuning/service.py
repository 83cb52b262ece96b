"""Tuning experiments as a service: record, run (in the server or the CLI), watch, stop,
resume, recover.

An experiment is a record (``tuning_experiments`` + ``tuning_trials``) and a folder under
``<data_dir>/experiments/<id>/`` holding each trial's NNI system folder (parameters, log,
output). The engine runs in the process that started it; trial changes reach the store
through a background writer, so a trial's start never waits for the database. The same
writer keeps the process groups of the trial host and of each running trial
(``process_groups``): recovery ends those still ours when it marks an experiment interrupted.
"""

from __future__ import annotations

import asyncio
import os
import queue
import signal
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from .. import accounts, containment, quota
from ..alerts import events
from ..config import ENV_DATA_DIR, ENV_DB_URL, ENV_USER, Settings
from ..errors import Conflict, InvalidInput, NotFound
from ..identity import Caller
from ..locale.messages import _t
from ..logtail import LOG_CHUNK, LogChunk, read_chunk
from ..processes import Group, end_recorded, orphaned, pid_alive
from ..projects import ProjectService, check_page_limit
from ..registry.validation import EmptyArtifact
from ..store import Store
from ..store.models import TuningExperiment, TuningTrial
from . import spec as specs
from .cluster_experiments import ClusterExperiments
from .engine import Engine, Trial
from .spec import ExperimentSpec

ACTIVE = ("queued", "running")
WRITE_WINDOW_S = 0.1


def _stamp(t: float | None) -> datetime | None:
    return datetime.fromtimestamp(t, UTC) if t is not None else None


@dataclass
class TrialView:
    id: str
    seq: int
    parameters: dict[str, Any]
    status: str
    intermediate: list[float]
    final: float | None
    exit_code: int | None
    error: str | None
    started_at: datetime | None
    finished_at: datetime | None
    duration_s: float | None


@dataclass
class ExperimentView:
    id: str
    name: str
    project: str
    owner: str
    status: str
    error: str | None
    spec: dict[str, Any]
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    trial_count: int
    best: TrialView | None
    trials: list[TrialView] | None = None


class _TrialWriter:
    """Writes trial snapshots (and the process groups trials run in) from a thread, one
    transaction per window."""

    def __init__(self, store: Store, experiment_id: str) -> None:
        self.store = store
        self.experiment_id = experiment_id
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._recorded: set[str] = set()  # parts with process-group rows in the store
        self._thread = threading.Thread(target=self._loop, daemon=True, name="tuning-writer")
        self._thread.start()

    def put(self, trial: Trial) -> None:
        self._queue.put(
            {
                "id": trial.id,
                "seq": trial.seq,
                "parameter_id": trial.parameter_id,
                "parameters": dict(trial.parameters),
                "status": trial.status,
                "intermediate": list(trial.intermediate),
                "final": trial.final,
                "final_raw": trial.final_raw,
                "exit_code": trial.exit_code,
                "error": trial.error,
                "started_at": _stamp(trial.started_at),
                "finished_at": _stamp(trial.finished_at),
            }
        )

    def put_groups(self, part: str, groups: list[tuple[str, Group]]) -> None:
        self._queue.put({"id": None, "part": part, "groups": groups})

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()

    def _loop(self) -> None:
        stop = False
        while not stop:
            batch = [self._queue.get()]
            try:
                while True:
                    batch.append(self._queue.get(timeout=WRITE_WINDOW_S))
                    if batch[-1] is None:
                        break
            except queue.Empty:
                pass
            stop = None in batch
            latest = {item["id"]: item for item in batch if item is not None and item["id"]}
            groups = {item["part"]: item["groups"] for item in batch if item and not item["id"]}
            if latest or groups:
                with self.store.write() as s:
                    self._write_groups(s, groups)
                    for fields in latest.values():
                        row = s.get(TuningTrial, fields["id"])
                        if row is None:
                            s.add(TuningTrial(experiment_id=self.experiment_id, **fields))
                        else:
                            for key, value in fields.items():
                                setattr(row, key, value)

    def _write_groups(self, s: Session, changes: dict[str, list[tuple[str, Group]]]) -> None:
        """A trial that starts and ends within one window costs no row."""
        from sqlalchemy import delete

        from ..store.models import ProcessGroup

        for part, groups in changes.items():
            if part in self._recorded:
                s.execute(
                    delete(ProcessGroup).where(
                        ProcessGroup.owner_kind == "tuning",
                        ProcessGroup.owner_id == self.experiment_id,
                        ProcessGroup.part == part,
                    )
                )
                self._recorded.discard(part)
            for role, group in groups:
                s.add(
                    ProcessGroup(
                        owner_kind="tuning",
                        owner_id=self.experiment_id,
                        part=part,
                        role=role,
                        **group.as_dict(),
                    )
                )
                self._recorded.add(part)


class TuningService:
    def __init__(
        self,
        store: Store,
        projects: ProjectService,
        settings: Settings,
        registry: Callable[[], Any] | None = None,
    ) -> None:
        self.store = store
        self.projects = projects
        self.settings = settings
        self._registry = registry  # the model registry, built only when a model is registered
        self.root = settings.data_dir / "experiments"
        self._engines: dict[str, Engine] = {}
        self._reservations: dict[str, Any] = {}  # quota held at the hub, per experiment
        self._tasks: dict[str, asyncio.Task[str]] = {}
        self.on_cluster = ClusterExperiments(self)  # backend kubernetes: Katib Experiments

    # -- starting -------------------------------------------------------------------------

    def parse(self, config: Any, base_dir: Path) -> ExperimentSpec:
        return specs.parse(config, base_dir)

    def prepare(self, caller: Caller, spec: ExperimentSpec, resume_of: str | None = None) -> Engine:
        """Reserve quota (under the hub), record the experiment (or take over one to
        resume) and build its engine."""
        self.projects.ensure_personal(caller)
        stamp = datetime.now(UTC)
        new_id = f"exp-{stamp:%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:4]}"
        with self.store.read() as s:
            project_name = (
                self._experiment(s, caller, resume_of)[1]
                if resume_of
                else self.projects.resolve(s, caller, spec.project).name
            )
        reservation = quota.reserve(project_name, f"tuning/{resume_of or new_id}")
        try:
            engine = self._record(caller, spec, resume_of, new_id)
        except BaseException:
            quota.release(reservation)
            raise
        if reservation is not None:
            self._reservations[engine.experiment_id] = reservation
        return engine

    def _record(
        self, caller: Caller, spec: ExperimentSpec, resume_of: str | None, new_id: str
    ) -> Engine:
        done: list[Trial] = []
        with self.store.write() as s:
            if resume_of:
                row, _ = self._experiment(s, caller, resume_of)
                if row.status in ACTIVE and pid_alive(row.runner_pid):
                    raise Conflict(
                        _t("experiment {resume_of} is still running", resume_of=resume_of)
                    )
                done = [_trial(t) for t in row.trials if t.final is not None]
                for t in list(row.trials):  # unfinished trials are tried again
                    if t.final is None:
                        s.delete(t)
                row.status, row.error, row.finished_at = "queued", None, None
            else:
                project = self.projects.resolve(s, caller, spec.project)
                row = TuningExperiment(
                    id=new_id,
                    project_id=project.id,
                    owner=caller.username,
                    name=spec.name,
                    status="queued",
                    spec=spec.to_dict(),
                    folder="",
                )
                row.folder = str(self.root / row.id)
                s.add(row)
            row.runner_pid, row.runner_host = os.getpid(), socket.gethostname()
            experiment_id, folder = row.id, Path(row.folder)
            if resume_of:
                spec = ExperimentSpec.from_stored(row.spec)
        env = {
            **os.environ,
            ENV_DATA_DIR: str(self.settings.data_dir),
            ENV_DB_URL: self.settings.db_url,
            ENV_USER: caller.username,
        }
        if not self.settings.os_accounts:
            folder.mkdir(parents=True, exist_ok=True)
            return Engine(spec, folder, experiment_id, done=done, base_env=env)
        # the trials run as the owner's account (its env without the store's keys)
        who = accounts.run_as(caller.username, caller.groups, job=("tuning", experiment_id, folder))
        accounts.job_folder(folder, who, self.settings.data_dir)
        env.pop(ENV_DATA_DIR)
        env.pop(ENV_DB_URL)
        return Engine(
            spec,
            folder,
            experiment_id,
            done=done,
            base_env=env,
            run_as=who,
            store=self.settings.data_dir,
        )

    async def execute(
        self, engine: Engine, listener: Callable[[Trial | None], None] | None = None
    ) -> str:
        """Run to the end; the record is complete when this returns."""
        writer = _TrialWriter(self.store, engine.experiment_id)

        def changed(trial: Trial | None) -> None:
            if trial is not None:
                writer.put(trial)
            if listener:
                listener(trial)

        engine.on_change = changed
        engine.on_groups = writer.put_groups
        self._engines[engine.experiment_id] = engine
        await asyncio.to_thread(self._set_status, engine.experiment_id, "running")
        status, error = "failed", None
        try:
            status = await engine.run()
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self._engines.pop(engine.experiment_id, None)
            await asyncio.to_thread(writer.close)
            reservation = self._reservations.pop(engine.experiment_id, None)
            await asyncio.to_thread(quota.release, reservation)
            await asyncio.to_thread(self._set_status, engine.experiment_id, status, error)
            events.finished(self.store, "experiment", engine.experiment_id)  # alert rules
        return status

    def start(self, engine: Engine) -> str:
        """Run in the background of the current event loop (the server's)."""
        task = asyncio.get_running_loop().create_task(self.execute(engine))
        self._tasks[engine.experiment_id] = task
        task.add_done_callback(lambda _t: self._tasks.pop(engine.experiment_id, None))
        return engine.experiment_id

    def run_foreground(
        self, engine: Engine, listener: Callable[[Trial | None], None] | None = None
    ) -> str:
        """Run in this process (the CLI); Ctrl-C or SIGTERM stop it cleanly."""

        async def main() -> str:
            loop = asyncio.get_running_loop()
            if threading.current_thread() is threading.main_thread():
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.add_signal_handler(sig, engine.stop)
            return await self.execute(engine, listener)

        return asyncio.run(main())

    def _set_status(self, experiment_id: str, status: str, error: str | None = None) -> None:
        with self.store.write() as s:
            row = s.get(TuningExperiment, experiment_id)
            if row is None:
                return
            row.status, row.error = status, error
            if status == "running":
                row.started_at = datetime.now(UTC)
            else:
                row.finished_at = datetime.now(UTC)

    # -- reading --------------------------------------------------------------------------

    def list(
        self, caller: Caller, project: str | None = None, limit: int = 50
    ) -> list[ExperimentView]:
        check_page_limit(limit)
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            rows = s.execute(
                self.projects.visible(s, caller, TuningExperiment, project)
                .options(selectinload(TuningExperiment.trials))
                .order_by(TuningExperiment.created_at.desc())
                .limit(limit)
            ).all()
            return [self._view(row, name, with_trials=False) for row, name in rows]

    def get(self, caller: Caller, experiment_id: str) -> ExperimentView:
        with self.store.read() as s:
            row, project = self._experiment(s, caller, experiment_id)
            return self._view(row, project, with_trials=True)

    def tail_log(self, caller: Caller, experiment_id: str, trial_id: str, offset: int) -> LogChunk:
        """A trial's output from ``offset``: call again with the returned offset to follow."""
        if offset < 0:
            raise InvalidInput(_t("offset must be 0 or more"))
        path = self.trial_log(caller, experiment_id, trial_id)
        with self.store.read() as s:
            trial = s.get(TuningTrial, trial_id)
            finished = trial is not None and trial.status not in ("waiting", "running")
        return read_chunk(path, offset, LOG_CHUNK, finished)

    def resume(self, caller: Caller, experiment_id: str) -> Engine:
        """An engine that goes on with a stopped or interrupted experiment."""
        spec = ExperimentSpec.from_stored(self.get(caller, experiment_id).spec)
        if spec.backend == "kubernetes":
            raise Conflict(
                _t(
                    "experiment {experiment_id} ran on the cluster: it cannot be resumed",
                    experiment_id=experiment_id,
                ),
                _t("Start it again (its trials so far stay in this record)."),
            )
        return self.prepare(caller, spec, resume_of=experiment_id)

    def trial_log(self, caller: Caller, experiment_id: str, trial_id: str) -> Path:
        with self.store.read() as s:
            row, _ = self._experiment(s, caller, experiment_id)
            if not any(t.id == trial_id for t in row.trials):
                raise NotFound(
                    _t(
                        "no trial {trial_id!r} in experiment {experiment_id}",
                        trial_id=trial_id,
                        experiment_id=experiment_id,
                    )
                )
            return Path(row.folder) / "trials" / trial_id / "log.txt"

    def _experiment(
        self, s: Session, caller: Caller, experiment_id: str
    ) -> tuple[TuningExperiment, str]:
        found = s.execute(
            self.projects.visible(s, caller, TuningExperiment)
            .where(TuningExperiment.id == experiment_id)
            .options(selectinload(TuningExperiment.trials))
        ).first()
        if found is None:
            raise NotFound(
                _t("experiment {experiment_id!r} not found", experiment_id=experiment_id),
                _t("`cube-lab tuning list` lists yours."),
            )
        return found[0], found[1]

    def _view(self, row: TuningExperiment, project: str, with_trials: bool) -> ExperimentView:
        trials = [_trial_view(t) for t in row.trials]
        mode = (row.spec or {}).get("mode", "maximize")
        scored = [t for t in trials if t.final is not None]
        pick = max if mode == "maximize" else min
        best = pick(scored, key=lambda t: t.final) if scored else None  # type: ignore[arg-type,return-value]
        return ExperimentView(
            row.id,
            row.name,
            project,
            row.owner,
            row.status,
            row.error,
            dict(row.spec or {}),
            row.created_at,
            row.started_at,
            row.finished_at,
            len(trials),
            best,
            trials if with_trials else None,
        )

    def register_trial(
        self,
        caller: Caller,
        experiment_id: str,
        name: str,
        trial_id: str | None = None,
        path: str | None = None,
        *,
        project: str | None = None,
        description: str = "",
    ) -> Any:
        """Register what a trial saved (``$NNI_OUTPUT_DIR``, or ``path`` under the trial code
        folder) as a model version: the best trial unless one is named, its parameters and
        metric attached, the experiment and trial in its lineage."""
        view = self.get(caller, experiment_id)
        trial = (
            view.best
            if trial_id is None
            else next((t for t in view.trials or [] if t.id == trial_id), None)
        )
        if trial is None:
            raise NotFound(
                f"no trial {trial_id!r} in {experiment_id}"
                if trial_id
                else "no trial has a result yet",
                _t("Register a trial that reported a final result."),
            )
        if trial.final is None:
            raise Conflict(
                _t(
                    "trial {id} reported no final result ({status})",
                    id=trial.id,
                    status=trial.status,
                )
            )
        code_dir = Path(view.spec["code_dir"])
        with self.store.read() as s:
            folder = Path(self._experiment(s, caller, experiment_id)[0].folder)
        if path:
            target = containment.resolve(code_dir, path, where=f"the trial code folder {code_dir}")
        else:
            target = folder / "trials" / trial.id / "output"
        save_hint = (
            f"Trial {trial.id} saved nothing there: a trial saves its model under "
            f"$NNI_OUTPUT_DIR (for this trial {folder / 'trials' / trial.id / 'output'}), e.g. "
            "joblib.dump(model, os.path.join(os.environ['NNI_OUTPUT_DIR'], 'model.joblib')), "
            "or give the path it did save to."
            if not path
            else f"Give the path of a file or folder the trial saved under {code_dir}."
        )
        if not target.exists():
            raise InvalidInput(
                _t("trial {id} saved nothing at {target}", id=trial.id, target=target), save_hint
            )
        if self._registry is None:
            raise Conflict(_t("no model registry is configured for tuning"))
        try:
            return self._registry().register(
                caller,
                name=name,
                path=target,
                project=project or view.project,
                description=description or f"trial {trial.id} of experiment {view.name}",
                params=trial.parameters,
                metrics={view.spec.get("metric", "default"): trial.final},
                tags={"experiment": view.id, "trial": trial.id},
                source=f"tuning experiment {view.id}, trial {trial.id}",
            )
        except EmptyArtifact as exc:
            raise exc.with_hint(save_hint) from None

    # -- stopping, resuming, recovering ----------------------------------------------------

    def stop(self, caller: Caller, experiment_id: str) -> ExperimentView:
        with self.store.read() as s:
            row, _ = self._experiment(s, caller, experiment_id)
            pid, active, spec = row.runner_pid, row.status in ACTIVE, dict(row.spec or {})
        engine = self._engines.get(experiment_id)
        if spec.get("backend") == "kubernetes":
            if active:
                self.on_cluster.stop(experiment_id, spec)
        elif engine is not None:
            engine.stop()
        elif active and pid and pid_alive(pid) and pid != os.getpid():
            os.kill(pid, signal.SIGTERM)  # `cube-lab tune` stops its trials on SIGTERM
        return self.get(caller, experiment_id)

    def recover(self) -> list[str]:
        """Mark experiments whose engine died (a crash, a restart) as interrupted, and end
        the trials (and trial host) they left running."""
        with self.store.read() as s:
            rows = s.execute(
                select(
                    TuningExperiment.id, TuningExperiment.runner_pid, TuningExperiment.runner_host
                ).where(TuningExperiment.status.in_(ACTIVE))
            ).all()
        # the cluster's experiments are followed again (``on_cluster.resume``), not ended
        dead = self.on_cluster.adopt(orphaned(rows, set(self._engines) | self.on_cluster.following))
        if dead:
            with self.store.write() as s:
                for row in s.scalars(select(TuningExperiment).where(TuningExperiment.id.in_(dead))):
                    row.status, row.finished_at = "interrupted", datetime.now(UTC)
                    row.error = "the process running it stopped; resume it to go on"
            end_recorded(self.store, "tuning", dead)
        return dead


def _trial(row: TuningTrial) -> Trial:
    return Trial(
        row.id,
        row.seq,
        row.parameter_id,
        dict(row.parameters),
        row.status,
        list(row.intermediate or []),
        row.final,
        row.final_raw,
        row.exit_code,
    )


def _trial_view(row: TuningTrial) -> TrialView:
    duration = (
        (row.finished_at - row.started_at).total_seconds()
        if row.started_at and row.finished_at
        else None
    )
    return TrialView(
        row.id,
        row.seq,
        dict(row.parameters),
        row.status,
        list(row.intermediate or []),
        row.final,
        row.exit_code,
        row.error,
        row.started_at,
        row.finished_at,
        duration,
    )
