"""Each member's share of a project group (a course's "each student at most": ``per_member``)
and a group's own idle timeout: parsed, refused in the ledger with the member's words, and
the idle servers found (no hub needed)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from cube_lab.errors import InvalidInput
from cube_lab.hub.idle import idle_servers
from cube_lab.hub.ledger import Ledger, QuotaExceeded, Reservation, server_holder
from cube_lab.hub.quotas import GroupPolicy, Quota, demand
from cube_lab.hub.settings import parse

GPU = {"nvidia.com/gpu": "1"}
COURSE = {"servers": 60, "cpu": 120, "accelerators": {"nvidia.com/gpu": 8},
          "per_member": {"servers": 1, "cpu": 2, "memory": "4G",
                         "accelerators": {"nvidia.com/gpu": 1}}}  # fmt: skip


def test_per_member_limits_parse_and_round_trip() -> None:
    q = Quota.parse(COURSE)
    assert q.per_member is not None
    assert (q.per_member.servers, q.per_member.cpu, q.per_member.memory) == (1, 2, 4 * 1024**3)
    assert q.member_amounts().get("nvidia.com/gpu") == 1
    assert q.member_amounts().get("jobs") is None  # not named: not limited per member
    assert Quota.parse(q.to_json()) == q
    assert q.to_json()["per_member"] == {"servers": 1, "cpu": 2, "memory": "4G",
                                         "accelerators": {"nvidia.com/gpu": 1}}  # fmt: skip
    for bad in ({"per_member": {"gpu_hours": 3}}, {"per_member": {"per_member": {}}},
                {"per_member": {"servers": -1}}, {"per_member": 3}):  # fmt: skip
        with pytest.raises(InvalidInput):
            Quota.parse(bad)
    assert Quota.parse({"per_member": {}}).per_member is None
    # a personal quota is one user's: no per_member there
    with pytest.raises(InvalidInput, match="per_member"):
        parse({"personal_quota": {"per_member": {"servers": 1}}}, Path("cube_hub.yaml"))


def test_a_member_is_refused_past_their_share_and_others_are_not(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    quota = Quota.parse(COURSE)

    def start(holder: str, user: str, **kw: object) -> None:
        ledger.reserve(holder=holder, kind="job", username=user, group="ai101", quota=quota,
                       amounts=demand(**kw))  # type: ignore[arg-type]  # fmt: skip

    start("server:stu1/", "stu1", servers=1, cpu=1, memory="2G", limits=GPU)
    with pytest.raises(QuotaExceeded) as refused:
        start("server:stu1/second", "stu1", servers=1, cpu=1)
    assert refused.value.error == (
        "stu1 uses 1 of the 1 servers each member of project ai101 may use; this needs 1"
    )
    assert "yours" in str(refused.value.detail)
    with pytest.raises(QuotaExceeded, match=r"stu1 uses 1 of the 1 GPUs \(nvidia.com/gpu\)"):
        start("job:a", "stu1", jobs=1, limits=GPU)
    with pytest.raises(QuotaExceeded, match="2 of the 4 GiB memory"):
        start("job:b", "stu1", jobs=1, memory="3G")
    start("job:c", "stu1", jobs=1, cpu=1)  # within their 2 cores
    start("server:stu2/", "stu2", servers=1, cpu=2, limits=GPU)  # another member's share
    ledger.release(holder="server:stu1/")
    start("server:stu1/second", "stu1", servers=1, cpu=1)  # room again


def test_a_groups_idle_timeout_parses_and_finds_idle_servers() -> None:
    gp = GroupPolicy.from_properties("ai101", {"cube_lab": {"idle_timeout": 1800}})
    assert gp.idle_timeout == 1800 and gp.to_properties()["idle_timeout"] == 1800
    assert GroupPolicy.from_properties("g", {}).idle_timeout is None
    for bad in (-5, "half an hour", True, 1.5):
        with pytest.raises(InvalidInput, match="idle_timeout"):
            GroupPolicy.from_properties("g", {"cube_lab": {"idle_timeout": bad}})

    def res(user: str, server: str, group: str, kind: str = "server") -> Reservation:
        return Reservation("id", server_holder(user, server), kind, user, group, "", None, {}, 0)

    now = datetime(2026, 12, 7, 12, 0, tzinfo=UTC).timestamp()
    ago = lambda s: datetime.fromtimestamp(now - s, UTC).isoformat().replace("+00:00", "Z")  # noqa: E731
    ledger_rows = [
        res("stu1", "", "ai101"),  # idle 40 min: stopped
        res("stu2", "", "ai101"),  # active 5 min ago
        res("stu3", "gpu", "ai101"),  # a named server, idle: stopped
        res("stu4", "", "ai101"),  # still starting
        res("stu5", "", "other"),  # a group without a timeout
        res("stu6", "", "ai101", kind="job"),  # jobs are not servers
    ]
    users = [
        {"name": "stu1", "servers": {"": {"ready": True, "last_activity": ago(2400)}}},
        {"name": "stu2", "servers": {"": {"ready": True, "last_activity": ago(300)}}},
        {
            "name": "stu3",
            "servers": {"gpu": {"ready": True, "last_activity": None, "started": ago(4000)}},
        },
        {
            "name": "stu4",
            "servers": {"": {"ready": False, "pending": "spawn", "last_activity": ago(9999)}},
        },
        {"name": "stu5", "servers": {"": {"ready": True, "last_activity": ago(9999)}}},
        {"name": "stu6", "servers": {"": {"ready": True, "last_activity": ago(9999)}}},
    ]
    policies = {"ai101": gp, "other": GroupPolicy("other")}
    found = idle_servers(policies, ledger_rows, users, now)
    assert [(s.user, s.server, s.group, s.timeout, round(s.idle)) for s in found] == [
        ("stu1", "", "ai101", 1800, 2400), ("stu3", "gpu", "ai101", 1800, 4000)
    ]  # fmt: skip
