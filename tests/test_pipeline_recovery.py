"""A server killed mid-run leaves its run `interrupted` after a restart, never `running`;
node kinds from other packages are found through entry points."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
from pipeline_util import node, script, write_pipeline

from cube_lab.identity import Caller
from cube_lab.pipelines import nodekinds
from cube_lab.pipelines.nodekinds import NodeCommand

TOKEN = "recovery-token"


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server(root: Path, data: Path, port: int, tmp: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "CUBE_LAB_USER": "alice", "JUPYTER_RUNTIME_DIR": str(tmp / "rt")}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_server",
            f"--port={port}",
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


def _call(port: int, method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/cube/api/v1/{path}",
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _wait_up(port: int) -> None:
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            _call(port, "GET", "whoami")
            return
        except OSError:
            time.sleep(0.3)
    raise AssertionError("server did not start")


def test_server_crash_marks_its_runs_interrupted(tmp_path: Path) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    root.mkdir()
    script(root, "slow.py", "import time; time.sleep(120)\n")
    write_pipeline(root, [node("slow", filename="slow.py")])
    port = _port()
    server = _server(root, data, port, tmp_path)
    try:
        _wait_up(port)
        run = _call(port, "POST", "pipelines/runs", {"path": "p.pipeline"})
        deadline = time.time() + 30
        while _call(port, "GET", f"pipelines/runs/{run['id']}")["status"] != "running":
            assert time.time() < deadline
            time.sleep(0.2)
        server.send_signal(signal.SIGKILL)  # the crash
        server.wait()
        server = _server(root, data, port, tmp_path)
        _wait_up(port)
        after = _call(port, "GET", f"pipelines/runs/{run['id']}")
        assert after["status"] == "interrupted" and after["nodes"][0]["status"] == "interrupted"
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
        subprocess.run(["pkill", "-f", str(root / "slow.py")], check=False)


class EchoKind:
    """A node kind a plug-in package could add: prints its message."""

    name, ops, display_name = "echo", ("test:echo",), "Echo"

    def check(self, node: Any, ctx: Any) -> list[Any]:
        return []

    def command(self, node: Any, ctx: Any) -> NodeCommand:
        return NodeCommand([sys.executable, "-c", f"print({node.params['message']!r})"], ctx.folder)

    def inputs(self, node: Any, ctx: Any) -> list[Path]:
        return []


def test_node_kinds_from_entry_points(
    ws: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    points = [
        EntryPoint("echo", f"{__name__}:EchoKind", nodekinds.ENTRY_POINT_GROUP),
        EntryPoint("broken", "no_such_module:Kind", nodekinds.ENTRY_POINT_GROUP),
    ]
    monkeypatch.setattr(nodekinds, "entry_points", lambda group: points)
    nodekinds.node_kinds.cache_clear()
    try:
        assert nodekinds.node_kinds()["test:echo"].display_name == "Echo"
        path = write_pipeline(tmp_path, [node("e", "test:echo", message="hello plug-in")])
        alice = Caller("alice")
        runner, recorder = ws.pipelines.prepare(alice, path, tmp_path)
        assert ws.pipelines.run_foreground(runner, recorder) == "succeeded"
        assert "hello plug-in" in ws.pipelines.tail_log(alice, runner.plan.run_id, "e").text
    finally:
        nodekinds.node_kinds.cache_clear()
