"""Shared by the tests that start real local deployments."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cube_lab.config import ENV_DATA_DIR, Settings
from cube_lab.identity import Caller
from cube_lab.workspace import Workspace

LIVE = ("starting", "running", "updating")


def stop_serving(ws: Workspace, caller: Caller) -> None:
    """Undeploy what ``caller`` still has running and stop the warm host: no process outlives
    the test module."""
    for dep in ws.serving.list(caller):
        if dep.status in LIVE:
            ws.serving.undeploy(caller, dep.name)
    ws.serving.quit_warm_hosts()


@contextmanager
def warm_capable_workspace(monkeypatch: Any) -> Iterator[Workspace]:
    """A workspace in a data dir whose warm host socket (``<data dir>/serving/warmhost.sock``)
    fits a Unix socket address (``warmhost.MAX_SOCKET_PATH``, 100 characters). A test's
    ``tmp_path`` under pytest-xdist (``/tmp/pytest-of-root/pytest-12/popen-gw1/<test name>/``)
    is too long for it: the service then never starts a warm host and forks nothing, every
    model server starts cold. The folder is removed afterwards; ``$CUBE_LAB_DATA_DIR`` points
    at it meanwhile, so any process a test starts finds the same store."""
    from cube_lab.serving.warmhost import MAX_SOCKET_PATH, SOCKET_NAME

    folder = Path(tempfile.mkdtemp(prefix="cl-"))
    if len(str(folder / "d" / "serving" / SOCKET_NAME)) > MAX_SOCKET_PATH:  # a long $TMPDIR
        shutil.rmtree(folder)
        folder = Path(tempfile.mkdtemp(prefix="cl-", dir="/tmp"))
    data_dir = folder / "d"
    monkeypatch.setenv(ENV_DATA_DIR, str(data_dir))
    ws = Workspace.open(Settings.resolve(data_dir))
    try:
        yield ws
    finally:
        ws.close()
        shutil.rmtree(folder, ignore_errors=True)


def wait_for_warm_host(ws: Workspace, within: float = 300.0) -> dict[str, Any]:
    """The ``hello`` answer of the warm host a cold deploy started, as soon as it answers
    (it imports NumPy and scikit-learn first: seconds, or much longer on a busy machine).
    Fails at once, saying why, where no host can come: its socket path is too long (the
    service then starts none), or the host process exited (its log shown); ``within`` is
    only a last resort for a host that hangs."""
    from cube_lab.serving.warmhost import LOG_NAME, MAX_SOCKET_PATH, SOCKET_NAME, ask

    folder = Path(ws.settings.data_dir) / "serving"
    sock = folder / SOCKET_NAME
    assert len(str(sock)) <= MAX_SOCKET_PATH, (
        f"{sock} is longer than {MAX_SOCKET_PATH} characters: no warm host can listen there "
        "(use serving_util.warm_capable_workspace)"
    )

    def log() -> str:
        path = folder / LOG_NAME
        return path.read_text(errors="replace")[-3000:] if path.is_file() else "(no log)"

    # the deployment service's client of its own host (LocalBackend._warm): the process it
    # started, to notice at once when it died
    client = getattr(getattr(ws.serving, "backend", None), "_warm", None)
    deadline = time.monotonic() + within
    while (hello := ask(sock, {"op": "hello"})) is None:
        assert client is None or client.enabled, "warm hosts are off ($CUBE_LAB_SERVING_WARM)"
        proc = getattr(client, "proc", None)
        assert client is None or proc is not None, "no warm host was started after a deploy"
        if proc is not None and proc.poll() is not None:
            hello = ask(sock, {"op": "hello"})  # it may have left to a host already there
            assert hello is not None, f"the warm host exited ({proc.returncode}):\n{log()}"
            break
        assert time.monotonic() < deadline, f"no warm host answered in {within:g} s:\n{log()}"
        time.sleep(0.05)
    return hello
