"""What runs now, as ``GET /cube/api/v1/resources`` answers it: every live sampled object the
caller may see (a pipeline run's node, a training job with all its ranks, a local tuning
trial, each replica of a local deployment, a notebook kernel of this lab server) with its
latest CPU, memory and GPU rows, each project's quota use (GPU-hours this month from
``gpu_hours``, the hub's limits from ``quota``), and this server's own CPU / memory / GPU
totals (for the status bar).

A caller sees their own objects; a hub admin may ask for everyone's (``?all=1``). Everything is read
from the store and the series files, like ``report``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
from sqlalchemy import select

from ..errors import Forbidden
from ..identity import Caller
from ..locale.messages import _t
from ..store.models import Deployment, PipelineRun, Project, TrainingJob, TuningExperiment
from . import files, gpu_hours
from . import quota as quota_mod
from .gpu import GpuReader
from .report import ACTIVE, _fresh, _project_ids, _scoped, trial_folders

log = logging.getLogger(__name__)
_gpu_reader: GpuReader | None = None


def _latest_row(data: dict[str, Any]) -> dict[str, Any]:
    latest = data.get("latest") if isinstance(data.get("latest"), dict) else {}
    assert isinstance(latest, dict)
    gpus = []
    for row in latest.get("gpus") or []:
        if isinstance(row, dict):
            gpus.append(
                {
                    "uuid": str(row.get("uuid") or ""),
                    "name": str(row.get("name") or ""),
                    "parent": row.get("parent"),
                    "memory_bytes": row.get("memory_bytes"),
                    "util_percent": row.get("util_percent"),
                }
            )
    return {
        "cpu_percent": latest.get("cpu_percent"),
        "rss_bytes": latest.get("rss_bytes"),
        "procs": latest.get("procs"),
        "gpus": gpus,
        "updated_at": data.get("updated_at"),
        "started_at": data.get("started_at"),
    }


def _live(data: dict[str, Any] | None) -> bool:
    return bool(data) and bool(data.get("running")) and _fresh(data)  # type: ignore[arg-type]


SERVING = ("starting", "running", "updating")


def kernel_files(ws: Any, caller: Caller, everyone: bool) -> list[dict[str, Any]]:
    """The lab server's kernels' files the caller may see: their own (everyone's for an
    admin's ``everyone``) in a project they are a member of."""
    found = []
    for data in files.read_folder(files.kernels_folder(ws.settings.data_dir)):
        meta = data.get("meta") if isinstance(data.get("meta"), dict) else None
        if not meta or data.get("kind") != "kernel":
            continue
        if not everyone and meta.get("owner") != caller.username:
            continue
        found.append(data)
    if caller.admin or not found:
        return found
    with ws.store.read() as s:
        ids = _project_ids(ws, s, caller) or []
        names = set(s.scalars(select(Project.name).where(Project.id.in_(ids))))
    return [d for d in found if d["meta"].get("project") in names]


def live_objects(
    ws: Any, caller: Caller, everyone: bool = False, display: Callable[[str], str] | None = None
) -> list[dict[str, Any]]:
    """The sampled objects running now that the caller may see (their own unless
    ``everyone``), newest first."""
    with ws.store.read() as s:
        ids = _project_ids(ws, s, caller)
        run_query = (
            select(
                PipelineRun.id,
                PipelineRun.run_dir,
                PipelineRun.owner,
                Project.name,
                PipelineRun.pipeline_name,
                PipelineRun.pipeline_path,
            )
            .join(Project, Project.id == PipelineRun.project_id)
            .where(PipelineRun.status.in_(ACTIVE))
        )
        job_query = (
            select(
                TrainingJob.id,
                TrainingJob.job_dir,
                TrainingJob.owner,
                Project.name,
                TrainingJob.name,
                TrainingJob.spec,
            )
            .join(Project, Project.id == TrainingJob.project_id)
            .where(TrainingJob.status.in_(ACTIVE))
        )
        exp_query = (
            select(
                TuningExperiment.id,
                TuningExperiment.folder,
                TuningExperiment.owner,
                Project.name,
                TuningExperiment.name,
            )
            .join(Project, Project.id == TuningExperiment.project_id)
            .where(TuningExperiment.status.in_(ACTIVE))
        )
        if not everyone:
            run_query = run_query.where(PipelineRun.owner == caller.username)
            job_query = job_query.where(TrainingJob.owner == caller.username)
            exp_query = exp_query.where(TuningExperiment.owner == caller.username)
        dep_query = (
            select(Deployment.id, Deployment.info, Deployment.owner, Project.name, Deployment.name)
            .join(Project, Project.id == Deployment.project_id)
            .where(Deployment.status.in_(SERVING), Deployment.backend == "local")
        )
        if not everyone:
            dep_query = dep_query.where(Deployment.owner == caller.username)
        deployments = s.execute(_scoped(dep_query, Deployment.project_id, ids)).all()
        runs = s.execute(_scoped(run_query, PipelineRun.project_id, ids)).all()
        jobs = s.execute(_scoped(job_query, TrainingJob.project_id, ids)).all()
        experiments = s.execute(_scoped(exp_query, TuningExperiment.project_id, ids)).all()
    out: list[dict[str, Any]] = []
    for run_id, run_dir, owner, project, name, path in runs:
        for data in files.read_folder(Path(run_dir) / files.PIPELINE_FOLDER):
            if not _live(data):
                continue
            out.append(
                {
                    "kind": "pipeline",
                    "id": run_id,
                    "node": str(data.get("node") or ""),
                    "name": name,
                    "path": display(path) if display else path,
                    "project": project,
                    "user": owner,
                    "gpus_requested": 0,
                    **_latest_row(data),
                }
            )
    for job_id, job_dir, owner, project, name, spec in jobs:
        data = files.read(files.training_file(Path(job_dir)))
        if data is None or not _live(data):
            continue
        spec = spec if isinstance(spec, dict) else {}
        workers = _whole(spec.get("workers"), 1)
        nproc = _whole(spec.get("nproc_per_worker"), 1)
        resources = spec.get("resources") if isinstance(spec.get("resources"), dict) else {}
        gpus = _whole((resources or {}).get("gpus"), 0)
        out.append(
            {
                "kind": "training",
                "id": job_id,
                "node": "",
                "name": name,
                "path": None,
                "project": project,
                "user": owner,
                "ranks": workers * nproc,
                "gpus_requested": workers * gpus,
                **_latest_row(data),
            }
        )
    for exp_id, folder, owner, project, name in experiments:
        for trial_id, data in trial_folders(Path(folder)):
            if not _live(data):
                continue
            out.append(
                {
                    "kind": "trial",
                    "id": exp_id,
                    "node": trial_id,
                    "name": name,
                    "path": None,
                    "project": project,
                    "user": owner,
                    "gpus_requested": 0,
                    **_latest_row(data),
                }
            )
    for dep_id, info, owner, project, name in deployments:
        folder = Path((info or {}).get("dir") or ws.settings.data_dir / "serving" / dep_id)
        for data in files.read_folder(folder / files.DEPLOYMENT_FOLDER):
            if not _live(data):
                continue
            out.append(
                {
                    "kind": "deployment",
                    "id": dep_id,
                    "node": str(data.get("node") or ""),  # the replica
                    "name": name,
                    "path": None,
                    "project": project,
                    "user": owner,
                    "gpus_requested": 0,
                    **_latest_row(data),
                }
            )
    for data in kernel_files(ws, caller, everyone):
        if not _live(data):
            continue
        meta = data["meta"]
        path = meta.get("path")
        out.append(
            {
                "kind": "kernel",
                "id": str(data.get("id") or ""),
                "node": "",
                "name": str(meta.get("name") or meta.get("kernel_name") or ""),
                "path": str(path) if path else None,
                "project": str(meta.get("project") or ""),
                "user": str(meta.get("owner") or ""),
                "gpus_requested": 0,
                **_latest_row(data),
            }
        )
    out.sort(key=lambda o: -(o.get("started_at") or 0))
    return out


def _whole(value: Any, default: int) -> int:
    try:
        return max(int(value), 0)
    except (TypeError, ValueError):
        return default


def _hub_groups(names: set[str] | None = None) -> dict[str, dict[str, Any]] | None:
    """The caller's project groups at the hub's admission service (quota and usage), or None
    outside a hub or when it cannot be asked (``quota.hub_groups``)."""
    return quota_mod.hub_groups(names)


def _accelerator_sum(values: Any) -> float | None:
    if not isinstance(values, dict) or not values:
        return None
    total = 0.0
    for amount in values.values():
        try:
            total += float(amount)
        except (TypeError, ValueError):
            continue
    return total


def project_use(
    objects: list[dict[str, Any]],
    hub_groups: dict[str, dict[str, Any]] | None,
    hours: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """Per project of ``objects`` (and of ``hours``): the GPUs its running objects hold (what
    they asked for, or the devices seen in use), its quota where the hub sets one, and the
    GPU-hours it used this month (``hours``, from ``gpu_hours.per_project``)."""
    projects: dict[str, dict[str, Any]] = {}
    for obj in objects:
        entry = projects.setdefault(
            obj["project"],
            {"project": obj["project"], "objects": 0, "_requested": 0, "_seen": set()},
        )
        entry["objects"] += 1
        entry["_requested"] += int(obj.get("gpus_requested") or 0)
        entry["_seen"].update(g["uuid"] for g in obj.get("gpus") or [])
    for name in [*(hub_groups or {}), *(hours or {})]:
        projects.setdefault(name, {"project": name, "objects": 0, "_requested": 0, "_seen": set()})
    out = []
    for name, entry in sorted(projects.items()):
        group = (hub_groups or {}).get(name) or {}
        quota = group.get("quota") if isinstance(group.get("quota"), dict) else {}
        usage = quota_mod.usage_of(group)
        limit = _accelerator_sum((quota or {}).get("accelerators"))
        reserved = sum(
            float(v) for k, v in (usage or {}).items() if "/" in k and isinstance(v, (int, float))
        )
        in_use = max(entry["_requested"], len(entry["_seen"]), int(reserved))
        hours_limit = quota_mod.gpu_hours_limit(group)
        used_hours = (hours or {}).get(name, 0.0)
        out.append(
            {
                "project": name,
                "objects": entry["objects"],
                "gpus_in_use": in_use,
                "gpu_quota": limit,
                "quota": quota or None,
                "usage": usage or None,
                # counted here; shown where a limit is set or some were used
                "gpu_hours_month": used_hours if used_hours or hours_limit is not None else None,
                "gpu_hours_limit": hours_limit,
                # every limited dimension with its use and percent (what quota.usage alerts on)
                "dimensions": [
                    {
                        "dimension": u.dimension,
                        "used": u.used,
                        "limit": u.limit,
                        "percent": round(u.percent, 1),
                    }
                    for u in quota_mod.dimensions(group, (hours or {}).get(name))
                ],
            }
        )
    return out


def _gpu_totals() -> list[dict[str, Any]]:
    global _gpu_reader
    if _gpu_reader is None:
        _gpu_reader = GpuReader()
    reader = _gpu_reader
    try:
        devices = reader.devices()
        used = reader.snapshot(None)
    except Exception as exc:
        log.debug("GPU totals: %s", exc)
        return []
    rows: dict[str, dict[str, Any]] = {
        d.uuid: {
            "uuid": d.uuid,
            "name": d.name,
            "parent": d.parent,
            "memory_bytes": 0,
            "util_percent": None,
            "processes": 0,
        }
        for d in devices
    }
    for uses in used.values():
        for use in uses:
            row = rows.get(use.uuid)
            if row is None:
                continue
            row["processes"] += 1
            row["memory_bytes"] += int(use.memory_bytes or 0)
            if use.util_percent is not None:
                row["util_percent"] = (row["util_percent"] or 0.0) + float(use.util_percent)
    return list(rows.values())


def server_totals() -> dict[str, Any]:
    """This server's CPU (% of all its cores), memory and GPUs now."""
    memory = psutil.virtual_memory()
    return {
        "cpu_percent": psutil.cpu_percent(interval=None),
        "cpu_count": psutil.cpu_count() or 1,
        "memory_used_bytes": int(memory.total - memory.available),
        "memory_total_bytes": int(memory.total),
        "gpus": _gpu_totals(),
        "time": time.time(),
    }


def resources_now(
    ws: Any, caller: Caller, everyone: bool = False, display: Callable[[str], str] | None = None
) -> dict[str, Any]:
    """The answer of ``GET /cube/api/v1/resources``; ``everyone`` is for admins only;
    ``display`` names a pipeline's file as the client does (the REST layer's)."""
    if everyone and not caller.admin:
        raise Forbidden(
            _t("only an admin sees what everyone runs"),
            _t("Leave out ?all=1 to see what you run."),
        )
    ws.projects.ensure_personal(caller)
    objects = live_objects(ws, caller, everyone, display)
    hours = gpu_hours.per_project(ws, caller)
    if not everyone:  # the caller's own view: the projects they are a member of
        with ws.store.read() as s:
            mine = set(
                s.scalars(
                    select(Project.name).where(Project.id.in_(ws.projects.visible_ids(s, caller)))
                )
            )
        hours = {k: v for k, v in hours.items() if k in mine}
        groups = _hub_groups(mine)
    else:
        groups = _hub_groups()
    return {
        "all": everyone,
        "admin": bool(caller.admin),
        "objects": objects,
        "projects": project_use(objects, groups, hours),
        "server": server_totals(),
    }
