"""Quota admission for training jobs: under the hub, the hub's admission service decides.

A lab server spawned by the cube-lab hub has ``$CUBE_HUB_ADMIN_URL`` and a hub token; a job
there reserves its whole demand (every worker's GPUs, CPU and memory) for its project
before anything is recorded or started, and gives it back when it ends. Outside a hub
(the embedded single-user shape) there are no quotas and nothing is asked.
"""

from __future__ import annotations

from typing import Any

from .. import quota
from ..identity import Caller
from .spec import JobSpec

_BASE = ("cpu", "memory")


def demand(spec: JobSpec) -> dict[str, Any]:
    """The job's whole demand: per-worker limits times the workers."""
    limits = spec.resources.limits()
    accelerators = {k: str(int(v) * spec.workers) for k, v in limits.items() if k not in _BASE}
    out: dict[str, Any] = {"accelerators": accelerators}
    if limits.get("cpu"):
        from ..hub.units import parse_cpu

        out["cpu"] = parse_cpu(limits["cpu"]) * spec.workers
    if limits.get("memory"):
        from ..hub.units import parse_memory

        out["memory"] = parse_memory(limits["memory"]) * spec.workers
    return out


def hub_admission(caller: Caller, project: str, spec: JobSpec, job_id: str) -> Any:
    """Reserve the job's demand (raises QuotaExceeded with the sentence to show); the
    reservation to release when the job ends, or None outside a hub."""
    return quota.reserve(project, f"training/{job_id}", **demand(spec))


release = quota.release
