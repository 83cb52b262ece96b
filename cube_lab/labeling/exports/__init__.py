"""Exports of a labeling project's results, each written into a fresh folder that becomes a
dataset version: COCO and YOLO (with the images copied beside the labels, so the version is
a self-contained snapshot a training job can read), Label Studio JSON, CSV and JSONL."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ... import containment
from ...errors import InvalidInput
from ...locale.messages import _t
from ...serialize import aware
from ...store.models import DatasetItem, LabelingTask

FORMATS = ("coco", "yolo", "labelstudio", "csv", "jsonl")
# which task types each format can carry
SUPPORTS = {
    "coco": ("image-class", "image-bbox"),
    "yolo": ("image-bbox",),
    "labelstudio": ("image-class", "image-bbox", "text-class", "text-ner"),
    "csv": ("image-class", "image-bbox", "text-class", "text-ner"),
    "jsonl": ("image-class", "image-bbox", "text-class", "text-ner"),
}


# Class ids: "declared" numbers the labels in label-set order (COCO from 1, YOLO from 0);
# "alphabetical" sorts the names and numbers them from 0 in both, as Label Studio's converter
# (label-studio-converter, label_studio_sdk.converter) does, so the ids match its exports.
CLASS_ORDERS = ("declared", "alphabetical")
# the formats whose files number the classes (CSV and JSONL name the labels)
CLASS_ORDER_FORMATS = ("coco", "yolo", "labelstudio")


def check_class_order(order: object, fmt: str) -> str:
    if order is None:
        return "declared"
    if order not in CLASS_ORDERS:
        raise InvalidInput(
            _t("unknown class_order {order!r}", order=order),
            _t(
                'Use "declared" (label-set order, the default) or "alphabetical" (sorted '
                "names numbered from 0, as Label Studio's converter numbers them)."
            ),
        )
    if order != "declared" and fmt not in CLASS_ORDER_FORMATS:
        raise InvalidInput(
            _t("class_order does not apply to {fmt}", fmt=fmt),
            _t(
                "{fmt} names each label; class_order numbers the classes of {value} exports.",
                fmt=fmt,
                value=", ".join(CLASS_ORDER_FORMATS),
            ),
        )
    return str(order)


def ordered_labels(labels: list[str], order: str) -> list[str]:
    """The classes in id order: label-set order, or sorted as Label Studio sorts them (by code
    point, as Python's ``sorted``: upper case before lower case)."""
    return sorted(labels) if order == "alphabetical" else list(labels)


@dataclass
class Row:
    """One task with its item, detached from the database session."""

    task_id: int
    index: int
    item_id: int
    name: str
    width: int | None
    height: int | None
    text: str | None
    meta: dict[str, Any] | None
    status: str
    assignee: str | None
    reviewer: str | None
    result: dict[str, Any] | None
    prediction: dict[str, Any] | None
    prediction_model: str | None
    updated_at: datetime

    @classmethod
    def of(cls, task: LabelingTask, item: DatasetItem) -> Row:
        return cls(
            task.id,
            item.position,
            item.id,
            item.name,
            item.width,
            item.height,
            item.text,
            item.meta,
            task.status,
            task.assignee,
            task.reviewer,
            task.result,
            task.prediction,
            task.prediction_model,
            aware(task.updated_at),
        )


@dataclass
class ExportJob:
    labeling: str
    task_type: str
    multi_label: bool
    labels: list[str]
    source: Path  # the dataset's folder of images or its text file
    rows: list[Row]
    content_url: Callable[[int], str]
    class_order: str = "declared"  # labels is already in this order; see CLASS_ORDERS


def check_format(fmt: object, task_type: str) -> str:
    if fmt not in FORMATS:
        raise InvalidInput(
            _t("unknown export format {fmt!r}", fmt=fmt),
            _t("Use one of {value}.", value=", ".join(FORMATS)),
        )
    if task_type not in SUPPORTS[str(fmt)]:
        fits = [f for f in FORMATS if task_type in SUPPORTS[f]]
        raise InvalidInput(
            _t("{fmt} cannot hold {task_type} labels", fmt=fmt, task_type=task_type),
            _t(
                "For {task_type} export one of: {value}.",
                task_type=task_type,
                value=", ".join(fits),
            ),
        )
    return str(fmt)


def copy_images(job: ExportJob, folder: Path) -> None:
    """The job's images under ``folder``, at their paths relative to the dataset folder."""
    made: set[Path] = set()
    for row in job.rows:
        source = containment.real(job.source / row.name)
        if not containment.is_inside(source, job.source) or not source.is_file():
            raise InvalidInput(
                _t("image {name} is missing from {source}", name=row.name, source=job.source),
                _t("Restore it (the dataset refers to its files; it does not keep copies)."),
            )
        target = folder / row.name
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        containment.copy_file(source, target, job.source)  # checked again as it is read


def write(fmt: str, job: ExportJob, folder: Path) -> str:
    """Write the export into ``folder``; returns the file the version points at ("" = the
    folder itself)."""
    if fmt == "coco":
        from . import coco

        return coco.write(job, folder)
    if fmt == "yolo":
        from . import yolo

        return yolo.write(job, folder)
    if fmt == "labelstudio":
        from . import labelstudio

        return labelstudio.write(job, folder)
    from . import tabular

    return tabular.write(fmt, job, folder)
