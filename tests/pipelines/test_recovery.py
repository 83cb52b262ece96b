"""A server killed mid-run leaves its run `interrupted` after a restart, never `running`;
node kinds from other packages are found through entry points."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
from pipeline_util import node, script, write_pipeline
from server_util import call, free_port, start_server, wait_up

from cube_lab.identity import Caller
from cube_lab.pipelines import nodekinds
from cube_lab.pipelines.nodekinds import NodeCommand


def test_server_crash_marks_its_runs_interrupted(tmp_path: Path) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    root.mkdir()
    script(root, "slow.py", "import time; time.sleep(120)\n")
    write_pipeline(root, [node("slow", filename="slow.py")])
    port = free_port()
    server = start_server(root, data, port, tmp_path)
    try:
        wait_up(port)
        run = call(port, "POST", "pipelines/runs", {"path": "p.pipeline"})
        deadline = time.time() + 30
        while call(port, "GET", f"pipelines/runs/{run['id']}")["status"] != "running":
            assert time.time() < deadline
            time.sleep(0.2)
        server.send_signal(signal.SIGKILL)  # the crash
        server.wait()
        server = start_server(root, data, port, tmp_path)
        wait_up(port)
        after = call(port, "GET", f"pipelines/runs/{run['id']}")
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
