"""What the REST layer serves: a run's, a job's or an experiment's trials' resource series, and
the Prometheus text of ``GET /cube/api/v1/metrics`` (the per-process gauges of pipeline nodes,
training jobs, trials, deployment replicas and notebook kernels, labelled kind / id / node /
project / user; each project's GPU-hours this month).

Everything is read from the store and the series files (``files``), never from this process's
memory, so the answers are the same from the lab server, the CLI's workspace and the hub's
cube-lab service (which runs the jobs and writes the files). A caller sees the objects of the
projects they are a member of; a hub admin sees every project's.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..errors import NotFound
from ..identity import Caller
from ..locale.messages import _t
from ..store.models import (
    Deployment,
    PipelineRun,
    Project,
    TrainingJob,
    TuningExperiment,
)
from . import files
from .monitor import month_of
from .series import FIELDS, BoundedSeries

ACTIVE = ("queued", "running")
SERVING = ("starting", "running", "updating")  # a deployment whose replicas may run
STALE_AFTER_S = 30.0  # a "running" file not written for this long was left by a crash
COUNTED = (
    ("cube_pipeline_runs", "Pipeline runs by status and project", PipelineRun),
    ("cube_training_jobs", "Training jobs by status and project", TrainingJob),
    ("cube_tuning_experiments", "Tuning experiments by status and project", TuningExperiment),
    ("cube_deployments", "Deployments by status and project", Deployment),
)
LIVE_LABELS = ["kind", "id", "node", "project", "user"]
GPU_LABELS = [*LIVE_LABELS, "gpu", "parent_gpu", "gpu_name"]


def _project_ids(ws: Any, s: Session, caller: Caller) -> list[int] | None:
    """The projects the caller sees (None: all of them, for an admin)."""
    if caller.admin:
        return None
    return list(ws.projects.visible_ids(s, caller))


def _scoped(query: Any, column: Any, ids: list[int] | None) -> Any:
    return query if ids is None else query.where(column.in_(ids))


def view(data: dict[str, Any]) -> dict[str, Any]:
    """A saved series as the API answers it: the points (oldest first, older ones merged)."""
    series = data.get("series") or {}
    points = BoundedSeries.from_json(series).points() if series.get("fields") == FIELDS else []
    return {
        "kind": data.get("kind"),
        "id": data.get("id"),
        "node": data.get("node"),
        "running": bool(data.get("running")) and _fresh(data),
        "interval_s": data.get("interval_s"),
        "started_at": data.get("started_at"),
        "updated_at": data.get("updated_at"),
        "gpu": bool(data.get("gpu")),
        "latest": data.get("latest"),
        "peak": data.get("peak") or {},
        "fields": FIELDS,
        "points": points,
    }


def _fresh(data: dict[str, Any]) -> bool:
    interval = float(data.get("interval_s") or 1.0)
    updated = float(data.get("updated_at") or 0.0)
    return time.time() - updated < max(STALE_AFTER_S, 10 * interval)


def run_resources(ws: Any, caller: Caller, run_id: str) -> dict[str, Any]:
    """Per node of the run: its resource series (nodes that did not run have none)."""
    ws.projects.ensure_personal(caller)
    with ws.store.read() as s:
        ids = _project_ids(ws, s, caller)
        run = s.scalar(
            _scoped(
                select(PipelineRun).where(PipelineRun.id == run_id), PipelineRun.project_id, ids
            )
        )
        if run is None:
            raise NotFound(
                _t("run {run_id!r} not found", run_id=run_id),
                _t("GET /cube/api/v1/pipelines/runs lists the runs you can see."),
            )
        run_dir, status = Path(run.run_dir), run.status
    nodes = [view(d) for d in files.read_folder(run_dir / files.PIPELINE_FOLDER)]
    return {"run_id": run_id, "status": status, "nodes": {str(n["node"]): n for n in nodes}}


def job_resources(ws: Any, caller: Caller, job_id: str) -> dict[str, Any]:
    """The job's resource series (all its ranks' process trees together)."""
    ws.projects.ensure_personal(caller)
    with ws.store.read() as s:
        ids = _project_ids(ws, s, caller)
        job = s.scalar(
            _scoped(
                select(TrainingJob).where(TrainingJob.id == job_id), TrainingJob.project_id, ids
            )
        )
        if job is None:
            raise NotFound(
                _t("training job {job_id!r} not found", job_id=job_id),
                _t("GET /cube/api/v1/training/jobs lists the jobs you can see."),
            )
        job_dir, status = Path(job.job_dir), job.status
    data = files.read(files.training_file(job_dir))
    empty = {
        "kind": "training",
        "id": job_id,
        "node": None,
        "running": False,
        "gpu": False,
        "latest": None,
        "peak": {},
        "fields": FIELDS,
        "points": [],
        "interval_s": None,
        "started_at": None,
        "updated_at": None,
    }
    return {"job_id": job_id, "status": status, **(view(data) if data else empty)}


def trial_folders(folder: Path) -> list[tuple[str, dict[str, Any]]]:
    """Each trial of an experiment folder with a resource series: (trial id, the series)."""
    out = []
    for trial_dir in sorted((folder / "trials").glob("*")):
        data = files.read(files.trial_file(trial_dir))
        if data is not None:
            out.append((trial_dir.name, data))
    return out


def experiment_resources(ws: Any, caller: Caller, experiment_id: str) -> dict[str, Any]:
    """Per trial of the experiment: its resource series (trials that did not start have none;
    Katib's trials run on the cluster and have none here)."""
    ws.projects.ensure_personal(caller)
    with ws.store.read() as s:
        ids = _project_ids(ws, s, caller)
        found = s.scalar(
            _scoped(
                select(TuningExperiment).where(TuningExperiment.id == experiment_id),
                TuningExperiment.project_id,
                ids,
            )
        )
        if found is None:
            raise NotFound(
                _t("experiment {experiment_id!r} not found", experiment_id=experiment_id),
                _t("GET /cube/api/v1/tuning/experiments lists the experiments you can see."),
            )
        folder, status = Path(found.folder), found.status
    trials = {trial_id: view(data) for trial_id, data in trial_folders(folder)}
    return {"experiment_id": experiment_id, "status": status, "trials": trials}


class _Collector:
    def __init__(self, families: list[GaugeMetricFamily]) -> None:
        self.families = families

    def collect(self) -> list[GaugeMetricFamily]:
        return self.families


def prometheus_text(ws: Any, caller: Caller) -> bytes:
    """The Prometheus exposition of what the caller may see."""
    ws.projects.ensure_personal(caller)
    families: list[GaugeMetricFamily] = []
    live: list[tuple[dict[str, Any], dict[str, str]]] = []
    with ws.store.read() as s:
        ids = _project_ids(ws, s, caller)
        for name, doc, model in COUNTED:
            family = GaugeMetricFamily(name, doc, labels=["project", "status"])
            query = (
                select(Project.name, model.status, func.count())
                .join(Project, Project.id == model.project_id)
                .group_by(Project.name, model.status)
            )
            for project, status, count in s.execute(_scoped(query, model.project_id, ids)):
                family.add_metric([project, status], count)
            families.append(family)
        runs = s.execute(
            _scoped(
                select(PipelineRun.id, PipelineRun.run_dir, PipelineRun.owner, Project.name)
                .join(Project, Project.id == PipelineRun.project_id)
                .where(PipelineRun.status.in_(ACTIVE)),
                PipelineRun.project_id,
                ids,
            )
        ).all()
        jobs = s.execute(
            _scoped(
                select(TrainingJob.id, TrainingJob.job_dir, TrainingJob.owner, Project.name)
                .join(Project, Project.id == TrainingJob.project_id)
                .where(TrainingJob.status.in_(ACTIVE)),
                TrainingJob.project_id,
                ids,
            )
        ).all()
        experiments = s.execute(
            _scoped(
                select(
                    TuningExperiment.id,
                    TuningExperiment.folder,
                    TuningExperiment.owner,
                    Project.name,
                )
                .join(Project, Project.id == TuningExperiment.project_id)
                .where(TuningExperiment.status.in_(ACTIVE)),
                TuningExperiment.project_id,
                ids,
            )
        ).all()
        deployments = s.execute(
            _scoped(
                select(Deployment.id, Deployment.info, Deployment.owner, Project.name)
                .join(Project, Project.id == Deployment.project_id)
                .where(Deployment.status.in_(SERVING), Deployment.backend == "local"),
                Deployment.project_id,
                ids,
            )
        ).all()
        visible = (
            None if ids is None else set(s.scalars(select(Project.name).where(Project.id.in_(ids))))
        )
    for dep_id, info, owner, project in deployments:
        folder = Path((info or {}).get("dir") or ws.settings.data_dir / "serving" / dep_id)
        for data in files.read_folder(folder / files.DEPLOYMENT_FOLDER):
            labels = {
                "kind": "deployment",
                "id": dep_id,
                "node": str(data.get("node") or ""),
                "project": project,
                "user": owner,
            }
            live.append((data, labels))
    for data in files.read_folder(files.kernels_folder(ws.settings.data_dir)):
        meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
        project = str((meta or {}).get("project") or "")
        if data.get("kind") != "kernel" or (visible is not None and project not in visible):
            continue
        labels = {
            "kind": "kernel",
            "id": str(data.get("id") or ""),
            "node": "",
            "project": project,
            "user": str((meta or {}).get("owner") or ""),
        }
        live.append((data, labels))
    for experiment_id, folder, owner, project in experiments:
        for trial_id, data in trial_folders(Path(folder)):
            labels = {
                "kind": "trial",
                "id": experiment_id,
                "node": trial_id,
                "project": project,
                "user": owner,
            }
            live.append((data, labels))
    for run_id, run_dir, owner, project in runs:
        for data in files.read_folder(Path(run_dir) / files.PIPELINE_FOLDER):
            labels = {
                "kind": "pipeline",
                "id": run_id,
                "node": str(data.get("node") or ""),
                "project": project,
                "user": owner,
            }
            live.append((data, labels))
    for job_id, job_dir, owner, project in jobs:
        data = files.read(files.training_file(Path(job_dir)))
        if data is not None:
            labels = {
                "kind": "training",
                "id": job_id,
                "node": "",
                "project": project,
                "user": owner,
            }
            live.append((data, labels))
    families += _live_families(live)
    families.append(_gpu_hours_family(ws, caller))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(families))  # type: ignore[arg-type]
    return generate_latest(registry)


def _gpu_hours_family(ws: Any, caller: Caller) -> GaugeMetricFamily:
    from . import gpu_hours

    family = GaugeMetricFamily(
        "cube_project_gpu_hours_month",
        "GPU-hours used this calendar month (UTC) by the project's sampled objects",
        labels=["project", "month"],
    )
    month = month_of(time.time())
    for project, hours in sorted(gpu_hours.per_project(ws, caller).items()):
        family.add_metric([project, month], hours)
    return family


def _live_families(live: list[tuple[dict[str, Any], dict[str, str]]]) -> list[GaugeMetricFamily]:
    cpu = GaugeMetricFamily(
        "cube_process_cpu_percent",
        "CPU of the object's process tree, % of one core",
        labels=LIVE_LABELS,
    )
    rss = GaugeMetricFamily(
        "cube_process_resident_memory_bytes",
        "RSS summed over the object's process tree",
        labels=LIVE_LABELS,
    )
    procs = GaugeMetricFamily(
        "cube_process_count", "Processes in the object's tree", labels=LIVE_LABELS
    )
    gpu_util = GaugeMetricFamily(
        "cube_process_gpu_utilization_percent",
        "SM utilisation of the device by the object's processes (not reported on MIG)",
        labels=GPU_LABELS,
    )
    gpu_mem = GaugeMetricFamily(
        "cube_process_gpu_memory_bytes",
        "GPU memory used by the object's processes",
        labels=GPU_LABELS,
    )
    for data, labels in live:
        latest = data.get("latest")
        if not data.get("running") or not _fresh(data) or not isinstance(latest, dict):
            continue
        values = [labels[k] for k in LIVE_LABELS]
        if latest.get("cpu_percent") is not None:
            cpu.add_metric(values, float(latest["cpu_percent"]))
        rss.add_metric(values, float(latest.get("rss_bytes") or 0))
        procs.add_metric(values, float(latest.get("procs") or 0))
        for row in latest.get("gpus") or []:
            gpu_values = [
                *values,
                str(row.get("uuid")),
                str(row.get("parent") or ""),
                str(row.get("name") or ""),
            ]
            if row.get("util_percent") is not None:
                gpu_util.add_metric(gpu_values, float(row["util_percent"]))
            if row.get("memory_bytes") is not None:
                gpu_mem.add_metric(gpu_values, float(row["memory_bytes"]))
    return [cpu, rss, procs, gpu_util, gpu_mem]
