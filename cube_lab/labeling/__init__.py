"""Data labeling: datasets of images or texts, labeling projects with a shared task queue,
review, model pre-labels and standard exports (COCO, YOLO, Label Studio, CSV / JSONL).

``dataset_service.DatasetService`` and ``service.LabelingService`` are the entry points;
they are imported from there (the workspace builds them) so importing this package is cheap.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..sdk.labeling import LabelingProject


class _Package(types.ModuleType):
    """This package, whose ``progress`` stays the SDK function below when the ``progress``
    submodule loads (the import system would put the module there): the service imports it
    by its full name (``from .progress import progress``), which does not need the attribute."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "progress" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


# ``cl.labeling.create/get/assign/progress/export/projects``: the SDK's (cube_lab.sdk.labeling)


def create(name: str, dataset: str, type: str, labels: Any, project: Any = None, **kw: Any) -> Any:
    """``cl.labeling.create(name, dataset, type, labels, ...)``: see ``cube_lab.sdk.labeling``."""
    from ..sdk import labeling

    return labeling.create(name, dataset, type, labels, project, **kw)


def get(name: str, project: Any = None) -> LabelingProject:
    """``cl.labeling.get(name)``: a ``LabelingProject`` handle."""
    from ..sdk import labeling

    return labeling.get(name, project)


def projects(project: Any = None) -> list[LabelingProject]:
    """``cl.labeling.projects()``: the labeling projects you can see."""
    from ..sdk import labeling

    return labeling.list(project)


def assign(name: str, users: Any, mode: str = "round_robin", **kw: Any) -> dict[str, int]:
    """``cl.labeling.assign(name, users)``: how many tasks each user got."""
    from ..sdk import labeling

    return labeling.assign(name, users, mode, **kw)


def progress(name: str, project: Any = None) -> dict[str, Any]:
    """``cl.labeling.progress(name)``: the counts, per person and per label."""
    from ..sdk import labeling

    return labeling.progress(name, project)


def export(name: str, format: str, **kw: Any) -> dict[str, Any]:
    """``cl.labeling.export(name, "coco")``: the dataset version written."""
    from ..sdk import labeling

    return labeling.export(name, format, **kw)
