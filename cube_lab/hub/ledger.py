"""The admission ledger: reservations of project-group quota, atomic across processes.

The hub (spawns) and the cube-admin service (jobs, the admin page) share one SQLite file.
Every reservation runs inside ``BEGIN IMMEDIATE``: SQLite's write lock is taken before
usage is summed, so two requests can never both see the same free capacity - 20
concurrent requests against a quota of 4 GPUs admit exactly 4, whichever process they
come from. A reservation is keyed by its *holder* ("server:alice/" or "job:<id>"), so
reserving again for the same holder replaces it instead of counting twice.

A reservation charged to no project group (``group`` "") is the user's *personal* bucket: it
is checked against the personal quota passed in, per user.

GPU-hours: every reservation that holds devices (``quotas.device_count``) gets a row in
``gpu_holds`` with when it started and, once released, when it ended; the hours used in a month
are devices x hours held inside it (still-held ones up to now). Time comes from ``clock`` (a
fake one in tests).
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
from .quotas import (
    Quota,
    device_count,
    gpu_hours_refusal,
    member_refusal,
    month_bounds,
    personal_refusal,
    refusal,
)

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
CREATE TABLE IF NOT EXISTS gpu_holds (
    id TEXT PRIMARY KEY,           -- the reservation's id
    holder TEXT NOT NULL,
    kind TEXT NOT NULL,
    username TEXT NOT NULL,
    grp TEXT NOT NULL,
    devices REAL NOT NULL,         -- GPUs / slices / NPUs held
    started REAL NOT NULL,
    ended REAL                     -- NULL while held
);
CREATE INDEX IF NOT EXISTS gpu_holds_ended ON gpu_holds (ended);
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


@dataclass(frozen=True)
class GpuHours:
    """GPU-hours used in one month: per (group, user), the group totals and when they reset.
    The personal bucket is group ""."""

    start: float
    resets: float
    by_member: dict[tuple[str, str], float]

    def group(self, group: str) -> float:
        return sum(h for (g, _), h in self.by_member.items() if g == group)

    def member(self, group: str, user: str) -> float:
        return self.by_member.get((group, user), 0.0)

    def members(self, group: str) -> dict[str, float]:
        return {u: h for (g, u), h in sorted(self.by_member.items()) if g == group}


class Ledger:
    def __init__(self, path: str | Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self.clock = clock
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
        ``group`` "" is ``username``'s personal bucket, checked against ``quota`` (the personal
        quota) when one is given. A reservation that takes devices is also refused once the
        month's GPU-hours of the group, the member or the personal bucket are spent."""
        now = self.clock()
        with self._write() as db:
            self._end_holds(db, "holder = ?", (holder,), now)
            db.execute("DELETE FROM reservations WHERE holder = ?", (holder,))
            if quota is not None:
                if group:
                    used = self._usage(db, group)
                    why = refusal(group, quota, used, amounts)
                    fix = _t("Stop a server or job of the project, or ask an admin for more.")
                    if not why and quota.per_member is not None:
                        mine = self._usage(db, group, username)
                        why = member_refusal(username, group, quota, mine, amounts)
                        fix = _t("Stop a server or job of yours in the project first.")
                else:
                    used = self._personal_usage(db, username)
                    why = personal_refusal(username, quota, used, amounts)
                    fix = _t(
                        "Stop one of your servers or jobs, or ask an admin for more or to add"
                        " you to a project group."
                    )
                if why:
                    raise QuotaExceeded(why, fix)
                per_member = bool(group) and quota.gpu_hours_per_member is not None
                if device_count(amounts) > 0 and (quota.gpu_hours is not None or per_member):
                    hours = self._gpu_hours(db, now)
                    why = gpu_hours_refusal(
                        user=username,
                        group=group,
                        quota=quota,
                        group_used=hours.group(group),
                        member_used=hours.member(group, username),
                        resets=hours.resets,
                    )
                    if why:
                        raise QuotaExceeded(
                            why,
                            _t(
                                "GPU-hours are GPUs x hours held by running servers and jobs;"
                                " use a profile without GPUs until then, or ask an admin for"
                                " more."
                            ),
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
                now,
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
            devices = device_count(res.amounts)
            if devices > 0:
                db.execute(
                    "INSERT INTO gpu_holds (id, holder, kind, username, grp, devices, started)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (res.id, holder, kind, username, group, devices, now),
                )
            return res

    def release(self, *, holder: str | None = None, id: str | None = None) -> int:
        """Drop a reservation; releasing one that is gone is not an error (0 returned)."""
        now = self.clock()
        with self._write() as db:
            if id is not None:
                self._end_holds(db, "id = ?", (id,), now)
                return db.execute("DELETE FROM reservations WHERE id = ?", (id,)).rowcount
            self._end_holds(db, "holder = ?", (holder,), now)
            return db.execute("DELETE FROM reservations WHERE holder = ?", (holder,)).rowcount

    @staticmethod
    def _end_holds(db: sqlite3.Connection, where: str, args: tuple[Any, ...], now: float) -> None:
        """The GPU holds of the reservations ``where`` selects end ``now``."""
        db.execute(
            f"UPDATE gpu_holds SET ended = ? WHERE ended IS NULL AND id IN"
            f" (SELECT id FROM reservations WHERE {where})",
            (now, *args),
        )

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
    def _usage(db: sqlite3.Connection, group: str, username: str | None = None) -> dict[str, float]:
        """What ``group``'s reservations hold (only ``username``'s, when given)."""
        used: dict[str, float] = {}
        query, args = "SELECT amounts FROM reservations WHERE grp = ?", (group,)
        if username is not None:
            query, args = query + " AND username = ?", (group, username)
        for (amounts,) in db.execute(query, args):
            for dimension, amount in json.loads(amounts).items():
                used[dimension] = used.get(dimension, 0) + amount
        return used

    def usage(self, group: str) -> dict[str, float]:
        db = self._connect()
        try:
            return self._usage(db, group)
        finally:
            db.close()

    @staticmethod
    def _personal_usage(db: sqlite3.Connection, username: str) -> dict[str, float]:
        used: dict[str, float] = {}
        rows = db.execute(
            "SELECT amounts FROM reservations WHERE grp = '' AND username = ?", (username,)
        )
        for (amounts,) in rows:
            for dimension, amount in json.loads(amounts).items():
                used[dimension] = used.get(dimension, 0) + amount
        return used

    def personal_usage(self, username: str) -> dict[str, float]:
        """What ``username`` holds outside every project group (their personal bucket)."""
        db = self._connect()
        try:
            return self._personal_usage(db, username)
        finally:
            db.close()

    @staticmethod
    def _gpu_hours(db: sqlite3.Connection, now: float) -> GpuHours:
        start, resets = month_bounds(now)
        by_member: dict[tuple[str, str], float] = {}
        rows = db.execute(
            "SELECT grp, username, devices, started, ended FROM gpu_holds"
            " WHERE started < ? AND (ended IS NULL OR ended > ?)",
            (resets, start),
        )
        for grp, username, devices, started, ended in rows:
            begin = max(started, start)
            end = min(now if ended is None else ended, resets, now)
            if end > begin:
                key = (grp, username)
                by_member[key] = by_member.get(key, 0.0) + devices * (end - begin) / 3600
        return GpuHours(start, resets, by_member)

    def gpu_hours(self, at: float | None = None) -> GpuHours:
        """GPU-hours used in the calendar month (UTC) of ``at`` (default: now), up to then."""
        db = self._connect()
        try:
            return self._gpu_hours(db, self.clock() if at is None else at)
        finally:
            db.close()

    def gpu_holds(self) -> list[dict[str, Any]]:
        """Every recorded hold of devices: who, which group, how many, from when to when."""
        db = self._connect()
        try:
            rows = db.execute("SELECT * FROM gpu_holds ORDER BY started").fetchall()
        finally:
            db.close()
        return [dict(r) for r in rows]

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
        now = self.clock() if now is None else now
        cutoff = now - grace_s
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
                self._end_holds(db, "id = ?", (res.id,), now)
                db.execute("DELETE FROM reservations WHERE id = ?", (res.id,))
        return released
