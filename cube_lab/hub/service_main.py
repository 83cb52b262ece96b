"""How the hub's own services (cube-admin, the cube-lab service) run and stop.

The hub stops a managed service with SIGINT, then SIGTERM after a grace period; an admin may
send either. Either ends the service the same quiet way: its main coroutine is cancelled, so its
``finally`` blocks run (the store closed, background tasks cancelled), and the process exits 0
with one log line, no traceback. The handlers are the event loop's, set whatever the parent
left the signals as (a shell's background job hands SIGINT down ignored)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Coroutine
from typing import Any


def run_service(main: Coroutine[Any, Any, None], log: logging.Logger) -> None:
    """Run ``main`` until it returns or the process gets SIGINT or SIGTERM."""

    async def until_signalled() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        got: list[str] = []

        def stop(sig: signal.Signals) -> None:
            got.append(sig.name)
            task.cancel()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop, sig)
        with contextlib.suppress(asyncio.CancelledError):
            await main
        if got:
            log.info("stopped (%s)", got[0])

    asyncio.run(until_signalled())
