"""Tuning over REST: create from an NNI config, watch trials fill, logs, stop, tenancy."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

TRIAL = """\
import nni, time
x = nni.get_next_parameter()["x"]
for step in range(3):
    nni.report_intermediate_result(-(x - 1) ** 2)
print("x is", x)
nni.report_final_result(-(x - 1) ** 2)
"""


def nni_config(**extra: Any) -> dict[str, Any]:
    return {
        "searchSpace": {"x": {"_type": "uniform", "_value": [-3, 3]}},
        "trialCommand": "python3 trial.py",
        "trialCodeDirectory": ".",
        "trialConcurrency": 2,
        "maxTrialNumber": 4,
        "tuner": {"name": "Random", "classArgs": {"seed": 3}},
        **extra,
    }


async def _until(api: Any, exp_id: str, statuses: tuple[str, ...]) -> dict[str, Any]:
    for _ in range(600):
        status, exp = await api("alice", "GET", f"tuning/experiments/{exp_id}")
        assert status == 200
        if exp["status"] in statuses:
            return exp
        await asyncio.sleep(0.1)
    raise AssertionError(f"experiment still {exp['status']}")


async def test_create_watch_log_and_tenancy(api: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "hpo").mkdir()
    (jp_root_dir / "hpo" / "trial.py").write_text(TRIAL)
    status, algos = await api("alice", "GET", "tuning/algorithms")
    assert status == 200 and "TPE" in algos["tuners"] and "Medianstop" in algos["assessors"]
    body = {"config": nni_config(), "folder": "hpo"}
    status, exp = await api("alice", "POST", "tuning/experiments", body)
    assert status == 201, exp
    exp = await _until(api, exp["id"], ("done", "failed"))
    assert exp["status"] == "done" and exp["trial_count"] == 4
    assert {t["status"] for t in exp["trials"]} == {"succeeded"}
    assert exp["best"]["final"] == max(t["final"] for t in exp["trials"])
    trial = exp["trials"][0]
    status, log = await api(
        "alice", "GET", f"tuning/experiments/{exp['id']}/trials/{trial['id']}/log"
    )
    assert status == 200 and log["done"] and f"x is {trial['parameters']['x']}" in log["text"]
    status, listed = await api("alice", "GET", "tuning/experiments")
    assert [e["id"] for e in listed["experiments"]] == [exp["id"]]
    assert listed["experiments"][0]["trials"] is None
    status, _ = await api("bob", "GET", f"tuning/experiments/{exp['id']}")
    assert status == 404
    status, listed = await api("bob", "GET", "tuning/experiments")
    assert listed["experiments"] == []


async def test_bad_configs_get_a_clear_400(api: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "trial.py").write_text(TRIAL)
    bad_space = nni_config(searchSpace={"lr": {"_type": "choice", "_value": []}})
    status, body = await api("alice", "POST", "tuning/experiments", {"config": bad_space})
    assert status == 400 and body["error"].startswith("searchSpace.lr: choice needs _value")
    status, body = await api(
        "alice", "POST", "tuning/experiments", {"config": nni_config(), "folder": "../.."}
    )
    assert status == 400 and "outside the server root" in body["error"]
    status, body = await api(
        "alice", "POST", "tuning/experiments", {"config": nni_config(tuner={"name": "Magic"})}
    )
    assert status == 400 and body["error"] == "tuner: unknown tuner 'Magic'"


async def test_stop_over_rest(api: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "slow.py").write_text(
        "import nni, time\nnni.get_next_parameter()\ntime.sleep(60)\n"
    )
    config = nni_config(trialCommand="python3 slow.py")
    status, exp = await api("alice", "POST", "tuning/experiments", {"config": config})
    assert status == 201
    for _ in range(300):
        _, exp = await api("alice", "GET", f"tuning/experiments/{exp['id']}")
        if sum(t["status"] == "running" for t in exp["trials"]) == 2:
            break
        await asyncio.sleep(0.1)
    status, _ = await api("alice", "POST", f"tuning/experiments/{exp['id']}/stop")
    assert status == 200
    exp = await _until(api, exp["id"], ("stopped",))
    assert {t["status"] for t in exp["trials"]} == {"cancelled"}
