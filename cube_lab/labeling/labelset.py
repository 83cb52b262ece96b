"""Task types and label sets: names, colours and hotkeys, with defaults filled in."""

from __future__ import annotations

import re
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t

TASK_TYPES = ("image-class", "image-bbox", "text-class", "text-ner")
# which dataset kind each task type labels
DATASET_KIND = {
    "image-class": "images",
    "image-bbox": "images",
    "text-class": "texts",
    "text-ner": "texts",
}
# distinct colours, in the order labels get them
PALETTE = (
    "#e6194b",
    "#3cb44b",
    "#ffe119",
    "#4363d8",
    "#f58231",
    "#911eb4",
    "#46f0f0",
    "#f032e6",
    "#bcf60c",
    "#fabebe",
    "#008080",
    "#e6beff",
    "#9a6324",
    "#fffac8",
    "#800000",
    "#aaffc3",
    "#808000",
    "#ffd8b1",
    "#000075",
    "#808080",
)
MAX_LABELS = 200
_COLOR = re.compile(r"^#[0-9a-fA-F]{6}\Z")


def check_type(value: object) -> str:
    if value not in TASK_TYPES:
        raise InvalidInput(
            _t("unknown task type {value!r}", value=value),
            _t("Use one of {value}.", value=", ".join(TASK_TYPES)),
        )
    return str(value)


def _label_name(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(_t("every label needs a name"), _t('e.g. ["cat", "dog"]'))
    name = value.strip()
    if len(name) > 128:
        raise InvalidInput(_t("label {value!r}... is longer than 128 characters", value=name[:20]))
    return name


def normalize_labels(raw: object) -> list[dict[str, str]]:
    """``["cat", "dog"]`` or ``[{"name", "color"?, "hotkey"?}]`` -> complete label specs:
    colours from the palette and hotkeys "1".."9" in order where not given ("" after 9)."""
    if isinstance(raw, str):
        raw = [part for part in raw.split(",") if part.strip()]
    if not isinstance(raw, list) or not raw:
        raise InvalidInput(
            _t("labels must be a non-empty list"),
            _t('e.g. ["cat", "dog"] or [{{"name": "cat", "color": "#e6194b", "hotkey": "1"}}]'),
        )
    if len(raw) > MAX_LABELS:
        raise InvalidInput(
            _t("at most {MAX_LABELS} labels, got {n_raw}", MAX_LABELS=MAX_LABELS, n_raw=len(raw))
        )
    specs: list[dict[str, Any]] = []
    for entry in raw:
        if isinstance(entry, dict):
            unknown = sorted(set(entry) - {"name", "color", "hotkey"})
            if unknown:
                raise InvalidInput(
                    _t("unknown label fields {unknown}", unknown=unknown),
                    _t("Known: name, color, hotkey"),
                )
            name = _label_name(entry.get("name"))
            hotkey = entry.get("hotkey")
            if hotkey is not None and (not isinstance(hotkey, str) or len(hotkey) > 1):
                raise InvalidInput(
                    _t("label {name!r}: invalid hotkey {hotkey!r}", name=name, hotkey=hotkey),
                    _t("Use one character, e.g. 1."),
                )
            specs.append({"name": name, "color": entry.get("color"), "hotkey": hotkey})
        else:
            specs.append({"name": _label_name(entry), "color": None, "hotkey": None})
    names = [s["name"] for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InvalidInput(
            _t("duplicate labels {dupes}", dupes=dupes), _t("Each label name must be unique.")
        )
    taken = {s["hotkey"] for s in specs if s["hotkey"]}
    free = iter(k for k in "123456789" if k not in taken)
    out: list[dict[str, str]] = []
    for i, spec in enumerate(specs):
        color = spec["color"] or PALETTE[i % len(PALETTE)]
        if not isinstance(color, str) or not _COLOR.match(color):
            raise InvalidInput(
                _t("label {name!r}: invalid color {color!r}", name=spec["name"], color=color),
                _t("Use #rrggbb, e.g. #e6194b."),
            )
        hotkey = spec["hotkey"]
        if hotkey is None:
            hotkey = next(free, "")
        out.append({"name": spec["name"], "color": color.lower(), "hotkey": hotkey})
    keys = [s["hotkey"] for s in out if s["hotkey"]]
    clash = sorted({k for k in keys if keys.count(k) > 1})
    if clash:
        raise InvalidInput(_t("hotkeys {clash} are used by more than one label", clash=clash))
    return out
