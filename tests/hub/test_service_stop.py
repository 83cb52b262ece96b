"""The hub's own services stop quietly on SIGINT (how the hub stops them) and on SIGTERM (its
fallback, or an admin's): the main coroutine's ``finally`` runs, the exit status is 0 and
nothing is printed but one line; also when the parent handed SIGINT down ignored."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SERVICE = textwrap.dedent(
    """
    import asyncio, logging, sys
    from cube_lab.hub.service_main import run_service

    async def serve():
        try:
            print("ready", flush=True)
            await asyncio.Event().wait()
        finally:
            print("closed the store", flush=True)

    logging.basicConfig(level=logging.INFO, format="[svc] %(message)s", stream=sys.stdout)
    run_service(serve(), logging.getLogger("svc"))
    """
)


@pytest.mark.parametrize(
    ("sig", "inherit_ignored"),
    [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True)],
)
def test_a_service_stops_quietly(
    tmp_path: Path, sig: signal.Signals, inherit_ignored: bool
) -> None:
    script = tmp_path / "svc.py"
    script.write_text(SERVICE)

    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ignore_sigint if inherit_ignored else None,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out == f"closed the store\n[svc] stopped ({sig.name})\n"
    assert err == ""
