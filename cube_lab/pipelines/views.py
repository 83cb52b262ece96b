"""What the pipeline service hands out (serialized by ``cube_lab.serialize``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..serialize import aware
from ..store.models import NodeRun, PipelineRun


def _duration(start: datetime | None, end: datetime | None) -> float | None:
    if start is None:
        return None
    return round(
        ((aware(end) if end else datetime.now(aware(start).tzinfo)) - aware(start)).total_seconds(),
        3,
    )


@dataclass(frozen=True)
class NodeRunView:
    id: str
    label: str
    kind: str
    status: str
    attempts: int
    exit_code: int | None
    started_at: datetime | None
    finished_at: datetime | None
    duration_s: float | None
    values: dict[str, Any]
    outputs: list[str]
    reused_from: str | None
    error: str | None

    @classmethod
    def of(cls, row: NodeRun) -> NodeRunView:
        files = (row.outputs or {}).get("files", [])
        return cls(
            row.node_id,
            row.label,
            row.kind,
            row.status,
            row.attempts,
            row.exit_code,
            aware(row.started_at) if row.started_at else None,
            aware(row.finished_at) if row.finished_at else None,
            _duration(row.started_at, row.finished_at) if row.status != "pending" else None,
            dict(row.values or {}),
            [f["path"] for f in files],
            row.reused_from,
            row.error,
        )


@dataclass(frozen=True)
class RunView:
    id: str
    project: str
    pipeline: str
    pipeline_path: str
    status: str
    trigger: str
    owner: str
    options: dict[str, Any]
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    duration_s: float | None
    counts: dict[str, int]
    nodes: list[NodeRunView] | None = None

    @classmethod
    def of(
        cls, row: PipelineRun, project: str, display_path: str, with_nodes: bool = False
    ) -> RunView:
        counts: dict[str, int] = {}
        for node in row.nodes:
            counts[node.status] = counts.get(node.status, 0) + 1
        return cls(
            row.id,
            project,
            row.pipeline_name,
            display_path,
            row.status,
            row.trigger,
            row.owner,
            dict(row.options or {}),
            row.error,
            aware(row.created_at),
            aware(row.started_at) if row.started_at else None,
            aware(row.finished_at) if row.finished_at else None,
            _duration(row.started_at, row.finished_at),
            counts,
            [NodeRunView.of(n) for n in row.nodes] if with_nodes else None,
        )


@dataclass(frozen=True)
class ResultFile:
    name: str
    path: str  # relative to the node's run folder
    kind: str  # image | table | json | echarts | notebook | text | file
    size_bytes: int
