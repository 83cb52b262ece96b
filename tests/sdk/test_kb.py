"""``cl.kb``: create a knowledge base, add a folder and an uploaded document (an ``Ingest``
handle that shows its progress and ``.wait()``s), search, list sources, remove one, evaluate;
in this process and through ``cl.connect`` against a real second server, with the same
answers in both."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import cube_lab as cl
from cube_lab import sdk
from cube_lab.errors import CubeError, NotFound
from cube_lab.sdk.kb import Ingest, KnowledgeBase
from tests.kb.test_service import DOCS, PARAPHRASE, RARE, make_docs
from tests.sdk.test_sdk import _connect, _same_everywhere, local, server  # noqa: F401  (fixtures)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _kb(root: Path) -> dict[str, Any]:
    make_docs(root / "docs")
    kb = cl.kb.create("docs", chunking="headings", chunk_size=64, overlap=8)
    assert isinstance(kb, KnowledgeBase) and (kb.project, kb.name, kb.chunks) == (
        "alice",
        "docs",
        0,
    )
    ingest = kb.add("docs")
    assert isinstance(ingest, Ingest) and ingest.files_total == len(DOCS)
    ingest.wait(timeout=120)
    assert (ingest.status, ingest.files_done, ingest.chunks) == ("succeeded", 6, 6), ingest
    assert "6/6 files, 6 chunks" in repr(ingest)
    upload = kb.add(documents={"faq.md": "# FAQ\n\nThe wifi password is on the fridge."}, wait=True)
    assert [(f["source"], f["status"]) for f in upload.files] == [("upload:faq.md", "added")]
    again = kb.add("docs/garden.md", wait=True)
    assert [f["status"] for f in again.files] == ["unchanged"]

    assert [k.name for k in cl.kb.list()] == ["docs"]
    assert cl.kb.get("docs").refresh().chunks == 7
    rare = cl.kb.search("docs", RARE, k=2)
    assert rare[0]["source"] == "docs/garden.md"
    paraphrase = kb.search(PARAPHRASE, k=1, mode="vector")
    assert paraphrase[0]["source"] == "docs/refund.md"
    keyword = kb.search("wifi password", k=1, mode="bm25")
    assert keyword[0]["source"] == "upload:faq.md"
    sources = sorted(s["source"] for s in kb.sources())
    assert sources == sorted([*(f"docs/{n}" for n in DOCS), "upload:faq.md"])
    assert kb.remove("docs/shipping.txt") == 1
    assert kb.remove("upload:faq.md") == 1
    scores = kb.evaluate([{"question": RARE, "source": "docs/garden.md"}], k=1)
    assert (scores["recall_at_k"], scores["mrr"]) == (1.0, 1.0)

    with pytest.raises(NotFound) as missing:
        cl.kb.get("nope")
    with pytest.raises(CubeError) as duplicate:
        cl.kb.create("docs")
    with pytest.raises(CubeError) as bad_mode:
        kb.search("x", mode="fuzzy")
    with pytest.raises(CubeError) as bad_k:
        kb.search("x", k=0)
    with pytest.raises(CubeError) as outside:
        kb.add("/")
    kb.delete()
    assert cl.kb.list() == []

    def plain(record: Ingest) -> dict[str, Any]:
        return {
            k: v for k, v in record.data.items() if k not in ("id", "started_at", "finished_at")
        }

    return {
        "ingests": [plain(ingest), plain(upload), plain(again)],
        "hits": [rare, paraphrase, keyword],
        "sources": sources,
        "scores": scores,
        "errors": [
            e.value.to_json() | {"class": type(e.value).__name__}
            for e in (missing, duplicate, bad_mode, bad_k)
        ],
        # the message names each side's root; both are the same 400
        "outside": [outside.value.status, "is outside" in outside.value.error],
    }


def test_kb_here_and_over_rest_answer_the_same(
    local: Path,  # noqa: F811  (the fixture of test_sdk)
    server: tuple[str, Path],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CUBE_LAB_ROOT_DIR", str(local))
    here = _kb(local)
    assert sdk.current().kind == "local"
    errors = [e["error"] for e in here["errors"]]
    assert errors[0] == "knowledge base 'nope' not found in project 'alice'", errors
    assert "already exists" in errors[1] and "unknown mode" in errors[2], errors
    assert errors[3].startswith("k must be an integer from 1 to 100"), errors
    assert here["outside"] == [400, True]
    theirs = _kb(_connect(server, monkeypatch))
    _same_everywhere(here, theirs)


def test_cl_kb_is_the_package_with_the_sdk_calls() -> None:
    import cube_lab.kb
    import cube_lab.kb.service

    assert cl.kb is cube_lab.kb
    assert all(callable(getattr(cl.kb, f)) for f in ("create", "get", "list", "search"))
