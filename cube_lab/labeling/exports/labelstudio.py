"""Label Studio JSON: export our tasks as Label Studio tasks, and import Label Studio tasks
(its JSON export) into a labeling project.

Region shapes follow Label Studio's: ``choices`` for classification,
``rectanglelabels`` with x/y/width/height in percent of the image for boxes, ``labels``
with character offsets for spans. Human answers are ``annotations``, model output is
``predictions`` (with scores); both travel both ways, never mixed.

On import a Label Studio task is matched to an item by ``data.cube_item`` (our exports
carry it), else by file name (``data.name`` or the path in ``data.image``, the 8-hex
upload prefix Label Studio adds stripped), else by equal text.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from ...errors import InvalidInput
from ...identity import Caller
from ...store.models import DatasetItem, LabelingTask, utcnow
from ..annotations import Target, check_result
from . import ExportJob, Row

if TYPE_CHECKING:
    from ..service import Context

TASKS_FILE = "tasks.json"
# task type -> (from_name, to_name, region type, value key)
CONTROLS = {
    "image-class": ("choice", "image", "choices", "choices"),
    "image-bbox": ("label", "image", "rectanglelabels", "rectanglelabels"),
    "text-class": ("choice", "text", "choices", "choices"),
    "text-ner": ("label", "text", "labels", "labels"),
}
_UPLOAD_PREFIX = re.compile(r"^[0-9a-f]{8}-")
_SHOW = 10


# -- export ----------------------------------------------------------------------------------


def regions(task_type: str, answer: dict[str, Any], row: Row, prefix: str) -> list[dict[str, Any]]:
    """Our result (or prediction) as Label Studio result regions."""
    from_name, to_name, kind, key = CONTROLS[task_type]
    base = {"from_name": from_name, "to_name": to_name, "type": kind}
    out: list[dict[str, Any]] = []
    if "labels" in answer:
        if answer["labels"]:
            region: dict[str, Any] = {
                "id": f"{prefix}0",
                **base,
                "value": {key: list(answer["labels"])},
            }
            scores = answer.get("scores") or {}
            if scores:
                region["score"] = max(scores.get(label, 0.0) for label in answer["labels"])
            out.append(region)
        return out
    width, height = row.width or 1, row.height or 1
    for i, box in enumerate(answer.get("boxes", [])):
        region = {
            "id": f"{prefix}{i}",
            **base,
            "original_width": width,
            "original_height": height,
            "image_rotation": 0,
            "value": {
                "x": box["x"] / width * 100,
                "y": box["y"] / height * 100,
                "width": box["w"] / width * 100,
                "height": box["h"] / height * 100,
                "rotation": 0,
                key: [box["label"]],
            },
        }
        if "score" in box:
            region["score"] = box["score"]
        out.append(region)
    for i, span in enumerate(answer.get("spans", [])):
        value = {"start": span["start"], "end": span["end"], "text": span["text"]}
        region = {"id": f"{prefix}{i}", **base, "value": {**value, key: [span["label"]]}}
        if "score" in span:
            region["score"] = span["score"]
        out.append(region)
    return out


def task_json(job: ExportJob, row: Row) -> dict[str, Any]:
    data: dict[str, Any] = {"cube_item": row.item_id, "name": row.name}
    if row.text is not None:
        data["text"] = row.text
        data.update({k: v for k, v in (row.meta or {}).items() if k not in data})
    else:
        data["image"] = job.content_url(row.item_id)
    stamp = row.updated_at.isoformat()
    out: dict[str, Any] = {
        "id": row.task_id,
        "data": data,
        "annotations": [],
        "predictions": [],
        "meta": {"status": row.status, "reviewer": row.reviewer},
        "created_at": stamp,
        "updated_at": stamp,
    }
    if row.result is not None:
        out["annotations"].append(
            {
                "id": row.task_id,
                "completed_by": row.assignee,
                "result": regions(job.task_type, row.result, row, f"a{row.task_id}-"),
                "was_cancelled": False,
                "ground_truth": row.status == "accepted",
                "created_at": stamp,
                "updated_at": stamp,
            }
        )
    if row.prediction is not None:
        result = regions(job.task_type, row.prediction, row, f"p{row.task_id}-")
        scores = [r["score"] for r in result if "score" in r]
        out["predictions"].append(
            {
                "model_version": row.prediction_model or "",
                "score": sum(scores) / len(scores) if scores else None,
                "result": result,
            }
        )
    return out


def write(job: ExportJob, folder: Path) -> str:
    tasks = [task_json(job, row) for row in job.rows]
    (folder / TASKS_FILE).write_text(json.dumps(tasks, indent=1, ensure_ascii=False))
    return TASKS_FILE


# -- import ----------------------------------------------------------------------------------


def _value(region: dict[str, Any], where: str) -> dict[str, Any]:
    value = region.get("value")
    if not isinstance(value, dict):
        raise InvalidInput(f"{where}: a region has no value object")
    return value


def _percent(value: dict[str, Any], key: str, where: str) -> float:
    number = value.get(key)
    if isinstance(number, bool) or not isinstance(number, int | float):
        raise InvalidInput(f"{where}: rectangle {key} must be a number (percent)")
    return float(number)


def parse_regions(
    task_type: str, result: object, item: DatasetItem, where: str, default_score: float | None
) -> dict[str, Any]:
    """Label Studio regions -> our result shape (``default_score``: read scores too)."""
    if not isinstance(result, list):
        raise InvalidInput(f"{where}: result must be a list of regions")
    _, _, kind, key = CONTROLS[task_type]
    scored = default_score is not None
    labels: list[str] = []
    scores: dict[str, float] = {}
    entries: list[dict[str, Any]] = []
    for region in result:
        if not isinstance(region, dict) or region.get("type") != kind:
            continue  # other controls (ratings, text areas) carry nothing we label
        value = _value(region, where)
        names = value.get(key)
        if not isinstance(names, list):
            raise InvalidInput(f"{where}: a {kind} region needs value.{key} (a list)")
        score = region.get("score", default_score) if scored else None
        if kind == "choices":
            for name in names:
                if name not in labels:
                    labels.append(name)
                if scored:
                    scores[name] = score
            continue
        if kind == "rectanglelabels":
            if value.get("rotation") not in (None, 0, 0.0):
                raise InvalidInput(f"{where}: rotated boxes cannot be imported")
            width = region.get("original_width") or item.width or 0
            height = region.get("original_height") or item.height or 0
            box = {
                "x": round(_percent(value, "x", where) * width / 100, 4),
                "y": round(_percent(value, "y", where) * height / 100, 4),
                "w": round(_percent(value, "width", where) * width / 100, 4),
                "h": round(_percent(value, "height", where) * height / 100, 4),
            }
            entries.extend({"label": name, **box} for name in names)
        else:
            span = {k: value.get(k) for k in ("start", "end")}
            if "text" in value:
                span["text"] = value["text"]
            entries.extend({"label": name, **span} for name in names)
        if scored:
            for entry in entries[len(entries) - len(names) :]:
                entry["score"] = score
    if kind == "choices":
        return {"labels": labels, **({"scores": scores} if scored else {})}
    return {"boxes" if kind == "rectanglelabels" else "spans": entries}


class _Matcher:
    """Finds the item a Label Studio task is about."""

    def __init__(self, rows: list[tuple[LabelingTask, DatasetItem]]) -> None:
        self.by_id = {item.id: (task, item) for task, item in rows}
        self.by_name = {item.name: (task, item) for task, item in rows}
        self.by_base: dict[str, list[tuple[LabelingTask, DatasetItem]]] = defaultdict(list)
        self.by_text: dict[str, list[tuple[LabelingTask, DatasetItem]]] = defaultdict(list)
        for task, item in rows:
            self.by_base[PurePosixPath(item.name).name].append((task, item))
            if item.text is not None:
                self.by_text[item.text].append((task, item))

    def find(self, data: dict[str, Any]) -> tuple[LabelingTask, DatasetItem] | None:
        item_id = data.get("cube_item")
        if isinstance(item_id, int) and item_id in self.by_id:
            return self.by_id[item_id]
        if isinstance(data.get("name"), str) and data["name"] in self.by_name:
            return self.by_name[data["name"]]
        if isinstance(data.get("text"), str):
            texts = self.by_text.get(data["text"], [])
            return texts[0] if len(texts) == 1 else None
        ref = data.get("image") or next((v for v in data.values() if isinstance(v, str)), None)
        if not isinstance(ref, str):
            return None
        path = unquote(urlparse(ref).path if "://" in ref else ref.split("?")[0])
        parts = [p for p in path.split("/") if p]
        for k in range(len(parts)):
            hit = self.by_name.get("/".join(parts[k:]))
            if hit:
                return hit
        if not parts:
            return None
        for base in (parts[-1], _UPLOAD_PREFIX.sub("", parts[-1])):
            candidates = self.by_base.get(base, [])
            if len(candidates) == 1:
                return candidates[0]
        return None


def _last(entries: object, where: str) -> dict[str, Any] | None:
    if entries is None:
        return None
    if not isinstance(entries, list):
        raise InvalidInput(f"{where} must be a list")
    kept = [e for e in entries if isinstance(e, dict) and not e.get("was_cancelled")]
    return kept[-1] if kept else None


def apply_import(
    ctx: Context,
    caller: Caller,
    data: list[Any],
    rows: list[tuple[LabelingTask, DatasetItem]],
) -> dict[str, Any]:
    """Write each matched task's last annotation as its result (status submitted) and its
    last prediction as its prediction; all or nothing (the caller's transaction)."""
    matcher = _Matcher(rows)
    task_type = ctx.type
    imported, unmatched, skipped = 0, [], []
    for n, entry in enumerate(data):
        ref = entry.get("id", f"#{n}") if isinstance(entry, dict) else f"#{n}"
        where = f"Label Studio task {ref}"
        if not isinstance(entry, dict) or not isinstance(entry.get("data"), dict):
            raise InvalidInput(f"{where} has no data object", 'Each task: {"data": {...}, ...}')
        found = matcher.find(entry["data"])
        if found is None:
            unmatched.append(str(ref))
            continue
        task, item = found
        if task.status == "accepted":
            skipped.append(str(ref))
            continue
        target: Target = ctx.target(item)
        annotation = _last(entry.get("annotations"), f"{where}.annotations")
        prediction = _last(entry.get("predictions"), f"{where}.predictions")
        if annotation is None and prediction is None:
            skipped.append(str(ref))
            continue
        try:
            if annotation is not None:
                parsed = parse_regions(task_type, annotation.get("result"), item, where, None)
                task.result = check_result(target, parsed, submit=True)
                task.status, task.rejected = "submitted", False
                task.assignee = task.assignee or caller.username
                task.reviewer = task.review_comment = None
            if prediction is not None:
                score = prediction.get("score")
                default = float(score) if isinstance(score, int | float) else 1.0
                parsed = parse_regions(task_type, prediction.get("result"), item, where, default)
                task.prediction = check_result(target, parsed, scored=True)
                task.prediction_model = str(prediction.get("model_version") or "labelstudio")
        except InvalidInput as exc:
            raise InvalidInput(f"{where} ({item.name}): {exc.error}", exc.detail) from None
        task.updated_at = utcnow()
        imported += 1
    if data and not imported and unmatched:
        raise InvalidInput(
            f"none of the {len(data)} Label Studio tasks matches an item of dataset "
            f"{ctx.dataset!r}",
            "Tasks match by data.cube_item, data.name, the image file name or the text.",
        )
    return {
        "imported": imported,
        "skipped": len(unmatched) + len(skipped),
        "unmatched": unmatched[:_SHOW],
    }
