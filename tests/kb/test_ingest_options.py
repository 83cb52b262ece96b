"""An ingest with the chunking a preview showed: ``POST .../sources`` takes ``chunking``,
``chunk_size`` and ``overlap`` (checked as the preview checks them, a 400 before anything
starts) and stores exactly the previewed chunks; without them the knowledge base's own
chunking applies."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests.kb.test_preview import GUIDE, KB
from tests.kb.test_rest import _create, _finished

os.environ.setdefault("HF_HUB_OFFLINE", "1")


async def test_ingest_with_the_previewed_options(api: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "guide.md").write_text(GUIDE)
    (jp_root_dir / "other.md").write_text(GUIDE.replace("Guide", "Other"))
    await _create(api)  # headings, 64 tokens, overlap 8
    options = {"chunking": "tokens", "chunk_size": 10, "overlap": 2}

    status, shown = await api("alice", "POST", f"{KB}/preview", {"paths": ["guide.md"], **options})
    assert status == 200, shown
    assert shown["total_chunks"] > 3  # not the 3 sections the headings chunking makes

    status, started = await api(
        "alice", "POST", f"{KB}/sources", {"paths": ["guide.md"], **options}
    )
    assert status == 202, started
    record = await _finished(api, f"{KB}/ingests/{started['id']}")
    assert record["status"] == "succeeded", record
    assert record["chunks"] == shown["total_chunks"]
    status, found = await api(
        "alice", "POST", f"{KB}/search", {"query": "install7", "mode": "keyword", "k": 1}
    )
    assert found["hits"][0]["text"] in [c["text"] for c in shown["chunks"]]

    # no options: the knowledge base's own chunking (3 sections)
    status, started = await api("alice", "POST", f"{KB}/sources", {"paths": ["other.md"]})
    record = await _finished(api, f"{KB}/ingests/{started['id']}")
    assert record["chunks"] == 3, record
    status, view = await api("alice", "GET", KB)
    assert view["chunks"] == shown["total_chunks"] + 3
    assert (view["chunking"], view["chunk_size"]) == ("headings", 64)  # its settings stay

    # bad options: a 400 with its detail, and no ingest started
    status, before = await api("alice", "GET", f"{KB}/ingests")
    for body, words in [
        ({"chunk_size": 2}, "chunk size"),
        ({"chunking": "words"}, "unknown chunking"),
        ({"chunk_size": 10, "overlap": 10}, "overlap"),
    ]:
        status, answer = await api(
            "alice", "POST", f"{KB}/sources", {"paths": ["guide.md"], **body}
        )
        assert status == 400 and words in answer["error"], (body, answer)
        assert answer["detail"], answer
    status, after = await api("alice", "GET", f"{KB}/ingests")
    assert len(after["ingests"]) == len(before["ingests"])
    status, _ = await api("alice", "DELETE", KB)
    assert status == 204
