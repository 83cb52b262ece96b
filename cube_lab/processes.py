"""Start a child process and await its end without a thread per child.

``asyncio.create_subprocess_exec`` costs a few milliseconds per process here
(transports, and on Python 3.11 a watcher thread per child); for pipelines of
hundreds of short nodes that is most of the overhead. A plain ``Popen`` plus a
pidfd watched by the event loop does the same job for a fraction of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from pathlib import Path
from typing import IO


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
