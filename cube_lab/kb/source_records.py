"""The ``sources`` table both index engines keep in their SQLite file: each added source's
content hash (re-adding unchanged content does nothing), kind, chunk count and time."""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

SOURCES_TABLE = """
CREATE TABLE IF NOT EXISTS sources (
    source TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL,
    kind TEXT NOT NULL,
    chunks INTEGER NOT NULL,
    added_at TEXT NOT NULL
);
"""
_KEYS = ("source", "sha256", "kind", "chunks", "added_at")


class SourceRecords:
    """Mixed into an engine that holds ``_db`` (its connection) and ``_lock``."""

    _db: sqlite3.Connection
    _lock: threading.RLock

    def set_source(self, source: str, sha256: str, kind: str, chunks: int, added_at: str) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO sources(source, sha256, kind, chunks, added_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (source, sha256, kind, chunks, added_at),
            )

    def sources(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT source, sha256, kind, chunks, added_at FROM sources ORDER BY source"
            ).fetchall()
        return [dict(zip(_KEYS, r, strict=True)) for r in rows]

    def source_hash(self, source: str) -> str | None:
        with self._lock:
            row = self._db.execute(
                "SELECT sha256 FROM sources WHERE source = ?", (source,)
            ).fetchone()
        return row[0] if row else None
