"""The admission ledger: reservations of project-group quota, atomic across processes.

The hub (spawns) and the cube-admin service (jobs, the admin page) share one SQLite file.
Every reservation runs inside ``BEGIN IMMEDIATE``: SQLite's write lock is taken before
usage is summed, so two requests can never both see the same free capacity - 20
concurrent requests against a quota of 4 GPUs admit exactly 4, whichever process they
come from. A reservation is keyed by its *holder* ("server:alice/" or "job:<id>"), so
reserving again for the same holder replaces it instead of counting twice.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CubeError
from ..locale.messages import _t
from .quotas import Quota, refusal

_SCHEMA = """
CREATE TABLE IF NOT EXISTS reservations (
    id TEXT PRIMARY KEY,
    holder TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,            -- server | job
    username TEXT NOT NULL,
    grp TEXT NOT NULL,             -- the project group charged ('' = none)
    server TEXT NOT NULL DEFAULT '',  -- user/servername whose life bounds a job's
    pid INTEGER,                   -- a local job's process, checked on reconcile
    amounts TEXT NOT NULL,         -- JSON {dimension: amount}
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS reservations_grp ON reservations (grp);
"""


class QuotaExceeded(CubeError):
    """A request does not fit the project's quota; ``error`` is the sentence the user reads."""

    status = 403

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "quota_exceeded": True}


@dataclass(frozen=True)
class Reservation:
    id: str
    holder: str
    kind: str
    username: str
    group: str
    server: str
    pid: int | None
    amounts: dict[str, float]
    created: float

    @classmethod
    def of(cls, row: sqlite3.Row) -> Reservation:
        return cls(
            row["id"],
            row["holder"],
            row["kind"],
            row["username"],
            row["grp"],
            row["server"],
            row["pid"],
            json.loads(row["amounts"]),
            row["created"],
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "holder": self.holder,
            "kind": self.kind,
            "user": self.username,
            "group": self.group,
            "server": self.server,
            "pid": self.pid,
            "amounts": self.amounts,
            "created": self.created,
        }


def server_holder(username: str, server_name: str = "") -> str:
    return f"server:{username}/{server_name}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Ledger:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        # autocommit mode: transactions are the explicit BEGIN IMMEDIATE below
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.row_factory = sqlite3.Row
        # WAL + NORMAL: a commit survives a crash of any process; only a power cut may lose the
        # last ones, and reconcile() rebuilds from what is running anyway
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    @contextmanager
    def _write(self) -> Any:
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        finally:
            db.close()

    def reserve(
        self,
        *,
        holder: str,
        kind: str,
        username: str,
        group: str,
        quota: Quota | None,
        amounts: Mapping[str, float],
        server: str = "",
        pid: int | None = None,
    ) -> Reservation:
        """Reserve ``amounts`` of ``group``'s ``quota`` or raise QuotaExceeded (nothing kept).
        ``group`` "" (no project group) is recorded but checked against nothing."""
        with self._write() as db:
            db.execute("DELETE FROM reservations WHERE holder = ?", (holder,))
            if group and quota is not None:
                used = self._usage(db, group)
                why = refusal(group, quota, used, amounts)
                if why:
                    raise QuotaExceeded(
                        why, _t("Stop a server or job of the project, or ask an admin for more.")
                    )
            res = Reservation(
                uuid.uuid4().hex,
                holder,
                kind,
                username,
                group,
                server,
                pid,
                {k: float(v) for k, v in amounts.items()},
                time.time(),
            )
            db.execute(
                "INSERT INTO reservations (id, holder, kind, username, grp, server, pid, amounts,"
                " created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    res.id,
                    holder,
                    kind,
                    username,
                    group,
                    server,
                    pid,
                    json.dumps(res.amounts),
                    res.created,
                ),
            )
            return res

    def release(self, *, holder: str | None = None, id: str | None = None) -> int:
        """Drop a reservation; releasing one that is gone is not an error (0 returned)."""
        with self._write() as db:
            if id is not None:
                return db.execute("DELETE FROM reservations WHERE id = ?", (id,)).rowcount
            return db.execute("DELETE FROM reservations WHERE holder = ?", (holder,)).rowcount

    def get(self, id: str) -> Reservation | None:
        with self._connect() as db:
            row = db.execute("SELECT * FROM reservations WHERE id = ?", (id,)).fetchone()
        return Reservation.of(row) if row else None

    def reservations(self, group: str | None = None) -> list[Reservation]:
        db = self._connect()
        try:
            if group is None:
                rows = db.execute("SELECT * FROM reservations ORDER BY created").fetchall()
            else:
                rows = db.execute(
                    "SELECT * FROM reservations WHERE grp = ? ORDER BY created", (group,)
                ).fetchall()
        finally:
            db.close()
        return [Reservation.of(r) for r in rows]

    @staticmethod
    def _usage(db: sqlite3.Connection, group: str) -> dict[str, float]:
        used: dict[str, float] = {}
        for (amounts,) in db.execute("SELECT amounts FROM reservations WHERE grp = ?", (group,)):
            for dimension, amount in json.loads(amounts).items():
                used[dimension] = used.get(dimension, 0) + amount
        return used

    def usage(self, group: str) -> dict[str, float]:
        db = self._connect()
        try:
            return self._usage(db, group)
        finally:
            db.close()

    def reconcile(
        self,
        live_servers: Iterable[str],
        *,
        grace_s: float = 60,
        pid_alive: Callable[[int], bool] = _pid_alive,
        now: float | None = None,
    ) -> list[Reservation]:
        """Release what nothing holds any more: server reservations whose server is not
        running or starting, job reservations whose server is gone or whose local process
        died. Called when the admin service starts (after a hub crash) and periodically.
        Reservations younger than ``grace_s`` are left alone (a spawn may be on its way)."""
        live = set(live_servers)
        cutoff = (time.time() if now is None else now) - grace_s
        released: list[Reservation] = []
        with self._write() as db:
            for row in db.execute("SELECT * FROM reservations WHERE created < ?", (cutoff,)):
                res = Reservation.of(row)
                gone = False
                if res.kind == "server":
                    gone = res.holder.removeprefix("server:") not in live
                else:
                    gone = bool(res.server) and res.server not in live
                    gone = gone or (res.pid is not None and not pid_alive(res.pid))
                if gone:
                    released.append(res)
            for res in released:
                db.execute("DELETE FROM reservations WHERE id = ?", (res.id,))
        return released
