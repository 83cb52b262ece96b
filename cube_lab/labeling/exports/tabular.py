"""CSV and JSONL: one row per task, ready for pandas or a training script.

Columns: ``index``, ``name``, the text (texts) or ``width``/``height`` (images), then the
answer: ``label`` for single-label classification, ``labels`` for multi-label (joined by
``|`` in CSV), ``boxes`` / ``spans`` (JSON in CSV), then ``status`` and ``annotator``.
A text dataset's other columns (its items' meta) follow.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from . import ExportJob, Row


def record(job: ExportJob, row: Row) -> dict[str, Any]:
    out: dict[str, Any] = {"index": row.index, "name": row.name}
    if row.text is not None:
        out["text"] = row.text
    else:
        out["width"], out["height"] = row.width, row.height
    result = row.result or {}
    if job.task_type.endswith("-class"):
        labels = list(result.get("labels", []))
        if job.multi_label:
            out["labels"] = labels
        else:
            out["label"] = labels[0] if labels else None
    elif job.task_type == "image-bbox":
        out["boxes"] = result.get("boxes", [])
    else:
        out["spans"] = result.get("spans", [])
    out["status"] = row.status
    out["annotator"] = row.assignee
    for key, value in (row.meta or {}).items():
        out.setdefault(key, value)
    return out


def _cell(key: str, value: Any) -> Any:
    if key == "labels" and isinstance(value, list):
        return "|".join(value)
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else value


def write(fmt: str, job: ExportJob, folder: Path) -> str:
    records = [record(job, row) for row in job.rows]
    if fmt == "jsonl":
        target = folder / "labels.jsonl"
        with open(target, "w", encoding="utf-8") as fh:
            for rec in records:
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
        return target.name
    target = folder / "labels.csv"
    columns: list[str] = []
    for rec in records:
        columns.extend(k for k in rec if k not in columns)
    with open(target, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for rec in records:
            writer.writerow({k: _cell(k, v) for k, v in rec.items()})
    return target.name
