"""A real `jupyter server` subprocess with cube-lab, for tests that kill and restart it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

TOKEN = "subprocess-server-token"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(
    root: Path, data: Path, port: int, tmp: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """The server as user alice, rooted in ``root``, its store in ``data`` (``env`` added to
    this process's environment)."""
    env = {
        **os.environ,
        **(env or {}),
        "CUBE_LAB_USER": "alice",
        "JUPYTER_RUNTIME_DIR": str(tmp / "rt"),
    }
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_server",
            f"--port={port}",
            "--ServerApp.port_retries=0",  # another's port is a failed start, not a wrong server
            "--ip=127.0.0.1",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={root}",
            f"--CubeLab.data_dir={data}",
            "--no-browser",
            "--allow-root",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def call(port: int, method: str, path: str, body: Any = None) -> Any:
    """One REST call to ``/cube/api/v1/<path>``; its JSON answer."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/cube/api/v1/{path}",
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def wait_up(port: int) -> None:
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            call(port, "GET", "whoami")
            return
        except OSError:
            time.sleep(0.3)
    raise AssertionError("server did not start")
