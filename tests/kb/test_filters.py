"""Metadata filters on search (service, REST, CLI, chat): by source glob (as the caller names
sources), by PDF page or page range, by heading glob, by a row's metadata; all that are given
must hold; the graph path past the exact limit keeps only allowed rows; bad filters are 400s."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cube_lab.errors import InvalidInput
from cube_lab.identity import Caller
from cube_lab.kb.index import EXACT_BELOW, KnowledgeIndex, NewChunk
from tests.kb.test_parse import make_pdf
from tests.kb.test_service import make_docs

os.environ.setdefault("HF_HUB_OFFLINE", "1")

PAGES = [
    "Pump maintenance: grease the pump bearing monthly.",
    "Pump faults: a pump that hums has a stuck impeller.",
    "Pump storage: drain the pump before winter.",
]


def _docs(folder: Path) -> Path:
    make_docs(folder)
    (folder / "pumps.pdf").write_bytes(make_pdf(PAGES))
    (folder / "faq.jsonl").write_text(
        json.dumps({"question": "Pump noise?", "answer": "Check the pump.", "topic": "pumps"})
        + "\n"
        + json.dumps({"question": "Pump price?", "answer": "See the list.", "topic": "sales"})
        + "\n"
    )
    return folder


def test_filters_in_the_service(ws: Any, alice: Caller, tmp_path: Path) -> None:
    docs = _docs(tmp_path / "docs")
    ws.kb.create(alice, "docs", chunking_="pages", chunk_size=64, overlap=8)
    ws.kb.add(alice, None, "docs", [docs])

    def found(filters: Any, mode: str = "keyword", query: str = "pump") -> list[tuple[str, Any]]:
        hits = ws.kb.query(alice, None, "docs", query, k=10, mode=mode, filters=filters)
        return sorted((Path(h["source"]).name, h["meta"].get("page")) for h in hits)

    every = found(None)
    assert {"pumps.pdf", "faq.jsonl", "codes2.txt"} <= {name for name, _ in every}
    assert found({"source": "*.pdf"}) == [("pumps.pdf", 1), ("pumps.pdf", 2), ("pumps.pdf", 3)]
    assert found({"source": "*.pdf", "page": 2}) == [("pumps.pdf", 2)]
    assert found({"page": [1, 3]}) == [("pumps.pdf", 1), ("pumps.pdf", 3)]
    assert found({"page": {"from": 2}}) == [("pumps.pdf", 2), ("pumps.pdf", 3)]
    assert found({"page": {"to": 1}}, mode="hybrid") == [("pumps.pdf", 1)]
    assert found({"meta": {"topic": "pumps"}}) == [("faq.jsonl", None)]
    assert found({"source": ["*.md", "*.html"]}) == []  # no pump in them
    assert found({"source": ["*.md", "*.txt"]}) == [("codes2.txt", None)]
    assert found({"source": "*.md"}, mode="vector") == [("garden.md", None), ("refund.md", None)]
    assert found({"source": "nothing*"}, mode="hybrid") == []
    (hit,) = ws.kb.query(
        alice, None, "docs", "money back", k=3, mode="vector", filters={"heading": "Ret*"}
    )
    assert hit["heading"] == "Returns"

    for bad, says in (
        ("x", "filters must be an object"),
        ({"colour": "red"}, "unknown filters"),
        ({"source": 3}, "filters.source must be a glob"),
        ({"page": "two"}, "filters.page must be"),
        ({"page": {"from": 1, "upto": 2}}, "filters.page must be"),
        ({"heading": ""}, "filters.heading must be a glob"),
        ({"meta": {"topic": [1]}}, "filters.meta must map"),
    ):
        with pytest.raises(InvalidInput, match=says):
            ws.kb.query(alice, None, "docs", "pump", filters=bad)


def test_filtered_graph_search_keeps_to_allowed_rows(tmp_path: Path) -> None:
    n = EXACT_BELOW + 600
    rng = np.random.default_rng(7)
    vecs = rng.standard_normal((n, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    index = KnowledgeIndex(tmp_path / "kb", 16)
    index.add([NewChunk("x", f"s{i % 2}", i, meta={"page": i % 7}) for i in range(n)], vecs)
    odd = index.matching(sources=["s1"])  # half the rows: the graph path, filtered
    assert int(odd.sum()) == n // 2
    for i in (1, 2, 1001):
        found = index.vector_ids(vecs[i], 5, odd)
        assert len(found) == 5 and all(j % 2 == 1 for j, _ in found)
        if i % 2:
            assert found[0][0] == i
    few = index.matching(sources=["s0"], pages=[3])  # few rows: an exact scan of them
    found = index.vector_ids(vecs[0], 3, few)
    assert all(j % 2 == 0 and j % 7 == 3 for j, _ in found) and len(found) == 3
    index.close()


async def test_filters_over_rest_and_the_cli(
    api: Any, jp_root_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from tests.kb.test_rest import _create, _finished

    _docs(jp_root_dir / "docs")
    await _create(api, chunking="pages")
    status, started = await api("alice", "POST", "kb/alice/docs/sources", {"paths": ["docs"]})
    await _finished(api, f"kb/alice/docs/ingests/{started['id']}")
    body = {"query": "pump", "mode": "keyword", "k": 10, "filters": {"source": "docs/*.pdf"}}
    status, answer = await api("alice", "POST", "kb/alice/docs/search", body)
    assert status == 200, answer
    assert {h["source"] for h in answer["hits"]} == {"docs/pumps.pdf"} and len(answer["hits"]) == 3
    body["filters"] = {"source": "docs/pumps.pdf", "page": {"from": 2, "to": 2}}
    status, answer = await api("alice", "POST", "kb/alice/docs/search", body)
    assert [h["meta"]["page"] for h in answer["hits"]] == [2]
    body["filters"] = {"page": "x"}
    status, answer = await api("alice", "POST", "kb/alice/docs/search", body)
    assert status == 400 and "filters.page" in answer["error"]

    # the CLI in this process: --source, --page
    from cube_lab.cli import main

    monkeypatch.setenv("CUBE_LAB_USER", "alice")
    tmp = jp_root_dir.parent / "cli"
    tmp.mkdir()
    monkeypatch.chdir(tmp)
    _docs(tmp / "docs")
    assert main(["kb", "create", "here", "--chunking", "pages"]) == 0
    assert main(["kb", "add", "here", "docs", "-q"]) == 0
    capsys.readouterr()
    args = ["kb", "search", "here", "pump", "--mode", "keyword", "--json"]
    assert main([*args, "--source", "*.pdf", "--page", "2-3"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert sorted(h["meta"]["page"] for h in hits) == [2, 3]
    assert main([*args, "--page", "x"]) == 2
