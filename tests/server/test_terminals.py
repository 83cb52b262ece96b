"""A JupyterLab terminal and a kernel find this venv's ``cube-lab`` with no manual ``export``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from cube_lab import terminals

TOKEN = "terminal-test-token"


def test_bin_goes_first_on_path_once() -> None:
    env = {"PATH": f"/usr/bin:{terminals.server_bin()}:/bin"}
    terminals.put_bin_on_path(env)
    terminals.put_bin_on_path(env)
    assert env["PATH"].split(os.pathsep) == [str(terminals.server_bin()), "/usr/bin", "/bin"]
    assert env[terminals.ENV_BIN] == str(terminals.server_bin())


def test_only_plain_shells_are_rewritten() -> None:
    assert terminals.login_shell_keeping_bin(["/bin/bash", "-l"])[:3] == ["/bin/bash", "-l", "-c"]
    assert terminals.login_shell_keeping_bin(["/bin/zsh"])[-1] == "/bin/zsh"
    custom = ["/usr/bin/tmux", "new", "-A"]
    assert terminals.login_shell_keeping_bin(custom) == custom
    assert terminals.login_shell_keeping_bin(["/usr/bin/fish"]) == ["/usr/bin/fish"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """A real ``jupyter server`` with cube-lab, started the way ``make lab`` does (no tty), with
    a PATH that lacks the venv (as when it is started as ``.venv/bin/jupyter lab``)."""
    port = _free_port()
    root = tmp_path / "root"
    root.mkdir()
    env = {**os.environ, "PATH": "/usr/bin:/bin", "SHELL": "/bin/bash"}
    env.pop(terminals.ENV_BIN, None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "server", f"--port={port}", "--ip=127.0.0.1",
         f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={TOKEN}",
         "--ServerApp.allow_root=True", "--no-browser",
         f"--CubeLab.data_dir={tmp_path / 'data'}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{url}/api/status", params={"token": TOKEN}, timeout=2).ok:
                    break
            except requests.ConnectionError:
                pass
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def _run_in_terminal(url: str, command: str) -> str:
    made = requests.post(f"{url}/api/terminals", params={"token": TOKEN}, timeout=10)
    made.raise_for_status()
    name = made.json()["name"]
    ws_url = url.replace("http", "ws", 1) + f"/terminals/websocket/{name}?token={TOKEN}"
    conn = await websocket_connect(HTTPRequest(ws_url))
    # the typed line says END-OF-""TEST: only the shell's output has the marker whole
    await conn.write_message(json.dumps(["stdin", f'{command}; echo END-OF-""TEST\r']))
    seen = ""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "END-OF-TEST" not in seen:
        message = await conn.read_message()
        if message is None:
            break
        kind, *payload = json.loads(message)
        if kind == "stdout":
            seen += payload[0]
    conn.close()
    return seen


async def test_a_terminal_opens_in_the_labs_root(server: str, tmp_path: Path) -> None:
    """Not in the folder the server was started from (the checkout, for ``make lab``)."""
    seen = await _run_in_terminal(server, "pwd")
    assert f"{tmp_path / 'root'}\r\nEND-OF-TEST" in seen, seen  # pwd's line, then the marker


async def test_a_terminal_finds_cube_lab(server: str) -> None:
    seen = await _run_in_terminal(server, "command -v cube-lab python")
    assert str(terminals.server_bin() / "cube-lab") in seen, seen
    assert str(terminals.server_bin() / "python") in seen, seen
