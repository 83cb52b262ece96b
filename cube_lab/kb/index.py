"""The index of one knowledge base, in one folder, with nothing to start:

- ``chunks.sqlite``: the chunks (text, source, heading path, metadata), the sources (content
  hash) and the keyword index's term ids.
- ``bm25/``, ``doclen.u32``: the BM25 keyword index (``bm25.KeywordIndex``), kept up to date
  as chunks come and go, never rebuilt for a query.
- ``vectors.f32``: the embeddings, one float32 row per chunk id (the chunk's row number),
  appended as chunks are added and read through a memory map: the exact scores.
- ``hnsw.usearch``: an HNSW graph (usearch, int8-quantised) over the same rows, which
  proposes candidates that are then scored exactly from ``vectors.f32``. It is derived
  data: saved by ``flush``, rebuilt from ``vectors.f32`` when missing or stale.

Why this engine (measured on this 2-core machine, ``benchmarks/kb.py``): exact numpy search
over a memory-mapped 100k x 384 float32 matrix took 64 ms p50 (a matrix-vector product over
150 MB per query), far above Chroma's HNSW at about 2 ms, so brute force is used only below
``EXACT_BELOW`` chunks. usearch is one small wheel with no server and no Rust runtime, its
int8 graph builds several times faster than float32, and rescoring the candidates exactly
keeps the reported scores true cosines.

Hybrid search fuses the vector and keyword rankings by reciprocal-rank fusion: a chunk's
fused score is the sum over the rankings it is in of ``weight / (rrf_k + rank)``. A chunk
found by only one of them still ranks, so hybrid never returns less than either alone.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .bm25 import KeywordIndex
from .source_records import SOURCES_TABLE, SourceRecords

EXACT_BELOW = 4096  # rows; below this a brute-force scan is as fast as the graph
MODES = ("vector", "keyword", "hybrid")
_WORD = re.compile(r"\w+", re.UNICODE)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL,
    position INTEGER NOT NULL,
    text TEXT NOT NULL,
    heading TEXT NOT NULL DEFAULT '',
    meta TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS chunks_source ON chunks(source);
CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


@dataclass(frozen=True)
class Hit:
    id: int
    text: str
    source: str
    position: int
    heading: str
    meta: dict[str, Any]
    score: float  # the mode's: cosine (vector), BM25 (keyword) or fused (hybrid)
    vector_score: float | None = None
    keyword_score: float | None = None
    vector_rank: int | None = None
    keyword_rank: int | None = None


@dataclass(frozen=True)
class NewChunk:
    text: str
    source: str
    position: int = 0
    heading: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


def rrf(
    rankings: Sequence[Sequence[int]], weights: Sequence[float], k: int = 60
) -> list[tuple[int, float]]:
    """Reciprocal-rank fusion: ids by the sum of ``weight / (k + rank)`` (rank from 1)."""
    fused: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, chunk_id in enumerate(ranking, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight / (k + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


class KnowledgeIndex(SourceRecords):
    """Open (creating when missing) the index in ``folder`` for ``dim``-d vectors. Safe to
    share between threads; one process writes at a time (the service holds its lock)."""

    def __init__(self, folder: Path, dim: int) -> None:
        self.folder = folder
        self.dim = dim
        folder.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(
            folder / "chunks.sqlite", check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SOURCES_TABLE + _SCHEMA)
        self._vectors_path = folder / "vectors.f32"
        self._vectors_path.touch()
        self._map: np.ndarray | None = None
        self._alive = self._load_alive()
        self._keywords = KeywordIndex(folder, self._db)
        self._hnsw: Any = None
        self._hnsw_dirty = False
        self._open_hnsw()

    # -- state ---------------------------------------------------------------------------

    @property
    def rows(self) -> int:
        """Vector rows on disk (live or not): the next chunk id."""
        return self._vectors_path.stat().st_size // (4 * self.dim)

    def __len__(self) -> int:
        return int(self._alive.sum())

    def _load_alive(self) -> np.ndarray:
        alive = np.zeros(self.rows, dtype=bool)
        ids = np.fromiter((r[0] for r in self._db.execute("SELECT id FROM chunks")), np.int64)
        alive[ids[ids < len(alive)]] = True
        return alive

    def _state(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def _set_state(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO state(key, value) VALUES (?, ?)", (key, value))

    def _matrix(self) -> np.ndarray:
        rows = self.rows
        if self._map is None or self._map.shape[0] != rows:
            if rows == 0:
                return np.zeros((0, self.dim), dtype=np.float32)
            self._map = np.memmap(self._vectors_path, np.float32, "r", shape=(rows, self.dim))
        return self._map

    # -- the HNSW graph ------------------------------------------------------------------

    @staticmethod
    def _usearch() -> Any:
        try:
            from usearch.index import Index
        except ImportError:  # without usearch every search is exact
            return None
        return Index

    def _new_graph(self) -> Any:
        index = self._usearch()
        if index is None:
            return None
        return index(
            ndim=self.dim,
            metric="cos",
            dtype="i8",
            connectivity=16,
            expansion_add=32,
            expansion_search=160,
        )

    def _open_hnsw(self) -> None:
        path = self.folder / "hnsw.usearch"
        if self._usearch() is None:
            return
        # the graph on disk is current when it covers every row and every removal
        current = self._state("hnsw") == f"{self.rows}:{len(self)}"
        graph = None
        if current and path.exists():
            graph = self._new_graph()
            try:
                graph.load(str(path))
            except Exception:  # a torn file: rebuild it
                graph = None
        if graph is None:
            graph = self._new_graph()
            live = np.flatnonzero(self._alive)
            if len(live):
                graph.add(live.astype(np.uint64), np.asarray(self._matrix()[live]), threads=2)
                self._hnsw_dirty = True
        self._hnsw = graph

    def flush(self) -> None:
        """Save the graph (after a batch of adds or removals)."""
        with self._lock:
            self._keywords.merge(self._alive)
            if self._hnsw is None or not self._hnsw_dirty:
                return
            path = self.folder / "hnsw.usearch"
            tmp = path.with_suffix(".tmp")
            self._hnsw.save(str(tmp))
            tmp.replace(path)
            self._set_state("hnsw", f"{self.rows}:{len(self)}")
            self._hnsw_dirty = False

    def close(self) -> None:
        with self._lock:
            self.flush()
            self._map = None
            self._db.close()

    def drop(self) -> None:
        """Everything lives in the folder, which the service removes: just close."""
        self.close()

    def _rollback_keywords(self, first: int, terms_before: int, written: list[Path]) -> None:
        kw = self._keywords
        for path in written:
            path.unlink(missing_ok=True)
            kw.segments.pop(int(path.stem[4:]), None)
        kw.terms = {t: i for t, i in kw.terms.items() if i < terms_before}
        kw.doclen = kw.doclen[:first]
        kw.doclen.tofile(kw.folder.parent / "doclen.u32")

    # -- writing -------------------------------------------------------------------------

    def add(self, chunks: Sequence[NewChunk], vectors: np.ndarray) -> list[int]:
        """Append chunks with their (unit-length) vectors; returns their ids."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.shape != (len(chunks), self.dim):
            raise ValueError(f"expected {len(chunks)} x {self.dim} vectors, got {vectors.shape}")
        if not chunks:
            return []
        with self._lock:
            first = self.rows
            ids = list(range(first, first + len(chunks)))
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "INSERT INTO chunks(id, source, position, text, heading, meta) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        (i, c.source, c.position, c.text, c.heading, json.dumps(c.meta))
                        for i, c in zip(ids, chunks, strict=True)
                    ],
                )
                before = len(self._keywords.terms)
                written = self._keywords.add(first, [c.text for c in chunks])
                with self._vectors_path.open("ab") as f:
                    f.write(vectors.tobytes())
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                self._rollback_keywords(first, before, locals().get("written", []))
                with self._vectors_path.open("r+b") as f:  # drop a partial append
                    f.truncate(first * 4 * self.dim)
                raise
            self._alive = np.concatenate([self._alive, np.ones(len(ids), dtype=bool)])
            if self._hnsw is not None:
                self._hnsw.add(np.asarray(ids, dtype=np.uint64), vectors, threads=2)
                self._hnsw_dirty = True
            return ids

    def remove_source(self, source: str) -> int:
        """Remove a source's chunks (from the chunks, the keyword index and the graph)."""
        with self._lock:
            rows = self._db.execute("SELECT id FROM chunks WHERE source = ?", (source,)).fetchall()
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("DELETE FROM chunks WHERE source = ?", (source,))
                self._db.execute("DELETE FROM sources WHERE source = ?", (source,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            ids = [r[0] for r in rows]
            if ids:
                self._alive[ids] = False
                if self._hnsw is not None:
                    self._hnsw.remove(np.asarray(ids, dtype=np.uint64))
                    self._hnsw_dirty = True
            return len(ids)

    # -- searching -----------------------------------------------------------------------

    def vector_ids(
        self, query: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """The ``k`` live chunks nearest ``query`` (unit length): (id, cosine), best first;
        with ``allowed`` (a mask of rows) only those: the graph's candidates that pass, or an
        exact scan of the allowed rows when they are few or the graph gave too few."""
        q = np.asarray(query, dtype=np.float32).reshape(self.dim)
        with self._lock:
            matrix = self._matrix()
            live = len(self)
            if live == 0 or k <= 0:
                return []
            mask = self._alive if allowed is None else self._alive & allowed[: len(self._alive)]
            ids = np.zeros(0, dtype=np.int64)
            if self._hnsw is not None and live >= EXACT_BELOW:
                wanted = max(4 * k, 40) * (1 if allowed is None else 4)
                if allowed is None or int(mask.sum()) >= EXACT_BELOW:
                    found = self._hnsw.search(q, min(live, wanted))
                    ids = np.asarray(found.keys, dtype=np.int64)
                    if allowed is not None:
                        ids = ids[mask[ids]]
            if len(ids) < k:
                ids = np.flatnonzero(mask)
            scores = np.asarray(matrix[ids]) @ q if len(ids) else np.zeros(0, np.float32)
        top = min(k, len(ids))
        best = np.argpartition(-scores, top - 1)[:top] if top < len(ids) else np.arange(len(ids))
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(int(ids[i]), float(scores[i])) for i in best]

    def cosines(self, ids: Sequence[int], query: np.ndarray) -> list[float]:
        """The exact cosine of each chunk ``ids`` with ``query`` (unit length)."""
        q = np.asarray(query, dtype=np.float32).reshape(self.dim)
        if not ids:
            return []
        with self._lock:
            rows = np.asarray(self._matrix()[np.asarray(ids, dtype=np.int64)])
        return [float(x) for x in rows @ q]

    def keyword_ids(
        self, query: str, k: int, allowed: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """The ``k`` best BM25 matches of any of the query's words: (id, BM25), best first."""
        with self._lock:
            return self._keywords.search(query, k, self._alive, allowed)

    def matching(
        self,
        sources: Sequence[str] | None = None,
        pages: Sequence[int] | tuple[int | None, int | None] | None = None,
        heading: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> np.ndarray:
        """A mask of the rows whose chunk is from one of ``sources``, on one of ``pages`` (a
        list, or a ``(from, to)`` range as a tuple), under a ``heading`` (a GLOB) and has
        each ``meta`` key equal to its value."""
        where, args = [], []
        if sources is not None:
            where.append(f"source IN ({','.join('?' * len(sources))})")
            args += list(sources)
        if isinstance(pages, tuple):
            low, high = pages
            if low is not None:
                where.append("json_extract(meta, '$.page') >= ?")
                args.append(low)
            if high is not None:
                where.append("json_extract(meta, '$.page') <= ?")
                args.append(high)
        elif pages is not None:
            where.append(f"json_extract(meta, '$.page') IN ({','.join('?' * len(pages))})")
            args += list(pages)
        if heading is not None:
            where.append("heading GLOB ?")
            args.append(heading)
        for key, value in (meta or {}).items():
            where.append("json_extract(meta, ?) = ?")
            args += [f'$."{key}"', value]
        sql = "SELECT id FROM chunks" + (" WHERE " + " AND ".join(where) if where else "")
        with self._lock:
            ids = np.fromiter((r[0] for r in self._db.execute(sql, args)), np.int64)
            mask = np.zeros(self.rows, dtype=bool)
        mask[ids[ids < len(mask)]] = True
        return mask

    def chunks(self, ids: Iterable[int]) -> dict[int, tuple[str, str, int, str, dict[str, Any]]]:
        ids = list(ids)
        if not ids:
            return {}
        with self._lock:
            rows = self._db.execute(
                "SELECT id, text, source, position, heading, meta FROM chunks "
                f"WHERE id IN ({','.join('?' * len(ids))})",
                ids,
            ).fetchall()
        return {r[0]: (r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows}

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
        allowed: np.ndarray | None = None,
    ) -> list[Hit]:
        """Search by ``mode`` (vector, keyword or hybrid). Hybrid fuses the top ``depth``
        (default max(50, 4k)) of each ranking; ``weights`` are (vector, keyword); ``allowed``
        (a mask of rows, ``matching``) keeps the search to those chunks."""
        if mode not in MODES:
            raise ValueError(f"unknown search mode {mode!r}; use one of {list(MODES)}")
        depth = depth or max(50, 4 * k)
        vec: list[tuple[int, float]] = []
        kw: list[tuple[int, float]] = []
        if mode in ("vector", "hybrid"):
            if vector is None:
                raise ValueError("vector search needs a query vector")
            vec = self.vector_ids(vector, k if mode == "vector" else depth, allowed)
        if mode in ("keyword", "hybrid"):
            kw = self.keyword_ids(text, k if mode == "keyword" else depth, allowed)
        order = ranked(mode, vec, kw, k, weights, rrf_k)
        return hits_of(order, vec, kw, self.chunks(i for i, _ in order))


def ranked(
    mode: str,
    vec: list[tuple[int, float]],
    kw: list[tuple[int, float]],
    k: int,
    weights: Sequence[float],
    rrf_k: int,
) -> list[tuple[int, float]]:
    """The (chunk id, score) ranking of one search: the vector or keyword one as it is, or
    both fused by reciprocal-rank fusion (hybrid), best first."""
    if mode == "vector":
        return vec
    if mode == "keyword":
        return kw
    return rrf([[i for i, _ in vec], [i for i, _ in kw]], weights, rrf_k)[:k]


def hits_of(
    order: list[tuple[int, float]],
    vec: list[tuple[int, float]],
    kw: list[tuple[int, float]],
    found: dict[int, tuple[str, str, int, str, dict[str, Any]]],
) -> list[Hit]:
    """``order`` as hits with each half's score and rank (chunks not ``found``, removed
    meanwhile, are left out)."""
    vrank = {i: (r, s) for r, (i, s) in enumerate(vec, start=1)}
    krank = {i: (r, s) for r, (i, s) in enumerate(kw, start=1)}
    hits = []
    for chunk_id, score in order:
        if chunk_id not in found:
            continue
        text_, source, position, heading, meta = found[chunk_id]
        v, kk = vrank.get(chunk_id), krank.get(chunk_id)
        hits.append(
            Hit(
                id=chunk_id,
                text=text_,
                source=source,
                position=position,
                heading=heading,
                meta=meta,
                score=score,
                vector_score=v[1] if v else None,
                keyword_score=kk[1] if kk else None,
                vector_rank=v[0] if v else None,
                keyword_rank=kk[0] if kk else None,
            )
        )
    return hits
