"""The records of the experiments the service runs on a cluster (``backend: kubernetes``).

An experiment is the same ``tuning_experiments`` row as a local one, its ``spec`` holding
where it runs (``spec.cluster``: namespace, Experiment name, API server, the objects made);
``runner_pid`` is the process that follows it (the cube-lab service). Katib's Trials become
``tuning_trials`` rows as they change. After a restart the service follows its cluster
experiments again (``resume``) instead of marking them interrupted: their state is on the
cluster.
"""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from .. import job_credentials, quota
from ..alerts import events
from ..identity import Caller
from ..k8s import ClusterConfig, require
from ..k8s.objects import object_refs
from ..store.models import TuningExperiment, TuningTrial
from . import katib
from .cluster import ClusterProgress
from .on_cluster import POLL_S, KatibRun, object_name, trial_fields, with_owner
from .on_cluster import with_service_access as with_token
from .spec import ExperimentSpec

if TYPE_CHECKING:
    from .service import TuningService

ACTIVE = ("queued", "running")


class ClusterExperiments:
    """Start, follow, stop and re-follow Katib Experiments for the tuning service."""

    def __init__(self, tuning: TuningService) -> None:
        self.tuning = tuning
        self.config: ClusterConfig | None = None  # None: from the environment
        self.poll_s = POLL_S
        self._runs: dict[str, KatibRun] = {}
        self._tasks: dict[str, asyncio.Task[str]] = {}
        self._orphans: list[str] = []  # found by ``recover``, followed again by ``resume``

    @property
    def following(self) -> set[str]:
        """The experiments this process follows now."""
        return set(self._runs)

    @property
    def cluster(self) -> ClusterConfig:
        return self.config or ClusterConfig.from_env()

    def prepare(self, caller: Caller, spec: ExperimentSpec) -> KatibRun:
        """Check the spec, reserve quota (under the hub) and record the experiment; the
        objects are made by ``launch``."""
        require()  # a clear error when the kubernetes extra is missing
        config = self.cluster
        tuning = self.tuning
        tuning.projects.ensure_personal(caller)
        experiment_id = f"exp-{datetime.now(UTC):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:4]}"
        manifest = katib.experiment(spec, namespace=config.default_namespace(), image=spec.image)
        manifest["metadata"]["name"] = object_name(spec.name, experiment_id)
        with tuning.store.read() as s:
            project_name = tuning.projects.resolve(s, caller, spec.project).name
        manifest = with_owner(manifest, experiment_id, caller.username, project_name)
        # under the hub the trials' pods reach the cube-lab service as the owner
        reach = job_credentials.service_vars(
            job_credentials.JobRef("tuning", experiment_id, caller.username)
        )
        docs = with_token(manifest, reach) if reach is not None else [manifest]
        refs = object_refs(docs)
        reservation = quota.reserve(project_name, f"tuning/{experiment_id}")
        try:
            with tuning.store.write() as s:
                project = tuning.projects.resolve(s, caller, spec.project)
                cluster = {
                    "namespace": refs[-1]["namespace"],
                    "name": refs[-1]["name"],
                    "server": config.describe(),
                    "objects": refs,
                }
                s.add(
                    TuningExperiment(
                        id=experiment_id,
                        project_id=project.id,
                        owner=caller.username,
                        name=spec.name,
                        status="queued",
                        spec={**spec.to_dict(), "cluster": cluster},
                        folder=str(tuning.root / experiment_id),
                        runner_pid=os.getpid(),
                        runner_host=socket.gethostname(),
                    )
                )
        except BaseException:
            quota.release(reservation)
            raise
        if reservation is not None:
            tuning._reservations[experiment_id] = reservation
        return self._run(experiment_id, refs, spec.metric, config, docs)

    def _run(
        self,
        experiment_id: str,
        refs: list[dict[str, str]],
        metric: str,
        config: ClusterConfig,
        docs: list[dict[str, Any]] | None = None,
    ) -> KatibRun:
        def changed(found: ClusterProgress, trials: list[dict[str, Any]]) -> None:
            self._record(experiment_id, metric, found, trials)

        return KatibRun(
            experiment_id, refs, config, metric, changed, manifests=docs, poll_s=self.poll_s
        )

    async def launch(self, run: KatibRun) -> str:
        """Create the objects (their errors reach the caller, and the record goes), then
        follow them in the background of this event loop (the server's)."""
        try:
            await run.submit()
        except BaseException:
            await asyncio.to_thread(self._discard, run.experiment_id)
            raise
        return self._start(run)

    def _start(self, run: KatibRun) -> str:
        self._runs[run.experiment_id] = run
        task = asyncio.get_running_loop().create_task(self._follow(run))
        self._tasks[run.experiment_id] = task
        task.add_done_callback(lambda _t: self._tasks.pop(run.experiment_id, None))
        return run.experiment_id

    async def _follow(self, run: KatibRun) -> str:
        status, error = "interrupted", "following the experiment stopped"
        try:
            status = await run.follow()
            error = {"interrupted": f"the Katib Experiment {run.name} was deleted"}.get(status)
            return status
        except Exception as exc:
            error = f"following the experiment stopped: {type(exc).__name__}: {exc}"
            raise
        finally:
            self._runs.pop(run.experiment_id, None)
            reservation = self.tuning._reservations.pop(run.experiment_id, None)
            await asyncio.to_thread(quota.release, reservation)
            await asyncio.to_thread(self._end, run.experiment_id, status, error)
            # alert rules: the follower hears every end, a stop from anywhere included
            events.finished(self.tuning.store, "experiment", run.experiment_id)

    def _discard(self, experiment_id: str) -> None:
        quota.release(self.tuning._reservations.pop(experiment_id, None))
        with self.tuning.store.write() as s:
            row = s.get(TuningExperiment, experiment_id)
            if row is not None:
                s.delete(row)

    def _record(
        self,
        experiment_id: str,
        metric: str,
        found: ClusterProgress,
        trials: list[dict[str, Any]],
    ) -> None:
        """What the cluster says, into the record (never over an ended one)."""
        ordered = sorted(
            trials,
            key=lambda t: (
                (t.get("metadata") or {}).get("creationTimestamp") or "",
                (t.get("metadata") or {}).get("name") or "",
            ),
        )
        with self.tuning.store.write() as s:
            row = s.get(TuningExperiment, experiment_id)
            if row is None or row.status not in ACTIVE:
                return
            for seq, obj in enumerate(ordered, 1):
                fields = trial_fields(obj, metric, experiment_id, seq)
                trial = s.get(TuningTrial, fields["id"])
                if trial is None:
                    s.add(TuningTrial(experiment_id=experiment_id, **fields))
                else:
                    for key, value in fields.items():
                        setattr(trial, key, value)
            if found.status == "running" and row.started_at is None:
                row.started_at = datetime.now(UTC)
            if found.status in ("done", "failed"):
                row.finished_at = datetime.now(UTC)
                row.error = found.message if found.status == "failed" else None
            row.status = found.status

    def _end(self, experiment_id: str, status: str, error: str | None) -> None:
        with self.tuning.store.write() as s:
            row = s.get(TuningExperiment, experiment_id)
            if row is None or row.status not in ACTIVE:
                return
            row.status, row.error, row.finished_at = status, error, datetime.now(UTC)

    def stop(self, experiment_id: str, spec: dict[str, Any]) -> None:
        """Delete the Experiment and mark the record stopped (a follower in another
        process hears the deletion and ends). From a worker thread, not the event loop."""
        run = self._runs.get(experiment_id)
        if run is None:
            refs = spec["cluster"]["objects"]
            run = self._run(experiment_id, refs, spec.get("metric", "default"), self.cluster)
        run.stop()
        self._end(experiment_id, "stopped", None)

    def resume(self) -> list[str]:
        """Follow again the experiments ``orphans`` were found for (in the server's loop)."""
        ids, self._orphans = self._orphans, []
        if not ids:
            return []
        with self.tuning.store.write() as s:
            rows = list(s.scalars(select(TuningExperiment).where(TuningExperiment.id.in_(ids))))
            for row in rows:
                row.runner_pid, row.runner_host = os.getpid(), socket.gethostname()
            found = [
                (r.id, r.spec["cluster"]["objects"], r.spec.get("metric", "default")) for r in rows
            ]
        for experiment_id, refs, metric in found:
            self._start(self._run(experiment_id, refs, metric, self.cluster))
        return [experiment_id for experiment_id, _, _ in found]

    def adopt(self, dead: list[str]) -> list[str]:
        """Of the experiments whose follower died, the cluster ones: kept for ``resume``
        (their state is on the cluster); the rest are returned (to mark interrupted)."""
        if not dead:
            return dead
        with self.tuning.store.read() as s:
            rows = s.execute(
                select(TuningExperiment.id, TuningExperiment.spec).where(
                    TuningExperiment.id.in_(dead)
                )
            ).all()
        on_cluster = {i for i, spec in rows if (spec or {}).get("backend") == "kubernetes"}
        self._orphans += sorted(on_cluster)
        return [i for i in dead if i not in on_cluster]
