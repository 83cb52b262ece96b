"""Quotas, demands, refusals and the admission ledger (no hub needed)."""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path

import pytest

from cube_lab.errors import Forbidden, InvalidInput
from cube_lab.hub import policy
from cube_lab.hub.ledger import Ledger, QuotaExceeded
from cube_lab.hub.quotas import GroupPolicy, Quota, demand, refusal
from cube_lab.hub.settings import DEFAULT_FILE, load, parse

GPU = {"nvidia.com/gpu": "1"}


def test_quota_parses_what_admins_write() -> None:
    q = Quota.parse(
        {"servers": "10", "cpu": "500m", "memory": "64G", "accelerators": {"nvidia-gpu": 4}}
    )
    assert (q.servers, q.jobs, q.cpu, q.memory) == (10, None, 0.5, 64 * 1024**3)
    assert q.accelerators == {"nvidia.com/gpu": 4}  # table keys become resource names
    assert q.to_json() == {
        "servers": 10,
        "cpu": 0.5,
        "memory": "64G",
        "accelerators": {"nvidia.com/gpu": 4},
    }
    with pytest.raises(InvalidInput, match="unknown quota field"):
        Quota.parse({"gpus": 4})
    with pytest.raises(InvalidInput, match="unknown accelerator type"):
        Quota.parse({"accelerators": {"nvidia.com/gpus": 4}})
    with pytest.raises(InvalidInput, match="whole number"):
        Quota.parse({"servers": -1})


def test_demand_counts_device_shares_per_device() -> None:
    vgpu = {"nvidia.com/gpu": "2", "nvidia.com/gpumem": "8192", "nvidia.com/gpucores": "30"}
    assert demand(jobs=1, cpu=4, memory="8G", limits=vgpu) == {
        "jobs": 1,
        "cpu": 4.0,
        "memory": 8 * 1024**3,
        "nvidia.com/gpu": 2,
        "nvidia.com/gpumem": 16384,
        "nvidia.com/gpucores": 60,
    }


def test_refusals_read_as_the_user_sees_them() -> None:
    q = Quota.parse({"servers": 2, "memory": "8G", "accelerators": {"nvidia.com/gpu": 4}})
    full = {"nvidia.com/gpu": 4}
    assert refusal("vision", q, full, {"nvidia.com/gpu": 1}) == (
        "project vision uses 4 of 4 GPUs (nvidia.com/gpu)"
    )
    assert refusal("vision", q, {"nvidia.com/gpu": 3}, {"nvidia.com/gpu": 2}) == (
        "project vision uses 3 of 4 GPUs (nvidia.com/gpu); this needs 2"
    )
    assert refusal("vision", q, {"memory": 6 * 1024**3}, {"memory": 4 * 1024**3}) == (
        "project vision uses 6 of 8 GiB memory; this needs 4"
    )
    assert refusal("vision", q, {}, {"huawei.com/Ascend910B": 1}) == (
        "project vision has no quota for NPUs (huawei.com/Ascend910B)"
    )
    # a share of a device the quota does not name is bounded by the device count only
    assert refusal("vision", q, {}, {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 8192}) is None
    assert refusal("vision", q, {"servers": 1}, {"servers": 1, "cpu": 64}) is None


def test_ledger_admits_exactly_the_quota_under_concurrent_threads(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    quota = Quota.parse({"accelerators": {"nvidia.com/gpu": 4}})
    results: list[bool] = []
    start = threading.Barrier(20)

    def ask(i: int) -> None:
        start.wait()
        try:
            ledger.reserve(
                holder=f"job:{i}", kind="job", username="u", group="vision", quota=quota,
                amounts=demand(jobs=1, limits=GPU),
            )  # fmt: skip
            results.append(True)
        except QuotaExceeded as exc:
            assert exc.error == "project vision uses 4 of 4 GPUs (nvidia.com/gpu)"
            results.append(False)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 4 and len(results) == 20
    assert ledger.usage("vision") == {"jobs": 4, "nvidia.com/gpu": 4}
    for res in ledger.reservations("vision"):
        ledger.release(id=res.id)
    assert ledger.usage("vision") == {}


def _reserve_in_process(path: str, i: int, out: multiprocessing.Queue) -> None:
    ledger = Ledger(path)
    quota = Quota.parse({"accelerators": {"nvidia.com/gpu": 4}})
    try:
        ledger.reserve(
            holder=f"job:p{i}", kind="job", username="u", group="vision", quota=quota,
            amounts=demand(limits=GPU),
        )  # fmt: skip
        out.put(True)
    except QuotaExceeded:
        out.put(False)


def test_ledger_admits_exactly_the_quota_across_processes(tmp_path: Path) -> None:
    """The hub and the cube-admin service are separate processes sharing the ledger."""
    path = str(tmp_path / "ledger.sqlite")
    Ledger(path)
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_reserve_in_process, args=(path, i, out)) for i in range(10)]
    for p in procs:
        p.start()
    answers = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join()
    assert answers.count(True) == 4
    assert Ledger(path).usage("vision") == {"nvidia.com/gpu": 4}


def test_same_holder_replaces_rather_than_double_counts(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite")
    quota = Quota.parse({"servers": 1})
    for _ in range(3):  # a server restarted after a crash reserves again for the same holder
        ledger.reserve(
            holder="server:alice/", kind="server", username="alice", group="g", quota=quota,
            amounts={"servers": 1},
        )  # fmt: skip
    assert ledger.usage("g") == {"servers": 1}
    assert ledger.release(holder="server:alice/") == 1
    assert ledger.release(holder="server:alice/") == 0  # releasing twice is harmless


def test_reconcile_releases_only_what_nothing_holds(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite")
    common = {"group": "g", "quota": None, "amounts": {"servers": 1}}
    ledger.reserve(holder="server:alice/", kind="server", username="alice", **common)
    ledger.reserve(holder="server:gone/", kind="server", username="gone", **common)
    ledger.reserve(
        holder="job:1", kind="job", username="alice", server="alice/", pid=111, **common
    )  # alive
    ledger.reserve(holder="job:2", kind="job", username="alice", server="alice/", pid=222, **common)
    ledger.reserve(holder="job:3", kind="job", username="gone", server="gone/", **common)
    alive = ledger.reconcile({"alice/"}, now=time.time() + 3600, pid_alive=lambda pid: True)
    assert {r.holder for r in alive} == {"server:gone/", "job:3"}  # their server is gone
    assert {r.holder for r in ledger.reservations()} == {"server:alice/", "job:1", "job:2"}
    released = ledger.reconcile({"alice/"}, grace_s=0, pid_alive=lambda pid: pid == 111)
    assert [r.holder for r in released] == ["job:2"]
    # young reservations are left alone: their spawn may still be on its way
    ledger.reserve(holder="server:new/", kind="server", username="new", **common)
    assert ledger.reconcile({"alice/"}, grace_s=60, pid_alive=lambda pid: True) == []
    assert "server:new/" in {r.holder for r in ledger.reservations()}


def test_policy_offers_and_chooses(tmp_path: Path) -> None:
    settings = load(DEFAULT_FILE)
    vision = GroupPolicy.from_properties(
        "vision", {"cube_lab": {"profiles": ["cpu", "gpu-1"], "quota": {}}}
    )
    nlp = GroupPolicy.from_properties("nlp", {"cube_lab": {"profiles": ["vgpu-8g"]}})
    groups = {"nlp": nlp, "vision": vision}
    assert [p.name for p in policy.offered(settings, {})] == ["cpu"]
    assert [p.name for p in policy.offered(settings, groups)] == ["cpu", "gpu-1", "vgpu-8g"]
    assert policy.choose(settings, groups, "gpu-1", None)[1] == vision
    assert policy.choose(settings, groups, "cpu", "nlp")[1] == nlp  # open profiles anywhere
    assert policy.choose(settings, {}, None, None) == (settings.profile("cpu"), None)
    with pytest.raises(Forbidden, match="may not use profile 'gpu-1'"):
        policy.choose(settings, groups, "gpu-1", "nlp")
    with pytest.raises(Forbidden, match="not a member of project group 'other'"):
        policy.choose(settings, groups, "cpu", "other")
    with pytest.raises(Forbidden, match="not available to you"):
        policy.choose(settings, {}, "ascend-1", None)
    # a group whose properties do not parse is skipped, not fatal
    found = policy.policies([("ok", None), ("bad", {"cube_lab": {"quota": {"gpus": 1}}})])
    assert list(found) == ["ok"]


def test_settings_file_is_checked(tmp_path: Path) -> None:
    shipped = load(DEFAULT_FILE)
    assert shipped.shape == "local" and shipped.admin_users == ("admin",)
    assert shipped.profile("vgpu-8g").limits() == {
        "nvidia.com/gpu": "1", "nvidia.com/gpumem": "8192", "nvidia.com/gpucores": "30"
    }  # fmt: skip
    with pytest.raises(InvalidInput, match="no admin_users"):
        parse({"profiles": {"cpu": {}}}, tmp_path / "x.yaml")
    with pytest.raises(InvalidInput, match="unknown profile 'gpu'"):
        parse({"admin_users": ["a"], "groups": {"g": {"profiles": ["gpu"]}}}, tmp_path / "x.yaml")
    with pytest.raises(InvalidInput, match="unknown accelerator type"):
        parse({"admin_users": ["a"], "profiles": {"p": {"accelerator": "tpu"}}}, tmp_path / "x")
    with pytest.raises(InvalidInput, match="reserved"):
        parse({"admin_users": ["a"], "groups": {"cube-admins": {}}}, tmp_path / "x.yaml")
