"""The Milvus engine of a knowledge base (``engine.IndexEngine``): one collection with the
chunks' text, source, position, heading, metadata (JSON), vector (COSINE) and a sparse BM25
vector that Milvus derives from the text itself (a BM25 function: Milvus's full-text search,
which Milvus Lite supports too, so no local keyword index is kept).

``uri`` is either a file name ending ``.db`` inside the knowledge base's folder, which runs
Milvus Lite (pymilvus starts its server process on the file; pip package ``milvus-lite``), or
``http(s)://host:port`` for a Milvus server or cluster: the same client and the same calls.
The sources' records (content hash, kind, chunk count) and the next chunk id stay in
``milvus_sources.sqlite`` in the folder, beside ``kb.json``.

Filters become Milvus boolean expressions. Milvus Lite (3.2) has no expression templates
(``filter_params``) and no ``in`` on JSON paths, so every value is written as a literal by
``_lit`` (a number checked to be a finite int/float, a string quoted with its backslashes,
quotes and control characters escaped); user input is never pasted as expression text.
Hybrid search fuses the vector and BM25 rankings with the embedded engine's ``rrf``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInput
from ..locale.messages import _t
from .index import MODES, Hit, NewChunk, hits_of, ranked
from .source_records import SOURCES_TABLE, SourceRecords

INSTALL = 'pip install "cube-lab[kb-milvus]"'
MAX_TEXT = 65535  # Milvus VARCHAR limit (bytes)
_COLLECTION = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
_FIELDS = ["id", "text", "source", "position", "heading", "meta"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def is_remote(uri: str) -> bool:
    return uri.startswith(("http://", "https://"))


def check_config(raw: object) -> dict[str, Any]:
    """The ``milvus`` part of a knowledge base's config: ``uri`` (a ``*.db`` file name in the
    knowledge base's folder, default ``milvus.db``, or ``http(s)://host:port``),
    ``collection`` (default: derived from the folder) and ``token_env`` (the name of an
    environment variable holding the server's token; the token itself is never stored)."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict) or not set(raw) <= {"uri", "collection", "token_env"}:
        raise InvalidInput(
            _t("milvus must be an object with uri, collection or token_env"),
            _t('e.g. {{"uri": "http://milvus:19530"}} or {{"uri": "milvus.db"}}'),
        )
    uri = raw.get("uri", "milvus.db")
    local_ok = isinstance(uri, str) and re.fullmatch(r"[A-Za-z0-9_.-]+\.db", uri) is not None
    remote_ok = isinstance(uri, str) and re.fullmatch(r"https?://[^\s/]+(/\S*)?", uri) is not None
    if not (local_ok or remote_ok) or uri.startswith("."):
        raise InvalidInput(
            _t("milvus.uri must be a .db file name or http(s)://host:port, not {uri!r}", uri=uri),
            _t("A .db file runs Milvus Lite in the knowledge base's folder."),
        )
    out: dict[str, Any] = {"uri": uri}
    collection = raw.get("collection")
    if collection is not None:
        if not isinstance(collection, str) or not _COLLECTION.fullmatch(collection):
            raise InvalidInput(
                _t("milvus.collection must be a Milvus collection name"),
                _t("Letters, digits and _, not starting with a digit."),
            )
        out["collection"] = collection
    token_env = raw.get("token_env")
    if token_env is not None:
        if not isinstance(token_env, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", token_env):
            raise InvalidInput(
                _t("milvus.token_env must be an environment variable name"),
                _t("e.g. MILVUS_TOKEN"),
            )
        out["token_env"] = token_env
    require(uri)
    return out


def require(uri: str) -> None:
    """InvalidInput naming the extra when pymilvus (or, for a local file, milvus-lite) is
    missing."""
    missing = [
        name
        for name, module in (("pymilvus", "pymilvus"), ("milvus-lite", "milvus_lite"))
        if (module == "pymilvus" or not is_remote(uri)) and importlib.util.find_spec(module) is None
    ]
    if missing:
        raise InvalidInput(
            _t("the milvus engine needs {names}", names=", ".join(missing)),
            _t("Install it with: {command}", command=INSTALL),
        )


def _lit(value: object) -> str:
    """A Milvus expression literal for a string or a finite number; anything else is
    refused, so no value can change the expression's structure."""
    if isinstance(value, bool):
        raise ValueError("booleans are not filter values")
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("filter numbers must be finite")
        return repr(float(value))
    if isinstance(value, str):
        out = ['"']
        for ch in value:
            if ch in '"\\':
                out.append("\\" + ch)
            elif ch == "\n":
                out.append("\\n")
            elif ch == "\t":
                out.append("\\t")
            elif ch == "\r":
                out.append("\\r")
            elif ord(ch) < 0x20:
                out.append(f"\\u{ord(ch):04x}")
            else:
                out.append(ch)
        out.append('"')
        return "".join(out)
    raise ValueError(f"unsupported filter value {value!r}")


@dataclass(frozen=True)
class MilvusFilter:
    """What ``matching`` returns: a Milvus boolean expression, and the heading glob when the
    expression only approximates it (a literal ``%`` or ``_``), for an exact check after."""

    expr: str
    heading: str | None = None


def glob_to_like(glob: str) -> str:
    """A GLOB (``*``, ``?``) as a LIKE pattern (``%``, ``_``). Milvus Lite ignores escapes in
    LIKE, so a literal ``%`` or ``_`` becomes ``_`` (any one character: a superset, checked
    exactly afterwards). Character classes (``[...]``) have no LIKE form and are refused."""
    if "[" in glob:
        raise InvalidInput(
            _t("the milvus engine's heading filter supports * and ? only"),
            _t('e.g. "Install*" or "* > Refunds"'),
        )
    out = []
    for ch in glob:
        if ch == "*":
            out.append("%")
        elif ch in "?%_":  # ? any one character; a literal % or _ approximated by one
            out.append("_")
        else:
            out.append(ch)
    return "".join(out)


def _clip(text: str, limit: int = MAX_TEXT) -> str:
    data = text.encode()
    return text if len(data) <= limit else data[:limit].decode(errors="ignore")


class MilvusIndex(SourceRecords):
    """Open (creating when missing) the collection for ``dim``-d vectors of the knowledge
    base in ``folder``, with ``config`` as ``check_config`` returns it."""

    engine = "milvus"

    def __init__(self, folder: Path, dim: int, config: dict[str, Any]) -> None:
        require(config.get("uri", "milvus.db"))
        from pymilvus import MilvusClient

        self.folder = folder
        self.dim = dim
        folder.mkdir(parents=True, exist_ok=True)
        uri = config.get("uri", "milvus.db")
        self.uri = uri if is_remote(uri) else str(folder / uri)
        digest = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:24]
        self.collection = config.get("collection") or f"cube_kb_{digest}"
        token = os.environ.get(config["token_env"], "") if config.get("token_env") else ""
        self._lock = threading.RLock()
        self._db = sqlite3.connect(
            folder / "milvus_sources.sqlite", check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(SOURCES_TABLE + _SCHEMA)
        try:
            self._client = MilvusClient(self.uri, token=token) if token else MilvusClient(self.uri)
            if not self._client.has_collection(self.collection):
                self._create()
            self._client.load_collection(self.collection)
        except InvalidInput:
            raise
        except Exception as exc:
            self._db.close()
            raise InvalidInput(
                _t("cannot open Milvus at {uri}: {error}", uri=uri, error=str(exc)[:300]),
                _t("Check milvus.uri and that the server is up."),
            ) from exc

    def _create(self) -> None:
        from pymilvus import DataType, Function, FunctionType, MilvusClient

        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("text", DataType.VARCHAR, max_length=MAX_TEXT, enable_analyzer=True)
        schema.add_field("source", DataType.VARCHAR, max_length=MAX_TEXT)
        schema.add_field("position", DataType.INT64)
        schema.add_field("heading", DataType.VARCHAR, max_length=MAX_TEXT)
        schema.add_field("meta", DataType.JSON)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=self.dim)
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name="text_bm25",
                function_type=FunctionType.BM25,
                input_field_names=["text"],
                output_field_names=["sparse"],
            )
        )
        params = self._client.prepare_index_params()
        params.add_index(field_name="vector", index_type="AUTOINDEX", metric_type="COSINE")
        params.add_index(
            field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25"
        )
        self._client.create_collection(
            self.collection, schema=schema, index_params=params, consistency_level="Strong"
        )

    # -- state ---------------------------------------------------------------------------

    def __len__(self) -> int:
        with self._lock:
            rows = self._client.query(self.collection, filter="", output_fields=["count(*)"])
        return int(rows[0]["count(*)"]) if rows else 0

    def _next_id(self) -> int:
        row = self._db.execute("SELECT value FROM state WHERE key = 'next_id'").fetchone()
        return int(row[0]) if row else 0

    def flush(self) -> None:
        with self._lock:
            self._client.flush(self.collection)

    def close(self) -> None:
        with self._lock:
            try:
                self._client.close()
            finally:
                self._db.close()

    def drop(self) -> None:
        with self._lock:
            try:
                self._client.drop_collection(self.collection)
            finally:
                self.close()

    # -- writing -------------------------------------------------------------------------

    def add(self, chunks: Sequence[NewChunk], vectors: np.ndarray) -> list[int]:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.shape != (len(chunks), self.dim):
            raise ValueError(f"expected {len(chunks)} x {self.dim} vectors, got {vectors.shape}")
        if not chunks:
            return []
        with self._lock:
            first = self._next_id()
            ids = list(range(first, first + len(chunks)))
            # the ids are taken before the insert, so a failed insert never reuses them
            self._db.execute(
                "INSERT OR REPLACE INTO state(key, value) VALUES ('next_id', ?)",
                (str(first + len(chunks)),),
            )
            rows = [
                {
                    "id": i,
                    "text": _clip(c.text),
                    "source": c.source,
                    "position": int(c.position),
                    "heading": _clip(c.heading),
                    "meta": c.meta,
                    "vector": v.tolist(),
                }
                for i, c, v in zip(ids, chunks, vectors, strict=True)
            ]
            for start in range(0, len(rows), 1000):
                self._client.insert(self.collection, rows[start : start + 1000])
            return ids

    def remove_source(self, source: str) -> int:
        with self._lock:
            expr = f"source == {_lit(source)}"
            found = self._client.query(self.collection, filter=expr, output_fields=["id"])
            if found:
                self._client.delete(self.collection, filter=expr)
            self._db.execute("DELETE FROM sources WHERE source = ?", (source,))
            return len(found)

    # -- filters -------------------------------------------------------------------------

    def matching(
        self,
        sources: Sequence[str] | None = None,
        pages: Sequence[int] | tuple[int | None, int | None] | None = None,
        heading: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> MilvusFilter:
        """A Milvus boolean expression (every value a checked literal, ``_lit``)."""
        where: list[str] = []
        if sources is not None:
            where.append(
                f"source in [{', '.join(_lit(s) for s in sources)}]" if sources else "id < 0"
            )
        if isinstance(pages, tuple):
            low, high = pages
            if low is not None:
                where.append(f'meta["page"] >= {_lit(int(low))}')
            if high is not None:
                where.append(f'meta["page"] <= {_lit(int(high))}')
        elif pages is not None:
            # no ``in`` on a JSON path in Milvus Lite: an OR of equalities
            where.append(
                "(" + " or ".join(f'meta["page"] == {_lit(int(p))}' for p in pages) + ")"
                if pages
                else "id < 0"
            )
        if heading is not None:
            where.append(f"heading like {_lit(glob_to_like(heading))}")
        for key, value in (meta or {}).items():
            where.append(f"meta[{_lit(str(key))}] == {_lit(value)}")
        exact = heading if heading is not None and ("%" in heading or "_" in heading) else None
        return MilvusFilter(" and ".join(where), exact)

    # -- reading -------------------------------------------------------------------------

    def chunks(self, ids: Iterable[int]) -> dict[int, tuple[str, str, int, str, dict[str, Any]]]:
        ids = [int(i) for i in ids]
        if not ids:
            return {}
        with self._lock:
            rows = self._client.query(self.collection, ids=ids, output_fields=_FIELDS)
        return {int(r["id"]): self._row(r) for r in rows}

    @staticmethod
    def _row(r: dict[str, Any]) -> tuple[str, str, int, str, dict[str, Any]]:
        meta = r.get("meta") or {}
        if isinstance(meta, str):
            meta = json.loads(meta)
        return (r["text"], r["source"], int(r["position"]), r["heading"], dict(meta))

    def cosines(self, ids: Sequence[int], query: np.ndarray) -> list[float]:
        q = np.asarray(query, dtype=np.float32).reshape(self.dim)
        if not ids:
            return []
        with self._lock:
            rows = self._client.query(
                self.collection, ids=[int(i) for i in ids], output_fields=["vector"]
            )
        by_id = {int(r["id"]): np.asarray(r["vector"], dtype=np.float32) for r in rows}
        return [float(by_id[int(i)] @ q) if int(i) in by_id else 0.0 for i in ids]

    def _search(
        self, data: list[Any], field: str, metric: str, k: int, allowed: MilvusFilter | None
    ) -> list[dict[str, Any]]:
        if k <= 0:
            return []
        glob = allowed.heading if allowed is not None else None
        with self._lock:
            result = self._client.search(
                self.collection,
                data=data,
                anns_field=field,
                limit=min(k if glob is None else 4 * k, 16384),
                filter=allowed.expr if allowed is not None else "",
                output_fields=_FIELDS[1:],
                search_params={"metric_type": metric},
            )
        rows = list(result[0]) if result else []
        if glob is not None:
            rows = [r for r in rows if fnmatchcase(r["entity"]["heading"], glob)][:k]
        return rows

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
        allowed: MilvusFilter | None = None,
    ) -> list[Hit]:
        """As ``KnowledgeIndex.search``: the vector scores are Milvus's COSINE, the keyword
        scores its BM25 (Milvus Lite reports BM25 as a negative distance; the sign is
        dropped so that higher is better, as on a server)."""
        if mode not in MODES:
            raise ValueError(f"unknown search mode {mode!r}; use one of {list(MODES)}")
        depth = depth or max(50, 4 * k)
        found: dict[int, tuple[str, str, int, str, dict[str, Any]]] = {}
        vec: list[tuple[int, float]] = []
        kw: list[tuple[int, float]] = []
        if mode in ("vector", "hybrid"):
            if vector is None:
                raise ValueError("vector search needs a query vector")
            q = np.asarray(vector, dtype=np.float32).reshape(self.dim)
            for r in self._search(
                [q.tolist()], "vector", "COSINE", k if mode == "vector" else depth, allowed
            ):
                vec.append((int(r["id"]), float(r["distance"])))
                found[int(r["id"])] = self._row(r["entity"])
        if mode in ("keyword", "hybrid") and text.strip():
            for r in self._search(
                [text], "sparse", "BM25", k if mode == "keyword" else depth, allowed
            ):
                kw.append((int(r["id"]), abs(float(r["distance"]))))
                found[int(r["id"])] = self._row(r["entity"])
        order = ranked(mode, vec, kw, k, weights, rrf_k)
        return hits_of(order, vec, kw, found)
