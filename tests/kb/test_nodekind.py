"""The "kb-ingest" node kind: found through its entry point, validated (a missing knowledge
base, a missing folder, a folder leading out of the root), and run by the real pipeline
runner to keep a knowledge base in sync with a folder: new files added, unchanged ones left,
changed ones replaced, deleted ones removed with their chunks; ``kb sync`` over REST and in
the CLI doing the same."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pipeline_util import node, write_pipeline

from cube_lab.identity import Caller
from cube_lab.kb.nodekind import OP_KB_INGEST
from cube_lab.pipelines.nodekinds import node_kinds
from cube_lab.pipelines.validation import PipelineInvalid

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ALICE = Caller("alice")
FILES = {
    "alpaca.md": "# Alpacas\n\nThe alpaca zorblat grazes on the high plateau and hums softly.\n",
    "tea.txt": "Green tea is steeped at eighty degrees for two minutes, never boiling.\n",
    "notes/boats.md": "# Boats\n\nA ketch has two masts; the mizzen stands aft of the main.\n",
}


def make_folder(folder: Path) -> Path:
    for name, text in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def run_sync(ws: Any, path: Path, root: Path) -> Any:
    runner, recorder = ws.pipelines.prepare(ALICE, path, root)
    status = ws.pipelines.run_foreground(runner, recorder)
    view = ws.pipelines.get_run(ALICE, runner.plan.run_id)
    (sync,) = [n for n in view.nodes if n.id == "sync"]
    log = ws.pipelines.tail_log(ALICE, view.id, "sync", 0).text
    return status, sync, log


def problems_of(ws: Any, path: Path, root: Path) -> dict[tuple[str | None, str], str]:
    with pytest.raises(PipelineInvalid) as info:
        ws.pipelines.prepare(ALICE, path, root)
    return {(p.node_id, p.field): p.message for p in info.value.problems}


def test_the_kind_is_registered_with_its_form() -> None:
    kind = node_kinds()[OP_KB_INGEST]
    assert kind.name == "kb-ingest" and kind.display_name == "Knowledge base ingest"
    assert kind.schema["required"] == ["kb", "folder"]
    assert kind.schema["properties"]["delete_missing"]["default"] is True


def test_a_scheduled_sync_adds_skips_replaces_and_removes(ws: Any, tmp_path: Path) -> None:
    root = tmp_path / "root"
    docs = make_folder(root / "docs")
    ws.kb.create(ALICE, "docs", chunk_size=64, overlap=8)
    path = write_pipeline(root, [node("sync", OP_KB_INGEST, kb="docs", folder="docs")])

    status, sync, log = run_sync(ws, path, root)
    assert status == "succeeded", log
    assert sync.kind == "kb-ingest"
    values = sync.values
    assert (values["added"], values["changed"], values["unchanged"]) == (3, 0, 0)
    assert (values["removed"], values["failed"]) == (0, 0)
    first_chunks = values["chunks"]
    assert first_chunks >= 3 and values["chunks_added"] == first_chunks
    assert ws.kb.get(ALICE, None, "docs").chunks == first_chunks
    assert "notes/boats.md: added" in log
    hits = ws.kb.query(ALICE, None, "docs", "zorblat", k=1, mode="keyword")
    assert hits and hits[0]["source"] == str(docs / "alpaca.md")

    status, sync, log = run_sync(ws, path, root)  # nothing changed: nothing to do
    assert status == "succeeded", log
    assert (sync.values["added"], sync.values["unchanged"], sync.values["chunks_added"]) == (
        0,
        3,
        0,
    )
    assert ws.kb.get(ALICE, None, "docs").chunks == first_chunks

    (docs / "tea.txt").write_text("Black tea wants boiling water and four minutes of quux.\n")
    (docs / "alpaca.md").unlink()
    status, sync, log = run_sync(ws, path, root)
    assert status == "succeeded", log
    v = sync.values
    assert (v["added"], v["changed"], v["unchanged"], v["removed"]) == (0, 1, 1, 1)
    assert v["chunks_removed"] >= 1
    assert f"removed {docs / 'alpaca.md'}" in log
    assert not ws.kb.query(ALICE, None, "docs", "zorblat", k=3, mode="keyword")
    (hit,) = ws.kb.query(ALICE, None, "docs", "quux", k=1, mode="keyword")
    assert hit["source"] == str(docs / "tea.txt")
    sources = {s["source"] for s in ws.kb.sources(ALICE, None, "docs")}
    assert sources == {str(docs / "tea.txt"), str(docs / "notes" / "boats.md")}


def test_patterns_keep_delete_missing_off_and_bad_files(ws: Any, tmp_path: Path) -> None:
    root = tmp_path / "root"
    docs = make_folder(root / "docs")
    (docs / "broken.ipynb").write_text('{"cells": [')
    ws.kb.create(ALICE, "docs", chunk_size=64, overlap=8)
    path = write_pipeline(
        root,
        [node("sync", OP_KB_INGEST, kb="docs", folder="docs", patterns="*.md, *.ipynb")],
    )
    status, sync, log = run_sync(ws, path, root)
    assert status == "succeeded", log  # one file failed: logged and counted, the rest are in
    assert (sync.values["added"], sync.values["failed"]) == (2, 1)
    assert "broken.ipynb: FAILED" in log

    (docs / "notes" / "boats.md").unlink()
    kept = write_pipeline(
        root,
        [node("sync", OP_KB_INGEST, kb="docs", folder="docs", delete_missing=False)],
        filename="keep.pipeline",
    )
    status, sync, log = run_sync(ws, kept, root)
    assert status == "succeeded", log
    assert (sync.values["added"], sync.values["removed"]) == (1, 0)  # tea.txt; boats.md stays
    assert str(docs / "notes" / "boats.md") in {
        s["source"] for s in ws.kb.sources(ALICE, None, "docs")
    }


def test_a_folder_where_nothing_can_be_read_fails_the_node(ws: Any, tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "bad").mkdir(parents=True)
    (root / "bad" / "broken.ipynb").write_text('{"cells": [')
    ws.kb.create(ALICE, "docs")
    path = write_pipeline(root, [node("sync", OP_KB_INGEST, kb="docs", folder="bad")])
    status, _, log = run_sync(ws, path, root)
    assert status == "failed"
    assert "no file of the folder could be read" in log


def test_bad_parameters_are_problems_of_the_node(ws: Any, tmp_path: Path) -> None:
    root = tmp_path / "root"
    make_folder(root / "docs")
    outside = make_folder(tmp_path / "outside")
    (root / "link").symlink_to(outside, target_is_directory=True)
    ws.kb.create(ALICE, "docs")
    path = write_pipeline(
        root,
        [
            node("nokb", OP_KB_INGEST, kb="nope", folder="docs"),
            node("unnamed", OP_KB_INGEST, folder="docs"),
            node("nofolder", OP_KB_INGEST, kb="docs", folder="missing"),
            node("up", OP_KB_INGEST, kb="docs", folder="../outside"),
            node("link", OP_KB_INGEST, kb="docs", folder="link"),
            node("size", OP_KB_INGEST, kb="docs", folder="docs", chunk_size=4),
            node("flag", OP_KB_INGEST, kb="docs", folder="docs", delete_missing="yes"),
        ],
    )
    found = problems_of(ws, path, root)
    assert "kb create nope" in found[("nokb", "kb")]
    assert ("unnamed", "kb") in found
    assert "not found" in found[("nofolder", "folder")]
    assert "outside the project" in found[("up", "folder")]
    assert "outside the project" in found[("link", "folder")]
    assert "chunk size" in found[("size", "chunk_size")]
    assert ("flag", "delete_missing") in found
    # the same problems in a plain check with the caller (the editor's validate)
    _, problems = ws.pipelines.check(path, root, ALICE)
    assert {(p.node_id, p.field) for p in problems} == set(found)


def test_the_service_refuses_a_folder_outside_its_boundary(ws: Any, tmp_path: Path) -> None:
    from cube_lab.errors import InvalidInput

    root = make_folder(tmp_path / "root")
    outside = make_folder(tmp_path / "outside")
    ws.kb.create(ALICE, "docs")
    with pytest.raises(InvalidInput):
        ws.kb.sync_folder(ALICE, None, "docs", outside, boundary=root)
    (root / "away").symlink_to(outside, target_is_directory=True)
    with pytest.raises(InvalidInput):
        ws.kb.sync_folder(ALICE, None, "docs", root / "away", boundary=root)
    summary = ws.kb.sync_folder(ALICE, None, "docs", root, boundary=root)
    assert len(summary["added"]) == 3 and summary["chunks"] == summary["chunks_added"]
    assert json.dumps(summary)  # plain JSON


async def test_sync_over_rest(api: Any, jp_root_dir: Path) -> None:
    make_folder(jp_root_dir / "docs")
    status, view = await api("alice", "POST", "kb", {"name": "docs", "chunk_size": 64})
    assert status == 201, view
    where = "kb/alice/docs/sync"
    status, summary = await api("alice", "POST", where, {"folder": "docs"})
    assert status == 200, summary
    assert sorted(summary["added"]) == ["docs/alpaca.md", "docs/notes/boats.md", "docs/tea.txt"]
    assert summary["folder"] == "docs" and summary["chunks"] == summary["chunks_added"] >= 3
    (jp_root_dir / "docs" / "alpaca.md").unlink()
    status, summary = await api("alice", "POST", where, {"folder": "docs", "patterns": ["*.md"]})
    assert status == 200, summary
    assert (summary["added"], summary["removed"]) == ([], ["docs/alpaca.md"])
    assert summary["unchanged"] == ["docs/notes/boats.md"]  # tea.txt matches no pattern: kept
    status, sources = await api("alice", "GET", "kb/alice/docs/sources")
    assert sorted(s["source"] for s in sources["sources"]) == [
        "docs/notes/boats.md",
        "docs/tea.txt",
    ]

    status, err = await api("alice", "POST", where, {"folder": "../"})
    assert status in (400, 403) and err["error"], err
    status, err = await api("alice", "POST", where, {"folder": "docs", "delete_missing": "no"})
    assert status == 400 and "delete_missing" in err["error"]
    status, err = await api("alice", "POST", where, {})
    assert status == 400 and "folder" in err["error"]
    status, err = await api("alice", "POST", where, {"folder": "docs", "colour": 1})
    assert status == 400 and "unknown fields" in err["error"]
    status, err = await api("alice", "POST", "kb/alice/nope/sync", {"folder": "docs"})
    assert status == 404, err
    status, err = await api("bob", "POST", where, {"folder": "docs"})
    assert status == 404, err
    status, _ = await api(None, "POST", where, {"folder": "docs"})
    assert status in (401, 403)


def test_kb_sync_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any) -> None:
    from cube_lab.cli import main

    monkeypatch.setenv("CUBE_LAB_USER", "alice")
    monkeypatch.chdir(tmp_path)
    docs = make_folder(tmp_path / "docs")

    def cli(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    assert cli("kb", "create", "docs", "--chunk-size", "64")[0] == 0
    code, out, _ = cli("kb", "sync", "docs", "docs")
    assert code == 0 and "3 added, 0 changed, 0 unchanged, 0 removed, 0 failed" in out
    (docs / "alpaca.md").unlink()
    (docs / "broken.ipynb").write_text('{"cells": [')
    code, out, err = cli("kb", "sync", "docs", "docs", "--keep-missing", "--json")
    summary = json.loads(out)
    assert code == 1  # a file failed (the others are synced)
    assert summary["removed"] == [] and len(summary["unchanged"]) == 2
    assert [f["source"] for f in summary["failed"]] == [str(docs / "broken.ipynb")]
    (docs / "broken.ipynb").unlink()
    code, out, _ = cli("kb", "sync", "docs", "docs")
    assert code == 0 and f"removed {docs / 'alpaca.md'}" in out
    code, _, err = cli("kb", "sync", "docs", "missing")
    assert code == 2 and "not a folder" in err
