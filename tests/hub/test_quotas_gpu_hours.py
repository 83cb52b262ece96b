"""GPU-hours and the personal bucket in the admission ledger, on a fake clock (no hub needed)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from cube_lab.errors import InvalidInput
from cube_lab.hub.ledger import Ledger, QuotaExceeded
from cube_lab.hub.quotas import Quota, demand, month_bounds
from cube_lab.hub.settings import DEFAULT_FILE, load, parse

HOUR = 3600.0


class FakeClock:
    def __init__(self, when: dt.datetime) -> None:
        self.now = when.timestamp()

    def __call__(self) -> float:
        return self.now

    def advance(self, hours: float) -> None:
        self.now += hours * HOUR


def utc(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=dt.UTC)


def gpus(n: int) -> dict[str, float]:
    return demand(servers=1, limits={"nvidia.com/gpu": str(n)})


def test_quota_parses_gpu_hours() -> None:
    q = Quota.parse({"gpu_hours": "100", "gpu_hours_per_member": 2.5})
    assert (q.gpu_hours, q.gpu_hours_per_member) == (100.0, 2.5)
    assert q.to_json() == {"gpu_hours": 100, "gpu_hours_per_member": 2.5}
    assert Quota.parse(q.to_json()) == q
    for bad in (-1, "lots", True, float("inf")):
        with pytest.raises(InvalidInput, match="number of hours"):
            Quota.parse({"gpu_hours": bad})


def test_month_bounds_are_utc_calendar_months() -> None:
    start, end = month_bounds(utc(2026, 12, 31, 23, 59).timestamp())
    assert (start, end) == (utc(2026, 12, 1).timestamp(), utc(2027, 1, 1).timestamp())
    assert month_bounds(utc(2027, 1, 1).timestamp())[0] == utc(2027, 1, 1).timestamp()


def test_two_gpus_for_three_hours_are_six_gpu_hours(tmp_path: Path) -> None:
    clock = FakeClock(utc(2026, 3, 10, 8))
    ledger = Ledger(tmp_path / "l.sqlite", clock=clock)
    quota = Quota.parse({"accelerators": {"nvidia.com/gpu": 4}, "gpu_hours": 100})
    ledger.reserve(
        holder="server:alice/", kind="server", username="alice", group="course", quota=quota,
        amounts=gpus(2),
    )  # fmt: skip
    clock.advance(3)
    hours = ledger.gpu_hours()
    assert hours.member("course", "alice") == pytest.approx(6.0)  # still running: up to now
    ledger.release(holder="server:alice/")
    clock.advance(5)  # released: no more hours
    assert ledger.gpu_hours().group("course") == pytest.approx(6.0)
    [hold] = ledger.gpu_holds()
    assert (hold["devices"], hold["ended"] - hold["started"]) == (2, 3 * HOUR)
    # a CPU-only reservation records no hold
    ledger.reserve(
        holder="server:bob/", kind="server", username="bob", group="course", quota=quota,
        amounts=demand(servers=1, cpu=2),
    )  # fmt: skip
    assert len(ledger.gpu_holds()) == 1


def test_refused_past_the_member_and_group_limits_until_the_month_resets(tmp_path: Path) -> None:
    clock = FakeClock(utc(2026, 3, 31, 18))
    ledger = Ledger(tmp_path / "l.sqlite", clock=clock)
    quota = Quota.parse(
        {"accelerators": {"nvidia.com/gpu": 8}, "gpu_hours": 10, "gpu_hours_per_member": 4}
    )

    def start(user: str, n: int = 1, kind: str = "job") -> None:
        ledger.reserve(
            holder=f"{kind}:{user}/x", kind=kind, username=user, group="course", quota=quota,
            amounts=demand(jobs=1, limits={"nvidia.com/gpu": str(n)}),
        )  # fmt: skip

    start("alice", 2)
    clock.advance(2)  # alice: 4 of 4
    with pytest.raises(QuotaExceeded) as refused:
        start("alice", 1, kind="server")
    assert refused.value.error == (
        "alice used 4 of 4 GPU-hours in project course this month; they reset on"
        " 2026-04-01 00:00 UTC"
    )
    assert "GPUs x hours" in refused.value.detail
    # CPU work is never refused for GPU-hours
    ledger.reserve(
        holder="job:alice/cpu", kind="job", username="alice", group="course", quota=quota,
        amounts=demand(jobs=1, cpu=1),
    )  # fmt: skip
    ledger.release(holder="job:alice/x")
    start("bob", 3)
    clock.advance(2)  # bob: 6; the group: 10 of 10
    ledger.release(holder="job:bob/x")
    with pytest.raises(QuotaExceeded, match="project course used 10 of 10 GPU-hours"):
        start("carol")
    # the usage API's figures
    hours = ledger.gpu_hours()
    assert hours.members("course") == {"alice": 4.0, "bob": 6.0}
    assert hours.resets == utc(2026, 4, 1).timestamp()
    clock.advance(4)  # 2026-04-01 00:00: a new month
    start("carol")
    start("alice", 1)
    clock.advance(1)
    assert ledger.gpu_hours().group("course") == pytest.approx(2.0)
    # last month's figures are still there to read
    march = ledger.gpu_hours(at=utc(2026, 3, 31, 23, 59).timestamp())
    assert march.group("course") == pytest.approx(10.0)


def test_a_hold_across_the_month_boundary_is_split(tmp_path: Path) -> None:
    clock = FakeClock(utc(2026, 5, 31, 22))
    ledger = Ledger(tmp_path / "l.sqlite", clock=clock)
    ledger.reserve(
        holder="server:dan/", kind="server", username="dan", group="g",
        quota=Quota.parse({"accelerators": {"nvidia.com/gpu": 1}}), amounts=gpus(1),
    )  # fmt: skip
    clock.advance(5)  # 2 hours in May, 3 in June
    assert ledger.gpu_hours().member("g", "dan") == pytest.approx(3.0)
    may = ledger.gpu_hours(at=utc(2026, 5, 31, 23, 59, 59).timestamp())
    assert may.member("g", "dan") == pytest.approx(2.0, abs=0.01)


def test_reconcile_and_replacement_end_the_hold(tmp_path: Path) -> None:
    clock = FakeClock(utc(2026, 7, 1, 9))
    ledger = Ledger(tmp_path / "l.sqlite", clock=clock)
    q = Quota.parse({"accelerators": {"nvidia.com/gpu": 2}})
    args = {"kind": "server", "username": "eve", "group": "g", "quota": q, "amounts": gpus(1)}
    ledger.reserve(holder="server:eve/", **args)
    clock.advance(1)
    ledger.reserve(holder="server:eve/", **args)  # a restart after a crash: not twice
    clock.advance(1)
    assert ledger.gpu_hours().member("g", "eve") == pytest.approx(2.0)
    clock.advance(1)
    ledger.reconcile(set(), grace_s=0)  # the server is gone
    clock.advance(10)
    assert ledger.gpu_hours().member("g", "eve") == pytest.approx(3.0)
    assert all(h["ended"] is not None for h in ledger.gpu_holds())


def test_the_personal_bucket_is_charged_and_refuses_past_its_quota(tmp_path: Path) -> None:
    clock = FakeClock(utc(2026, 9, 1))
    ledger = Ledger(tmp_path / "l.sqlite", clock=clock)
    personal = Quota.parse({"servers": 1, "jobs": 1, "cpu": 2})
    common = {"group": "", "quota": personal}
    ledger.reserve(
        holder="server:alice/", kind="server", username="alice",
        amounts=demand(servers=1, cpu=2), **common,
    )  # fmt: skip
    # bob's bucket is his own
    ledger.reserve(
        holder="server:bob/", kind="server", username="bob", amounts=demand(servers=1), **common
    )
    assert ledger.personal_usage("alice") == {"servers": 1, "cpu": 2}
    with pytest.raises(QuotaExceeded) as refused:
        ledger.reserve(
            holder="job:alice/1", kind="job", username="alice",
            amounts=demand(jobs=1, cpu=1), **common,
        )  # fmt: skip
    assert refused.value.error == (
        "the personal quota of alice (outside project groups) uses 2 of 2 CPU cores"
    )
    assert "add you to a project group" in refused.value.detail
    with pytest.raises(QuotaExceeded, match=r"alice \(outside project groups\) has no GPUs"):
        ledger.reserve(
            holder="job:alice/2", kind="job", username="alice",
            amounts=demand(jobs=1, limits={"nvidia.com/gpu": "1"}), **common,
        )  # fmt: skip
    # personal GPU-hours: the user's own per month
    gpu_personal = Quota.parse({"accelerators": {"nvidia.com/gpu": 1}, "gpu_hours": 1})
    ledger.reserve(
        holder="job:carol/1", kind="job", username="carol", group="", quota=gpu_personal,
        amounts=demand(jobs=1, limits={"nvidia.com/gpu": "1"}),
    )  # fmt: skip
    clock.advance(1)
    ledger.release(holder="job:carol/1")
    with pytest.raises(QuotaExceeded, match="carol used 1 of 1 personal GPU-hours this month"):
        ledger.reserve(
            holder="job:carol/2", kind="job", username="carol", group="", quota=gpu_personal,
            amounts=demand(jobs=1, limits={"nvidia.com/gpu": "1"}),
        )  # fmt: skip
    assert ledger.gpu_hours().member("", "carol") == pytest.approx(1.0)


def test_settings_personal_and_admin_quotas(tmp_path: Path) -> None:
    shipped = load(DEFAULT_FILE)
    assert shipped.personal_quota.servers == 1 and not shipped.personal_quota.accelerators
    assert shipped.personal_quota_for("admin") == shipped.admin_quota
    assert shipped.personal_quota_for("student1") == shipped.personal_quota
    assert shipped.personal_quota_for("ta", ["cube-admins"]) == shipped.admin_quota
    base = {"admin_users": ["a"]}
    bare = parse(base, tmp_path / "x.yaml")  # nothing said: one server, no GPUs, admins too
    assert bare.personal_quota == Quota(servers=1) == bare.admin_quota
    only_personal = parse({**base, "personal_quota": {"servers": 2}}, tmp_path / "x.yaml")
    assert only_personal.admin_quota.servers == 2  # admins default to the personal one
    with pytest.raises(InvalidInput, match="personal_quota in the hub settings"):
        parse({**base, "personal_quota": {"gpus": 1}}, tmp_path / "x.yaml")
    with pytest.raises(InvalidInput, match="gpu_hours_per_member"):
        parse({**base, "admin_quota": {"gpu_hours_per_member": 1}}, tmp_path / "x.yaml")
