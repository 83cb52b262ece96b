"""The interface of a knowledge base's index engine, which the service (``service.py``) uses
and nothing else: two engines implement it.

- ``embedded`` (``index.KnowledgeIndex``, the default): sqlite chunks, our own BM25 and a
  usearch HNSW graph in the knowledge base's folder; nothing to start.
- ``milvus`` (``milvus_index.MilvusIndex``): one Milvus collection holding the chunks, their
  vectors and Milvus's own BM25 full-text index, through ``pymilvus.MilvusClient``. A local
  ``*.db`` uri runs Milvus Lite (a server process that pymilvus starts on the file); an
  ``http(s)://host:19530`` uri talks to a Milvus server or cluster with the same code.

Chunk ids are integers the engine gives out. A filter (``matching``) returns an opaque
``Allowed`` value that only the same engine's ``search`` understands: a row mask for the
embedded engine, a Milvus boolean expression for Milvus.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .index import Hit, NewChunk

ENGINES = ("embedded", "milvus")

Allowed = Any  # what ``matching`` returns and ``search(allowed=...)`` takes; None: all chunks
Pages = Sequence[int] | tuple[int | None, int | None] | None


@runtime_checkable
class IndexEngine(Protocol):
    """One knowledge base's chunks: add, remove by source, search by vector, keyword or both
    (reciprocal-rank fusion, ``index.rrf``), filter, count. Safe to share between threads;
    one writer at a time (the service holds the knowledge base's lock)."""

    dim: int

    def __len__(self) -> int:
        """Live chunks."""
        ...

    def add(self, chunks: Sequence[NewChunk], vectors: np.ndarray) -> list[int]:
        """Store chunks with their unit-length vectors; returns their ids."""
        ...

    def remove_source(self, source: str) -> int:
        """Remove a source's chunks and its record; returns how many chunks went."""
        ...

    def set_source(
        self, source: str, sha256: str, kind: str, chunks: int, added_at: str
    ) -> None: ...

    def sources(self) -> list[dict[str, Any]]:
        """Each source's record: source, sha256, kind, chunks, added_at (by source)."""
        ...

    def source_hash(self, source: str) -> str | None: ...

    def matching(
        self,
        sources: Sequence[str] | None = None,
        pages: Pages = None,
        heading: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Allowed:
        """The chunks from one of ``sources``, on one of ``pages`` (a list, or a ``(from,
        to)`` tuple), under ``heading`` (a glob), with each ``meta`` key equal to its value."""
        ...

    def chunks(self, ids: Iterable[int]) -> dict[int, tuple[str, str, int, str, dict[str, Any]]]:
        """id -> (text, source, position, heading, meta) of the ids that exist."""
        ...

    def cosines(self, ids: Sequence[int], query: np.ndarray) -> list[float]:
        """The exact cosine of each chunk with ``query``."""
        ...

    def search(
        self,
        mode: str,
        k: int,
        *,
        text: str = "",
        vector: np.ndarray | None = None,
        weights: tuple[float, float] = (1.0, 1.0),
        rrf_k: int = 60,
        depth: int | None = None,
        allowed: Allowed = None,
    ) -> list[Hit]:
        """The ``k`` best chunks by ``mode`` (vector, keyword or hybrid)."""
        ...

    def flush(self) -> None:
        """Make a batch of writes durable and searchable."""
        ...

    def close(self) -> None: ...

    def drop(self) -> None:
        """Delete what the engine keeps outside the knowledge base's folder (the service
        removes the folder)."""
        ...
