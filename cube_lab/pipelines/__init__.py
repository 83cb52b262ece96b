"""Pipelines: Elyra-compatible files, validation, the local parallel runner, KFP, schedules."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..sdk.pipelines import Run


def run(
    path: Any, params: Any = None, only: Any = None, cache: Any = None, project: Any = None
) -> Run:
    """``cl.pipelines.run(path, params=..., only=..., cache=...)``: see ``cube_lab.sdk``."""
    from ..sdk.pipelines import run as _run

    return _run(path, params=params, only=only, cache=cache, project=project)


def runs(path: Any = None, project: Any = None, limit: int = 50) -> list[Run]:
    """``cl.pipelines.runs(...)``: recent runs, newest first."""
    from ..sdk.pipelines import runs as _runs

    return _runs(path, project=project, limit=limit)


def get(run_id: str) -> Run:
    """``cl.pipelines.get(run_id)``: the run as a ``Run`` handle."""
    from ..sdk.pipelines import get as _get

    return _get(run_id)
