"""Knowledge bases: documents parsed into chunks, embedded, indexed for vector, keyword
(BM25) and hybrid retrieval, and measured on question sets.

One concept per module: ``parse`` (files to sections), ``chunk`` (sections to chunks),
``embed`` (texts to unit vectors), ``index`` (the vector, keyword and hybrid index of one
knowledge base), ``evaluate`` (recall@k, MRR, nDCG@10), ``service`` (knowledge bases in
projects) and ``rag`` (chat: answers from the passages, cited). Nothing here imports torch
until an embedding is asked for.
"""

from __future__ import annotations

import builtins
from typing import Any

# ``cl.kb.create/get/list/search/chat``: the SDK's (cube_lab.sdk.kb), in this package so that
# ``cl.kb`` stays this package once its modules are imported


def create(name: str, project: str | None = None, **options: Any) -> Any:
    """``cl.kb.create(name, chunking=..., chunk_size=..., overlap=..., model=...)``: a
    ``KnowledgeBase`` handle (see ``cube_lab.sdk.kb``)."""
    from ..sdk import kb

    return kb.create(name, project, **options)


def get(name: str, project: str | None = None) -> Any:
    """``cl.kb.get(name)``: a ``KnowledgeBase`` handle."""
    from ..sdk import kb

    return kb.get(name, project)


def list(project: str | None = None) -> builtins.list[Any]:
    """``cl.kb.list()``: the knowledge bases you can see."""
    from ..sdk import kb

    return kb.list(project)


def search(
    name: str,
    query: str,
    k: int = 5,
    mode: str = "hybrid",
    project: str | None = None,
    rerank: Any = None,
) -> builtins.list[dict[str, Any]]:
    """``cl.kb.search(name, query, k=5, mode="hybrid", rerank="my-reranker")``: the best
    chunks with their scores (``rerank``: a registered cross-encoder reorders them)."""
    from ..sdk import kb

    return kb.search(name, query, k, mode, project, rerank=rerank)


def chat(name: str, query: str, project: str | None = None, **options: Any) -> dict[str, Any]:
    """``cl.kb.chat(name, query, deployment="my-llm")`` (or ``base_url=..., model=...,
    api_key=...``): the model's answer from the passages retrieved, with numbered citations
    (see ``KnowledgeBase.chat``)."""
    from ..sdk import kb

    return kb.get(name, project).chat(query, **options)
