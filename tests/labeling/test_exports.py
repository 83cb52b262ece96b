"""Exports and imports: COCO (loaded with pycocotools), YOLO (txt + data.yaml), Label Studio
(export -> import round trip, and Label Studio's own shape), CSV / JSONL; versions are
snapshots written whole or not at all."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from labeling_util import image_project, make_csv

from cube_lab.errors import InvalidInput
from cube_lab.identity import Caller

ALICE = Caller("alice")


def _boxes_for(task: Any, n: int) -> dict[str, Any]:
    """A few boxes inside the item, different per task (n), some touching the border."""
    w, h = task.item["width"], task.item["height"]
    boxes = [
        {"label": "cat", "x": 1, "y": 2, "w": 10 + n, "h": 8},
        {"label": "dog", "x": w - 12.5, "y": h - 9, "w": 12.5, "h": 9},
    ]
    return {"boxes": boxes[: n % 3]}  # 0, 1 or 2 boxes


def _label_all(ws: Any, project: str = "alice", name: str = "pets") -> dict[str, Any]:
    """Submit every task; returns {item name: result}."""
    results = {}
    n = 0
    while (task := ws.labeling.next(ALICE, project, name)) is not None:
        result = _boxes_for(task, n)
        ws.labeling.save(ALICE, project, name, task.id, result, submit=True)
        results[task.item["name"]] = result
        n += 1
    return results


def test_coco_loads_with_pycocotools(ws: Any, tmp_path: Path) -> None:
    from pycocotools.coco import COCO

    image_project(ws, ALICE, tmp_path / "pics", 6, review=False)
    results = _label_all(ws)
    view = ws.labeling.export(ALICE, "alice", "pets", "coco")
    assert (view.dataset, view.version.version, view.version.format) == ("pics", 1, "coco")
    assert view.version.item_count == 6 and view.version.labeling == "pets"
    assert view.download_url == "/cube/api/v1/projects/alice/datasets/pics/versions/1/download"
    folder = Path(view.version.path)
    coco = COCO(str(folder / "annotations.json"))
    assert {c["id"]: c["name"] for c in coco.loadCats(coco.getCatIds())} == {1: "cat", 2: "dog"}
    assert len(coco.getImgIds()) == 6
    for image in coco.loadImgs(coco.getImgIds()):
        file = folder / "images" / image["file_name"]
        assert file.read_bytes() == (tmp_path / "pics" / image["file_name"]).read_bytes()
        expected = results[image["file_name"]]["boxes"]
        anns = coco.loadAnns(coco.getAnnIds(imgIds=[image["id"]]))
        got = [(coco.cats[a["category_id"]]["name"], a["bbox"]) for a in anns]
        assert got == [(b["label"], [b["x"], b["y"], b["w"], b["h"]]) for b in expected]
        assert all(a["area"] == a["bbox"][2] * a["bbox"][3] for a in anns)
    assert len(coco.getAnnIds(catIds=[2])) == sum(
        b["label"] == "dog" for r in results.values() for b in r["boxes"]
    )


def test_yolo_lines_match_the_boxes(ws: Any, tmp_path: Path) -> None:
    image_project(ws, ALICE, tmp_path / "pics", 6, review=False)
    results = _label_all(ws)
    folder = Path(ws.labeling.export(ALICE, "alice", "pets", "yolo").version.path)
    data = yaml.safe_load((folder / "data.yaml").read_text())
    assert data["names"] == {0: "cat", 1: "dog"} and data["nc"] == 2
    assert (data["train"], data["val"]) == ("images", "images") and "path" not in data
    from PIL import Image

    for name, result in results.items():
        assert (folder / "images" / name).is_file()
        with Image.open(tmp_path / "pics" / name) as image:
            width, height = image.size
        lines = (folder / "labels" / name).with_suffix(".txt").read_text().splitlines()
        assert len(lines) == len(result["boxes"])  # an image without boxes: an empty file
        for line, box in zip(lines, result["boxes"], strict=True):
            cls, cx, cy, w, h = line.split()
            assert int(cls) == ["cat", "dog"].index(box["label"])
            assert float(cx) == pytest.approx((box["x"] + box["w"] / 2) / width, abs=1e-6)
            assert float(cy) == pytest.approx((box["y"] + box["h"] / 2) / height, abs=1e-6)
            assert float(w) == pytest.approx(box["w"] / width, abs=1e-6)
            assert float(h) == pytest.approx(box["h"] / height, abs=1e-6)
            assert -1e-6 <= float(cx) - float(w) / 2 <= float(cx) + float(w) / 2 <= 1 + 1e-6


def _results_by_item(ws: Any, name: str) -> dict[str, Any]:
    tasks = ws.labeling.list_tasks(ALICE, "alice", name, limit=500)["tasks"]
    return {t.item["name"]: (t.result, t.prediction, t.status) for t in tasks}


def test_labelstudio_round_trip_boxes(ws: Any, tmp_path: Path) -> None:
    image_project(ws, ALICE, tmp_path / "pics", 6, review=False)
    _label_all(ws)
    # a model's proposal on one task travels too, apart from the result
    with ws.store.write() as s:
        from cube_lab.store.models import LabelingTask

        task = s.get(LabelingTask, 2)
        task.prediction = {
            "boxes": [{"label": "dog", "x": 2, "y": 3, "w": 4, "h": 5, "score": 0.7}]
        }
        task.prediction_model = "detector:3"
    exported = ws.labeling.export(ALICE, "alice", "pets", "labelstudio")
    data = json.loads(Path(exported.version.path).read_text())
    assert len(data) == 6 and data[0]["annotations"][0]["completed_by"] == "alice"
    region = next(r for t in data for r in t["annotations"][0]["result"])
    assert region["type"] == "rectanglelabels" and 0 <= region["value"]["x"] <= 100
    ws.labeling.create(
        ALICE, "again", dataset="pics", type="image-bbox", labels=["cat", "dog"], review=False
    )
    answer = ws.labeling.import_labels(ALICE, "alice", "again", "labelstudio", data)
    assert (answer["imported"], answer["skipped"], answer["unmatched"]) == (6, 0, [])
    assert answer["report"] == [] and answer["regions_skipped"] == 0
    before, after = _results_by_item(ws, "pets"), _results_by_item(ws, "again")
    assert after == before
    assert any(p and p["boxes"][0]["score"] == 0.7 for _, p, _ in after.values())


def test_labelstudio_round_trip_text_ner_and_class(ws: Any, tmp_path: Path) -> None:
    texts = ["Alice met Bob in Paris", "Carol stayed home", "nothing here"]
    ws.datasets.create(ALICE, "notes", make_csv(tmp_path / "notes.csv", texts))
    spans = {
        0: [{"label": "PER", "start": 0, "end": 5}, {"label": "LOC", "start": 17, "end": 22}],
        1: [{"label": "PER", "start": 0, "end": 5}],
        2: [],
    }
    topics = {0: ["places"], 1: ["people"], 2: ["none"]}
    cases = [
        ("ner", "text-ner", ["PER", "LOC"], "spans", spans),
        ("topic", "text-class", ["people", "places", "none"], "labels", topics),
    ]
    for name, task_type, labels, key, answers in cases:
        for lab in (name, f"{name}-copy"):
            ws.labeling.create(
                ALICE, lab, dataset="notes", type=task_type, labels=labels, review=False
            )
        while (task := ws.labeling.next(ALICE, "alice", name)) is not None:
            ws.labeling.save(ALICE, "alice", name, task.id, {key: answers[task.index]}, submit=True)
        exported = ws.labeling.export(ALICE, "alice", name, "labelstudio")
        data = json.loads(Path(exported.version.path).read_text())
        for task in data:  # as if from another tool: no cube ids, matched by the text
            task["data"] = {"text": task["data"]["text"]}
        answer = ws.labeling.import_labels(ALICE, "alice", f"{name}-copy", "labelstudio", data)
        assert answer["imported"] == 3
        assert _results_by_item(ws, f"{name}-copy") == _results_by_item(ws, name)
    ner = _results_by_item(ws, "ner")["row 1"][0]
    assert ner["spans"][1] == {"label": "LOC", "start": 17, "end": 22, "text": "Paris"}


def test_import_label_studio_shaped_json(ws: Any, tmp_path: Path) -> None:
    image_project(ws, ALICE, tmp_path / "pics", 3, review=False)  # img0000.png is 40x30
    data = [
        {
            "id": 71,
            "data": {"image": "/data/upload/4/1a2b3c4d-img0000.png"},
            "annotations": [
                {"was_cancelled": True, "result": []},
                {
                    "completed_by": 1,
                    "result": [
                        {
                            "type": "rectanglelabels",
                            "from_name": "label",
                            "to_name": "image",
                            "original_width": 40,
                            "original_height": 30,
                            "value": {
                                "x": 25,
                                "y": 10,
                                "width": 50,
                                "height": 40,
                                "rotation": 0,
                                "rectanglelabels": ["dog"],
                            },
                        },
                        {"type": "textarea", "value": {"text": ["a note"]}},
                    ],
                },
            ],
            "predictions": [],
        },
        {"id": 72, "data": {"image": "s3://bucket/unknown.png"}, "annotations": []},
    ]
    answer = ws.labeling.import_labels(ALICE, "alice", "pets", "labelstudio", data)
    assert (answer["imported"], answer["skipped"], answer["unmatched"]) == (1, 1, ["72"])
    assert answer["report"][0]["task"] == "72" and "unknown.png" in answer["report"][0]["reason"]
    task = ws.labeling.list_tasks(ALICE, "alice", "pets", status="submitted")["tasks"][0]
    assert task.item["name"] == "img0000.png" and task.assignee == "alice"
    assert task.result == {"boxes": [{"label": "dog", "x": 10, "y": 3, "w": 20, "h": 12}]}
    bad = [
        {
            "id": 9,
            "data": {"image": "img0001.png"},
            "annotations": [
                {
                    "result": [
                        {
                            "type": "rectanglelabels",
                            "value": {
                                "x": 90,
                                "y": 0,
                                "width": 50,
                                "height": 10,
                                "rectanglelabels": ["dog"],
                            },
                        }
                    ]
                }
            ],
        }
    ]
    answer = ws.labeling.import_labels(ALICE, "alice", "pets", "labelstudio", bad)
    assert answer["imported"] == 1 and answer["regions_adjusted"] == 1  # clipped, not refused
    (note,) = answer["report"][0]["regions"]
    assert note["action"] == "clipped" and "32x48" in note["reason"]
    with pytest.raises(InvalidInput, match="none of the 1 Label Studio tasks"):
        ws.labeling.import_labels(
            ALICE, "alice", "pets", "labelstudio", [{"data": {"image": "nope.png"}}]
        )


def test_csv_and_jsonl_for_texts(ws: Any, tmp_path: Path) -> None:
    ws.datasets.create(ALICE, "reviews", make_csv(tmp_path / "r.csv", ["good", "bad, very", "meh"]))
    ws.labeling.create(
        ALICE, "mood", dataset="reviews", type="text-class", labels=["pos", "neg"], review=True
    )
    answers = ["pos", "neg", "neg"]
    while (task := ws.labeling.next(ALICE, "alice", "mood")) is not None:
        ws.labeling.save(
            ALICE, "alice", "mood", task.id, {"labels": [answers[task.index]]}, submit=True
        )
    bob_accepts = ws.labeling.list_tasks(ALICE, "alice", "mood")["tasks"][0]
    with (
        ws.store.write() as s
    ):  # a reviewer's decision, without a second user in a personal project
        from cube_lab.store.models import LabelingTask

        s.get(LabelingTask, bob_accepts.id).status = "accepted"
    rows = list(
        csv.DictReader(open(ws.labeling.export(ALICE, "alice", "mood", "csv").version.path))
    )
    assert [(r["text"], r["label"], r["status"], r["source"]) for r in rows] == [
        ("good", "pos", "accepted", "s0"),
        ("bad, very", "neg", "submitted", "s1"),
        ("meh", "neg", "submitted", "s2"),
    ]
    only = ws.labeling.export(ALICE, "alice", "mood", "jsonl", only="accepted")
    lines = [json.loads(line) for line in open(only.version.path)]
    assert lines == [
        {
            "index": 0,
            "name": "row 1",
            "text": "good",
            "label": "pos",
            "status": "accepted",
            "annotator": "alice",
            "source": "s0",
        }
    ]
    assert only.version.version == 2 and only.version.item_count == 1
    assert [v.version for v in ws.datasets.get(ALICE, "alice", "reviews").versions] == [1, 2]


def test_export_errors_and_no_half_written_version(ws: Any, tmp_path: Path) -> None:
    image_project(ws, ALICE, tmp_path / "pics", 3, type="image-class", review=False)
    with pytest.raises(InvalidInput, match="nothing to export"):
        ws.labeling.export(ALICE, "alice", "pets", "coco")
    with pytest.raises(InvalidInput, match="yolo cannot hold image-class"):
        ws.labeling.export(ALICE, "alice", "pets", "yolo")
    with pytest.raises(InvalidInput, match="unknown export format"):
        ws.labeling.export(ALICE, "alice", "pets", "voc")
    while (task := ws.labeling.next(ALICE, "alice", "pets")) is not None:
        ws.labeling.save(ALICE, "alice", "pets", task.id, {"labels": ["dog"]}, submit=True)
    (tmp_path / "pics" / "img0002.png").unlink()  # the copy fails half way
    with pytest.raises(InvalidInput, match=r"img0002\.png is missing"):
        ws.labeling.export(ALICE, "alice", "pets", "coco")
    assert ws.datasets.get(ALICE, "alice", "pics").versions == []
    assert [p.name for p in ws.datasets.root.iterdir()] == []  # no staging folder left
    view = ws.labeling.export(ALICE, "alice", "pets", "jsonl")  # the files are not needed
    assert view.version.version == 1


# -- class order: label-set order (default) or Label Studio's alphabetical ids --------------

ORDER_LABELS = ["dog", "cat", "Bird"]  # sorted by code point: Bird, cat, dog


def _order_project(ws: Any, tmp_path: Path) -> dict[str, list[str]]:
    """An image-bbox project whose label set is not in sorted order; every label boxed."""
    from labeling_util import make_images

    make_images(tmp_path / "pics", 3)
    ws.datasets.create(ALICE, "pics", tmp_path / "pics")
    ws.labeling.create(
        ALICE, "pets", dataset="pics", type="image-bbox", labels=ORDER_LABELS, review=False
    )
    saved = {}
    while (task := ws.labeling.next(ALICE, "alice", "pets")) is not None:
        boxes = [
            {"label": name, "x": 1 + i, "y": 1, "w": 4, "h": 5}
            for i, name in enumerate(ORDER_LABELS)
        ]
        ws.labeling.save(ALICE, "alice", "pets", task.id, {"boxes": boxes}, submit=True)
        saved[task.item["name"]] = [b["label"] for b in boxes]
    return saved


def _yolo_classes(folder: Path) -> tuple[list[str], dict[int, str], list[dict[str, Any]]]:
    data = yaml.safe_load((folder / "data.yaml").read_text())
    notes = json.loads((folder / "notes.json").read_text())["categories"]
    return (folder / "classes.txt").read_text().splitlines(), data["names"], notes


@pytest.mark.parametrize(
    "order, names, coco_ids",
    [
        (None, ORDER_LABELS, {1: "dog", 2: "cat", 3: "Bird"}),
        ("declared", ORDER_LABELS, {1: "dog", 2: "cat", 3: "Bird"}),
        ("alphabetical", ["Bird", "cat", "dog"], {0: "Bird", 1: "cat", 2: "dog"}),
    ],
)
def test_class_order_numbers_yolo_and_coco_classes(
    ws: Any, tmp_path: Path, order: str | None, names: list[str], coco_ids: dict[int, str]
) -> None:
    saved = _order_project(ws, tmp_path)
    folder = Path(
        ws.labeling.export(ALICE, "alice", "pets", "yolo", class_order=order).version.path
    )
    classes, data_names, notes = _yolo_classes(folder)
    assert classes == names and data_names == dict(enumerate(names))
    assert notes == [{"id": i, "name": n} for i, n in enumerate(names)]
    for name, labels in saved.items():  # each box's class id names its own label
        lines = (folder / "labels" / name).with_suffix(".txt").read_text().splitlines()
        assert [names[int(line.split()[0])] for line in lines] == labels

    coco = json.loads(
        (
            Path(ws.labeling.export(ALICE, "alice", "pets", "coco", class_order=order).version.path)
            / "annotations.json"
        ).read_text()
    )
    ids = {c["id"]: c["name"] for c in coco["categories"]}
    assert ids == coco_ids
    images = {i["id"]: i["file_name"] for i in coco["images"]}
    for name, labels in saved.items():
        anns = [a for a in coco["annotations"] if images[a["image_id"]] == name]
        assert [ids[a["category_id"]] for a in anns] == labels


def test_class_order_errors(ws: Any, tmp_path: Path) -> None:
    _order_project(ws, tmp_path)
    with pytest.raises(InvalidInput, match="unknown class_order 'random'") as err:
        ws.labeling.export(ALICE, "alice", "pets", "yolo", class_order="random")
    assert "alphabetical" in str(err.value.detail)
    with pytest.raises(InvalidInput, match="class_order does not apply to csv"):
        ws.labeling.export(ALICE, "alice", "pets", "csv", class_order="alphabetical")
    assert ws.datasets.get(ALICE, "alice", "pics").versions == []  # nothing half-written


def test_class_order_from_the_command_line(
    ws: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from cube_lab.cli import main

    _order_project(ws, tmp_path)
    monkeypatch.setenv("CUBE_LAB_USER", "alice")
    monkeypatch.chdir(tmp_path)
    args = ["label", "export", "pets", "--format", "yolo", "--class-order", "alphabetical"]
    assert main([*args, "-o", "out"]) == 0
    assert (tmp_path / "out" / "classes.txt").read_text() == "Bird\ncat\ndog\n"
    assert main(["label", "export", "pets", "--format", "yolo", "-o", "out2"]) == 0
    assert (tmp_path / "out2" / "classes.txt").read_text() == "dog\ncat\nBird\n"
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["label", "export", "pets", "--format", "yolo", "--class-order", "zz"])
    assert exit_.value.code == 2 and "invalid choice: 'zz'" in capsys.readouterr().err


async def test_class_order_over_rest(api: Any, jp_root_dir: Path) -> None:
    from labeling_util import make_images

    make_images(jp_root_dir / "pics", 2)
    status, _ = await api("alice", "POST", "datasets", {"name": "pics", "path": "pics"})
    assert status == 201
    body = {"name": "pets", "dataset": "pics", "type": "image-bbox", "labels": ORDER_LABELS}
    status, _ = await api("alice", "POST", "labeling", {**body, "review": False})
    assert status == 201
    path = "projects/alice/labeling/pets"
    status, task = await api("alice", "POST", f"{path}/next")
    box = {"label": "cat", "x": 1, "y": 1, "w": 3, "h": 4}
    result = {"result": {"boxes": [box]}, "submit": True}
    status, _ = await api("alice", "PUT", f"{path}/tasks/{task['id']}", result)
    assert status == 200

    async def classes(body: dict[str, Any], params: dict[str, Any] | None = None) -> list[str]:
        status, exported = await api("alice", "POST", f"{path}/export", body, params=params)
        assert status == 201, exported
        folder = Path(exported["version"]["path"])
        return (folder / "classes.txt").read_text().splitlines()

    assert await classes({"format": "yolo"}) == ORDER_LABELS
    sorted_names = ["Bird", "cat", "dog"]
    assert await classes({"format": "yolo", "class_order": "alphabetical"}) == sorted_names
    assert await classes({"format": "yolo"}, {"class_order": "alphabetical"}) == sorted_names
    status, error = await api(
        "alice", "POST", f"{path}/export", {"format": "yolo", "class_order": "sorted"}
    )
    assert status == 400 and error["error"] == "unknown class_order 'sorted'"
    assert "alphabetical" in error["detail"]
