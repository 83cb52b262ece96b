"""What the registry hands out: plain dataclasses, serialized by ``cube_lab.serialize``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..serialize import aware
from ..store.models import ModelVersion, RegisteredModel


@dataclass(frozen=True)
class Lineage:
    source: str | None
    pipeline_run_id: str | None
    training_job_id: str | None
    # the dataset versions it was trained on: [{"project", "name", "version", "path"}]
    datasets: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class VersionView:
    id: int
    project: str
    model: str
    version: int
    flavor: str
    format: str
    artifact_name: str
    description: str
    params: dict[str, Any]
    metrics: dict[str, Any]
    tags: dict[str, Any]
    aliases: list[str]
    archived: bool
    lineage: Lineage
    created_by: str
    created_at: datetime
    size_bytes: int
    checksum: str

    @classmethod
    def of(cls, row: ModelVersion, project: str, model: str, aliases: list[str]) -> VersionView:
        return cls(
            id=row.id,
            project=project,
            model=model,
            version=row.version,
            flavor=row.flavor,
            format=row.format,
            artifact_name=row.artifact_name,
            description=row.description,
            params=dict(row.params or {}),
            metrics=dict(row.metrics or {}),
            tags=dict(row.tags or {}),
            aliases=sorted(aliases),
            archived=row.archived,
            lineage=Lineage(
                row.source,
                row.pipeline_run_id,
                row.training_job_id,
                [dict(d) for d in row.datasets or []],
            ),
            created_by=row.created_by,
            created_at=aware(row.created_at),
            size_bytes=row.size_bytes,
            checksum=row.checksum,
        )


@dataclass(frozen=True)
class ModelView:
    id: int
    project: str
    name: str
    description: str
    owner: str
    archived: bool
    created_at: datetime
    updated_at: datetime
    latest_version: int | None
    version_count: int
    flavor: str | None
    aliases: dict[str, int]
    read_only: bool  # course material: only its owner (or an admin) changes it

    @classmethod
    def of(
        cls,
        row: RegisteredModel,
        project: str,
        latest: int | None,
        count: int,
        flavor: str | None,
        aliases: dict[str, int],
    ) -> ModelView:
        return cls(
            id=row.id,
            project=project,
            name=row.name,
            description=row.description,
            owner=row.owner,
            archived=row.archived,
            created_at=aware(row.created_at),
            updated_at=aware(row.updated_at),
            latest_version=latest,
            version_count=count,
            flavor=flavor,
            aliases=dict(sorted(aliases.items())),
            read_only=bool(row.read_only),
        )


@dataclass(frozen=True)
class ModelDetail(ModelView):
    versions: list[VersionView] = field(default_factory=list)


@dataclass(frozen=True)
class ModelPage:
    models: list[ModelView]
    total: int
    limit: int
    offset: int


@dataclass(frozen=True)
class Comparison:
    versions: list[VersionView]
    metrics: list[str]
    params: list[str]


@dataclass(frozen=True)
class Download:
    path: Any  # pathlib.Path of the stored file or folder
    filename: str
    is_dir: bool
