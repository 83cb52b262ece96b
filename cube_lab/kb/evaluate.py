"""Retrieval quality on a question set: recall@k, MRR and nDCG@10.

A question names what a right answer is: expected sources (any chunk of such a source is
relevant) and / or expected chunk ids. Each expected item counts once, at the first rank
where a chunk matching it appears; later chunks of the same source gain nothing.

- recall@k: the share of expected items found in the top k.
- MRR: the mean over questions of 1 / the rank of the first relevant chunk (0 if none in
  the ranking).
- nDCG@10: binary gains, DCG = sum of 1 / log2(rank + 1) over the ranks (<= 10) where an
  expected item is first found, divided by the ideal DCG (all expected items at the top:
  min(#expected, 10) gains).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Question:
    question: str
    sources: tuple[str, ...] = ()
    chunks: tuple[int, ...] = ()

    @classmethod
    def of(cls, data: dict[str, Any]) -> Question:
        text = data.get("question")
        if not isinstance(text, str) or not text.strip():
            raise ValueError("each question needs a non-empty 'question'")
        sources = data.get("sources", data.get("source", ()))
        chunks = data.get("chunks", data.get("chunk", ()))
        sources = (sources,) if isinstance(sources, str) else tuple(sources or ())
        chunks = (chunks,) if isinstance(chunks, int) else tuple(chunks or ())
        if not sources and not chunks:
            raise ValueError(f"question {text[:60]!r} names no expected source or chunk")
        return cls(text, tuple(str(s) for s in sources), tuple(int(c) for c in chunks))


@dataclass(frozen=True)
class Retrieved:
    id: int
    source: str


@dataclass(frozen=True)
class Scores:
    questions: int
    k: int
    recall_at_k: float
    mrr: float
    ndcg_at_10: float
    per_question: list[dict[str, Any]] = field(default_factory=list)
    rerank: dict[str, Any] | None = None  # the reranker the rankings went through, if any


def first_ranks(question: Question, ranking: Sequence[Retrieved]) -> list[int | None]:
    """For each expected item (sources, then chunks), the first rank (from 1) it is found
    at, or None."""
    out: list[int | None] = []
    for source in question.sources:
        out.append(next((r for r, hit in enumerate(ranking, 1) if hit.source == source), None))
    for chunk in question.chunks:
        out.append(next((r for r, hit in enumerate(ranking, 1) if hit.id == chunk), None))
    return out


def recall_at(ranks: list[int | None], k: int) -> float:
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks) if ranks else 0.0


def reciprocal_rank(ranks: list[int | None]) -> float:
    found = [r for r in ranks if r is not None]
    return 1.0 / min(found) if found else 0.0


def ndcg_at(ranks: list[int | None], k: int = 10) -> float:
    dcg = sum(1.0 / math.log2(r + 1) for r in ranks if r is not None and r <= k)
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(len(ranks), k) + 1))
    return dcg / ideal if ideal else 0.0


def score(
    questions: Sequence[Question], rankings: Sequence[Sequence[Retrieved]], k: int = 10
) -> Scores:
    if len(questions) != len(rankings):
        raise ValueError("one ranking per question")
    per = []
    for q, ranking in zip(questions, rankings, strict=True):
        ranks = first_ranks(q, ranking)
        per.append(
            {
                "question": q.question,
                "ranks": ranks,
                "recall_at_k": recall_at(ranks, k),
                "reciprocal_rank": reciprocal_rank(ranks),
                "ndcg_at_10": ndcg_at(ranks, 10),
            }
        )
    n = len(per) or 1
    return Scores(
        questions=len(per),
        k=k,
        recall_at_k=sum(p["recall_at_k"] for p in per) / n,
        mrr=sum(p["reciprocal_rank"] for p in per) / n,
        ndcg_at_10=sum(p["ndcg_at_10"] for p in per) / n,
        per_question=per,
    )
