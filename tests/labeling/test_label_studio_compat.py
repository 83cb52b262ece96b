"""Label Studio in and out: Label Studio exports (fixtures written here by hand in its export
format) imported into cube-lab, and cube-lab's exports read by Label Studio's converter
(``label-studio-converter`` 0.0.59, in its own venv; those checks skip without it).

Setup for the differential part:
    python3 -m venv benchmarks/.peers/label-studio &&
    benchmarks/.peers/label-studio/bin/pip install label-studio-converter==0.0.59
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from labeling_util import image_project

from cube_lab.identity import Caller
from cube_lab.labeling.exports.labelstudio import rotated_bounds

ALICE = Caller("alice")
ROOT = Path(__file__).resolve().parents[2]
CONVERTER = ROOT / "benchmarks" / ".peers" / "label-studio" / "bin" / "label-studio-converter"
SETUP = (
    "python3 -m venv benchmarks/.peers/label-studio && "
    "benchmarks/.peers/label-studio/bin/pip install label-studio-converter==0.0.59"
)
needs_converter = pytest.mark.skipif(
    not CONVERTER.exists(), reason=f"label-studio-converter is not set up: {SETUP}"
)


def _rect(x: float, y: float, w: float, h: float, label: str = "dog", **extra: Any) -> dict:
    value = {"x": x, "y": y, "width": w, "height": h, "rotation": 0, "rectanglelabels": [label]}
    value.update(extra)
    return {"type": "rectanglelabels", "from_name": "label", "to_name": "image", "value": value}


def _task(ref: str, *regions: dict, tid: int = 1, key: str = "annotations") -> dict:
    return {"id": tid, "data": {"image": ref}, key: [{"id": tid, "result": list(regions)}]}


def _result(ws: Any, name: str, project: str = "pets") -> Any:
    tasks = ws.labeling.list_tasks(ALICE, "alice", project, limit=500)["tasks"]
    return next(t.result for t in tasks if t.item["name"] == name)


@pytest.mark.parametrize(
    "ref",
    [
        "/data/local-files/?d=pics/img0001.png",
        "/data/local-files/?d=img0001.png",
        "/data/upload/1/0a1b2c3d-img0001.png",
        "upload/7/deadbeef-img0001.png",
        "s3://bucket/datasets/pics/img0001.png",
        "gs://bucket/img0001.png",
        "azure-blob://container/a/b/img0001.png",
        "https://cdn.example.com/x/img0001.png?X-Amz-Signature=abc",
        "/tasks/5/presign/?fileuri=czM6Ly9idWNrZXQvaW1nMDAwMS5wbmc=",  # base64 s3://bucket/...
        "C:\\Users\\me\\pics\\img0001.png",
    ],
)
def test_storage_urls_match_the_item(ws: Any, tmp_path: Path, ref: str) -> None:
    image_project(ws, ALICE, tmp_path / "pics", 3, review=False)
    answer = ws.labeling.import_labels(
        ALICE, "alice", "pets", "labelstudio", [_task(ref, _rect(25, 10, 50, 20))]
    )
    assert answer["imported"] == 1, answer
    assert _result(ws, "img0001.png") == {  # 32 x 48
        "boxes": [{"label": "dog", "x": 8, "y": 4.8, "w": 16, "h": 9.6}]
    }


def test_ambiguous_file_names_are_reported_not_guessed(ws: Any, tmp_path: Path) -> None:
    from labeling_util import make_images

    make_images(tmp_path / "pics", 4, nested=True)  # part0/img0000.png, part1/img0001.png ...
    (tmp_path / "pics" / "part1" / "img0000.png").write_bytes(
        (tmp_path / "pics" / "part0" / "img0000.png").read_bytes()
    )
    ws.datasets.create(ALICE, "pics", tmp_path / "pics")
    ws.labeling.create(ALICE, "pets", dataset="pics", type="image-bbox", labels=["cat", "dog"])
    data = [
        _task("/data/upload/2/abcdef12-img0000.png", _rect(0, 0, 10, 10), tid=1),
        _task("s3://b/part1/img0000.png", _rect(0, 0, 10, 10), tid=2),  # the tail decides
    ]
    answer = ws.labeling.import_labels(ALICE, "alice", "pets", "labelstudio", data)
    assert (answer["imported"], answer["unmatched"]) == (1, ["1"])
    reason = answer["report"][0]["reason"]
    assert "ambiguous" in reason and "part0/img0000.png, part1/img0000.png" in reason
    assert _result(ws, "part1/img0000.png")["boxes"][0]["w"] == pytest.approx(4.0)


def test_bad_regions_are_skipped_or_fixed_and_reported(ws: Any, tmp_path: Path) -> None:
    image_project(ws, ALICE, tmp_path / "pics", 3, review=False)  # img0002.png is 64 x 64
    data = [
        _task(
            "img0002.png",
            {**_rect(50, 0, 25, 50, rotation=90), "id": "rot"},
            {**_rect(80, 80, 40, 40), "id": "edge"},
            {**_rect(10, 10, 0, 5), "id": "flat"},
            {**_rect(1, 1, 5, 5, label="horse"), "id": "horse"},
            {**_rect(120, 120, 5, 5), "id": "away"},
            {"type": "polygonlabels", "id": "poly", "value": {"points": [], "polygonlabels": []}},
        ),
        _task("img0000.png", _rect(0, 0, 10, 10, label="horse"), tid=2),  # nothing left
    ]
    answer = ws.labeling.import_labels(ALICE, "alice", "pets", "labelstudio", data)
    assert (answer["imported"], answer["regions_skipped"], answer["regions_adjusted"]) == (2, 5, 2)
    notes = {n["region"]: (n["action"], n["reason"]) for n in answer["report"][0]["regions"]}
    assert notes["rot"][0] == "bounded" and notes["edge"][0] == "clipped"
    assert (
        "zero-size" in notes["flat"][1] and "'horse' is not in the label set" in notes["horse"][1]
    )
    assert "outside" in notes["away"][1] and "polygonlabels" in notes["poly"][1]
    # 90 degrees clockwise about the top-left (32, 0): a 16 x 32 box becomes x 0..32, y 0..16
    boxes = _result(ws, "img0002.png")["boxes"]
    assert boxes == [
        {"label": "dog", "x": 0, "y": 0, "w": 32, "h": 16},
        {"label": "dog", "x": 51.2, "y": 51.2, "w": 12.8, "h": 12.8},
    ]
    assert _result(ws, "img0000.png") == {"boxes": []}  # a negative example, still imported


def test_completions_and_which_annotation_wins(ws: Any, tmp_path: Path) -> None:
    image_project(ws, ALICE, tmp_path / "pics", 3, review=False)
    old = _task("img0000.png", _rect(0, 0, 10, 10), key="completions")  # Label Studio < 1.0
    many = {
        "id": 2,
        "data": {"image": "/data/upload/1/00000000-img0001.png"},
        "annotations": [
            {"id": 10, "created_at": "2024-03-01T10:00:00Z", "result": [_rect(0, 0, 50, 50)]},
            {"id": 11, "created_at": "2024-05-01T10:00:00Z", "result": [_rect(0, 0, 25, 25)]},
            {"id": 12, "created_at": "2024-01-01T10:00:00Z", "result": [_rect(0, 0, 10, 10)]},
            {"id": 13, "created_at": "2025-01-01", "was_cancelled": True, "result": []},
        ],
    }
    widths = {}
    for pick in ("newest", "oldest", "first", "last", None):
        answer = ws.labeling.import_labels(
            ALICE, "alice", "pets", "labelstudio", [old, many], pick=pick
        )
        assert answer["imported"] == 2 and answer["pick"] == (pick or "newest")
        widths[pick] = _result(ws, "img0001.png")["boxes"][0]["w"]  # of 32 px
        assert answer["report"][0]["picked"]["annotation"]["of"] == 3
    assert widths == {"newest": 8, "oldest": 3.2, "first": 16, "last": 3.2, None: 8}
    assert _result(ws, "img0000.png")["boxes"][0]["w"] == 4  # read from "completions"
    from cube_lab.errors import InvalidInput

    with pytest.raises(InvalidInput, match="unknown pick"):
        ws.labeling.import_labels(ALICE, "alice", "pets", "labelstudio", [old], pick="best")


def test_rotated_bounds_geometry() -> None:
    assert rotated_bounds(10, 10, 20, 10, 0) == (10, 10, 20, 10)
    x, y, w, h = rotated_bounds(10, 10, 20, 10, 180)
    assert (x, y, w, h) == pytest.approx((-10, 0, 20, 10))
    x, y, w, h = rotated_bounds(0, 0, 10, 10, 45)
    assert (w, h) == pytest.approx((14.1421356, 14.1421356)) and x == pytest.approx(-7.0710678)


# -- differential: Label Studio's converter -------------------------------------------------


def _convert(args: list[str], tmp_path: Path, **env: str) -> None:
    home = tmp_path / "home"  # the converter writes under ~/.local/share
    home.mkdir(exist_ok=True)
    run_env = {**os.environ, "HOME": str(home), **env}
    done = subprocess.run(
        [str(CONVERTER), *args], capture_output=True, text=True, env=run_env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]


def _labeled(ws: Any, tmp_path: Path, n: int = 5) -> dict[str, list[dict[str, Any]]]:
    image_project(ws, ALICE, tmp_path / "pics", n, review=False)
    saved: dict[str, list[dict[str, Any]]] = {}
    i = 0
    while (task := ws.labeling.next(ALICE, "alice", "pets")) is not None:
        w, h = task.item["width"], task.item["height"]
        boxes = [
            {"label": "dog", "x": 1.5, "y": 2.25, "w": w / 3, "h": h / 4},
            {"label": "cat", "x": w / 2, "y": h / 2, "w": w / 2, "h": h / 2},
        ][: i % 3]
        ws.labeling.save(ALICE, "alice", "pets", task.id, {"boxes": boxes}, submit=True)
        saved[task.item["name"]] = boxes
        i += 1
    return saved


@needs_converter
def test_converter_imports_our_yolo_export(ws: Any, tmp_path: Path) -> None:
    saved = _labeled(ws, tmp_path)
    folder = Path(ws.labeling.export(ALICE, "alice", "pets", "yolo").version.path)
    assert (folder / "classes.txt").read_text() == "cat\ndog\n"
    out = tmp_path / "ls.json"
    # 0.0.59 looks for .jpg unless told (--image-ext)
    _convert(["import", "yolo", "-i", str(folder), "-o", str(out), "--image-ext", ".png"], tmp_path)
    tasks = json.loads(out.read_text())
    assert len(tasks) == len(saved)
    sizes = {name: None for name in saved}
    for task in tasks:
        name = task["data"]["image"].rsplit("/", 1)[-1]
        regions = task["annotations"][0]["result"]
        expected = saved[name]
        assert len(regions) == len(expected)
        for region, box in zip(regions, expected, strict=True):
            w, h = region["original_width"], region["original_height"]
            sizes[name] = (w, h)
            v = region["value"]
            assert v["rectanglelabels"] == [box["label"]]
            got = (v["x"] * w / 100, v["y"] * h / 100, v["width"] * w / 100, v["height"] * h / 100)
            assert got == pytest.approx((box["x"], box["y"], box["w"], box["h"]), abs=0.01)
    # and back into cube-lab: the converter's tasks match our items by their file names
    ws.labeling.create(ALICE, "back", dataset="pics", type="image-bbox", labels=["cat", "dog"])
    answer = ws.labeling.import_labels(ALICE, "alice", "back", "labelstudio", tasks)
    assert answer["imported"] == len(saved) and answer["regions_skipped"] == 0
    for name, boxes in saved.items():
        got = _result(ws, name, "back")["boxes"]
        assert [b["label"] for b in got] == [b["label"] for b in boxes]
        for a, b in zip(got, boxes, strict=True):
            assert [a[k] for k in "xywh"] == pytest.approx([b[k] for k in "xywh"], abs=0.01)


@needs_converter
def test_converter_reads_our_label_studio_export_as_coco_and_yolo(ws: Any, tmp_path: Path) -> None:
    from PIL import Image

    saved = _labeled(ws, tmp_path)
    export = Path(ws.labeling.export(ALICE, "alice", "pets", "labelstudio").version.path)
    folder = export.parent
    tasks = json.loads(export.read_text())
    assert tasks[0]["data"]["image"] == "/data/local-files/?d=images/img0000.png"
    env = {"LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT": str(folder)}
    config = str(folder / "label_config.xml")
    coco_dir = tmp_path / "coco"
    _convert(["export", "-i", str(export), "-c", config, "-o", str(coco_dir), "-f", "COCO"],
             tmp_path, **env)  # fmt: skip
    coco = json.loads((coco_dir / "result.json").read_text())
    names = {c["id"]: c["name"] for c in coco["categories"]}
    assert sorted(names.values()) == ["cat", "dog"]  # Label Studio numbers sorted names
    images = {i["id"]: i for i in coco["images"]}
    assert len(images) == len(saved)
    for image in images.values():
        name = Path(image["file_name"]).name
        with Image.open(tmp_path / "pics" / name) as im:
            assert (image["width"], image["height"]) == im.size  # boxless images too
    got: dict[str, list[tuple[str, list[float]]]] = {n: [] for n in saved}
    for ann in coco["annotations"]:
        got[Path(images[ann["image_id"]]["file_name"]).name].append(
            (names[ann["category_id"]], ann["bbox"])
        )
    for name, boxes in saved.items():
        assert [g[0] for g in got[name]] == [b["label"] for b in boxes]
        for (_, bbox), box in zip(got[name], boxes, strict=True):
            assert bbox == pytest.approx([box["x"], box["y"], box["w"], box["h"]], abs=0.01)
    yolo_dir = tmp_path / "yolo"
    _convert(["export", "-i", str(export), "-c", config, "-o", str(yolo_dir), "-f", "YOLO"],
             tmp_path, **env)  # fmt: skip
    labels = sorted(p.name for p in (yolo_dir / "labels").iterdir())
    assert labels == sorted(Path(n).with_suffix(".txt").name for n in saved)  # no "__content"


@needs_converter
def test_converter_rotation_agrees_on_a_square_image(ws: Any, tmp_path: Path) -> None:
    """Label Studio's converter bounds a rotated box in percent units; on a square image that
    is the pixel geometry cube-lab uses."""
    image_project(ws, ALICE, tmp_path / "pics", 3, review=False)  # img0002.png: 64 x 64
    region = {**_rect(30, 20, 40, 20, rotation=30), "original_width": 64, "original_height": 64}
    source = tmp_path / "rotated.json"
    source.write_text(json.dumps([_task("/data/local-files/?d=img0002.png", region)]))
    config = tmp_path / "config.xml"
    config.write_text(
        '<View><Image name="image" value="$image"/><RectangleLabels name="label" '
        'toName="image"><Label value="cat"/><Label value="dog"/></RectangleLabels></View>'
    )
    out = tmp_path / "coco"
    _convert(["export", "-i", str(source), "-c", str(config), "-o", str(out), "-f", "COCO"],
             tmp_path)  # fmt: skip
    (ann,) = json.loads((out / "result.json").read_text())["annotations"]
    data = json.loads(source.read_text())
    ws.labeling.import_labels(ALICE, "alice", "pets", "labelstudio", data)
    box = _result(ws, "img0002.png")["boxes"][0]
    assert [box[k] for k in "xywh"] == pytest.approx(ann["bbox"], abs=0.01)


def test_coco_export_of_an_image_class_project_evaluates(ws: Any, tmp_path: Path) -> None:
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    image_project(ws, ALICE, tmp_path / "pics", 3, type="image-class", review=False)
    while (task := ws.labeling.next(ALICE, "alice", "pets")) is not None:
        ws.labeling.save(ALICE, "alice", "pets", task.id, {"labels": ["dog"]}, submit=True)
    folder = Path(ws.labeling.export(ALICE, "alice", "pets", "coco").version.path)
    doc = json.loads((folder / "annotations.json").read_text())
    assert doc["annotations"] == []
    assert [(i["labels"], i["category_ids"]) for i in doc["images"]] == [(["dog"], [2])] * 3
    gt = COCO(str(folder / "annotations.json"))
    evaluation = COCOeval(gt, gt, "bbox")
    evaluation.evaluate()  # no KeyError: every annotation (none) has a bbox


@needs_converter
def test_alphabetical_class_order_gives_label_studios_ids(ws: Any, tmp_path: Path) -> None:
    """The same labels through Label Studio's converter and through cube-lab's own YOLO and
    COCO exports with class_order="alphabetical": the same classes.txt, notes.json categories,
    COCO categories, and the same class id on every box."""
    from labeling_util import make_images

    labels = ["dog", "cat", "Bird"]  # not in sorted order
    make_images(tmp_path / "pics", 3)
    ws.datasets.create(ALICE, "pics", tmp_path / "pics")
    ws.labeling.create(
        ALICE, "pets", dataset="pics", type="image-bbox", labels=labels, review=False
    )
    n = 0
    while (task := ws.labeling.next(ALICE, "alice", "pets")) is not None:
        boxes = [
            {"label": labels[(n + i) % 3], "x": 1 + 2 * i, "y": 2, "w": 5, "h": 6} for i in range(2)
        ]
        ws.labeling.save(ALICE, "alice", "pets", task.id, {"boxes": boxes}, submit=True)
        n += 1
    export = Path(ws.labeling.export(ALICE, "alice", "pets", "labelstudio").version.path)
    env = {"LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT": str(export.parent)}
    config = str(export.parent / "label_config.xml")
    peer_yolo, peer_coco = tmp_path / "peer-yolo", tmp_path / "peer-coco"
    _convert(["export", "-i", str(export), "-c", config, "-o", str(peer_yolo), "-f", "YOLO"],
             tmp_path, **env)  # fmt: skip
    _convert(["export", "-i", str(export), "-c", config, "-o", str(peer_coco), "-f", "COCO"],
             tmp_path, **env)  # fmt: skip

    def yolo(order: str) -> Path:
        return Path(
            ws.labeling.export(ALICE, "alice", "pets", "yolo", class_order=order).version.path
        )

    ours = yolo("alphabetical")
    peer_classes = (peer_yolo / "classes.txt").read_text()
    assert peer_classes.split() == ["Bird", "cat", "dog"]
    assert (ours / "classes.txt").read_text().split() == peer_classes.split()
    categories = json.loads((ours / "notes.json").read_text())["categories"]
    assert categories == json.loads((peer_yolo / "notes.json").read_text())["categories"]
    peer_labels = sorted((peer_yolo / "labels").iterdir())
    assert [p.name for p in peer_labels] == sorted(p.name for p in (ours / "labels").iterdir())
    for peer_file in peer_labels:
        ids = [line.split()[0] for line in peer_file.read_text().splitlines()]
        mine = [
            line.split()[0] for line in (ours / "labels" / peer_file.name).read_text().splitlines()
        ]
        assert mine == ids, peer_file.name
    declared = yolo("declared")  # the default keeps label-set order: the ids differ
    assert (declared / "classes.txt").read_text().split() == labels

    coco = Path(
        ws.labeling.export(ALICE, "alice", "pets", "coco", class_order="alphabetical").version.path
    )
    mine = json.loads((coco / "annotations.json").read_text())
    peer = json.loads((peer_coco / "result.json").read_text())
    assert [(c["id"], c["name"]) for c in mine["categories"]] == [
        (c["id"], c["name"]) for c in peer["categories"]
    ]
    by_file = {i["id"]: Path(i["file_name"]).name for i in peer["images"]}
    peer_ids = sorted((by_file[a["image_id"]], a["category_id"]) for a in peer["annotations"])
    our_files = {i["id"]: Path(i["file_name"]).name for i in mine["images"]}
    our_ids = sorted((our_files[a["image_id"]], a["category_id"]) for a in mine["annotations"])
    assert our_ids == peer_ids
