"""What the labeling services return: plain dataclasses (and dicts for items, whose
optional fields are left out, not null) that serialize to the REST contract."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

from ..serialize import aware
from ..store.models import Dataset, DatasetItem, DatasetVersion, LabelingProject, LabelingTask

API = "/cube/api/v1"


def dataset_url(project: str, dataset: str, *rest: object) -> str:
    parts = ["projects", project, "datasets", dataset, *map(str, rest)]
    return API + "/" + "/".join(quote(p, safe="") for p in parts)


@dataclass
class VersionView:
    version: int
    created_at: datetime
    format: str
    labeling: str
    path: str
    item_count: int
    origin: str | None = None  # a copy's original, "<project>/<dataset>:v<N>"

    @classmethod
    def of(cls, row: DatasetVersion) -> VersionView:
        return cls(
            row.version, row.created_at, row.format, row.labeling, row.path, row.item_count,
            row.origin,
        )  # fmt: skip


@dataclass
class DatasetView:
    id: int
    project: str
    name: str
    kind: str
    source: str
    item_count: int
    owner: str
    created_at: datetime
    versions: list[VersionView] = field(default_factory=list)
    read_only: bool = False  # course material: only its owner (or an admin) adds versions

    @classmethod
    def of(cls, row: Dataset, project: str) -> DatasetView:
        return cls(
            row.id,
            project,
            row.name,
            row.kind,
            row.source,
            row.item_count,
            row.owner,
            row.created_at,
            [VersionView.of(v) for v in row.versions],
            bool(row.read_only),
        )


def item_view(item: DatasetItem, project: str, dataset: str, kind: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": item.id,
        "kind": "image" if kind == "images" else "text",
        "name": item.name,
    }
    if kind == "images":
        out["width"], out["height"] = item.width, item.height
    else:
        out["text"] = item.text
        out["meta"] = item.meta or {}
    out["content_url"] = dataset_url(project, dataset, "items", item.id, "content")
    return out


@dataclass
class TaskView:
    id: int
    index: int
    status: str
    assignee: str | None
    item: dict[str, Any]
    result: dict[str, Any] | None
    prediction: dict[str, Any] | None
    prediction_model: str | None
    review_comment: str | None
    reviewer: str | None
    updated_at: datetime

    @classmethod
    def of(
        cls, task: LabelingTask, item: DatasetItem, project: str, dataset: str, kind: str
    ) -> TaskView:
        return cls(
            task.id,
            item.position,
            task.status,
            task.assignee,
            item_view(item, project, dataset, kind),
            task.result,
            task.prediction,
            task.prediction_model,
            task.review_comment,
            task.reviewer,
            aware(task.updated_at),
        )


@dataclass
class UserProgress:
    assigned: int = 0
    submitted: int = 0
    accepted: int = 0
    rejected: int = 0


@dataclass
class Progress:
    total: int = 0
    new: int = 0
    assigned: int = 0
    submitted: int = 0
    accepted: int = 0
    rejected: int = 0
    prelabeled: int = 0
    by_user: dict[str, UserProgress] = field(default_factory=dict)
    by_label: dict[str, int] = field(default_factory=dict)


@dataclass
class LabelingView:
    id: int
    project: str
    name: str
    dataset: str
    type: str
    multi_label: bool
    labels: list[dict[str, str]]
    instructions: str
    review: bool
    reviewers: list[str]
    owner: str
    created_at: datetime
    progress: Progress | None = None

    @classmethod
    def of(
        cls, row: LabelingProject, project: str, dataset: str, progress: Progress | None = None
    ) -> LabelingView:
        return cls(
            row.id,
            project,
            row.name,
            dataset,
            row.type,
            row.multi_label,
            list(row.labels),
            row.instructions,
            row.review,
            list(row.reviewers or []),
            row.owner,
            row.created_at,
            progress,
        )


@dataclass
class ExportView:
    dataset: str
    version: VersionView
    download_url: str


@dataclass
class FileDownload:
    """A file or folder to send; folders go out as a zip."""

    path: Any  # pathlib.Path
    filename: str
    is_dir: bool
