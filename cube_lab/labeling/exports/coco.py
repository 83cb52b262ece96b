"""COCO object-detection JSON (``annotations.json``) plus the images under ``images/``.

Boxes are COCO's ``[x, y, width, height]`` in pixels from the top-left corner, which is
how cube-lab stores them; categories are numbered from 1 in label-set order (with
``class_order="alphabetical"``: sorted names from 0, Label Studio's converter's ids). An
image-class project has no boxes, and COCO annotations are boxes (pycocotools' COCOeval
needs ``bbox`` on every one): its labels go on the images instead, as ``labels`` (names)
and ``category_ids``, and ``annotations`` stays empty.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import ExportJob, copy_images

ANNOTATIONS = "annotations.json"
IMAGES = "images"


def build(job: ExportJob) -> dict[str, Any]:
    categories = [
        {"id": i, "name": name, "supercategory": ""}
        for i, name in enumerate(job.labels, 0 if job.class_order == "alphabetical" else 1)
    ]
    category_id = {c["name"]: c["id"] for c in categories}
    images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for image_id, row in enumerate(job.rows, 1):
        images.append(
            {
                "id": image_id,
                "file_name": row.name,
                "width": row.width,
                "height": row.height,
                "date_captured": row.updated_at.isoformat(),
            }
        )
        result = row.result or {}
        for box in result.get("boxes", []):
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": image_id,
                    "category_id": category_id[box["label"]],
                    "bbox": [box["x"], box["y"], box["w"], box["h"]],
                    "area": box["w"] * box["h"],
                    "iscrowd": 0,
                    "segmentation": [],
                }
            )
        if "labels" in result:  # image-class: image-level labels, not annotations
            images[-1]["labels"] = list(result["labels"])
            images[-1]["category_ids"] = [category_id[label] for label in result["labels"]]
    return {
        "info": {
            "description": f"cube-lab labeling project {job.labeling} ({job.task_type})",
            "version": "1.0",
            "year": datetime.now(UTC).year,
            "date_created": datetime.now(UTC).isoformat(),
            "images_dir": IMAGES,
        },
        "licenses": [],
        "images": images,
        "annotations": annotations,
        "categories": categories,
    }


def write(job: ExportJob, folder: Path) -> str:
    copy_images(job, folder / IMAGES)
    (folder / ANNOTATIONS).write_text(json.dumps(build(job), indent=1))
    return ""
