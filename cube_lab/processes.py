"""Child processes: start one, await its end, kill its group, tell whether a recorded
runner process is still alive (for marking crashed runs and jobs), and end the process
groups a crashed run or job left behind.

What proves a recorded pid is still ours: a pid is reused, but not within one boot with the
same start time. A ``Group`` keeps the leader's start time (``/proc/<pid>/stat`` field 22,
clock ticks since boot) and the boot id (``/proc/sys/kernel/random/boot_id``); a group is
ended only while its leader (alive, or a zombie not yet reaped) still has both.

Why not asyncio's subprocesses:
``asyncio.create_subprocess_exec`` costs a few milliseconds per process here
(transports, and on Python 3.11 a watcher thread per child); for pipelines of
hundreds of short nodes that is most of the overhead. A plain ``Popen`` plus a
pidfd watched by the event loop does the same job for a fraction of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .accounts import RunAs

END_GRACE_S = 3.0  # SIGTERM, then this long for the group to go, then SIGKILL


def start(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    log: IO[bytes],
    pass_fds: tuple[int, ...] = (),
    run_as: RunAs | None = None,
) -> subprocess.Popen[bytes]:
    """A child in its own session (so its whole process group can be killed). With
    ``run_as`` it runs as that account (``accounts``): ``cwd`` is entered as root first,
    then the child drops to the account, its files private, with the account's HOME/USER
    and no store keys in ``env``."""
    extra: dict[str, Any] = {}
    if run_as is not None:
        from .accounts import job_env

        env, extra = job_env(env, run_as), run_as.popen_kwargs()
    try:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=pass_fds,
            **extra,
        )
    except PermissionError as exc:
        if run_as is not None and exc.filename == argv[0]:  # the program: say how to fix it
            from .accounts import not_runnable

            raise not_runnable(argv[0], run_as) from exc
        raise


async def wait(proc: subprocess.Popen[bytes]) -> int:
    """The exit code, awaited through a pidfd (a worker thread where there is none)."""
    loop = asyncio.get_running_loop()
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        return await loop.run_in_executor(None, proc.wait)
    done: asyncio.Future[None] = loop.create_future()
    loop.add_reader(pidfd, lambda: done.done() or done.set_result(None))
    try:
        await done
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)
    return proc.wait()  # it has exited: this only reaps it


def kill_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def orphaned(rows: list[Any], in_hand: set[str] | dict[str, Any]) -> list[str]:
    """Ids of records (``id, runner_pid, runner_host``) whose runner process is gone.

    Only this machine's records are judged; a record this process started but no longer
    holds (``in_hand``) means it was left behind by an earlier process with our pid."""
    host = socket.gethostname()
    return [
        r.id
        for r in rows
        if r.runner_host == host
        and r.id not in in_hand
        and (r.runner_pid == os.getpid() or not pid_alive(r.runner_pid))
    ]


def become_forked_child(log: str | int, cwd: str, env: dict[str, str]) -> None:
    """In a child a warm host forked: its own session, stdin from /dev/null, stdout and
    stderr appended to ``log`` (a path, or a descriptor open for appending, which is taken),
    ``cwd`` and ``env`` as if it had been started afresh."""
    os.setsid()
    append = os.O_WRONLY | os.O_CREAT | os.O_APPEND
    out = log if isinstance(log, int) else os.open(log, append, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    os.close(null)
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)


# -- process groups left behind ---------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    """A process group cube-lab started, and what proves later that it is still that one."""

    pgid: int
    pid: int  # the leader (pid == pgid for a child started in its own session)
    start_ticks: int
    boot_id: str
    host: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "pgid": self.pgid,
            "pid": self.pid,
            "start_ticks": self.start_ticks,
            "boot_id": self.boot_id,
            "host": self.host,
        }

    @classmethod
    def of(cls, data: Any) -> Group:
        """From a stored record: a mapping or an object with the same fields."""
        get = data.get if isinstance(data, dict) else lambda k: getattr(data, k, None)
        return cls(
            int(get("pgid") or 0),
            int(get("pid") or 0),
            int(get("start_ticks") or 0),
            str(get("boot_id") or ""),
            str(get("host") or ""),
        )


@functools.cache
def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


@functools.cache
def hostname() -> str:
    return socket.gethostname()


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, process group, start ticks) of ``pid``, or None when there is none."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        raw = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses
    fields = raw[raw.rindex(b")") + 2 :].split()
    try:
        return fields[0].decode(), int(fields[2]), int(fields[19])
    except (IndexError, ValueError):
        return None


def group_of(pid: int, leads_own: bool = False) -> Group | None:
    """The identity of the group ``pid`` leads, read now: call it while ``pid`` is a child
    not yet waited for (its pid cannot be reused before then). None without ``/proc``.
    ``leads_own``: ``pid`` is (or is about to be: a forked child before its ``setsid``) the
    leader of a group of its own."""
    found = _stat(pid)
    if found is None:
        return None
    return Group(pid if leads_own else found[1], pid, found[2], boot_id(), hostname())


def _members(pgid: int) -> list[tuple[int, int]]:
    """(pid, start ticks) of the live (not zombie) processes in group ``pgid``."""
    out = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                found = _stat(int(entry.name))
                if found and found[1] == pgid and found[0] not in ("Z", "X"):
                    out.append((int(entry.name), found[2]))
    return out


def still_ours(group: Group) -> bool:
    """True while ``group`` is the very group that was recorded and something of it runs:
    same machine, same boot, and its leader (alive, or a zombie not yet reaped) has the
    recorded start time. A pid reused by another process has another start time."""
    if not group.pgid or group.host != hostname() or not group.boot_id:
        return False
    if group.boot_id != boot_id():
        return False
    leader = _stat(group.pid)
    if leader is None or leader[1] != group.pgid or leader[2] != group.start_ticks:
        return False
    return bool(_members(group.pgid))


def end_groups(groups: Iterable[Group], grace_s: float = END_GRACE_S) -> list[Group]:
    """End every group that is still ours: SIGTERM, up to ``grace_s`` for them to go, then
    SIGKILL. Groups that are gone, or whose pid now belongs to another process, are left
    alone. Returns the groups that were signalled."""
    ours = [g for g in groups if still_ours(g)]
    for group in ours:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group.pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    left = list(ours)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [g for g in left if _members(g.pgid)]
    for group in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group.pgid, signal.SIGKILL)
    return ours


# -- the records (table ``process_groups``) ----------------------------------------------------


def record_groups(
    store: Any, owner_kind: str, owner_id: str, part: str, groups: list[tuple[str, Group]]
) -> None:
    """Replace the recorded groups of (``owner_kind``, ``owner_id``, ``part``) by ``groups``
    (role, group); ``[]`` removes them (what started ended normally)."""
    from sqlalchemy import delete

    from .store.models import ProcessGroup

    with store.write() as s:
        s.execute(
            delete(ProcessGroup).where(
                ProcessGroup.owner_kind == owner_kind,
                ProcessGroup.owner_id == owner_id,
                ProcessGroup.part == part,
            )
        )
        for role, group in groups:
            s.add(
                ProcessGroup(
                    owner_kind=owner_kind,
                    owner_id=owner_id,
                    part=part,
                    role=role,
                    **group.as_dict(),
                )
            )


def end_recorded(store: Any, owner_kind: str, owner_ids: list[str]) -> list[Group]:
    """End the recorded groups of these runs or jobs that are still ours (recovery calls it
    for what it marks interrupted), then forget every record of them."""
    if not owner_ids:
        return []
    from sqlalchemy import delete, select

    from .store.models import ProcessGroup

    where = (ProcessGroup.owner_kind == owner_kind) & ProcessGroup.owner_id.in_(owner_ids)
    with store.read() as s:
        groups = [Group.of(row) for row in s.scalars(select(ProcessGroup).where(where))]
    ended = end_groups(groups)
    with store.write() as s:
        s.execute(delete(ProcessGroup).where(where))
    return ended
