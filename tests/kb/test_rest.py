"""Knowledge bases over REST against a real Jupyter server: create, add (an ingest polled for
its progress), search equal to the service's answer, remove, evaluate, delete; paths that
leave the root (``..``, absolute, links) refused; bad input as 4xx JSON; another user's
knowledge base is a 404."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from cube_lab.handlers.base import WORKSPACE
from cube_lab.identity import Caller
from tests.kb.test_service import DOCS, PARAPHRASE, RARE, make_docs

os.environ.setdefault("HF_HUB_OFFLINE", "1")

KB = "kb/alice/docs"


async def _finished(api: Any, where: str, timeout: float = 120) -> dict[str, Any]:
    """Poll an ingest until it is no longer queued or running."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        status, record = await api("alice", "GET", where)
        assert status == 200, record
        if record["status"] not in ("queued", "running"):
            return record
        assert loop.time() < deadline, record
        await asyncio.sleep(0.1)


async def _create(api: Any, **fields: Any) -> dict[str, Any]:
    body = {"name": "docs", "chunking": "headings", "chunk_size": 64, "overlap": 8, **fields}
    status, view = await api("alice", "POST", "kb", body)
    assert status == 201, view
    return view


def _service(jp_serverapp: Any) -> Any:
    return jp_serverapp.web_app.settings[WORKSPACE].kb


async def test_add_search_remove_evaluate_delete(
    api: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    make_docs(jp_root_dir / "docs")
    (jp_root_dir / "docs" / "broken.ipynb").write_text('{"cells": [')
    view = await _create(api)
    assert (view["project"], view["name"], view["owner"], view["chunks"]) == (
        "alice",
        "docs",
        "alice",
        0,
    )

    status, started = await api("alice", "POST", f"{KB}/sources", {"paths": ["docs"]})
    assert status == 202, started
    assert started["status"] in ("queued", "running") and started["files_total"] == 7
    record = await _finished(api, f"{KB}/ingests/{started['id']}")
    assert record["status"] == "succeeded", record
    assert (record["files_done"], record["files_total"], record["failed"]) == (7, 7, 1)
    assert record["chunks"] == 6
    outcome = {f["source"]: f["status"] for f in record["files"]}
    assert outcome == {
        **{f"docs/{name}": "added" for name in DOCS},
        "docs/broken.ipynb": "failed",
    }
    (broken,) = [f for f in record["files"] if f["status"] == "failed"]
    assert "invalid JSON" in broken["error"]
    status, listed = await api("alice", "GET", f"{KB}/ingests")
    assert [r["id"] for r in listed["ingests"]] == [started["id"]]

    status, view = await api("alice", "GET", KB)
    assert (status, view["sources"], view["chunks"]) == (200, 6, 6)
    status, sources = await api("alice", "GET", f"{KB}/sources")
    assert sorted(s["source"] for s in sources["sources"]) == sorted(f"docs/{n}" for n in DOCS)

    # search answers what the service answers, with sources as the client names them
    service, alice = _service(jp_serverapp), Caller("alice")
    answers = {}
    for query, mode in ((RARE, "hybrid"), (RARE, "keyword"), (PARAPHRASE, "vector")):
        body = {"query": query, "k": 3, "mode": mode}
        status, found = await api("alice", "POST", f"{KB}/search", body)
        assert status == 200, found
        expected = service.query(alice, "alice", "docs", query, k=3, mode=mode)
        for hit in expected:
            hit["source"] = str(Path(hit["source"]).relative_to(jp_root_dir.resolve()))
        assert found["hits"] == expected and expected
        answers[mode] = found["hits"]
    assert answers["hybrid"][0]["source"] == "docs/garden.md"
    assert answers["vector"][0]["source"] == "docs/refund.md"
    body = {"query": RARE, "mode": "bm25", "k": 3}
    status, bm25 = await api("alice", "POST", f"{KB}/search", body)
    assert status == 200 and bm25["hits"] == answers["keyword"]
    top = bm25["hits"][0]
    assert {"text", "source", "position", "score", "heading"} <= set(top) and top["score"] > 0

    status, scores = await api(
        "alice",
        "POST",
        f"{KB}/evaluate",
        {
            "questions": [
                {"question": RARE, "source": "docs/garden.md"},
                {"question": PARAPHRASE, "source": "docs/refund.md"},
            ],
            "k": 1,
        },
    )
    assert status == 200, scores
    assert (scores["questions"], scores["recall_at_k"], scores["mrr"]) == (2, 1.0, 1.0)

    # uploads: named upload:<name>, searchable, removable
    doc = {"name": "faq.md", "content": "# FAQ\n\nThe wifi password is written on the fridge."}
    status, started = await api("alice", "POST", f"{KB}/sources", {"documents": [doc]})
    assert status == 202, started
    record = await _finished(api, f"{KB}/ingests/{started['id']}")
    assert [(f["source"], f["status"]) for f in record["files"]] == [("upload:faq.md", "added")]
    status, found = await api(
        "alice", "POST", f"{KB}/search", {"query": "wifi password", "mode": "keyword", "k": 1}
    )
    assert found["hits"][0]["source"] == "upload:faq.md"
    status, gone = await api("alice", "DELETE", f"{KB}/sources", params={"source": "upload:faq.md"})
    assert (status, gone["removed_chunks"]) == (200, 1)

    status, gone = await api(
        "alice", "DELETE", f"{KB}/sources", params={"source": "docs/shipping.txt"}
    )
    assert (status, gone["removed_chunks"]) == (200, 1)
    status, found = await api(
        "alice", "POST", f"{KB}/search", {"query": "parcels tracking", "mode": "keyword"}
    )
    assert "docs/shipping.txt" not in [h["source"] for h in found["hits"]]
    status, again = await api(
        "alice", "DELETE", f"{KB}/sources", params={"source": "docs/shipping.txt"}
    )
    assert status == 404 and "no source" in again["error"]

    status, _ = await api("alice", "DELETE", KB)
    assert status == 204
    status, missing = await api("alice", "GET", KB)
    assert status == 404 and "not found" in missing["error"]


async def test_progress_is_visible_while_it_runs(
    api: Any, jp_root_dir: Path, jp_serverapp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second file's embedding waits on a gate: meanwhile the ingest reads as running
    with one file of two done and its chunks counted."""
    service = _service(jp_serverapp)
    real, gate, calls = service.embedder, threading.Event(), []

    class Gated:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def embed(self, texts: list[str]) -> Any:
            calls.append(len(texts))
            if len(calls) == 2:
                gate.wait(60)
            return self.inner.embed(texts)

    monkeypatch.setattr(service, "embedder", lambda model: Gated(real(model)))
    await _create(api)
    docs = [
        {"name": "one.md", "content": "# One\n\nThe first note is about apples."},
        {"name": "two.md", "content": "# Two\n\nThe second note is about pears."},
    ]
    status, started = await api("alice", "POST", f"{KB}/sources", {"documents": docs})
    assert status == 202, started
    where = f"{KB}/ingests/{started['id']}"
    try:
        for _ in range(600):
            status, record = await api("alice", "GET", where)
            if record["files_done"] == 1:
                break
            await asyncio.sleep(0.05)
        assert (record["status"], record["files_done"], record["files_total"]) == (
            "running",
            1,
            2,
        ), record
        assert record["chunks"] == 1 and record["files"][0]["source"] == "upload:one.md"
        # a second add of the same knowledge base waits its turn, and says so
        third = {"name": "three.md", "content": "# Three\n\nThe third note is about plums."}
        status, waiting = await api("alice", "POST", f"{KB}/sources", {"documents": [third]})
        assert status == 202
        status, waiting = await api("alice", "GET", f"{KB}/ingests/{waiting['id']}")
        assert (waiting["status"], waiting["files_done"], waiting["files_total"]) == (
            "queued",
            0,
            1,
        )
    finally:
        gate.set()
    record = await _finished(api, where)
    assert (record["status"], record["files_done"], record["chunks"]) == ("succeeded", 2, 2)
    later = await _finished(api, f"{KB}/ingests/{waiting['id']}")
    assert (later["status"], later["chunks"]) == ("succeeded", 1)


async def test_paths_outside_the_root_are_refused(
    api: Any, jp_root_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nThe vault code is PLUGH-9931.")
    docs = make_docs(jp_root_dir / "docs")
    (docs / "leak.md").symlink_to(outside / "secret.md")  # inside a folder: skipped
    (jp_root_dir / "link.md").symlink_to(outside / "secret.md")  # named alone: refused
    (jp_root_dir / "linkdir").symlink_to(outside)
    await _create(api)
    for path in ("../outside/secret.md", str(outside / "secret.md"), "link.md", "linkdir"):
        status, body = await api("alice", "POST", f"{KB}/sources", {"paths": [path]})
        assert status == 400 and "outside" in body["error"], (path, body)
        assert "symbolic links" in body["detail"]
    status, started = await api("alice", "POST", f"{KB}/sources", {"paths": ["docs"]})
    assert status == 202 and started["files_total"] == len(DOCS)  # the link is not among them
    record = await _finished(api, f"{KB}/ingests/{started['id']}")
    assert "docs/leak.md" not in [f["source"] for f in record["files"]]
    status, found = await api(
        "alice", "POST", f"{KB}/search", {"query": "PLUGH-9931 vault", "mode": "keyword"}
    )
    assert status == 200 and all("PLUGH" not in h["text"] for h in found["hits"])
    status, body = await api(
        "alice", "DELETE", f"{KB}/sources", params={"source": "../outside/secret.md"}
    )
    assert status == 400 and "outside" in body["error"]


async def test_bad_input_is_a_4xx_saying_what_to_do(api: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "report.pptx").write_bytes(b"%PDF-1.4 not really")
    (jp_root_dir / "note.md").write_text("# Note\n\nHello.")
    await _create(api)
    cases: list[tuple[str, str, Any, int, str]] = [
        ("POST", "kb", {"name": "docs"}, 409, "already exists"),
        ("POST", "kb", {"name": "x", "chunking": "sentences"}, 400, "unknown chunking"),
        ("POST", "kb", {"name": "x", "size": 3}, 400, "unknown fields"),
        ("POST", "kb", {}, 400, "name is required"),
        ("POST", f"{KB}/sources", {}, 400, "nothing to add"),
        ("POST", f"{KB}/sources", {"paths": ["nowhere"]}, 400, "does not exist"),
        ("POST", f"{KB}/sources", {"paths": ["report.pptx"]}, 400, "unsupported file type"),
        ("POST", f"{KB}/sources", {"paths": "note.md"}, 400, "must be a list"),
        (
            "POST",
            f"{KB}/sources",
            {"documents": [{"name": "../x.md", "content": "x"}]},
            400,
            "not a plain file name",
        ),
        (
            "POST",
            f"{KB}/sources",
            {"documents": [{"name": "x.exe", "content": "x"}]},
            400,
            "unsupported file type",
        ),
        ("POST", f"{KB}/search", {"query": "x", "mode": "fuzzy"}, 400, "unknown mode"),
        ("POST", f"{KB}/search", {"query": "x", "k": 0}, 400, "k must be an integer from 1"),
        ("POST", f"{KB}/search", {"query": "x", "k": 101}, 400, "k must be an integer from 1"),
        ("POST", f"{KB}/search", {"query": "x", "k": "many"}, 400, "k must be an integer"),
        ("POST", f"{KB}/search", {}, 400, "query is required"),
        ("POST", f"{KB}/evaluate", {"questions": [{"question": "x"}]}, 400, "bad question set"),
        ("POST", f"{KB}/evaluate", {"questions": "x"}, 400, "must be a list"),
        ("DELETE", f"{KB}/sources", None, 400, "'source' is required"),
        ("GET", f"{KB}/ingests/0123456789ab", None, 404, "no ingest"),
        ("GET", "kb/alice/nothing", None, 404, "not found"),
    ]
    for method, path, body, code, text in cases:
        status, answer = await api("alice", method, path, body)
        assert status == code and text in answer["error"], (path, body, answer)
        assert answer["detail"], (path, body, answer)  # says how to fix it
    status, answer = await api("alice", "POST", f"{KB}/sources", {"paths": ["report.pptx"]})
    assert "convert" in answer["detail"]
    status, view = await api("alice", "GET", KB)
    assert view["sources"] == 0  # nothing started for any of it


async def test_another_users_knowledge_base_is_a_404(api: Any, jp_root_dir: Path) -> None:
    make_docs(jp_root_dir / "docs")
    await _create(api)
    status, listed = await api("bob", "GET", "kb")
    assert (status, listed["knowledge_bases"]) == (200, [])
    for method, path, body in (
        ("GET", KB, None),
        ("DELETE", KB, None),
        ("GET", f"{KB}/sources", None),
        ("POST", f"{KB}/sources", {"paths": ["docs"]}),
        ("GET", f"{KB}/ingests", None),
        ("POST", f"{KB}/search", {"query": "refund", "mode": "keyword"}),
        ("POST", f"{KB}/evaluate", {"questions": [{"question": "x", "source": "docs/a.md"}]}),
    ):
        status, answer = await api("bob", method, path, body)
        assert status == 404, (method, path, answer)
    status, view = await api("bob", "POST", "kb", {"name": "docs"})
    assert status == 201 and view["project"] == "bob"
    status, listed = await api("alice", "GET", "kb")
    assert [(v["project"], v["name"]) for v in listed["knowledge_bases"]] == [("alice", "docs")]


async def test_an_ingest_whose_process_is_gone_reads_interrupted(
    api: Any, jp_serverapp: Any
) -> None:
    await _create(api)
    doc = {"name": "one.md", "content": "# One\n\nApples."}
    status, started = await api("alice", "POST", f"{KB}/sources", {"documents": [doc]})
    assert status == 202
    record = await _finished(api, f"{KB}/ingests/{started['id']}")
    assert record["status"] == "succeeded"
    # a record left running by a server process that has since stopped
    gone = subprocess.Popen(["true"])
    gone.wait()
    folder = next(_service(jp_serverapp).root.glob("*/docs"))
    stale = {
        **record,
        "id": "0123456789ab",
        "status": "running",
        "finished_at": None,
        "_process": {"host": socket.gethostname(), "pid": gone.pid},
    }
    (folder / "ingests" / "0123456789ab.json").write_text(json.dumps(stale))
    status, seen = await api("alice", "GET", f"{KB}/ingests/0123456789ab")
    assert (status, seen["status"]) == (200, "interrupted") and "add again" in seen["error"]
    assert "_process" not in seen


async def test_pdf_uploaded_as_base64_keeps_its_pages(api: Any) -> None:
    import base64

    from tests.kb.test_parse import make_pdf

    await _create(api, chunking="pages")
    pdf = make_pdf(["Cover page.", "Valve code VQ-5521 opens the drain."])
    docs = [
        {"name": "valves.pdf", "content_base64": base64.b64encode(pdf).decode()},
        {"name": "cut.pdf", "content_base64": base64.b64encode(pdf[:120]).decode()},
    ]
    status, started = await api("alice", "POST", f"{KB}/sources", {"documents": docs})
    assert status == 202, started
    record = await _finished(api, f"{KB}/ingests/{started['id']}")
    outcome = {f["source"]: (f["status"], f["chunks"]) for f in record["files"]}
    assert outcome == {"upload:valves.pdf": ("added", 2), "upload:cut.pdf": ("failed", 0)}
    status, answer = await api("alice", "POST", f"{KB}/search", {"query": "VQ-5521", "k": 1})
    (hit,) = answer["hits"]
    assert hit["source"] == "upload:valves.pdf" and hit["meta"] == {"page": 2}
    bad = {"documents": [{"name": "x.pdf", "content_base64": "not base64!"}]}
    status, answer = await api("alice", "POST", f"{KB}/sources", bad)
    assert status == 400 and "not valid base64" in answer["error"]
