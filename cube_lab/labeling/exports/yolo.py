"""YOLO detection layout: ``images/<name>``, ``labels/<name>.txt`` and ``data.yaml``.

Each label line is ``class x_center y_center width height``, normalised by the image size;
classes are numbered from 0 in label-set order, or with ``class_order="alphabetical"`` in
sorted order as Label Studio's converter numbers them. ``data.yaml`` leaves out ``path`` so tools
(Ultralytics) take the folder that holds it: the version can be moved or downloaded.
An image with no boxes gets an empty label file (a negative example).

Beside ``data.yaml`` (for Ultralytics) the folder holds ``classes.txt`` (one name a line,
line i = class i) and ``notes.json`` (``categories`` with ids and names), the files
``label-studio-converter import yolo`` reads. By default class ids follow the label set, not
Label Studio's alphabetical order: its converter reads the names from ``classes.txt``, so the
boxes keep their labels either way; "alphabetical" gives the ids Label Studio's own YOLO
export gives.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from . import ExportJob, copy_images

IMAGES, LABELS, DATA_YAML = "images", "labels", "data.yaml"
CLASSES, NOTES = "classes.txt", "notes.json"


def label_lines(boxes: list[dict[str, Any]], labels: list[str], width: int, height: int) -> str:
    lines = []
    for box in boxes:
        cx = (box["x"] + box["w"] / 2) / width
        cy = (box["y"] + box["h"] / 2) / height
        lines.append(
            f"{labels.index(box['label'])} {cx:.6f} {cy:.6f} "
            f"{box['w'] / width:.6f} {box['h'] / height:.6f}"
        )
    return "\n".join(lines) + ("\n" if lines else "")


def write(job: ExportJob, folder: Path) -> str:
    copy_images(job, folder / IMAGES)
    for row in job.rows:
        target = folder / LABELS / PurePosixPath(row.name).with_suffix(".txt")
        target.parent.mkdir(parents=True, exist_ok=True)
        boxes = (row.result or {}).get("boxes", [])
        target.write_text(label_lines(boxes, job.labels, row.width or 1, row.height or 1))
    data = {
        "train": IMAGES,
        "val": IMAGES,
        "nc": len(job.labels),
        "names": dict(enumerate(job.labels)),
    }
    header = f"# cube-lab labeling project {job.labeling}: YOLO detection dataset\n"
    (folder / DATA_YAML).write_text(header + yaml.safe_dump(data, sort_keys=False))
    (folder / CLASSES).write_text("".join(f"{name}\n" for name in job.labels))
    notes = {
        "categories": [{"id": i, "name": name} for i, name in enumerate(job.labels)],
        "info": {"year": datetime.now(UTC).year, "version": "1.0", "contributor": "cube-lab"},
    }
    (folder / NOTES).write_text(json.dumps(notes, indent=1, ensure_ascii=False))
    return ""
