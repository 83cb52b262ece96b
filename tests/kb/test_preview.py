"""Chunk preview over REST: the chunks of files under the root or uploaded documents, chunked
with the knowledge base's own settings or the options given, equal to what an ingest then
stores, and nothing committed; paths that leave the root refused; bad input a 4xx; another
user's knowledge base a 404."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cube_lab.kb.chunk import chunk_document
from cube_lab.kb.parse import parse_bytes
from cube_lab.kb.preview import token_count
from tests.kb.test_rest import _create, _finished
from tests.sdk.test_sdk import local  # noqa: F401  (fixture)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

KB = "kb/alice/docs"
GUIDE = (
    "# Guide\n\nIntro words about the guide that go on for a while here.\n\n"
    "## Install\n\n" + " ".join(f"install{n}" for n in range(30)) + "\n\n"
    "## Use\n\nRun the tool and read the output carefully before you go on.\n"
)


async def test_preview_commits_nothing_and_matches_the_ingest(api: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "docs").mkdir()
    (jp_root_dir / "docs" / "guide.md").write_text(GUIDE)
    (jp_root_dir / "docs" / "broken.ipynb").write_text('{"cells": [')
    await _create(api)  # headings, 64 tokens, overlap 8

    status, shown = await api("alice", "POST", f"{KB}/preview", {"paths": ["docs"]})
    assert status == 200, shown
    assert (shown["chunking"], shown["chunk_size"], shown["overlap"]) == ("headings", 64, 8)
    files = {f["source"]: f for f in shown["files"]}
    assert files["docs/broken.ipynb"]["status"] == "failed"
    assert "invalid JSON" in files["docs/broken.ipynb"]["error"]
    guide = files["docs/guide.md"]
    expected = chunk_document(parse_bytes(GUIDE.encode(), ".md", "x"), "headings", 64, 8)
    assert guide["status"] == "ok" and guide["chunks"] == len(expected) == 3
    assert guide["unchanged"] is False
    assert [c["text"] for c in shown["chunks"]] == [c.text for c in expected]
    assert [c["heading_path"] for c in shown["chunks"]] == [
        ["Guide"],
        ["Guide", "Install"],
        ["Guide", "Use"],
    ]
    assert shown["chunks"][1]["heading"] == "Guide > Install"
    assert all(c["source"] == "docs/guide.md" and c["page"] is None for c in shown["chunks"])
    assert [c["tokens"] for c in shown["chunks"]] == [token_count(c.text) for c in expected]
    assert shown["chunks"][1]["tokens"] == 30
    assert shown["total_chunks"] == 3 and shown["truncated"] is False

    # nothing committed: no chunk, no source, no ingest, no upload kept
    status, view = await api("alice", "GET", KB)
    assert (view["sources"], view["chunks"]) == (0, 0)
    status, listed = await api("alice", "GET", f"{KB}/ingests")
    assert listed["ingests"] == []

    # options instead of the knowledge base's chunking
    body = {"paths": ["docs/guide.md"], "chunking": "tokens", "chunk_size": 10, "overlap": 0}
    status, small = await api("alice", "POST", f"{KB}/preview", body)
    assert status == 200, small
    expected = chunk_document(parse_bytes(GUIDE.encode(), ".md", "x"), "tokens", 10, 0)
    assert [c["text"] for c in small["chunks"]] == [c.text for c in expected]
    assert all(c["tokens"] <= 10 for c in small["chunks"]) and len(expected) > 3

    # uploads in the ingest's shape; named upload:<name>, not kept
    doc = {"name": "faq.md", "content": "# FAQ\n\nThe wifi password is on the fridge."}
    status, up = await api("alice", "POST", f"{KB}/preview", {"documents": [doc]})
    assert status == 200, up
    assert [(c["source"], c["heading"]) for c in up["chunks"]] == [("upload:faq.md", "FAQ")]
    status, view = await api("alice", "GET", KB)
    assert view["chunks"] == 0

    # after the ingest the stored chunks are the previewed ones, and the preview says unchanged
    status, started = await api("alice", "POST", f"{KB}/sources", {"paths": ["docs/guide.md"]})
    record = await _finished(api, f"{KB}/ingests/{started['id']}")
    assert record["chunks"] == 3
    status, again = await api("alice", "POST", f"{KB}/preview", {"paths": ["docs/guide.md"]})
    assert again["files"][0]["unchanged"] is True
    status, found = await api(
        "alice", "POST", f"{KB}/search", {"query": "install7", "mode": "keyword", "k": 1}
    )
    assert found["hits"][0]["text"] == shown["chunks"][1]["text"]
    status, _ = await api("alice", "DELETE", KB)
    assert status == 204


async def test_preview_refuses_bad_input_and_other_users(
    api: Any, jp_root_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nPLUGH-9931")
    (jp_root_dir / "link.md").symlink_to(outside / "secret.md")
    (jp_root_dir / "a.md").write_text("# A\n\ntext")
    (jp_root_dir / "slides.pptx").write_bytes(b"x")
    await _create(api)
    cases = [
        ({"paths": ["../outside/secret.md"]}, 400, "outside"),
        ({"paths": ["link.md"]}, 400, "outside"),
        ({}, 400, "nothing to preview"),
        ({"paths": "a.md"}, 400, "paths must be a list"),
        ({"paths": ["a.md"], "chunk_size": 2}, 400, "chunk size"),
        ({"paths": ["a.md"], "chunking": "words"}, 400, "unknown chunking"),
        ({"paths": ["a.md"], "overlap": 500}, 400, "overlap"),
        ({"paths": ["a.md"], "extra": 1}, 400, "unknown fields"),
        ({"paths": ["slides.pptx"]}, 400, "unsupported"),
        ({"documents": [{"name": "../x.md", "content": "x"}]}, 400, "plain file name"),
        ({"documents": [{"name": "x.md", "content": 3}]}, 400, "must be text"),
    ]
    for body, code, words in cases:
        status, answer = await api("alice", "POST", f"{KB}/preview", body)
        assert status == code and words in answer["error"], (body, answer)
        assert answer["detail"], (body, answer)
    status, answer = await api("alice", "POST", "kb/alice/nothing/preview", {"paths": ["a.md"]})
    assert status == 404 and "not found" in answer["error"]
    status, answer = await api("bob", "POST", f"{KB}/preview", {"paths": ["a.md"]})
    assert status == 404, answer
    status, _ = await api("alice", "DELETE", KB)
    assert status == 204


def test_preview_from_the_cli_and_the_sdk(local: Path, capsys: Any) -> None:  # noqa: F811
    """``cube-lab kb preview`` prints each chunk (``--json``: the REST answer) and
    ``cl.kb(...).preview(...)`` answers the same, in this process; nothing is added."""
    import json

    import cube_lab as cl
    from cube_lab.cli import main

    tmp_path = local
    (tmp_path / "guide.md").write_text(GUIDE)
    assert main(["kb", "create", "docs", "--chunking", "headings", "--chunk-size", "64"]) == 0
    capsys.readouterr()
    assert main(["kb", "preview", "docs", "guide.md"]) == 0
    out = capsys.readouterr().out
    assert "Guide > Install] (30 tokens)" in out and "guide.md: 3 chunk(s)" in out
    assert (
        main(
            ["kb", "preview", "docs", "guide.md", "--chunk-size", "10", "--overlap", "2", "--json"]
        )
        == 0
    )
    shown = json.loads(capsys.readouterr().out)
    assert shown["chunk_size"] == 10 and all(c["tokens"] <= 10 for c in shown["chunks"])
    (tmp_path / "bad.ipynb").write_text("{")
    assert main(["kb", "preview", "docs", "bad.ipynb"]) == 1
    assert "FAILED" in capsys.readouterr().err

    kb = cl.kb.get("docs")
    viewed = kb.preview("guide.md", chunk_size=10, overlap=2)
    assert [c["text"] for c in viewed["chunks"]] == [c["text"] for c in shown["chunks"]]
    up = kb.preview(documents={"faq.md": "# FAQ\n\nwifi on the fridge"})
    assert [(c["source"], c["tokens"]) for c in up["chunks"]] == [("upload:faq.md", 4)]
    assert kb.refresh().chunks == 0
