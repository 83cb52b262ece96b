"""The lab server's notebook kernels, sampled like jobs (``cube_lab/monitoring/kernels.py``):
a real kernel started through the server's sessions API shows in ``GET /resources`` (its
notebook, owner, project, CPU and memory) and in ``/metrics`` while it runs, and is gone
(its series finished) after it is shut down."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cube_lab.monitoring import files, monitor


@pytest.fixture
def jp_server_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    from conftest import TokenUsers

    monkeypatch.setenv("CUBE_LAB_USER", "alice")  # the server's user, before it starts
    monkeypatch.setenv("CUBE_LAB_RESOURCE_INTERVAL_S", "0.2")
    monkeypatch.setenv("CUBE_LAB_RESOURCE_WRITE_S", "0.2")
    monkeypatch.setenv("CUBE_LAB_NVML", "off")
    monkeypatch.delenv("CUBE_LAB_PROJECT", raising=False)
    monkeypatch.delenv("CUBE_HUB_ADMIN_URL", raising=False)
    return {
        "ServerApp": {
            "jpserver_extensions": {"cube_lab": True},
            "identity_provider_class": TokenUsers,
        },
        "CubeLab": {"data_dir": str(tmp_path / "server-data")},
    }


async def _kernel_row(api: Any, user: str, kernel_id: str) -> dict[str, Any] | None:
    status, now = await api(user, "GET", "resources")
    assert status == 200, now
    return next((o for o in now["objects"] if o["kind"] == "kernel" and o["id"] == kernel_id), None)


async def test_a_kernel_is_sampled_with_its_notebook_and_its_busy_cpu(
    api: Any, jp_fetch: Any, jp_ws_fetch: Any, jp_root_dir: Path, tmp_path: Path
) -> None:
    (jp_root_dir / "work").mkdir()
    headers = {"Authorization": "token alice-secret"}
    body = {"path": "work/busy.ipynb", "name": "busy.ipynb", "type": "notebook",
            "kernel": {"name": "python3"}}  # fmt: skip
    resp = await jp_fetch("api", "sessions", method="POST", headers=headers, body=json.dumps(body))
    session = json.loads(resp.body)
    kernel_id = session["kernel"]["id"]
    try:
        row = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            row = await _kernel_row(api, "alice", kernel_id)
            if row is not None and row["rss_bytes"]:
                break
            await asyncio.sleep(0.3)
        assert row is not None and row["rss_bytes"], "the kernel never showed"
        assert row["path"] == "work/busy.ipynb" and row["name"] == "busy.ipynb"
        assert row["user"] == "alice" and row["project"] == "alice"
        assert row["rss_bytes"] > 10 * 2**20 and row["procs"] >= 1
        assert await _kernel_row(api, "bob", kernel_id) is None  # not bob's

        # a busy loop in the kernel: its CPU shows on the kernel's row
        ws = await jp_ws_fetch("api", "kernels", kernel_id, "channels", headers=headers)
        msg = {
            "header": {"msg_id": "busy-1", "username": "alice", "session": "s",
                       "msg_type": "execute_request", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell",
            "content": {"code": "import time\nend = time.time() + 12\nwhile time.time() < end:"
                                "\n    pass", "silent": False},
        }  # fmt: skip
        await ws.write_message(json.dumps(msg))
        busy = None
        deadline = time.monotonic() + 12
        while time.monotonic() < deadline:
            busy = await _kernel_row(api, "alice", kernel_id)
            if busy and (busy["cpu_percent"] or 0) > 50:
                break
            await asyncio.sleep(0.3)
        assert busy and (busy["cpu_percent"] or 0) > 50, (row, busy)
        ws.close()

        status, text = await api("alice", "GET", "metrics")
        assert status == 200
        kernels = [
            s
            for f in text_string_to_metric_families(text.decode())
            for s in f.samples
            if s.name == "cube_process_cpu_percent" and s.labels["kind"] == "kernel"
        ]
        assert [s.labels["id"] for s in kernels] == [kernel_id]
        assert kernels[0].labels["user"] == "alice" and kernels[0].labels["project"] == "alice"
    finally:
        await jp_fetch("api", "sessions", session["id"], method="DELETE", headers=headers)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and await _kernel_row(api, "alice", kernel_id):
        await asyncio.sleep(0.3)
    assert await _kernel_row(api, "alice", kernel_id) is None
    assert not [w for w in monitor.monitor().watching() if w.object_id == kernel_id]
    # its series stays, finished, with the notebook it ran (GPU-hours count it this month)
    saved = files.read(files.kernel_file(tmp_path / "server-data", kernel_id))
    assert saved and saved["running"] is False and saved["kind"] == "kernel"
    assert saved["meta"]["path"] == "work/busy.ipynb" and saved["meta"]["owner"] == "alice"
