"""Deployment replicas are sampled: a real local deployment (two replicas of an sklearn model)
shows in ``GET /resources`` and ``/metrics`` with rss > 0 while it serves, one row per replica,
nobody else sees it, and it is gone after it is deleted, its samplers ended."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from serving_util import stop_serving

from cube_lab.config import Settings
from cube_lab.identity import Caller
from cube_lab.monitoring import live, monitor, report
from cube_lab.workspace import Workspace

ALICE, BOB = Caller("alice"), Caller("bob")


@pytest.fixture
def fast_sampling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUBE_LAB_RESOURCE_INTERVAL_S", "0.2")
    monkeypatch.setenv("CUBE_LAB_RESOURCE_WRITE_S", "0.2")
    monkeypatch.setenv("CUBE_LAB_NVML", "off")
    monkeypatch.delenv("CUBE_HUB_ADMIN_URL", raising=False)


@pytest.fixture
def served(tmp_path: Path, fast_sampling: None) -> Iterator[Workspace]:
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    ws = Workspace.open(Settings.resolve(tmp_path / "serve-data"))
    x, y = load_iris(return_X_y=True)
    ws.registry.register(ALICE, name="iris", obj=LogisticRegression(max_iter=300).fit(x, y))
    try:
        yield ws
    finally:
        stop_serving(ws, ALICE)
        ws.close()


def _until(check: Any, timeout_s: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("timed out")


def _sampler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "cube-lab-resources" and t.is_alive()]


def test_a_deployments_replicas_while_it_serves_and_gone_after_delete(served: Workspace) -> None:
    ws = served
    dep = ws.serving.deploy(ALICE, "iris:1", name="iris-live", replicas=2)

    def rows() -> list[dict[str, Any]]:
        found = live.resources_now(ws, ALICE)["objects"]
        mine = [o for o in found if o["kind"] == "deployment" and o["id"] == dep.id]
        return mine if len(mine) == 2 and all((o["rss_bytes"] or 0) > 0 for o in mine) else []

    replicas = _until(rows)
    assert {o["name"] for o in replicas} == {"iris-live"}
    assert {o["user"] for o in replicas} == {"alice"} and {o["project"] for o in replicas} == {
        "alice"
    }
    assert len({o["node"] for o in replicas}) == 2  # one row per replica
    assert all(o["procs"] >= 1 for o in replicas)
    assert not [o for o in live.resources_now(ws, BOB)["objects"] if o["kind"] == "deployment"]

    text = report.prometheus_text(ws, ALICE).decode()
    rss = {
        s.labels["node"]: s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "cube_process_resident_memory_bytes" and s.labels["kind"] == "deployment"
    }
    assert set(rss) == {o["node"] for o in replicas} and all(v > 0 for v in rss.values())
    samplers = [w for w in monitor.monitor().watching() if w.object_id == dep.id]
    assert len(samplers) == 2

    ws.serving.delete(ALICE, "iris-live")
    assert not [o for o in live.resources_now(ws, ALICE)["objects"] if o["id"] == dep.id]
    assert not [w for w in monitor.monitor().watching() if w.object_id == dep.id]
    assert all(not w.running for w in samplers)

    # when nothing else is watched the sampler thread ends too (another test's objects in
    # this worker process, a module's deployment still serving, rightly keep it running)
    def sampler_settled() -> bool:
        if monitor.monitor().watching():
            return bool(_sampler_threads())
        return not _sampler_threads()

    _until(sampler_settled)
