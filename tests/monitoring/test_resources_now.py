"""``GET /cube/api/v1/resources``: what runs now for the caller (an admin: everyone's), the
project's GPU use against the hub's quota, and this server's totals; no GPU, no GPU rows."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from cube_lab.errors import Forbidden
from cube_lab.identity import Caller
from cube_lab.monitoring import fake_nvml, files, live, nvml
from cube_lab.monitoring.fake_nvml import FakeDevice, FakeProcess
from cube_lab.store.models import Project, TrainingJob


def _series(kind: str, obj_id: str, *, running: bool = True, gpus: list[Any] | None = None,
            node: str | None = None, age_s: float = 0.0) -> dict[str, Any]:  # fmt: skip
    now = time.time() - age_s
    return {
        "kind": kind, "id": obj_id, "node": node, "running": running, "interval_s": 1.0,
        "started_at": now - 5, "updated_at": now, "gpu": bool(gpus),
        "latest": {"cpu_percent": 150.0, "rss_bytes": 64 * 2**20, "procs": 3, "gpus": gpus or []},
        "peak": {}, "series": {},
    }  # fmt: skip


def _job(ws: Any, caller: Caller, job_id: str, root: Path, **series: Any) -> None:
    ws.projects.ensure_personal(caller)
    job_dir = root / job_id
    with ws.store.write() as s:
        project = s.query(Project).filter(Project.name == caller.username).one()
        s.add(
            TrainingJob(
                id=job_id, project_id=project.id, owner=caller.username, name=f"job {job_id}",
                framework="plain", backend="local", status="running",
                spec={"workers": 2, "nproc_per_worker": 1, "resources": {"gpus": 1}},
                job_dir=str(job_dir),
            )
        )  # fmt: skip
    files.write(files.training_file(job_dir), _series("training", job_id, **series))


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUBE_LAB_NVML", "off")
    monkeypatch.delenv("CUBE_HUB_ADMIN_URL", raising=False)
    monkeypatch.setattr(live, "_gpu_reader", None)


def test_the_caller_sees_their_running_job_and_nobody_elses(
    ws: Any, alice: Caller, bob: Caller, tmp_path: Path
) -> None:
    gpu = {"uuid": "GPU-1", "name": "Fake", "parent": None, "memory_bytes": 2**30,
           "util_percent": 40.0, "pids": [1]}  # fmt: skip
    _job(ws, alice, "j1", tmp_path, gpus=[gpu])
    _job(ws, alice, "j2", tmp_path, running=False)  # its sampler ended
    _job(ws, alice, "j3", tmp_path, age_s=3600)  # a crash left it "running"
    _job(ws, bob, "b1", tmp_path)
    mine = live.resources_now(ws, alice)
    assert [o["id"] for o in mine["objects"]] == ["j1"]
    job = mine["objects"][0]
    assert job["kind"] == "training" and job["project"] == "alice" and job["user"] == "alice"
    assert job["cpu_percent"] == 150.0 and job["rss_bytes"] == 64 * 2**20
    assert job["ranks"] == 2 and job["gpus_requested"] == 2
    assert job["gpus"][0]["uuid"] == "GPU-1" and job["gpus"][0]["memory_bytes"] == 2**30
    assert mine["projects"] == [
        {"project": "alice", "objects": 1, "gpus_in_use": 2, "gpu_quota": None, "quota": None,
         "usage": None, "gpu_hours_month": None, "gpu_hours_limit": None, "dimensions": []}
    ]  # fmt: skip
    assert [o["id"] for o in live.resources_now(ws, bob)["objects"]] == ["b1"]
    # everyone's only for an admin
    with pytest.raises(Forbidden):
        live.resources_now(ws, alice, everyone=True)
    admin = live.resources_now(ws, Caller("root", admin=True), everyone=True)
    assert sorted(o["id"] for o in admin["objects"]) == ["b1", "j1"]
    assert {p["project"] for p in admin["projects"]} == {"alice", "bob"}


def test_server_totals_without_and_with_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    totals = live.server_totals()
    assert totals["gpus"] == [] and totals["memory_total_bytes"] > totals["memory_used_bytes"] > 0
    assert totals["cpu_count"] >= 1 and 0 <= totals["cpu_percent"] <= 100
    busy = [FakeProcess(11, 3 * 2**30, 30), FakeProcess(12, 2**30, 20)]
    fake_nvml.install([FakeDevice("GPU-a", processes=busy), FakeDevice("GPU-b")])
    nvml.use(fake_nvml)
    monkeypatch.setattr(live, "_gpu_reader", None)
    try:
        gpus = {g["uuid"]: g for g in live.server_totals()["gpus"]}
    finally:
        nvml.use(None)
        fake_nvml.install([])
    assert gpus["GPU-a"]["memory_bytes"] == 4 * 2**30 and gpus["GPU-a"]["processes"] == 2
    assert gpus["GPU-b"]["memory_bytes"] == 0 and gpus["GPU-b"]["util_percent"] is None


def test_quota_from_the_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    objects = [{"project": "vision", "gpus_requested": 1, "gpus": []}]
    groups = {
        "vision": {"name": "vision", "quota": {"accelerators": {"nvidia.com/gpu": 4}},
                   "usage": {"nvidia.com/gpu": 3.0, "cpu": 8}},
        "nlp": {"name": "nlp", "quota": {}, "usage": {}},
    }  # fmt: skip
    use = {p["project"]: p for p in live.project_use(objects, groups)}
    assert use["vision"]["gpus_in_use"] == 3 and use["vision"]["gpu_quota"] == 4
    assert use["nlp"]["gpus_in_use"] == 0 and use["nlp"]["gpu_quota"] is None


async def test_a_running_training_job_over_rest(
    api: Any, jp_root_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUBE_LAB_RESOURCE_INTERVAL_S", "0.2")
    monkeypatch.setenv("CUBE_LAB_RESOURCE_WRITE_S", "0.2")
    (jp_root_dir / "burn.py").write_text(
        "import os, time\nend = time.monotonic() + 30\n"
        "while not os.path.exists('stop') and time.monotonic() < end:\n    pass\n"
    )
    status, job = await api(
        "alice", "POST", "training/jobs", {"framework": "plain", "script": "burn.py"}
    )
    assert status == 201, job
    try:
        seen = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and seen is None:
            status, now = await api("alice", "GET", "resources")
            assert status == 200, now
            seen = next((o for o in now["objects"] if o["id"] == job["id"]), None)
            await asyncio.sleep(0.2)
        assert seen is not None, "the running job never showed"
        assert seen["kind"] == "training" and seen["gpus"] == [] and seen["rss_bytes"] > 0
        assert now["server"]["gpus"] == [] and now["projects"][0]["project"] == "alice"
        status, theirs = await api("bob", "GET", "resources")
        assert status == 200 and not theirs["objects"]
        status, err = await api("bob", "GET", "resources", params={"all": "1"})
        assert status == 403 and err["error"]
        status, _ = await api(None, "GET", "resources")
        assert status in (401, 403)
    finally:
        (jp_root_dir / "stop").touch()


def test_a_running_tuning_trial_is_listed(
    ws: Any, alice: Caller, bob: Caller, tmp_path: Path
) -> None:
    from cube_lab.store.models import TuningExperiment

    ws.projects.ensure_personal(alice)
    folder = tmp_path / "exp"
    with ws.store.write() as s:
        project = s.query(Project).filter(Project.name == "alice").one()
        s.add(
            TuningExperiment(
                id="e1", project_id=project.id, owner="alice", name="sweep", status="running",
                spec={}, folder=str(folder),
            )
        )  # fmt: skip
    files.write(files.trial_file(folder / "trials" / "t1"), _series("trial", "e1", node="t1"))
    files.write(files.trial_file(folder / "trials" / "t0"), _series("trial", "e1", running=False))
    found = live.resources_now(ws, alice)["objects"]
    assert [(o["kind"], o["id"], o["node"], o["name"]) for o in found] == [
        ("trial", "e1", "t1", "sweep")
    ]
    assert live.resources_now(ws, bob)["objects"] == []
