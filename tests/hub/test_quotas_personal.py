"""Against a real hub: no server runs unmetered (users outside every project group and admins
are charged to their personal quota, and refused past it), the admin page and its usage API
list every running server, and GPU-hours accrue and refuse in real time."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from cube_lab.hub import devhub
from tests.hub_util import bare_hub

pytestmark = pytest.mark.hub

SETTINGS = {
    "personal_quota": {"servers": 1, "jobs": 1, "cpu": 2},
    "admin_quota": {"servers": 1, "jobs": 3, "cpu": 4},
}


@pytest.fixture(scope="module")
def hub() -> Iterator[devhub.DevHub]:
    with bare_hub("cube-hub-personal-", SETTINGS) as running:
        for name in ("alice", "bob", "carol"):
            running.hub("POST", f"/users/{name}")
        yield running


@pytest.fixture(scope="module")
def tokens(hub: devhub.DevHub) -> dict[str, str]:
    return {name: hub.user_token(name) for name in ("alice", "bob", "carol", "admin")}


def test_outside_groups_servers_and_jobs_are_charged_and_refused_past_the_default(
    hub: devhub.DevHub, tokens: dict[str, str]
) -> None:
    alice = tokens["alice"]
    # a job outside any group takes alice's one job and both her CPU cores
    status, job = hub.admin("POST", "admission", {"cpu": 2}, token=alice)
    assert status == 201, job
    assert job["group"] == "" and job["user"] == "alice"
    status, body = hub.admin("POST", "admission", {"cpu": 1}, token=alice)
    assert status == 403 and body["quota_exceeded"]
    assert body["error"] == "the personal quota of alice (outside project groups) uses 1 of 1 jobs"
    assert "ask an admin for more or to add you to a project group" in body["detail"]
    status, body = hub.admin(
        "POST", "admission", {"accelerators": {"nvidia.com/gpu": "1"}}, token=alice
    )
    assert status == 403 and "no accelerator quota" in body["error"]
    # her server (the cpu profile: 1 core) does not fit next to it: refused, with the reason
    status, body = hub.spawn("alice", {"profile": "cpu"})
    assert status == 403, body
    assert (
        "the personal quota of alice (outside project groups) uses 2 of 2 CPU cores"
        in (body["message"])
    )
    status, _ = hub.admin("DELETE", f"admission/{job['id']}", token=alice)
    assert status == 204
    status, server = hub.spawn("alice", {"profile": "cpu"})
    assert status == 201, server
    # the admin's (the teacher's) own server is metered too, against admin_quota
    status, server = hub.spawn("admin", {"profile": "cpu"})
    assert status == 201, server

    status, usage = hub.admin("GET", "usage")
    assert status == 200
    people = {p["user"]: p for p in usage["personal"]["users"]}
    assert people["alice"]["usage"] == {"servers": 1, "cpu": 1, "memory": 1024**3}
    assert people["alice"]["quota"] == SETTINGS["personal_quota"] and not people["alice"]["admin"]
    assert people["admin"]["admin"] and people["admin"]["quota"] == SETTINGS["admin_quota"]
    assert people["admin"]["servers"] == [""]

    # every server the hub runs is on the page's list, charged to some quota
    _, active = hub.hub("GET", "/users?state=active")
    running = {u["name"] for u in active for s in (u.get("servers") or {}).values() if s["ready"]}
    assert running == {"alice", "admin"}
    assert {s["user"] for s in usage["servers"]} == running
    assert usage["totals"]["servers"] == 2 and usage["totals"]["personal_servers"] == 2

    # the page shows them (the driver token holds the admin scope)
    status, page = hub.request("GET", "/services/cube-admin/")
    assert status == 200
    assert "Personal servers and jobs" in page
    assert '<tr data-user="alice"><td>alice</td>' in page
    assert "2 servers running, 2 of them personal" in page
    assert '<tr data-user="admin"><td>admin (admin)</td>' in page

    # the lab side's answer: the caller's personal bucket
    status, me = hub.admin("GET", "me", token=alice)
    assert status == 200
    assert me["personal"]["usage"]["servers"] == 1 and me["groups"] == []

    hub.stop_server("alice")
    hub.stop_server("admin")
    _, usage = hub.admin("GET", "usage")
    assert usage["servers"] == [] and usage["personal"]["users"] == []


def test_gpu_hours_accrue_and_refuse_per_member_in_real_time(
    hub: devhub.DevHub, tokens: dict[str, str]
) -> None:
    # 2 GPUs for a second are about 0.00056 GPU-hours: over 0.0005 per member
    quota = {"jobs": 4, "accelerators": {"nvidia.com/gpu": 2}, "gpu_hours": 100,
             "gpu_hours_per_member": 0.0005}  # fmt: skip
    status, made = hub.admin(
        "POST", "groups", {"name": "course", "users": ["bob", "carol"], "quota": quota}
    )
    assert status == 201, made
    ask = {"project": "course", "accelerators": {"nvidia.com/gpu": "2"}}
    status, job = hub.admin("POST", "admission", ask, token=tokens["bob"])
    assert status == 201, job
    time.sleep(1.5)
    assert hub.admin("DELETE", f"admission/{job['id']}", token=tokens["bob"])[0] == 204
    status, body = hub.admin("POST", "admission", ask, token=tokens["bob"])
    assert status == 403, body
    assert body["error"].startswith("bob used 0 of 0 GPU-hours in project course this month")
    assert "they reset on" in body["error"] and body["error"].endswith("-01 00:00 UTC")
    # a CPU job still starts; carol's own hours are untouched
    status, cpu_job = hub.admin("POST", "admission", {"project": "course"}, token=tokens["bob"])
    assert status == 201, cpu_job
    hub.admin("DELETE", f"admission/{cpu_job['id']}", token=tokens["bob"])
    status, carols = hub.admin("POST", "admission", ask, token=tokens["carol"])
    assert status == 201, carols
    hub.admin("DELETE", f"admission/{carols['id']}", token=tokens["carol"])

    # the groups API, the usage API and api/me show the month's GPU-hours
    _, group = hub.admin("GET", "groups/course")
    hours = group["gpu_hours"]
    assert hours["limit"] == 100 and hours["per_member_limit"] == 0.0005
    assert hours["users"]["bob"] >= 0.0004 and hours["used"] >= hours["users"]["bob"]
    _, usage = hub.admin("GET", "usage")
    [course] = [g for g in usage["groups"] if g["name"] == "course"]
    assert course["gpu_hours"]["users"]["bob"] == hours["users"]["bob"]
    _, me = hub.admin("GET", "me", token=tokens["bob"])
    [mine] = me["groups"]
    assert mine["gpu_hours_limit"] == 100 and mine["gpu_hours_used"] >= 0.0004
    assert mine["gpu_hours_member_limit"] == 0.0005

    # a group whose month is spent refuses everyone's GPU work, with the limit and the reset
    hub.admin("PATCH", "groups/course", {"quota": {**quota, "gpu_hours": 0.0001}})
    time.sleep(1.5)  # the admin service caches group quotas for a second
    status, body = hub.admin("POST", "admission", ask, token=tokens["carol"])
    assert status == 403
    assert body["error"].startswith("project course used 0 of 0 GPU-hours this month")
