"""Child processes: start one, await its end, kill its group, and tell whether a
recorded runner process is still alive (for marking crashed runs and jobs).

Why not asyncio's subprocesses:
``asyncio.create_subprocess_exec`` costs a few milliseconds per process here
(transports, and on Python 3.11 a watcher thread per child); for pipelines of
hundreds of short nodes that is most of the overhead. A plain ``Popen`` plus a
pidfd watched by the event loop does the same job for a fraction of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import IO, Any


def start(
    argv: list[str], cwd: Path, env: dict[str, str], log: IO[bytes]
) -> subprocess.Popen[bytes]:
    """A child in its own session (so its whole process group can be killed)."""
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


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


def become_forked_child(log: str, cwd: str, env: dict[str, str]) -> None:
    """In a child a warm host forked: its own session, stdin from /dev/null, stdout and
    stderr appended to ``log``, ``cwd`` and ``env`` as if it had been started afresh."""
    os.setsid()
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
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
