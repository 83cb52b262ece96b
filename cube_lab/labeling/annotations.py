"""Checks of an annotation ``result`` (and a model's ``prediction``) against the contract:

- image-class / text-class: ``{"labels": ["cat"]}`` (exactly one unless multi-label)
- image-bbox: ``{"boxes": [{"label", "x", "y", "w", "h"}]}`` in pixels, inside the image
- text-ner: ``{"spans": [{"label", "start", "end", "text"}]}``, text == item text[start:end]

Every error names the offending entry and says what is allowed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t

EPSILON = 1e-6  # boxes that touch the border after float rounding still count as inside
RESULT_KEY = {
    "image-class": "labels",
    "text-class": "labels",
    "image-bbox": "boxes",
    "text-ner": "spans",
}


@dataclass(frozen=True)
class Target:
    """What a result is checked against: the item's size or text, and the label set."""

    task_type: str
    labels: tuple[str, ...]
    multi_label: bool = False
    width: int | None = None
    height: int | None = None
    text: str | None = None


def _label(target: Target, value: object, where: str) -> str:
    if not isinstance(value, str) or value not in target.labels:
        raise InvalidInput(
            _t("{where}: label {value!r} is not in the label set", where=where, value=value),
            _t("Use one of: {value}.", value=", ".join(target.labels)),
        )
    return value


def _number(value: object, where: str) -> float | int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(
            _t("{where} must be a number", where=where), _t("got {value!r}", value=value)
        )
    return value


def _score(entry: dict[str, Any], where: str) -> float:
    score = _number(entry.get("score"), f"{where}.score")
    if not 0 <= score <= 1:
        raise InvalidInput(
            _t("{where}.score must be between 0 and 1", where=where),
            _t("got {score!r}", score=score),
        )
    return float(score)


def _list(result: dict[str, Any], key: str) -> list[Any]:
    value = result.get(key, [])
    if not isinstance(value, list):
        raise InvalidInput(
            _t("result.{key} must be a list", key=key),
            _t("got {name__}", name__=type(value).__name__),
        )
    return value


def _check_labels(
    target: Target, result: dict[str, Any], submit: bool, scored: bool
) -> dict[str, Any]:
    labels = [_label(target, v, f"labels[{i}]") for i, v in enumerate(_list(result, "labels"))]
    if len(set(labels)) != len(labels):
        raise InvalidInput(
            _t("a label appears twice in result.labels"), _t("got {labels}", labels=labels)
        )
    if not target.multi_label and len(labels) > 1:
        raise InvalidInput(
            _t(
                "this project takes one label per item, got {n_labels}: {labels}",
                n_labels=len(labels),
                labels=labels,
            ),
            _t("Pick exactly one label, or create the project with multi_label: true."),
        )
    if submit and not target.multi_label and not labels:
        raise InvalidInput(
            _t("pick a label before submitting"),
            _t("One of: {value}.", value=", ".join(target.labels)),
        )
    out: dict[str, Any] = {"labels": labels}
    if scored:
        scores = result.get("scores") or {}
        if not isinstance(scores, dict):
            raise InvalidInput(_t("prediction.scores must map label names to scores"))
        out["scores"] = {
            _label(target, k, f"scores[{k!r}]"): _score({"score": v}, f"scores[{k!r}]")
            for k, v in scores.items()
        }
    return out


def _check_boxes(target: Target, result: dict[str, Any], scored: bool) -> dict[str, Any]:
    width, height = target.width or 0, target.height or 0
    boxes = []
    for i, box in enumerate(_list(result, "boxes")):
        where = f"boxes[{i}]"
        if not isinstance(box, dict):
            raise InvalidInput(
                _t("{where} must be an object", where=where), _t('{{"label", "x", "y", "w", "h"}}')
            )
        label = _label(target, box.get("label"), where)
        x, y, w, h = (_number(box.get(k), f"{where}.{k}") for k in ("x", "y", "w", "h"))
        if w <= 0 or h <= 0:
            raise InvalidInput(
                _t("{where}: width and height must be positive", where=where),
                _t("got w={w}, h={h}", w=w, h=h),
            )
        if x < -EPSILON or y < -EPSILON or x + w > width + EPSILON or y + h > height + EPSILON:
            raise InvalidInput(
                _t("{where} ({label}) lies outside the image", where=where, label=label),
                _t(
                    (
                        "The image is {width}x{height} pixels; the box is x={x}, y={y}, "
                        "w={w}, h={h}. Keep 0 <= x, x + w <= width, 0 <= y, y + h <= height."
                    ),
                    width=width,
                    height=height,
                    x=x,
                    y=y,
                    w=w,
                    h=h,
                ),
            )
        entry: dict[str, Any] = {"label": label, "x": x, "y": y, "w": w, "h": h}
        if scored:
            entry["score"] = _score(box, where)
        boxes.append(entry)
    return {"boxes": boxes}


def _check_spans(target: Target, result: dict[str, Any], scored: bool) -> dict[str, Any]:
    text = target.text or ""
    spans = []
    for i, span in enumerate(_list(result, "spans")):
        where = f"spans[{i}]"
        if not isinstance(span, dict):
            raise InvalidInput(
                _t("{where} must be an object", where=where),
                _t('{{"label", "start", "end", "text"}}'),
            )
        label = _label(target, span.get("label"), where)
        start, end = span.get("start"), span.get("end")
        if isinstance(start, bool) or isinstance(end, bool):
            start = end = None
        if not isinstance(start, int) or not isinstance(end, int):
            raise InvalidInput(
                _t("{where}: start and end must be integers (character offsets)", where=where)
            )
        if not 0 <= start < end <= len(text):
            raise InvalidInput(
                _t(
                    "{where}: offsets {start}..{end} are outside the text",
                    where=where,
                    start=start,
                    end=end,
                ),
                _t(
                    "The text has {n_text} characters; keep 0 <= start < end <= {n_text}.",
                    n_text=len(text),
                ),
            )
        quoted = span.get("text", text[start:end])
        if quoted != text[start:end]:
            raise InvalidInput(
                _t(
                    "{where}: text {quoted!r} does not match the item text at {start}..{end}",
                    where=where,
                    quoted=quoted,
                    start=start,
                    end=end,
                ),
                _t(
                    "text[{start}:{end}] is {value!r}; send offsets that match.",
                    start=start,
                    end=end,
                    value=text[start:end],
                ),
            )
        entry: dict[str, Any] = {"label": label, "start": start, "end": end, "text": quoted}
        if scored:
            entry["score"] = _score(span, where)
        spans.append(entry)
    return {"spans": spans}


def check_result(
    target: Target, result: object, *, submit: bool = False, scored: bool = False
) -> dict[str, Any]:
    """The result in its stored shape; ``scored`` checks a prediction (scores required)."""
    key = RESULT_KEY[target.task_type]
    what = "prediction" if scored else "result"
    example = {
        "labels": '{"labels": ["cat"]}',
        "boxes": '{"boxes": [{"label": "cat", "x": 10, "y": 20, "w": 30, "h": 40}]}',
        "spans": '{"spans": [{"label": "PER", "start": 0, "end": 5, "text": "Alice"}]}',
    }[key]
    if not isinstance(result, dict):
        raise InvalidInput(
            _t("{what} must be an object", what=what),
            _t(
                "A {task_type} {what}: {example}",
                task_type=target.task_type,
                what=what,
                example=example,
            ),
        )
    allowed = {key, "scores"} if scored and key == "labels" else {key}
    unknown = sorted(set(result) - allowed)
    if unknown:
        raise InvalidInput(
            _t(
                "unknown {what} fields {unknown} for a {task_type} project",
                what=what,
                unknown=unknown,
                task_type=target.task_type,
            ),
            _t(
                "A {task_type} {what}: {example}",
                task_type=target.task_type,
                what=what,
                example=example,
            ),
        )
    if key == "labels":
        return _check_labels(target, result, submit, scored)
    if key == "boxes":
        return _check_boxes(target, result, scored)
    return _check_spans(target, result, scored)


def labels_used(result: dict[str, Any] | None) -> list[str]:
    """Every label a result uses, once per occurrence (for progress per label)."""
    if not result:
        return []
    if "labels" in result:
        return list(result["labels"])
    return [entry["label"] for key in ("boxes", "spans") for entry in result.get(key, [])]
