"""Label Studio JSON: export our tasks as Label Studio tasks, and import Label Studio tasks
(its JSON export) into a labeling project.

Region shapes follow Label Studio's: ``choices`` for classification,
``rectanglelabels`` with x/y/width/height in percent of the image for boxes, ``labels``
with character offsets for spans. Human answers are ``annotations``, model output is
``predictions`` (with scores); both travel both ways, never mixed.

Export: ``tasks.json``, ``label_config.xml`` (a labeling config for a Label Studio project,
which its converter also reads) and, for images, the images under ``images/``. A task's
``data.image`` is the Label Studio local-files URL ``/data/local-files/?d=images/<name>``
(serve the version folder as Label Studio's local-files document root); ``data.width`` /
``data.height`` carry the size, ``data.cube_item`` / ``data.cube_url`` point back here.

Import: a task is matched to an item by ``data.cube_item`` (our exports carry it), then
``data.name``, then the text (text datasets, when unique), then the file behind the image
reference (``match_ref``): Label Studio local-files, upload, cloud (``s3://``, ``gs://``,
``azure-blob://``), presign and plain URLs or paths. Nothing is all-or-nothing: regions
that cannot be imported are skipped, fixable ones fixed (a rotated box becomes its
axis-aligned bounding box, a box past the edge is clipped), and the answer says per task
what was skipped or changed and why.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse
from xml.sax.saxutils import quoteattr

from ...errors import InvalidInput
from ...identity import Caller
from ...locale.messages import _t
from ...store.models import DatasetItem, LabelingTask, utcnow
from ..annotations import EPSILON, Target, check_result
from . import ExportJob, Row, copy_images

if TYPE_CHECKING:
    from ..service import Context

TASKS_FILE = "tasks.json"
CONFIG_FILE = "label_config.xml"
IMAGES = "images"
LOCAL_FILES = "/data/local-files/?d="
# task type -> (from_name, to_name, region type, value key)
CONTROLS = {
    "image-class": ("choice", "image", "choices", "choices"),
    "image-bbox": ("label", "image", "rectanglelabels", "rectanglelabels"),
    "text-class": ("choice", "text", "choices", "choices"),
    "text-ner": ("label", "text", "labels", "labels"),
}
# which of several annotations (or predictions) of one task is imported
PICKS = ("newest", "oldest", "first", "last")
DEFAULT_PICK = "newest"
# region types that carry no label of ours and are passed over without a note
_QUIET = {"textarea", "rating", "number", "datetime", "relation", "taxonomy", "pairwise"}
_UPLOAD_PREFIX = re.compile(r"^[0-9a-f]{8}-")
_SHOW = 10
_REPORT = 100


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
            if row.width and row.height:
                region.update(original_width=row.width, original_height=row.height)
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
    data: dict[str, Any] = {}
    if row.text is not None:
        data["text"] = row.text
    else:
        # raw, not percent-encoded: Label Studio's converter joins ``d`` to its document
        # root as it stands
        data["image"] = f"{LOCAL_FILES}{IMAGES}/{row.name}"
        data["width"], data["height"] = row.width, row.height
    data.update({"name": row.name, "cube_item": row.item_id})
    if row.text is None:
        data["cube_url"] = job.content_url(row.item_id)
    else:
        data.update({k: v for k, v in (row.meta or {}).items() if k not in data})
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
                "created_at": stamp,
            }
        )
    return out


def label_config(job: ExportJob) -> str:
    """A Label Studio labeling config for the project's task type and labels."""
    from_name, to_name, _, _ = CONTROLS[job.task_type]
    if job.task_type.startswith("image"):
        source = f'  <Image name="{to_name}" value="$image"/>'
    else:
        source = f'  <Text name="{to_name}" value="$text"/>'
    if job.task_type.endswith("-class"):
        choice = ' choice="multiple"' if job.multi_label else ""
        tag, item = "Choices", "Choice"
        attrs = f'name="{from_name}" toName="{to_name}"{choice}'
    else:
        tag = "RectangleLabels" if job.task_type == "image-bbox" else "Labels"
        item, attrs = "Label", f'name="{from_name}" toName="{to_name}"'
    lines = [f"    <{item} value={quoteattr(label)}/>" for label in job.labels]
    body = "\n".join([f"  <{tag} {attrs}>", *lines, f"  </{tag}>"])
    return f"<View>\n{source}\n{body}\n</View>\n"


def write(job: ExportJob, folder: Path) -> str:
    if job.task_type.startswith("image"):
        copy_images(job, folder / IMAGES)
    tasks = [task_json(job, row) for row in job.rows]
    (folder / TASKS_FILE).write_text(json.dumps(tasks, indent=1, ensure_ascii=False))
    (folder / CONFIG_FILE).write_text(label_config(job))
    return TASKS_FILE


# -- import: which file a Label Studio URL means ----------------------------------------------


def ref_parts(ref: str) -> tuple[list[str], bool]:
    """The path parts of the file behind a Label Studio image reference, and whether it is
    a Label Studio upload (whose file name carries an 8-hex prefix and a dash).

    ``/data/local-files/?d=pics/a.png`` -> pics/a.png; ``/data/upload/3/1a2b3c4d-a.png``
    -> a.png (prefix dropped later); ``s3://bucket/pics/a.png`` (also ``gs://``,
    ``azure-blob://``) -> pics/a.png; ``/tasks/7/presign/?fileuri=<base64 or URL>`` -> what
    it wraps; ``https://host/x/a.png?sig=..`` -> x/a.png; plain paths as they are.
    """
    ref = ref.strip().replace("\\", "/")
    if "?d=" in ref:  # local files: everything after ?d= (as Label Studio reads it)
        return _parts(unquote(ref.split("?d=", 1)[1])), False
    parsed = urlparse(ref)
    if "fileuri=" in parsed.query:
        inner = unquote(parsed.query.split("fileuri=", 1)[1].split("&")[0])
        try:
            decoded = base64.b64decode(inner + "=" * (-len(inner) % 4), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            decoded = inner
        if "://" in decoded:
            return ref_parts(decoded)
        if "://" in inner:
            return ref_parts(inner)
    path = parsed.path if parsed.scheme or parsed.netloc else ref.split("?")[0]
    parts = _parts(unquote(path))
    upload = (len(parts) >= 3 and parts[:2] == ["data", "upload"]) or ref.startswith("upload/")
    return parts, upload


def _parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p and p != "."]


def _names(last: str, upload: bool) -> list[str]:
    """The file names a reference's last part may stand for: as written, then without
    Label Studio's upload prefix (only when the prefix is there)."""
    stripped = _UPLOAD_PREFIX.sub("", last)
    if stripped == last or not stripped:
        return [last]
    return [stripped] if upload else [last, stripped]


class Matcher:
    """Finds the item a Label Studio task is about; ``find`` answers (match, reason)."""

    def __init__(self, rows: list[tuple[LabelingTask, DatasetItem]]) -> None:
        self.by_id = {item.id: (task, item) for task, item in rows}
        self.by_name = {item.name: (task, item) for task, item in rows}
        self.by_base: dict[str, list[tuple[LabelingTask, DatasetItem]]] = defaultdict(list)
        self.by_text: dict[str, list[tuple[LabelingTask, DatasetItem]]] = defaultdict(list)
        self.texts = any(item.text is not None for _, item in rows)
        for task, item in rows:
            self.by_base[PurePosixPath(item.name).name].append((task, item))
            if item.text is not None:
                self.by_text[item.text].append((task, item))

    def find(self, data: dict[str, Any]) -> tuple[tuple[LabelingTask, DatasetItem] | None, str]:
        item_id = data.get("cube_item")
        if isinstance(item_id, int) and not isinstance(item_id, bool) and item_id in self.by_id:
            return self.by_id[item_id], ""
        if isinstance(data.get("name"), str) and data["name"] in self.by_name:
            return self.by_name[data["name"]], ""
        if isinstance(data.get("text"), str):
            texts = self.by_text.get(data["text"], [])
            if len(texts) == 1:
                return texts[0], ""
            if texts:
                return None, f"{len(texts)} items have this text; give data.name to tell them apart"
            if self.texts:
                return None, "no item has this text"
        refs = [data["image"]] if isinstance(data.get("image"), str) else []
        refs += [v for k, v in data.items() if k != "image" and isinstance(v, str) and v]
        reasons: list[str] = []
        for ref in refs:
            found, reason = self.match_ref(ref)
            if found is not None:
                return found, ""
            if reason:
                reasons.append(reason)
        if not refs:
            return None, "data has no image reference, name or text"
        return None, reasons[0] if reasons else f"no item matches {refs[0]!r}"

    def match_ref(self, ref: str) -> tuple[tuple[LabelingTask, DatasetItem] | None, str]:
        """The rule: the item whose whole name is the longest tail of the referenced path
        (``s3://b/x/pics/a.png`` matches item ``pics/a.png`` before item ``a.png``); else
        the only item with that file name; several items with that file name and none
        whose name is a tail of the path: unmatched, reported as ambiguous."""
        parts, upload = ref_parts(ref)
        if not parts:
            return None, ""
        for last in _names(parts[-1], upload):
            full = [*parts[:-1], last]
            for k in range(len(full)):
                hit = self.by_name.get("/".join(full[k:]))
                if hit is not None:
                    return hit, ""
        for last in _names(parts[-1], upload):
            candidates = self.by_base.get(last, [])
            if len(candidates) == 1:
                return candidates[0], ""
            if candidates:
                names = ", ".join(sorted(item.name for _, item in candidates)[:5])
                return None, (
                    f"{ref!r} is ambiguous: {len(candidates)} items are named {last} ({names}); "
                    "give data.name, or a path that ends in the item's whole name"
                )
        wanted = " or ".join(_names(parts[-1], upload))
        return None, f"no item matches {ref!r} (looked for {'/'.join(parts)}, then {wanted})"


# -- import: regions ---------------------------------------------------------------------------


def _num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def rotated_bounds(
    x: float, y: float, w: float, h: float, degrees: float
) -> tuple[float, float, float, float]:
    """The axis-aligned bounding box (x, y, w, h) of a w x h box rotated by ``degrees``
    clockwise about its top-left corner (x, y), as Label Studio draws it; in pixels."""
    theta = math.radians(degrees)
    cos, sin = math.cos(theta), math.sin(theta)
    xs = [x + dx * cos - dy * sin for dx, dy in ((0, 0), (w, 0), (w, h), (0, h))]
    ys = [y + dx * sin + dy * cos for dx, dy in ((0, 0), (w, 0), (w, h), (0, h))]
    return min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)


class _Regions:
    """Label Studio regions -> our result shape, noting per region what was skipped or
    changed (``notes``) instead of failing the task."""

    def __init__(self, target: Target, what: str, default_score: float | None) -> None:
        self.target = target
        self.what = what  # "annotation" | "prediction"
        self.scored = default_score is not None
        self.default_score = default_score
        self.notes: list[dict[str, Any]] = []

    def note(self, region: dict[str, Any], n: int, action: str, reason: str) -> None:
        name = region.get("id", f"#{n}") if isinstance(region, dict) else f"#{n}"
        self.notes.append(
            {"region": str(name), "in": self.what, "action": action, "reason": reason}
        )

    def _labels(self, region: dict[str, Any], n: int, names: list[Any]) -> list[str]:
        kept = []
        for name in names:
            if isinstance(name, str) and name in self.target.labels:
                kept.append(name)
            else:
                allowed = ", ".join(self.target.labels)
                self.note(
                    region, n, "skipped", f"label {name!r} is not in the label set ({allowed})"
                )
        return kept

    def _score(self, region: dict[str, Any], n: int) -> tuple[bool, float | None]:
        if not self.scored:
            return True, None
        score = _num(region.get("score", self.default_score))
        if score is None or not 0 <= score <= 1:
            self.note(region, n, "skipped", f"score {region.get('score')!r} is not in 0..1")
            return False, None
        return True, score

    def parse(self, result: object) -> dict[str, Any]:
        task_type = self.target.task_type
        _, _, kind, key = CONTROLS[task_type]
        labels: list[str] = []
        scores: dict[str, float] = {}
        entries: list[dict[str, Any]] = []
        for n, region in enumerate(result if isinstance(result, list) else []):
            if not isinstance(region, dict):
                self.note({}, n, "skipped", "a region must be an object")
                continue
            rtype = region.get("type")
            if rtype != kind:
                if rtype not in _QUIET:
                    self.note(
                        region,
                        n,
                        "skipped",
                        f"a {rtype} region; a {task_type} project reads {kind}",
                    )
                continue
            value = region.get("value")
            names = value.get(key) if isinstance(value, dict) else None
            if not isinstance(value, dict) or not isinstance(names, list):
                self.note(region, n, "skipped", f"a {kind} region needs value.{key} (a list)")
                continue
            ok, score = self._score(region, n)
            if not ok:
                continue
            if kind == "choices":
                for name in self._labels(region, n, names):
                    if name in labels:
                        continue
                    if labels and not self.target.multi_label:
                        self.note(
                            region,
                            n,
                            "skipped",
                            f"label {name!r}: this project takes one label per item",
                        )
                        continue
                    labels.append(name)
                    if score is not None:
                        scores[name] = score
                continue
            shape = (
                self._box(region, n, value)
                if kind == "rectanglelabels"
                else self._span(region, n, value)
            )
            if shape is None:
                continue
            for name in self._labels(region, n, names):
                entry = {"label": name, **shape}
                if score is not None:
                    entry["score"] = score
                entries.append(entry)
        if kind == "choices":
            return {"labels": labels, **({"scores": scores} if self.scored else {})}
        return {"boxes" if kind == "rectanglelabels" else "spans": entries}

    def _box(
        self, region: dict[str, Any], n: int, value: dict[str, Any]
    ) -> dict[str, float] | None:
        numbers = [_num(value.get(k)) for k in ("x", "y", "width", "height")]
        if any(v is None for v in numbers):
            self.note(region, n, "skipped", "x, y, width and height must be numbers (percent)")
            return None
        px, py, pw, ph = (float(v) for v in numbers if v is not None)
        width = self.target.width or _num(region.get("original_width"))
        height = self.target.height or _num(region.get("original_height"))
        if not width or not height:
            self.note(region, n, "skipped", "the image size is unknown (no original_width/height)")
            return None
        x, y, w, h = px * width / 100, py * height / 100, pw * width / 100, ph * height / 100
        if w <= EPSILON or h <= EPSILON:
            self.note(region, n, "skipped", f"a zero-size box (width {pw}%, height {ph}%)")
            return None
        rotation = _num(value.get("rotation")) or 0.0
        if rotation % 360:
            x, y, w, h = rotated_bounds(x, y, w, h, rotation)
            self.note(
                region,
                n,
                "bounded",
                f"rotated {rotation:g} degrees: imported as its axis-aligned bounding box",
            )
        x0, y0 = max(x, 0.0), max(y, 0.0)
        x1, y1 = min(x + w, float(width)), min(y + h, float(height))
        if x1 - x0 <= EPSILON or y1 - y0 <= EPSILON:
            self.note(region, n, "skipped", f"the box lies outside the {width:g}x{height:g} image")
            return None
        if x0 - x > EPSILON or y0 - y > EPSILON or x + w - x1 > EPSILON or y + h - y1 > EPSILON:
            self.note(
                region,
                n,
                "clipped",
                f"the box reached past the edge of the {width:g}x{height:g} image",
            )
        return {
            "x": round(x0, 4),
            "y": round(y0, 4),
            "w": round(x1 - x0, 4),
            "h": round(y1 - y0, 4),
        }

    def _span(self, region: dict[str, Any], n: int, value: dict[str, Any]) -> dict[str, Any] | None:
        text = self.target.text or ""
        start, end = value.get("start"), value.get("end")
        if (
            isinstance(start, bool)
            or isinstance(end, bool)
            or not isinstance(start, int)
            or not isinstance(end, int)
        ):
            self.note(region, n, "skipped", "start and end must be integers (character offsets)")
            return None
        if not 0 <= start < end <= len(text):
            self.note(
                region,
                n,
                "skipped",
                f"offsets {start}..{end} are outside the {len(text)}-character text",
            )
            return None
        quoted = value.get("text", text[start:end])
        if quoted != text[start:end]:
            self.note(
                region,
                n,
                "skipped",
                f"text {quoted!r} does not match the item text at {start}..{end}",
            )
            return None
        return {"start": start, "end": end, "text": quoted}


# -- import: which annotation ---------------------------------------------------------------


def check_pick(pick: object) -> str:
    if pick is None:
        return DEFAULT_PICK
    if pick not in PICKS:
        raise InvalidInput(
            _t("unknown pick {pick!r}", pick=pick),
            _t(
                "Which annotation of a task with several: newest (by created_at, the "
                "default), oldest, first or last (as listed)."
            ),
        )
    return str(pick)


def _stamp(entry: dict[str, Any]) -> float:
    value = entry.get("created_at")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return -math.inf
        return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
    return -math.inf


def pick_entry(entries: list[dict[str, Any]], pick: str) -> dict[str, Any] | None:
    """One of a task's annotations (or predictions), cancelled ones left out: newest /
    oldest by ``created_at`` (entries without one count as oldest; ties go to the later /
    earlier listed), first / last as listed."""
    kept = [
        (i, e)
        for i, e in enumerate(entries)
        if isinstance(e, dict) and not e.get("was_cancelled") and not e.get("skipped")
    ]
    if not kept:
        return None
    if pick == "first":
        return kept[0][1]
    if pick == "last":
        return kept[-1][1]
    if pick == "oldest":
        return min(kept, key=lambda ie: (_stamp(ie[1]), ie[0]))[1]
    return max(kept, key=lambda ie: (_stamp(ie[1]), ie[0]))[1]


# -- import -----------------------------------------------------------------------------------


def apply_import(
    ctx: Context,
    caller: Caller,
    data: list[Any],
    rows: list[tuple[LabelingTask, DatasetItem]],
    pick: str = DEFAULT_PICK,
) -> dict[str, Any]:
    """Write each matched task's picked annotation as its result (status submitted) and
    its picked prediction as its prediction. A task or region that cannot be imported is
    skipped and reported; the rest is imported (in the caller's transaction)."""
    matcher = Matcher(rows)
    imported, skipped = 0, 0
    unmatched: list[str] = []
    report: list[dict[str, Any]] = []
    counts = {"skipped": 0, "adjusted": 0}
    first_reason = ""
    for n, entry in enumerate(data):
        ref = entry.get("id", f"#{n}") if isinstance(entry, dict) else f"#{n}"
        line: dict[str, Any] = {"task": str(ref), "item": None, "outcome": "skipped"}
        if not isinstance(entry, dict) or not isinstance(entry.get("data"), dict):
            report.append({**line, "reason": 'not a Label Studio task: {"data": {...}, ...}'})
            skipped += 1
            continue
        found, reason = matcher.find(entry["data"])
        if found is None:
            unmatched.append(str(ref))
            first_reason = first_reason or reason
            report.append({**line, "reason": f"unmatched: {reason}"})
            skipped += 1
            continue
        task, item = found
        line["item"] = item.name
        if task.status == "accepted":
            report.append({**line, "reason": "accepted in review: an import does not overwrite it"})
            skipped += 1
            continue
        outcome = _import_one(ctx, caller, entry, task, item, pick, line)
        for note in line.get("regions", []):
            counts["skipped" if note["action"] == "skipped" else "adjusted"] += 1
        if outcome:
            task.updated_at = utcnow()
            imported += 1
            line["outcome"] = "imported"
        else:
            skipped += 1
        if not outcome or any(k in line for k in ("regions", "reason", "picked")):
            report.append(line)
    if data and not imported and len(unmatched) == len(data):
        raise InvalidInput(
            _t(
                "none of the {n_data} Label Studio tasks matches an item of dataset {dataset!r}",
                n_data=len(data),
                dataset=ctx.dataset,
            ),
            _t(
                (
                    "First task: {first_reason}. Tasks match by data.cube_item, data.name, "
                    "the text, or the file behind data.image (local-files, upload, "
                    "s3/gs/azure-blob or URL)."
                ),
                first_reason=first_reason,
            ),
        )
    return {
        "imported": imported,
        "skipped": skipped,
        "unmatched": unmatched[:_SHOW],
        "regions_skipped": counts["skipped"],
        "regions_adjusted": counts["adjusted"],
        "pick": pick,
        "report": report[:_REPORT],
        "report_left_off": max(0, len(report) - _REPORT),
    }


def _import_one(
    ctx: Context,
    caller: Caller,
    entry: dict[str, Any],
    task: LabelingTask,
    item: DatasetItem,
    pick: str,
    line: dict[str, Any],
) -> bool:
    """Import one matched task; notes go into ``line``; True when anything was written."""
    target: Target = ctx.target(item)
    key = "annotations" if "annotations" in entry else "completions"  # older exports
    reasons: list[str] = []
    notes: list[dict[str, Any]] = []
    wrote = False
    for what, field in (("annotation", key), ("prediction", "predictions")):
        entries = entry.get(field)
        if entries is None:
            continue
        if not isinstance(entries, list):
            reasons.append(f"{field} is not a list")
            continue
        chosen = pick_entry(entries, pick)
        if chosen is None:
            continue
        usable = sum(
            isinstance(e, dict) and not e.get("was_cancelled") and not e.get("skipped")
            for e in entries
        )
        if usable > 1:
            line.setdefault("picked", {})[what] = {
                "id": chosen.get("id"),
                "of": usable,
                "rule": pick,
            }
        if not isinstance(chosen.get("result"), list):
            reasons.append(f"the {what}'s result is not a list of regions")
            continue
        default = None
        if what == "prediction":
            score = _num(chosen.get("score"))
            default = score if score is not None and 0 <= score <= 1 else 1.0
        parser = _Regions(target, what, default)
        parsed = parser.parse(chosen["result"])
        notes += parser.notes
        try:
            if what == "annotation":
                task.result = check_result(target, parsed, submit=True)
                task.status, task.rejected = "submitted", False
                task.assignee = task.assignee or caller.username
                task.reviewer = task.review_comment = None
            else:
                task.prediction = check_result(target, parsed, scored=True)
                task.prediction_model = str(chosen.get("model_version") or "labelstudio")
        except InvalidInput as exc:
            reasons.append(f"the {what} was not imported: {exc.error}")
            continue
        wrote = True
    if notes:
        line["regions"] = notes
    if reasons:
        line["reason"] = "; ".join(reasons)
    elif not wrote:
        line["reason"] = f"no {key} or predictions to import (none, or all cancelled)"
    return wrote
