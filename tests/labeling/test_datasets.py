"""Datasets: folders of images (sizes from headers, checksums), CSV / JSONL texts, and the
clear errors bad sources get."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from labeling_util import SIZES, make_csv, make_images

from cube_lab.errors import Conflict, InvalidInput, NotFound
from cube_lab.identity import Caller


def test_image_folder_is_scanned_recursively_in_order(
    ws: Any, alice: Caller, tmp_path: Path
) -> None:
    folder = tmp_path / "pics"
    names = make_images(folder, 5, nested=True)
    (folder / "notes.txt").write_text("not an image")
    (folder / ".cache").mkdir()
    make_images(folder / ".cache", 2)  # hidden folders are skipped
    view = ws.datasets.create(alice, "pics", folder)
    assert (view.kind, view.item_count, view.source) == ("images", 5, str(folder.resolve()))
    assert view.project == "alice" and view.owner == "alice" and view.versions == []
    with ws.store.read() as s:
        from sqlalchemy import select

        from cube_lab.store.models import DatasetItem

        items = s.scalars(select(DatasetItem).order_by(DatasetItem.position)).all()
        assert [i.name for i in items] == names
        for item in items:
            data = (folder / item.name).read_bytes()
            assert item.checksum == "sha256:" + hashlib.sha256(data).hexdigest()
            index = int(item.name[-8:-4])
            assert (item.width, item.height) == SIZES[index % len(SIZES)]
            assert item.size_bytes == len(data)
        first = items[0].id
    content, ctype = ws.datasets.item_content(alice, "alice", "pics", first)
    assert ctype == "image/png" and content == folder / names[0]


def test_corrupt_image_is_named_and_nothing_is_created(
    ws: Any, alice: Caller, tmp_path: Path
) -> None:
    folder = tmp_path / "pics"
    make_images(folder, 3)
    (folder / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n this is not a png")
    (folder / "empty.jpg").write_bytes(b"")
    with pytest.raises(InvalidInput) as err:
        ws.datasets.create(alice, "pics", folder)
    assert "2 file(s)" in err.value.error and "broken.png" in err.value.error
    assert "broken.png" in err.value.detail and "empty.jpg" in err.value.detail
    assert ws.datasets.list(alice) == []


def test_truncated_png_is_caught_without_decoding(ws: Any, alice: Caller, tmp_path: Path) -> None:
    folder = tmp_path / "pics"
    make_images(folder, 2)
    whole = (folder / "img0001.png").read_bytes()
    (folder / "img0001.png").write_bytes(whole[: len(whole) - 20])  # header fine, data cut
    with pytest.raises(InvalidInput, match=r"img0001\.png"):
        ws.datasets.create(alice, "pics", folder)


def test_csv_and_jsonl_texts(ws: Any, alice: Caller, tmp_path: Path) -> None:
    csv_file = make_csv(tmp_path / "reviews.csv", ["great film", "dull, long", "ok"])
    view = ws.datasets.create(alice, "reviews", csv_file)
    assert (view.kind, view.item_count) == ("texts", 3)
    jsonl = tmp_path / "notes.jsonl"
    jsonl.write_text(
        "\n".join(json.dumps({"body": t, "id": i}) for i, t in enumerate(["Alice met Bob", "x"]))
        + "\n\n"
    )
    with pytest.raises(InvalidInput) as err:
        ws.datasets.create(alice, "notes", jsonl)
    assert "has no field 'text'" in err.value.error and "body" in err.value.detail
    view = ws.datasets.create(alice, "notes", jsonl, text_field="body")
    assert view.item_count == 2
    lab = ws.labeling.create(
        alice, "ner", dataset="notes", type="text-ner", labels=["PER"], review=False
    )
    task = ws.labeling.next(alice, "alice", lab.name)
    assert task.item == {
        "id": task.item["id"],
        "kind": "text",
        "name": "row 1",
        "text": "Alice met Bob",
        "meta": {"id": 0},
        "content_url": f"/cube/api/v1/projects/alice/datasets/notes/items/{task.item['id']}"
        "/content",
    }
    content, ctype = ws.datasets.item_content(alice, "alice", "notes", task.item["id"])
    assert content == b"Alice met Bob" and ctype.startswith("text/plain")


def test_bad_text_sources(ws: Any, alice: Caller, tmp_path: Path) -> None:
    bad_csv = make_csv(tmp_path / "a.csv", ["x"])
    with pytest.raises(InvalidInput) as err:
        ws.datasets.create(alice, "a", bad_csv, text_field="body")
    assert err.value.error == "a.csv has no column 'body'" and "text, source" in err.value.detail
    bad_jsonl = tmp_path / "b.jsonl"
    bad_jsonl.write_text('{"text": "fine"}\n{"text": oops}\n')
    with pytest.raises(InvalidInput, match=r"b\.jsonl line 2 is not valid JSON"):
        ws.datasets.create(alice, "b", bad_jsonl)
    empty = tmp_path / "c.csv"
    empty.write_text("text\n")
    with pytest.raises(InvalidInput, match="holds no rows"):
        ws.datasets.create(alice, "c", empty)
    with pytest.raises(InvalidInput, match=r"a\.csv holds texts, not images"):
        ws.datasets.create(alice, "d", tmp_path / "a.csv", kind="images")
    other = tmp_path / "e.txt"
    other.write_text("x")
    with pytest.raises(InvalidInput, match="neither a folder"):
        ws.datasets.create(alice, "e", other)
    with pytest.raises(InvalidInput, match="does not exist"):
        ws.datasets.create(alice, "f", tmp_path / "missing")
    (tmp_path / "none").mkdir()
    with pytest.raises(InvalidInput, match="no images found"):
        ws.datasets.create(alice, "g", tmp_path / "none")
    with pytest.raises(InvalidInput, match="invalid dataset name"):
        ws.datasets.create(alice, "bad name", bad_csv)


def test_names_isolation_and_delete(ws: Any, alice: Caller, bob: Caller, tmp_path: Path) -> None:
    folder = tmp_path / "pics"
    make_images(folder, 2)
    ws.datasets.create(alice, "pics", folder)
    with pytest.raises(Conflict):
        ws.datasets.create(alice, "pics", folder)
    ws.datasets.create(bob, "pics", folder)  # names are per project
    assert [d.project for d in ws.datasets.list(bob)] == ["bob"]
    with pytest.raises(NotFound):
        ws.datasets.get(bob, "alice", "pics")
    with pytest.raises(NotFound):
        ws.datasets.item_content(bob, "alice", "pics", 1)
    ws.labeling.create(alice, "l", dataset="pics", type="image-class", labels=["a"])
    with pytest.raises(Conflict, match="used by labeling project"):
        ws.datasets.delete(alice, "alice", "pics")
    ws.labeling.delete(alice, "alice", "l")
    ws.datasets.delete(alice, "alice", "pics")
    assert ws.datasets.list(alice) == []


def test_symlink_out_of_the_folder_is_skipped(ws: Any, alice: Caller, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    make_images(outside, 1)
    folder = tmp_path / "pics"
    make_images(folder, 2)
    (folder / "zz-link.png").symlink_to(outside / "img0000.png")
    assert ws.datasets.create(alice, "pics", folder).item_count == 2
