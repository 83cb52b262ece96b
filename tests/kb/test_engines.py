"""The two index engines behind one interface (``cube_lab/kb/engine.py``): the behaviour
tests the embedded engine passes (hybrid finds the rare term and the paraphrase, filters,
removing a source, idempotent re-ingest, rows, tenancy) run unchanged against both; then what
is the Milvus engine's own: filters as escaped literals (no injection), config checks, the
missing-package message. The Milvus case runs Milvus Lite (a local ``.db``; pymilvus starts
its server process); it is skipped when pymilvus or milvus-lite is not installed."""

from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tests.kb.test_filters as filter_tests
import tests.kb.test_service as service_tests
from cube_lab.errors import InvalidInput
from cube_lab.identity import Caller
from cube_lab.kb.engine import IndexEngine
from cube_lab.kb.index import KnowledgeIndex, NewChunk

os.environ.setdefault("HF_HUB_OFFLINE", "1")

HAVE_MILVUS = all(importlib.util.find_spec(m) for m in ("pymilvus", "milvus_lite"))
needs_milvus = pytest.mark.skipif(
    not HAVE_MILVUS, reason='needs pip install "cube-lab[kb-milvus]" (pymilvus, milvus-lite)'
)
ENGINES = ["embedded", pytest.param("milvus", marks=needs_milvus)]


@pytest.fixture(params=ENGINES)
def engine_ws(request: pytest.FixtureRequest, ws: Any) -> Any:
    """The workspace whose new knowledge bases use the parametrised engine."""
    ws.kb.create = functools.partial(ws.kb.create, engine=request.param)
    ws.engine = request.param
    return ws


def test_add_query_idempotent_remove(engine_ws: Any, alice: Caller, tmp_path: Path) -> None:
    service_tests.test_add_query_idempotent_remove(engine_ws, alice, tmp_path)
    (index,) = engine_ws.kb._open.values()
    assert type(index).__name__ == {"milvus": "MilvusIndex"}.get(engine_ws.engine, "KnowledgeIndex")


def test_hybrid_finds_what_each_half_misses(engine_ws: Any, alice: Caller, tmp_path: Path) -> None:
    service_tests.test_hybrid_finds_what_each_half_misses(engine_ws, alice, tmp_path)


def test_bad_input_and_tenancy(engine_ws: Any, alice: Caller, bob: Caller, tmp_path: Path) -> None:
    service_tests.test_bad_input_and_tenancy(engine_ws, alice, bob, tmp_path)


def test_rows_chunk_one_a_row(engine_ws: Any, alice: Caller, tmp_path: Path) -> None:
    service_tests.test_rows_chunk_one_a_row(engine_ws, alice, tmp_path)


def test_filters(engine_ws: Any, alice: Caller, tmp_path: Path) -> None:
    filter_tests.test_filters_in_the_service(engine_ws, alice, tmp_path)


def test_embedded_index_implements_the_interface(tmp_path: Path) -> None:
    index = KnowledgeIndex(tmp_path / "kb", 4)
    assert isinstance(index, IndexEngine)
    index.close()


# -- the Milvus engine's own ------------------------------------------------------------


def _unit(rows: int, dim: int, seed: int = 3) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@needs_milvus
def test_milvus_filters_are_literals_not_expressions(tmp_path: Path) -> None:
    from cube_lab.kb.milvus_index import MilvusIndex

    index = MilvusIndex(tmp_path / "kb", 8, {"uri": "milvus.db"})
    assert isinstance(index, IndexEngine)
    odd = 'a" or id >= 0 or source == "'
    slashy = 'C:\\docs\\\u00e9t\u00e9 "q".md'
    chunks = [
        NewChunk("pump bearing grease", "plain.md", 0, "Intro", {"topic": "pumps", "page": 1}),
        NewChunk("pump impeller stuck", odd, 0, "50% off_now", {"topic": 'x" or 1 == 1'}),
        NewChunk("pump drain winter", slashy, 1, "Notes", {"page": 2, "k\\ey": "v"}),
    ]
    vecs = _unit(3, 8)
    ids = index.add(chunks, vecs)
    assert ids == [0, 1, 2] and len(index) == 3

    def sources(allowed: Any) -> list[str]:
        hits = index.search("keyword", 10, text="pump", allowed=allowed)
        return sorted(h.source for h in hits)

    assert sources(index.matching(sources=[odd])) == [odd]
    assert sources(index.matching(sources=[slashy])) == [slashy]
    assert sources(index.matching(sources=[])) == []
    assert sources(index.matching(heading="50% off_*")) == [odd]
    assert sources(index.matching(meta={"topic": 'x" or 1 == 1'})) == [odd]
    assert sources(index.matching(meta={"topic": "x"})) == []
    assert sources(index.matching(meta={"k\\ey": "v"})) == [slashy]
    assert sources(index.matching(pages=[1, 2])) == sorted(["plain.md", slashy])
    assert sources(index.matching(pages=(2, None))) == [slashy]
    # LIKE's own wildcards in a heading are literal; * and ? are the glob's
    assert sources(index.matching(heading="50% off_now")) == [odd]
    assert sources(index.matching(heading="50% off?now")) == [odd]
    assert sources(index.matching(heading="50_ off*")) == []
    assert sources(index.matching(heading="N*")) == [slashy]
    with pytest.raises(InvalidInput, match="supports \\* and \\? only"):
        index.matching(heading="[NI]*")

    hits = index.search("vector", 1, vector=vecs[2])
    assert hits[0].id == 2 and hits[0].vector_score == pytest.approx(1.0, abs=1e-4)
    assert index.cosines([2, 0], vecs[2]) == pytest.approx([1.0, float(vecs[0] @ vecs[2])], 1e-4)
    assert index.chunks([1])[1] == ("pump impeller stuck", odd, 0, "50% off_now", chunks[1].meta)
    assert index.remove_source(slashy) == 1 and len(index) == 2
    assert index.remove_source(odd) == 1 and sources(None) == ["plain.md"]
    index.flush()
    index.close()
    again = MilvusIndex(tmp_path / "kb", 8, {"uri": "milvus.db"})  # reopens from the file
    assert len(again) == 1 and again.add(chunks[:1], vecs[:1]) == [3]
    again.drop()


@needs_milvus
def test_milvus_config_is_checked(ws: Any, alice: Caller) -> None:
    for bad, says in (
        ({"engine": "faiss"}, "unknown index engine"),
        ({"milvus": {"uri": "x.db"}}, "need engine 'milvus'"),
        ({"engine": "milvus", "milvus": {"uri": "/etc/x.db"}}, "milvus.uri must be"),
        ({"engine": "milvus", "milvus": {"uri": "../x.db"}}, "milvus.uri must be"),
        ({"engine": "milvus", "milvus": {"uri": "ftp://h:1"}}, "milvus.uri must be"),
        ({"engine": "milvus", "milvus": {"url": "x.db"}}, "milvus must be an object"),
        ({"engine": "milvus", "milvus": {"collection": "1-x"}}, "milvus.collection"),
        ({"engine": "milvus", "milvus": {"token_env": "a b"}}, "milvus.token_env"),
    ):
        with pytest.raises(InvalidInput, match=says):
            ws.kb.create(alice, "docs", **bad)
    assert ws.kb.list(alice) == []
    ws.kb.create(alice, "docs", engine="milvus", milvus={"uri": "kb.db", "collection": "c1"})
    (folder,) = ws.kb._open
    assert (folder / "kb.db").exists()
    ws.kb.delete(alice, None, "docs")
    assert not folder.exists()


def test_missing_milvus_names_the_extra(
    ws: Any, alice: Caller, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in ("pymilvus", "milvus_lite") else real(name, *a),
    )
    with pytest.raises(InvalidInput) as err:
        ws.kb.create(alice, "docs", engine="milvus")
    assert "pymilvus" in str(err.value) and 'pip install "cube-lab[kb-milvus]"' in str(
        err.value.detail
    )
    assert ws.kb.list(alice) == []


@needs_milvus
async def test_rest_and_cli_choose_the_engine(api: Any, tmp_path: Path) -> None:
    body = {"name": "lite", "engine": "milvus", "milvus": {"uri": "lite.db"}}
    status, view = await api("alice", "POST", "kb", body)
    assert status == 201 and view["engine"] == "milvus", view
    status, plain = await api("alice", "POST", "kb", {"name": "plain"})
    assert status == 201 and plain["engine"] == "embedded"
    status, err = await api("alice", "POST", "kb", {"name": "x", "engine": "faiss"})
    assert status == 400 and "unknown index engine" in err["error"]
    status, err = await api("alice", "POST", "kb", {"name": "y", "milvus": {"uri": "y.db"}})
    assert status == 400 and "need engine 'milvus'" in err["error"]
    for name in ("lite", "plain"):
        assert (await api("alice", "DELETE", f"kb/alice/{name}"))[0] == 204

    from tests.cli.test_contracts import Cli

    work = tmp_path / "work"
    work.mkdir()
    made = Cli(work).json("kb", "create", "cli-lite", "--engine", "milvus", "--milvus-uri", "c.db")
    assert (made["name"], made["engine"]) == ("cli-lite", "milvus")
    Cli(work)("kb", "delete", "cli-lite")
