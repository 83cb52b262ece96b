"""Labeling over REST: datasets, item content, labeling projects, tasks, export download,
bad input (corrupt image, label outside the set, box outside the image) and isolation."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

from conftest import TOKENS
from labeling_util import make_csv, make_images

P = "projects/alice/labeling/pets"


async def _pets(api: Any, root: Path, **extra: Any) -> dict[str, Any]:
    make_images(root / "pics", 4)
    status, dataset = await api("alice", "POST", "datasets", {"name": "pics", "path": "pics"})
    assert status == 201, dataset
    body = {
        "name": "pets",
        "dataset": "pics",
        "type": "image-bbox",
        "labels": [{"name": "cat", "color": "#112233", "hotkey": "c"}, {"name": "dog"}],
        "instructions": "Draw a box around **every** animal.",
        **extra,
    }
    status, lab = await api("alice", "POST", "labeling", body)
    assert status == 201, lab
    return lab


async def test_datasets_content_and_isolation(api: Any, jp_fetch: Any, jp_root_dir: Path) -> None:
    names = make_images(jp_root_dir / "data" / "pics", 3, nested=True)
    body = {"name": "pics", "path": str(jp_root_dir / "data" / "pics")}  # absolute, inside root
    status, dataset = await api("alice", "POST", "datasets", body)
    assert status == 201, dataset
    assert (dataset["project"], dataset["kind"], dataset["item_count"]) == ("alice", "images", 3)
    assert dataset["source"] == str((jp_root_dir / "data" / "pics").resolve())
    status, listed = await api("alice", "GET", "datasets")
    assert [d["name"] for d in listed["datasets"]] == ["pics"]
    status, shown = await api("alice", "GET", "projects/alice/datasets/pics")
    assert status == 200 and shown["versions"] == []

    status, lab = await api(
        "alice",
        "POST",
        "labeling",
        {"name": "kinds", "dataset": "pics", "type": "image-class", "labels": ["a", "b"]},
    )
    assert status == 201
    assert lab["labels"] == [
        {"name": "a", "color": "#e6194b", "hotkey": "1"},
        {"name": "b", "color": "#3cb44b", "hotkey": "2"},
    ]
    status, task = await api("alice", "POST", "projects/alice/labeling/kinds/next")
    assert status == 200 and task["item"]["name"] == names[0] and task["index"] == 0
    url = task["item"]["content_url"]
    assert url.startswith("/cube/api/v1/projects/alice/datasets/pics/items/")
    status, content = await api("alice", "GET", url.removeprefix("/cube/api/v1/"))
    assert status == 200 and content == (jp_root_dir / "data" / "pics" / names[0]).read_bytes()
    resp = await jp_fetch(
        *url.strip("/").split("/"), headers={"Authorization": f"token {TOKENS['alice']}"}
    )
    assert resp.headers["Content-Type"] == "image/png"

    # bob sees none of it
    status, listed = await api("bob", "GET", "datasets")
    assert listed["datasets"] == []
    for path in (
        "projects/alice/datasets/pics",
        url.removeprefix("/cube/api/v1/"),
        "projects/alice/labeling/kinds",
        "projects/alice/labeling/kinds/tasks",
        f"projects/alice/labeling/kinds/tasks/{task['id']}",
    ):
        status, body = await api("bob", "GET", path)
        assert status == 404, path
    status, _ = await api("bob", "POST", "projects/alice/labeling/kinds/next")
    assert status == 404
    status, listed = await api("bob", "GET", "labeling")
    assert listed["projects"] == []
    status, body = await api(
        "bob",
        "POST",
        "labeling",
        {
            "project": "alice",
            "name": "x",
            "dataset": "pics",
            "type": "image-class",
            "labels": ["a"],
        },
    )
    assert status == 404


async def test_text_content(api: Any, jp_root_dir: Path) -> None:
    make_csv(jp_root_dir / "r.csv", ["héllo wörld"])
    status, _ = await api("alice", "POST", "datasets", {"name": "r", "path": "r.csv"})
    assert status == 201
    body = {"name": "m", "dataset": "r", "type": "text-class", "labels": ["x"]}
    assert (await api("alice", "POST", "labeling", body))[0] == 201
    status, task = await api("alice", "POST", "projects/alice/labeling/m/next")
    assert task["item"]["text"] == "héllo wörld" and task["item"]["meta"] == {"source": "s0"}
    assert "width" not in task["item"]
    status, content = await api("alice", "GET", task["item"]["content_url"][len("/cube/api/v1/") :])
    assert content.decode() == "héllo wörld"


async def test_bad_input_gets_a_clear_400(api: Any, jp_root_dir: Path) -> None:
    make_images(jp_root_dir / "broken", 2)
    (jp_root_dir / "broken" / "bad.jpg").write_bytes(b"\xff\xd8\xff not really a jpeg")
    status, body = await api("alice", "POST", "datasets", {"name": "b", "path": "broken"})
    assert status == 400 and "bad.jpg" in body["error"] and "bad.jpg" in body["detail"]
    status, body = await api("alice", "POST", "datasets", {"name": "b", "path": "../.."})
    assert status == 400 and "outside the server root" in body["error"]
    status, body = await api("alice", "POST", "datasets", {"name": "b"})
    assert status == 400 and body["error"] == "path is required"

    lab = await _pets(api, jp_root_dir)
    assert lab["labels"][0] == {"name": "cat", "color": "#112233", "hotkey": "c"}
    assert lab["labels"][1] == {"name": "dog", "color": "#3cb44b", "hotkey": "1"}
    status, task = await api("alice", "POST", f"{P}/next")
    width, height = task["item"]["width"], task["item"]["height"]
    put = f"{P}/tasks/{task['id']}"
    box = {"label": "bird", "x": 0, "y": 0, "w": 5, "h": 5}
    status, body = await api("alice", "PUT", put, {"result": {"boxes": [box]}})
    assert status == 400
    assert body["error"] == "boxes[0]: label 'bird' is not in the label set"
    assert body["detail"] == "Use one of: cat, dog."
    outside = {"label": "cat", "x": width - 4, "y": 0, "w": 5, "h": 5}
    status, body = await api("alice", "PUT", put, {"result": {"boxes": [outside]}})
    assert status == 400 and body["error"] == "boxes[0] (cat) lies outside the image"
    assert f"{width}x{height}" in body["detail"]
    status, body = await api("alice", "PUT", put, {"result": {"labels": ["cat"]}})
    assert status == 400 and "unknown result fields ['labels']" in body["error"]
    status, body = await api("alice", "PUT", put, {"result": {"boxes": []}, "extra": 1})
    assert status == 400 and "unknown fields ['extra']" in body["error"]
    status, body = await api("alice", "GET", f"{P}/tasks", params={"status": "done"})
    assert status == 400 and "unknown status" in body["error"]
    status, body = await api("alice", "GET", f"{P}/tasks/abc")
    assert status == 404
    status, body = await api(
        "alice",
        "POST",
        "labeling",
        {"name": "x", "dataset": "pics", "type": "polygon", "labels": ["a"]},
    )
    assert status == 400 and "unknown task type" in body["error"]
    status, body = await api(
        "alice",
        "POST",
        "labeling",
        {"name": "x", "dataset": "pics", "type": "text-ner", "labels": ["a"]},
    )
    assert status == 400 and "needs a dataset of texts" in body["error"]
    status, body = await api(
        "alice",
        "POST",
        "labeling",
        {"name": "pets", "dataset": "pics", "type": "image-bbox", "labels": ["a"]},
    )
    assert status == 409


async def test_tasks_export_download_import_delete(api: Any, jp_root_dir: Path) -> None:
    await _pets(api, jp_root_dir, review=False)
    status, assigned = await api(
        "alice", "POST", f"{P}/assign", {"users": ["alice"], "mode": "batch", "batch_size": 3}
    )
    assert status == 200 and assigned == {"assigned": {"alice": 3}}
    status, page = await api("alice", "GET", f"{P}/tasks", params={"assignee": "me", "limit": 2})
    assert page["total"] == 3 and len(page["tasks"]) == 2
    for task in page["tasks"]:
        result = {"boxes": [{"label": "dog", "x": 1, "y": 1, "w": 3, "h": 4}]}
        status, saved = await api(
            "alice", "PUT", f"{P}/tasks/{task['id']}", {"result": result, "submit": True}
        )
        assert status == 200 and saved["status"] == "submitted" and saved["result"] == result
    status, one = await api("alice", "GET", f"{P}/tasks/{page['tasks'][0]['id']}")
    assert one["status"] == "submitted" and one["prediction"] is None
    status, lab = await api("alice", "GET", P)
    assert lab["progress"]["submitted"] == 2 and lab["progress"]["by_label"] == {"cat": 0, "dog": 2}
    assert lab["instructions"].startswith("Draw a box")

    status, exported = await api("alice", "POST", f"{P}/export", {"format": "coco"})
    assert status == 201, exported
    assert exported["version"]["version"] == 1 and exported["dataset"] == "pics"
    status, blob = await api("alice", "GET", exported["download_url"][len("/cube/api/v1/") :])
    assert status == 200
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        names = archive.namelist()
        coco = json.loads(archive.read("pics-v1/annotations.json"))
    assert "pics-v1/images/img0000.png" in names and len(coco["annotations"]) == 2
    status, _ = await api("bob", "GET", exported["download_url"][len("/cube/api/v1/") :])
    assert status == 404
    status, shown = await api("alice", "GET", "projects/alice/datasets/pics")
    assert [v["format"] for v in shown["versions"]] == ["coco"]

    status, exported = await api("alice", "POST", f"{P}/export", {"format": "labelstudio"})
    status, blob = await api("alice", "GET", exported["download_url"][len("/cube/api/v1/") :])
    tasks = json.loads(blob)
    assert len(tasks) == 2
    body = {"name": "copy", "dataset": "pics", "type": "image-bbox", "labels": ["cat", "dog"]}
    assert (await api("alice", "POST", "labeling", body))[0] == 201
    status, answer = await api(
        "alice",
        "POST",
        "projects/alice/labeling/copy/import",
        {"format": "labelstudio", "data": tasks},
    )
    assert status == 200 and answer["imported"] == 2
    status, body = await api(
        "alice", "POST", "projects/alice/labeling/copy/import", {"format": "voc", "data": []}
    )
    assert status == 400

    status, _ = await api("alice", "DELETE", "projects/alice/labeling/copy")
    assert status == 204
    status, _ = await api("alice", "GET", "projects/alice/labeling/copy")
    assert status == 404
    status, _ = await api("alice", "DELETE", "projects/alice/datasets/pics")
    assert status == 409  # pets still uses it
