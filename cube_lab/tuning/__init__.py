"""Hyperparameter tuning: NNI-style experiments run locally, Katib experiments on a cluster."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..sdk.tuning import Experiment


def experiments(project: str | None = None, limit: int = 50) -> list[Experiment]:
    """``cl.tuning.experiments()``: recent experiments, newest first (see ``cube_lab.sdk``)."""
    from ..sdk.tuning import tuning

    return tuning.experiments(project, limit)


def get(experiment_id: str) -> Experiment:
    """``cl.tuning.get(experiment_id)``: the experiment as an ``Experiment`` handle."""
    from ..sdk.tuning import tuning

    return tuning.get(experiment_id)
