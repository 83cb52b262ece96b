"""Monitoring over REST: Prometheus text that parses and carries the labels, scoped to the
caller's projects; a run's and a job's resource series."""

from __future__ import annotations

import asyncio
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from pipeline_util import node, script, write_pipeline
from prometheus_client.parser import text_string_to_metric_families

from cube_lab.identity import Caller
from cube_lab.monitoring import report

# holds 40 MB and burns CPU until "stop" appears next to it (or 30 s pass)
BUSY = textwrap.dedent(
    """
    import os, time
    held = b"\\x01" * (40 * 2**20)
    open("started", "w").close()
    end = time.monotonic() + 30
    while not os.path.exists("stop") and time.monotonic() < end:
        for _ in range(20000):
            pass
    """
)


@pytest.fixture(autouse=True)
def fast_sampling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUBE_LAB_RESOURCE_INTERVAL_S", "0.2")
    monkeypatch.setenv("CUBE_LAB_RESOURCE_WRITE_S", "0.2")
    monkeypatch.setenv("CUBE_LAB_NVML", "off")


def families(text: bytes) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(text.decode())}


async def scrape(api: Any, user: str) -> dict[str, Any]:
    status, body = await api(user, "GET", "metrics")
    assert status == 200, body
    return families(body)


async def wait_status(api: Any, path: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, obj = await api("alice", "GET", path)
        assert status == 200, obj
        if obj["status"] not in ("queued", "running"):
            return obj
        await asyncio.sleep(0.2)
    raise AssertionError(f"{path} did not finish")


async def live_sample(api: Any, run_id: str, timeout: float = 30) -> dict[str, Any]:
    """The scrape in which the run's node shows CPU and memory."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = await scrape(api, "alice")
        rss = found["cube_process_resident_memory_bytes"].samples
        cpu = found["cube_process_cpu_percent"].samples  # none at the first (baseline) sample
        if any(s.labels["id"] == run_id and s.value > 30 * 2**20 for s in rss) and any(
            s.labels["id"] == run_id for s in cpu
        ):
            return found
        await asyncio.sleep(0.2)
    raise AssertionError("the run's resources never showed in /metrics")


async def test_metrics_carry_the_runs_resources_for_its_owner_only(
    api: Any, jp_root_dir: Path
) -> None:
    folder = jp_root_dir / "flows"
    folder.mkdir()
    script(folder, "busy.py", BUSY)
    write_pipeline(folder, [node("work", filename="busy.py")])
    status, run = await api("alice", "POST", "pipelines/runs", {"path": "flows/p.pipeline"})
    assert status == 201, run
    try:
        found = await live_sample(api, run["id"])
        labels = {"kind": "pipeline", "id": run["id"], "node": "work"}
        rss = [
            s
            for s in found["cube_process_resident_memory_bytes"].samples
            if s.labels["id"] == run["id"]
        ]
        assert rss[0].labels == {**labels, "project": "alice", "user": "alice"}
        cpu = [s for s in found["cube_process_cpu_percent"].samples if s.labels["id"] == run["id"]]
        assert cpu and cpu[0].value > 0
        assert not found["cube_process_gpu_memory_bytes"].samples  # no NVML: no GPU rows
        runs = {
            (s.labels["project"], s.labels["status"]): s.value
            for s in found["cube_pipeline_runs"].samples
        }
        # the recorder may not have stored "running" yet when the node's first sample is
        assert runs in ({("alice", "running"): 1}, {("alice", "queued"): 1}), runs
        # bob sees neither alice's run nor its counts
        theirs = await scrape(api, "bob")
        assert not theirs["cube_process_resident_memory_bytes"].samples
        assert not theirs["cube_pipeline_runs"].samples
        status, err = await api("bob", "GET", f"pipelines/runs/{run['id']}/resources")
        assert status == 404 and "not found" in err["error"]
    finally:
        (folder / "stop").touch()
    done = await wait_status(api, f"pipelines/runs/{run['id']}")
    assert done["status"] == "succeeded", done
    status, res = await api("alice", "GET", f"pipelines/runs/{run['id']}/resources")
    assert status == 200 and res["run_id"] == run["id"] and list(res["nodes"]) == ["work"]
    series = res["nodes"]["work"]
    assert series["running"] is False and series["gpu"] is False and series["kind"] == "pipeline"
    # the baseline and the sample /metrics showed: the node may end before a third one
    assert len(series["points"]) >= 2 and series["fields"][:4] == [
        "t",
        "dt",
        "cpu_percent",
        "rss_bytes",
    ]
    assert series["peak"]["rss_bytes"] > 40 * 2**20 and series["peak"]["cpu_percent"] > 0
    # once ended, the run leaves the live gauges; its count moves to succeeded
    after = await scrape(api, "alice")
    assert not [s for s in after["cube_process_cpu_percent"].samples if s.labels["id"] == run["id"]]
    runs = {
        (s.labels["project"], s.labels["status"]): s.value
        for s in after["cube_pipeline_runs"].samples
    }
    assert runs == {("alice", "succeeded"): 1}


async def test_a_training_jobs_resources(api: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "busy.py").write_text(BUSY)
    (jp_root_dir / "stop").touch()  # a short burn: the script ends after its first loop
    (jp_root_dir / "slow.py").write_text(
        "import time\nheld = b'x' * (30 * 2**20)\ntime.sleep(1.5)\n"
    )
    status, job = await api(
        "alice", "POST", "training/jobs", {"framework": "plain", "script": "slow.py", "workers": 2}
    )
    assert status == 201, job
    done = await wait_status(api, f"training/jobs/{job['id']}")
    assert done["status"] == "succeeded", done
    status, res = await api("alice", "GET", f"training/jobs/{job['id']}/resources")
    assert status == 200 and res["job_id"] == job["id"] and res["kind"] == "training"
    assert res["points"] and res["running"] is False
    assert res["peak"]["rss_bytes"] > 2 * 30 * 2**20  # both ranks' memory
    status, err = await api("bob", "GET", f"training/jobs/{job['id']}/resources")
    assert status == 404 and "not found" in err["error"]
    status, err = await api("alice", "GET", "training/jobs/nosuchjob/resources")
    assert status == 404


async def test_metrics_need_authentication(api: Any) -> None:
    status, _ = await api(None, "GET", "metrics")
    assert status in (401, 403)


def test_an_admin_sees_every_project(ws: Any, alice: Caller, bob: Caller) -> None:
    ws.projects.ensure_personal(alice)
    from cube_lab.store.models import PipelineRun, Project

    with ws.store.write() as s:
        project = s.query(Project).filter(Project.name == "alice").one()
        s.add(
            PipelineRun(
                id="r1", project_id=project.id, owner="alice", pipeline_path="/x.pipeline",
                pipeline_name="x", status="failed", trigger="manual", run_dir="/nonexistent",
            )
        )  # fmt: skip

    def counts(caller: Caller) -> dict[tuple[str, str], float]:
        found = families(report.prometheus_text(ws, caller))
        return {
            (s.labels["project"], s.labels["status"]): s.value
            for s in found["cube_pipeline_runs"].samples
        }

    assert counts(alice) == {("alice", "failed"): 1}
    assert counts(bob) == {}
    assert counts(Caller("root", admin=True)) == {("alice", "failed"): 1}


async def test_a_tuning_experiments_trials_resources(api: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "hpo").mkdir()
    (jp_root_dir / "hpo" / "trial.py").write_text(
        "import nni, time\nheld = b'x' * (30 * 2**20)\nx = nni.get_next_parameter()['x']\n"
        "time.sleep(1.2)\nnni.report_final_result(x)\n"
    )
    config = {
        "searchSpace": {"x": {"_type": "uniform", "_value": [0, 1]}},
        "trialCommand": "python3 trial.py",
        "trialCodeDirectory": ".",
        "trialConcurrency": 2,
        "maxTrialNumber": 2,
        "tuner": {"name": "Random", "classArgs": {"seed": 1}},
    }
    status, exp = await api(
        "alice", "POST", "tuning/experiments", {"config": config, "folder": "hpo"}
    )
    assert status == 201, exp
    where = f"tuning/experiments/{exp['id']}"
    done = await wait_status(api, where, timeout=120)
    assert done["status"] == "done", done
    status, res = await api("alice", "GET", f"{where}/resources")
    assert status == 200 and res["experiment_id"] == exp["id"], res
    assert sorted(res["trials"]) == sorted(t["id"] for t in done["trials"])
    for series in res["trials"].values():
        assert series["kind"] == "trial" and series["running"] is False and series["points"]
        assert series["peak"]["rss_bytes"] > 25 * 2**20  # the trial's own memory
    status, err = await api("bob", "GET", f"{where}/resources")
    assert status == 404 and "not found" in err["error"]
