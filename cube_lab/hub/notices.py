"""What an admin (or a course's teacher) told a student: why their server was stopped, or a
note. The cube-admin service writes them (``POST api/servers/{user}/stop`` with a reason,
``POST api/users/{user}/message``); the hub's pages read them for the student (the "Server
not running" and spawn pages, the home page) and the student reads their own over
``GET api/notices``.

One SQLite file in the hub folder (``notices.sqlite``), written by the cube-admin service and
read by the hub's process: plain Python, no tornado. A stop notice lasts until the student
starts a server again (the hub's pre-spawn hook clears it); a message until they dismiss it.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ..errors import InvalidInput
from ..locale.messages import _t

Kind = Literal["stop", "idle", "message"]
KINDS: tuple[str, ...] = ("stop", "idle", "message")
# why a server was stopped: by someone ("stop", the text is their reason) or for idling past a
# project group's idle_timeout ("idle", ``by`` is the group); the latest one is shown
STOPS = ("stop", "idle")
_STOPS_SQL = "kind IN ({})".format(", ".join(f"'{k}'" for k in STOPS))
MAX_TEXT = 2000
FILE_NAME = "notices.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS notices (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    username TEXT NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    by TEXT NOT NULL,
    at TEXT NOT NULL,
    cleared_at TEXT
);
CREATE INDEX IF NOT EXISTS notices_open ON notices (username, cleared_at);
"""


@dataclass(frozen=True)
class Notice:
    id: int
    username: str
    kind: str
    text: str
    by: str
    at: str  # ISO 8601, UTC
    cleared_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def when(self) -> str:
        """``at`` as a reader sees it: "2026-12-04 14:03 UTC"."""
        return datetime.fromisoformat(self.at).strftime("%Y-%m-%d %H:%M UTC")


def check_text(value: Any, field: str) -> str:
    """A reason or message: a non-empty string of at most MAX_TEXT characters."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(
            _t("{field} must be a non-empty text", field=field),
            _t('Send JSON such as {{"{field}": "the lab is over for today"}}.', field=field),
        )
    text = value.strip()
    if len(text) > MAX_TEXT:
        raise InvalidInput(
            _t("{field} is longer than {limit} characters", field=field, limit=MAX_TEXT),
            _t("Shorten it."),
        )
    return text


class NoticeBoard:
    """The notices of one hub, in ``path`` (made on first use)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._ready = False

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if not self._ready:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=10)
            try:
                conn.row_factory = sqlite3.Row
                if not self._ready:
                    conn.execute("PRAGMA journal_mode=WAL")
                    conn.executescript(_SCHEMA)
                    self._ready = True
                with conn:
                    yield conn
            finally:
                conn.close()

    def add(self, username: str, kind: Kind, text: str, by: str) -> Notice:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}")
        at = datetime.now(UTC).isoformat(timespec="seconds")
        with self._db() as conn:
            if kind in STOPS:  # the latest stop is the reason; older ones are history
                conn.execute(
                    f"UPDATE notices SET cleared_at=? WHERE username=? AND {_STOPS_SQL}"
                    " AND cleared_at IS NULL",
                    (at, username),
                )
            cur = conn.execute(
                "INSERT INTO notices (username, kind, text, by, at) VALUES (?, ?, ?, ?, ?)",
                (username, kind, text, by, at),
            )
            notice_id = int(cur.lastrowid or 0)
        return Notice(notice_id, username, kind, text, by, at)

    def open(self, username: str) -> list[Notice]:
        """``username``'s notices not cleared yet, oldest first."""
        with self._db() as conn:
            rows = conn.execute(
                "SELECT * FROM notices WHERE username=? AND cleared_at IS NULL ORDER BY id",
                (username,),
            ).fetchall()
        return [Notice(**dict(r)) for r in rows]

    def latest_stop(self, username: str) -> Notice | None:
        stops = [n for n in self.open(username) if n.kind in STOPS]
        return stops[-1] if stops else None

    def messages(self, username: str) -> list[Notice]:
        return [n for n in self.open(username) if n.kind == "message"]

    def clear_stops(self, username: str) -> int:
        """The user started a server again: their stop notice has been read."""
        return self._clear(username, _STOPS_SQL, ())

    def dismiss(self, username: str, notice_id: int) -> bool:
        """The user dismissed one of their own notices; False if there is no such open one."""
        return self._clear(username, "id=?", (notice_id,)) > 0

    def _clear(self, username: str, where: str, args: tuple[Any, ...]) -> int:
        if not self.path.exists():
            return 0
        at = datetime.now(UTC).isoformat(timespec="seconds")
        with self._db() as conn:
            cur = conn.execute(
                f"UPDATE notices SET cleared_at=? WHERE username=? AND cleared_at IS NULL"
                f" AND {where}",
                (at, username, *args),
            )
            return cur.rowcount
