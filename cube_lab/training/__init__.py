"""Distributed training: job specs, the local launcher, Kubernetes manifests, metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..sdk.training import Job


def jobs(project: str | None = None, limit: int = 50) -> list[Job]:
    """``cl.training.jobs()``: recent training jobs, newest first (see ``cube_lab.sdk``)."""
    from ..sdk.training import training

    return training.jobs(project, limit)


def get(job_id: str) -> Job:
    """``cl.training.get(job_id)``: the job as a ``Job`` handle."""
    from ..sdk.training import training

    return training.get(job_id)
