"""Reading a dataset's source: a folder of images, or a CSV / JSONL file of texts.

Images are read once each: the bytes are hashed and PIL reads the size from the header
(no pixel decoding), which keeps 10,000 small images to a few seconds.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import containment
from ..errors import InvalidInput
from ..locale.messages import _t

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp")
TEXT_SUFFIXES = (".csv", ".jsonl")
MAX_TEXT_ROWS = 1_000_000
_SHOW_BAD = 10  # files named in an error


@dataclass
class ScannedItem:
    position: int
    name: str
    checksum: str
    size_bytes: int
    width: int | None = None
    height: int | None = None
    text: str | None = None
    meta: dict[str, Any] | None = field(default=None)


def guess_kind(path: Path) -> str:
    if path.is_dir():
        return "images"
    if path.suffix.lower() in TEXT_SUFFIXES:
        return "texts"
    raise InvalidInput(
        _t(
            "{name} is neither a folder of images nor a .csv / .jsonl file of texts", name=path.name
        ),
        _t("Give a folder (images: .jpg .jpeg .png .bmp .gif .webp) or a .csv / .jsonl file."),
    )


def image_files(folder: Path) -> list[Path]:
    """Images under ``folder``, recursive, sorted by relative path, hidden names left out.
    Symbolic links follow the one rule of ``cube_lab.containment``: a link leading outside
    the folder is skipped, so a dataset can't expose files beyond its source."""
    return [
        path
        for rel, path in containment.walk(folder, hidden=False)
        if rel.lower().endswith(IMAGE_SUFFIXES)
    ]


def read_image(path: Path, folder: Path) -> tuple[str, int, int, int]:
    """(checksum, size in bytes, width, height) of an image inside ``folder``; raises
    ValueError for a broken image, PathRefused for one that became a link leading out."""
    from PIL import Image

    with containment.open_inside(path, folder) as fh:
        data = fh.read()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                width, height = image.size
                image.verify()  # checks structure (PNG chunk CRCs) without decoding pixels
    except Exception as exc:  # PIL raises many types for broken files
        raise ValueError(str(exc) or type(exc).__name__) from None
    return f"sha256:{hashlib.sha256(data).hexdigest()}", len(data), width, height


def scan_images(folder: Path) -> list[ScannedItem]:
    root = folder.resolve()
    files = image_files(root)
    if not files:
        raise InvalidInput(
            _t("no images found in {folder}", folder=folder),
            _t(
                "The folder (and its subfolders) must hold images: {value}.",
                value=" ".join(IMAGE_SUFFIXES),
            ),
        )
    items: list[ScannedItem] = []
    bad: list[str] = []
    for position, path in enumerate(files):
        rel = path.relative_to(root).as_posix()
        try:
            checksum, size, width, height = read_image(path, root)
        except containment.PathRefused:
            continue  # became a link leading out since the walk: skipped, by the rule
        except (OSError, ValueError) as exc:
            bad.append(f"{rel}: {exc}")
            continue
        items.append(ScannedItem(position, rel, checksum, size, width, height))
    if bad:
        shown = "; ".join(bad[:_SHOW_BAD])
        more = _t("; and {n} more", n=len(bad) - _SHOW_BAD) if len(bad) > _SHOW_BAD else ""
        raise InvalidInput(
            _t(
                "{n} file(s) in {folder} are not readable images: {first}",
                n=len(bad),
                folder=str(folder),
                first=bad[0].split(":")[0] + ("" if len(bad) == 1 else ", ..."),
            ),
            _t(
                "{shown}{more}. Remove or replace them, then create the dataset again.",
                shown=shown,
                more=more,
            ),
        )
    return items


def _text_item(position: int, row: dict[str, Any], text_field: str, where: str) -> ScannedItem:
    if text_field not in row:
        raise InvalidInput(
            _t("{where} has no field {text_field!r}", where=where, text_field=text_field),
            _t(
                "Fields: {value}. Pass text_field (--text-field) to say which one holds the text.",
                value=", ".join(map(str, row)) or "none",
            ),
        )
    text = row[text_field]
    if not isinstance(text, str):
        raise InvalidInput(
            _t(
                "{where}: field {text_field!r} must be a string, got {text!r}",
                where=where,
                text_field=text_field,
                text=text,
            )
        )
    meta = {str(k): v for k, v in row.items() if k != text_field}
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return ScannedItem(
        position,
        f"row {position + 1}",
        f"sha256:{digest}",
        len(text.encode()),
        text=text,
        meta=meta,
    )


def read_texts(path: Path, text_field: str = "text") -> list[ScannedItem]:
    """One item per CSV row or JSONL line; other columns are kept as the item's meta."""
    suffix = path.suffix.lower()
    if suffix not in TEXT_SUFFIXES:
        raise InvalidInput(_t("{name}: texts come from a .csv or .jsonl file", name=path.name))
    items: list[ScannedItem] = []
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            if suffix == ".csv":
                reader = csv.DictReader(fh)
                if not reader.fieldnames or text_field not in reader.fieldnames:
                    raise InvalidInput(
                        _t(
                            "{name} has no column {text_field!r}",
                            name=path.name,
                            text_field=text_field,
                        ),
                        _t(
                            (
                                "Columns: {value}. Pass text_field (--text-field) to say "
                                "which one holds the text."
                            ),
                            value=", ".join(reader.fieldnames or []) or "none",
                        ),
                    )
                for row in reader:
                    where = f"{path.name} row {len(items) + 1}"
                    if None in row:
                        raise InvalidInput(
                            _t("{where} has more values than the header has columns", where=where)
                        )
                    items.append(_text_item(len(items), row, text_field, where))
                    if len(items) > MAX_TEXT_ROWS:
                        raise InvalidInput(
                            _t(
                                "{name} has more than {MAX_TEXT_ROWS:,} rows",
                                name=path.name,
                                MAX_TEXT_ROWS=MAX_TEXT_ROWS,
                            )
                        )
            else:
                for number, line in enumerate(fh, 1):
                    if not line.strip():
                        continue
                    where = f"{path.name} line {number}"
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise InvalidInput(
                            _t("{where} is not valid JSON", where=where), str(exc)
                        ) from None
                    if not isinstance(row, dict):
                        raise InvalidInput(
                            _t("{where} must be a JSON object", where=where),
                            _t("got {value!r}", value=line[:80]),
                        )
                    items.append(_text_item(len(items), row, text_field, where))
                    if len(items) > MAX_TEXT_ROWS:
                        raise InvalidInput(
                            _t(
                                "{name} has more than {MAX_TEXT_ROWS:,} lines",
                                name=path.name,
                                MAX_TEXT_ROWS=MAX_TEXT_ROWS,
                            )
                        )
    except UnicodeDecodeError as exc:
        raise InvalidInput(_t("{name} is not UTF-8 text", name=path.name), str(exc)) from None
    except csv.Error as exc:
        raise InvalidInput(_t("{name} is not valid CSV", name=path.name), str(exc)) from None
    if not items:
        raise InvalidInput(
            _t("{name} holds no rows", name=path.name), _t("Add one row per text to label.")
        )
    return items
