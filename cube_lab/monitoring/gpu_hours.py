"""GPU-hours this calendar month (UTC), per project, from the sampled series.

Each sampler tick adds the GPUs an object holds (the distinct devices its processes use, a MIG
instance counting as one) times the tick's interval to ``gpu_seconds[<YYYY-MM>]`` of the
object's file (``monitor.Watch``), so a month boundary splits a long job exactly. A file from
before that map (``gpu_seconds`` absent) is counted from its series: the points with GPU figures
inside the month, one GPU each (their device count was not kept).

Counted: training jobs, pipeline run nodes, tuning trials and deployment replicas that were
active this month (not finished before it began), and the lab server's notebook kernels. This is
what the lab side measured, not the hub's ledger (which counts what servers and jobs reserved).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import or_, select

from ..identity import Caller
from ..store.models import Deployment, PipelineRun, Project, TrainingJob, TuningExperiment
from . import files
from .monitor import month_of
from .report import _project_ids, _scoped, trial_folders
from .series import FIELDS, BoundedSeries

_GPU_UTIL, _GPU_MEM = FIELDS.index("gpu_util_percent"), FIELDS.index("gpu_memory_bytes")


def month_start(now: float) -> datetime:
    at = datetime.fromtimestamp(now, UTC)
    return datetime(at.year, at.month, 1, tzinfo=UTC)


def seconds_in_month(data: dict[str, Any], month: str) -> float:
    """The GPU-seconds ``data`` (one object's file) holds in ``month`` (``"2026-12"``)."""
    saved = data.get("gpu_seconds")
    if isinstance(saved, dict):
        value = saved.get(month)
        ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
        return float(value) if ok else 0.0
    series = data.get("series")
    if not isinstance(series, dict) or series.get("fields") != FIELDS:
        return 0.0
    total = 0.0
    for point in BoundedSeries.from_json(series).points():
        if point[_GPU_UTIL] is None and point[_GPU_MEM] is None:
            continue
        if month_of(float(point[0])) == month:
            total += float(point[1] or 0.0)
    return total


def _files(ws: Any, caller: Caller, since: datetime) -> Iterator[tuple[str, dict[str, Any]]]:
    """(project, file) of every sampled object the caller's projects ran since ``since``."""
    with ws.store.read() as s:
        ids = _project_ids(ws, s, caller)

        def active(model: Any, end: Any, *cols: Any) -> list[Any]:
            query = (
                select(*cols, Project.name)
                .join(Project, Project.id == model.project_id)
                .where(or_(end.is_(None), end >= since))
            )
            return list(s.execute(_scoped(query, model.project_id, ids)).all())

        jobs = active(TrainingJob, TrainingJob.finished_at, TrainingJob.job_dir)
        runs = active(PipelineRun, PipelineRun.finished_at, PipelineRun.run_dir)
        experiments = active(
            TuningExperiment, TuningExperiment.finished_at, TuningExperiment.folder
        )
        deployments = active(Deployment, Deployment.stopped_at, Deployment.id, Deployment.info)
        visible = None if ids is None else set(s.scalars(select(Project.name).where(
            Project.id.in_(ids))))  # fmt: skip
    for job_dir, project in jobs:
        data = files.read(files.training_file(Path(job_dir)))
        if data is not None:
            yield project, data
    for run_dir, project in runs:
        for data in files.read_folder(Path(run_dir) / files.PIPELINE_FOLDER):
            yield project, data
    for folder, project in experiments:
        for _, data in trial_folders(Path(folder)):
            yield project, data
    for dep_id, info, project in deployments:
        folder = Path((info or {}).get("dir") or ws.settings.data_dir / "serving" / dep_id)
        for data in files.read_folder(folder / files.DEPLOYMENT_FOLDER):
            yield project, data
    for data in files.read_folder(files.kernels_folder(ws.settings.data_dir)):
        meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
        project = str((meta or {}).get("project") or "")
        if project and (visible is None or project in visible):
            yield project, data


def per_project(ws: Any, caller: Caller, now: float | None = None) -> dict[str, float]:
    """GPU-hours of this calendar month (UTC) per project the caller sees (projects that used
    none are left out)."""
    at = time.time() if now is None else now
    month = month_of(at)
    out: dict[str, float] = {}
    for project, data in _files(ws, caller, month_start(at)):
        seconds = seconds_in_month(data, month)
        if seconds > 0:
            out[project] = out.get(project, 0.0) + seconds / 3600.0
    return {k: round(v, 4) for k, v in out.items()}
