"""The embedded hub for real: JupyterHub, configurable-http-proxy, the cube-admin service and
the local spawner on loopback (free ports, a temporary folder, never $HOME).

One hub for the whole module (it takes 10-20 s to start on a busy 2-core machine), but for
the crash test, which kills its own; each user's server is a real ``jupyterhub-singleuser``
running JupyterLab with cube-lab. Run only these with ``pytest -m hub``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cube_lab.hub import client, devhub
from cube_lab.hub.ledger import Ledger, QuotaExceeded
from tests.hub_util import bare_hub, login, running_servers, spawn_servers

pytestmark = pytest.mark.hub

# alice and bob run servers (whose project lists a test checks), carol makes objects and groups
# of her own, dave is the one member of project race
USERS = ("alice", "bob", "carol", "dave")

SETTINGS = {
    "groups": {
        "vision": {
            "profiles": ["cpu", "gpu-1"],
            "quota": {"servers": 1, "accelerators": {"nvidia.com/gpu": 4}},
        },
    },
}


@pytest.fixture(scope="module")
def hub() -> Iterator[devhub.DevHub]:
    # not under pytest's tmp dir: other pytest sessions on this machine prune old ones
    with bare_hub("cube-hub-test-", SETTINGS) as running:
        for name in USERS:
            running.hub("POST", f"/users/{name}")
        yield running


@pytest.fixture(scope="module")
def tokens(hub: devhub.DevHub) -> dict[str, str]:
    return {name: hub.user_token(name) for name in USERS}


@pytest.fixture(scope="module")
def alice_in_vision(hub: devhub.DevHub) -> None:
    status, _ = hub.admin("PUT", "groups/vision/members/alice")
    assert status == 200


@pytest.fixture
def servers(hub: devhub.DevHub, tokens: dict[str, str], alice_in_vision: None) -> dict[str, Any]:
    """alice (in project vision) and bob (in no project) each run a lab server: started by the
    first test that asks, and again after a test stopped them."""
    return running_servers(hub, ("alice", "bob"))


@pytest.fixture(scope="module")
def race(hub: devhub.DevHub) -> str:
    """Project race: dave alone, 4 GPUs (a test that changes the quota puts it back)."""
    status, body = hub.admin(
        "POST",
        "groups",
        {"name": "race", "users": ["dave"], "quota": {"accelerators": {"nvidia.com/gpu": 4}}},
    )
    assert status == 201, body
    return "race"


def cube(hub: devhub.DevHub, owner: str, path: str, token: str, **kw: Any) -> tuple[int, Any]:
    return hub.request(
        kw.pop("method", "GET"), f"/user/{owner}/cube/api/v1/{path}", token=token, **kw
    )


def test_each_user_reaches_their_own_lab_through_the_proxy(
    hub: devhub.DevHub, tokens: dict[str, str], servers: dict[str, Any]
) -> None:
    for name in ("alice", "bob"):
        status, me = cube(hub, name, "whoami", tokens[name])
        assert status == 200, me
        assert me["user"] == name
    # each server is rooted in the user's folder, with a link to the project's shared folder
    alice_home = hub.data_dir / "users" / "alice"
    link = alice_home / "projects" / "vision"
    assert link.is_symlink() and link.resolve() == (hub.data_dir / "projects" / "vision")
    assert not (hub.data_dir / "users" / "bob" / "projects" / "vision").exists()
    status, contents = hub.request(
        "GET", "/user/alice/api/contents/projects", token=tokens["alice"]
    )
    assert status == 200 and [c["name"] for c in contents["content"]] == ["vision"]
    # the lab server learned alice's project groups from the hub: the picker offers them
    status, listed = cube(hub, "alice", "projects", tokens["alice"])
    assert status == 200, listed
    assert {(p["name"], p["kind"]) for p in listed["projects"]} == {
        ("alice", "personal"),
        ("vision", "team"),
    }
    status, listed = cube(hub, "bob", "projects", tokens["bob"])
    assert [p["name"] for p in listed["projects"]] == ["bob"]


def test_the_hubs_secrets_stay_out_of_reach_and_out_of_its_log(
    hub: devhub.DevHub, tokens: dict[str, str]
) -> None:
    """The config (the driver's admin token), the settings and the log (the admin's one-time
    password) are the hub's owner's alone; a token in a URL reaches the services' access log
    masked."""
    for path in (hub.log, hub.root / "jupyterhub_config.py", hub.settings_file):
        assert path.stat().st_mode & 0o777 == 0o600, path
    secret = tokens["alice"]
    for service in ("cube-lab", "cube-admin"):
        hub.request("GET", f"/services/{service}/api/whoami?token={secret}", token=secret)
    deadline = time.monotonic() + 30
    while "/api/whoami?token=[secret]" not in hub.log.read_text(errors="replace"):
        assert time.monotonic() < deadline, "the services logged no request"
        time.sleep(0.2)
    assert secret not in hub.log.read_text(errors="replace")


def test_a_lab_server_asks_for_admission_with_its_own_token(
    hub: devhub.DevHub, servers: dict[str, Any]
) -> None:
    """What training does inside alice's server: the spawner gave the server the admission URL
    and a token allowed to use it."""
    env = dict(
        item.split("=", 1)
        for item in Path(f"/proc/{servers['alice']['state']['pid']}/environ")
        .read_text()
        .split("\0")
        if "=" in item
    )
    assert env["CUBE_LAB_PROFILE"] == "cpu" and env["CUBE_LAB_PROJECT"] == "vision"
    where = {"base_url": env["CUBE_HUB_ADMIN_URL"], "token": env["JUPYTERHUB_API_TOKEN"]}
    res = client.admit(project="vision", accelerators={"nvidia.com/gpu": "1"}, **where)
    assert res is not None and res["user"] == "alice" and res["group"] == "vision"
    client.release(res, **where)
    # the same token reads the user's hub groups: how the lab can learn its user's projects
    status, me = hub.hub("GET", "/user", token=env["JUPYTERHUB_API_TOKEN"])
    assert status == 200 and me["name"] == "alice" and me["groups"] == ["vision"]


def test_another_user_cannot_reach_the_server_or_its_objects(
    hub: devhub.DevHub, tokens: dict[str, str], servers: dict[str, Any]
) -> None:
    status, _ = cube(hub, "alice", "whoami", tokens["bob"])
    assert status == 403
    status, _ = hub.request("GET", "/user/alice/api/contents", token=tokens["bob"])
    assert status == 403
    # carol's object, made on her server, is invisible from bob's own server (one shared
    # store); carol's, not alice's: alice's list of projects is another test's
    running_servers(hub, ["carol"])
    try:
        status, made = cube(
            hub, "carol", "projects", tokens["carol"], method="POST", body={"name": "carol-secret"}
        )
        assert status == 201, made
        status, mine = cube(hub, "bob", "projects", tokens["bob"])
        assert status == 200
        assert "carol-secret" not in [p["name"] for p in mine["projects"]]
        status, body = cube(hub, "bob", "projects/carol-secret", tokens["bob"])
        assert status == 404, body
    finally:  # no server of carol's runs for the other tests
        hub.stop_server("carol")


def test_spawn_over_quota_is_refused_with_the_reason(
    hub: devhub.DevHub, tokens: dict[str, str], servers: dict[str, Any]
) -> None:
    hub.admin("PUT", "groups/vision/members/carol")
    try:
        status, body = hub.spawn("carol", {"profile": "cpu", "project": "vision"})
        assert status == 403
        assert "project vision uses 1 of 1 servers" in body["message"]
        # a profile the group may not use is not offered
        status, body = hub.spawn("bob", {"profile": "gpu-1"})
        assert status in (400, 403), body
    finally:
        hub.admin("DELETE", "groups/vision/members/carol")


def test_non_admins_get_403_on_the_admin_page_and_api(
    hub: devhub.DevHub, tokens: dict[str, str]
) -> None:
    status, _ = hub.request("GET", "/services/cube-admin/", token=tokens["bob"])
    assert status == 403
    status, body = hub.admin("GET", "groups", token=tokens["bob"])
    assert status == 403 and "for admins" in body["error"]
    status, body = hub.admin("POST", "groups", {"name": "mine"}, token=tokens["bob"])
    assert status == 403
    status, body = hub.admin("GET", "groups")  # the driver holds custom:cube-admin:write
    assert status == 200 and "vision" in [g["name"] for g in body["groups"]]


def test_twenty_concurrent_admissions_never_over_admit(
    hub: devhub.DevHub, tokens: dict[str, str], race: str
) -> None:
    async def burst() -> list[httpx.Response]:
        headers = {"Authorization": f"token {tokens['dave']}"}
        async with httpx.AsyncClient(base_url=hub.url, headers=headers, timeout=60) as client:
            ask = {"project": "race", "accelerators": {"nvidia.com/gpu": "1"}}
            return await asyncio.gather(
                *(client.post("/services/cube-admin/api/admission", json=ask) for _ in range(20))
            )

    answers = asyncio.run(burst())
    admitted = [r.json() for r in answers if r.status_code == 201]
    refused = [r.json() for r in answers if r.status_code == 403]
    assert len(admitted) == 4 and len(refused) == 16
    assert {r["error"] for r in refused} == {"project race uses 4 of 4 GPUs (nvidia.com/gpu)"}
    status, group = hub.admin("GET", "groups/race")
    assert group["usage"]["total"]["nvidia.com/gpu"] == 4
    assert group["usage"]["users"]["dave"]["jobs"] == 4
    for res in admitted:
        status, _ = hub.admin("DELETE", f"admission/{res['id']}", token=tokens["dave"])
        assert status == 204
    status, group = hub.admin("GET", "groups/race")
    assert group["usage"]["total"] == {}
    # not in the group: 403
    status, body = hub.admin("POST", "admission", {"project": "race"}, token=tokens["alice"])
    assert status == 403, body


def test_lab_side_client_admits_and_releases(
    hub: devhub.DevHub, tokens: dict[str, str], race: str
) -> None:
    """cube_lab.hub.client: what training and serving call inside a user's lab server."""
    status, body = hub.admin(
        "PATCH", "groups/race", {"quota": {"accelerators": {"nvidia.com/gpu": 2}}}
    )
    assert status == 200, body
    try:
        where = {"base_url": f"{hub.url}/services/cube-admin/", "token": tokens["dave"]}
        first = client.admit(project="race", accelerators={"nvidia.com/gpu": "2"}, **where)
        assert first is not None and first["amounts"]["nvidia.com/gpu"] == 2
        with pytest.raises(
            QuotaExceeded, match=r"project race uses 2 of 2 GPUs \(nvidia.com/gpu\)"
        ):
            client.admit(project="race", accelerators={"nvidia.com/gpu": "1"}, **where)
        client.release(first, **where)
        client.release(first, **where)  # twice is harmless
        again = client.admit(project="race", accelerators={"nvidia.com/gpu": "1"}, **where)
        client.release(again, **where)
        _, group = hub.admin("GET", "groups/race")
        assert group["usage"]["total"] == {}
    finally:  # race's quota as the other tests know it
        hub.admin("PATCH", "groups/race", {"quota": {"accelerators": {"nvidia.com/gpu": 4}}})
    # CPU-only work outside any project group needs no quota; accelerators do
    personal = client.admit(cpu=1, **where)
    assert personal is not None and personal["group"] == ""
    client.release(personal, **where)
    with pytest.raises(QuotaExceeded, match="no accelerator quota"):
        client.admit(accelerators={"nvidia.com/gpu": "1"}, **where)


def test_reconcile_releases_what_a_crashed_hub_left(hub: devhub.DevHub) -> None:
    ledger = Ledger(hub.data_dir / "hub" / "admission.sqlite")
    ledger.reserve(
        holder="server:ghost/", kind="server", username="ghost", group="vision",
        quota=None, amounts={"servers": 1},
    )  # fmt: skip
    status, body = hub.request("POST", "/services/cube-admin/api/reconcile?grace=0")
    assert status == 200
    assert [r["holder"] for r in body["released"]] == ["server:ghost/"]


def test_usage_returns_to_zero_after_servers_stop(
    hub: devhub.DevHub, servers: dict[str, Any]
) -> None:
    _, group = hub.admin("GET", "groups/vision")
    assert group["usage"]["total"]["servers"] == 1
    for name in ("alice", "bob"):
        hub.stop_server(name)
    _, group = hub.admin("GET", "groups/vision")
    assert group["usage"]["total"] == {}
    assert Ledger(hub.data_dir / "hub" / "admission.sqlite").reservations() == []


def test_first_admin_gets_a_one_time_password_stored_only_as_a_hash(hub: devhub.DevHub) -> None:
    password = hub.admin_password()
    assert password and len(password) >= 16
    db = hub.data_dir / "hub" / "jupyterhub.sqlite"
    with sqlite3.connect(db) as conn:
        (stored,) = conn.execute(
            "SELECT password FROM users_info WHERE username='admin'"
        ).fetchone()
    assert stored.startswith(b"$2b$") and password.encode() not in Path(db).read_bytes()
    with httpx.Client(base_url=hub.url, follow_redirects=False) as client:
        bad = login(client, "admin", "wrong-password")
        assert bad.status_code == 200 and "Invalid username or password" in bad.text
        good = login(client, "admin", password)
        assert good.status_code == 302, good.text[:300]


def test_admin_logs_in_and_edits_a_group_on_the_admin_page(hub: devhub.DevHub) -> None:
    """The browser path: hub login form, OAuth to the service, the page's XSRF-protected API."""
    with httpx.Client(base_url=hub.url, follow_redirects=False) as client:
        assert login(client, "admin", hub.admin_password()).status_code == 302
        # the spawn form offers the profiles the user may start (admin: no group, open ones)
        form = client.get("/hub/spawn")
        assert '<select id="cube-profile" name="profile"' in form.text
        assert 'value="cpu"' in form.text and 'value="gpu-1"' not in form.text
        zh_form = client.get("/hub/spawn", headers={"Accept-Language": "zh-CN"})
        assert ">资源规格</label>" in zh_form.text and ">Resource profile<" in form.text
        page = client.get("/services/cube-admin/", follow_redirects=True)
        assert page.status_code == 200 and "Project groups and quotas" in page.text
        assert 'href="/hub/static/css/style.min.css"' in page.text  # the hub's own styles
        xsrf = re.search(r'const xsrf = "([^"]+)"', page.text).group(1)
        body = {"name": "nlp", "users": ["carol"], "profiles": ["cpu", "gpu-1"],
                "quota": {"accelerators": {"nvidia.com/gpu": "2"}, "servers": "3"}}  # fmt: skip
        assert client.post("/services/cube-admin/api/groups", json=body).status_code == 403
        made = client.post(
            "/services/cube-admin/api/groups", json=body, headers={"X-XSRFToken": xsrf}
        )
        assert made.status_code == 201, made.text
        assert made.json()["quota"] == {"servers": 3, "accelerators": {"nvidia.com/gpu": 2}}
        page = client.get("/services/cube-admin/")
        assert 'data-group="nlp"' in page.text and "GPUs (nvidia.com/gpu)" in page.text
        # a browser that asks for Chinese gets the page in Chinese (issue 22)
        zh = client.get("/services/cube-admin/", headers={"Accept-Language": "zh-CN,zh;q=0.9"})
        assert zh.headers["Content-Language"] == "zh-CN" and '<html lang="zh-CN">' in zh.text
        assert "项目组与配额" in zh.text and "GPU 数（nvidia.com/gpu）" in zh.text  # noqa: RUF001
    # it is a JupyterHub group with the quota in its properties
    _, group = hub.hub("GET", "/groups/nlp")
    assert group["users"] == ["carol"]
    assert group["properties"]["cube_lab"]["quota"]["accelerators"] == {"nvidia.com/gpu": 2}


@pytest.fixture
def crash_hub() -> Iterator[devhub.DevHub]:
    """A hub of its own: the test kills it and starts another on the same folder."""
    with bare_hub("cube-hub-crash-", SETTINGS) as running:
        for name in ("bob", "carol"):
            running.hub("POST", f"/users/{name}")
        yield running


def test_a_hub_crash_releases_what_died_and_keeps_what_runs(crash_hub: devhub.DevHub) -> None:
    """It kills the hub and starts another on the same folder."""
    hub = crash_hub
    hub.admin(
        "POST",
        "groups",
        {"name": "crash", "users": ["bob", "carol"], "profiles": ["cpu"], "quota": {"servers": 5}},
    )
    started = spawn_servers(hub, ("bob", "carol"), {"profile": "cpu", "project": "crash"})
    pids = {name: server["state"]["pid"] for name, server in started.items()}
    assert hub.admin("GET", "groups/crash")[1]["usage"]["total"]["servers"] == 2
    # the hub dies; bob's server dies while it is down; carol's keeps running
    assert hub.proc is not None
    orphans = [p for p in devhub._descendants(hub.proc.pid) if p != pids["carol"]]
    hub.proc.kill()
    hub.proc.wait()
    for pid in orphans:  # bob's server, the old proxy and the old cube-admin service
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    restarted = devhub.start(hub.root, SETTINGS)
    hub.__dict__.update(restarted.__dict__)  # bare_hub stops the new hub at the end
    _, group = hub.admin("GET", "groups/crash")
    assert group["usage"]["total"]["servers"] == 1
    assert list(group["usage"]["users"]) == ["carol"]
    _, carol = hub.hub("GET", "/users/carol")
    assert carol["servers"][""]["ready"]
    hub.stop_server("carol")
    assert hub.admin("GET", "groups/crash")[1]["usage"]["total"] == {}


def test_training_jobs_reserve_quota_at_the_hub(
    hub: devhub.DevHub, tokens: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lab server's training job asks the hub before it submits anything, and gives the
    quota back when it ends; an over-quota job is refused with the reason."""
    from k8s_mock import api_server

    from cube_lab.config import Settings
    from cube_lab.identity import Caller
    from cube_lab.k8s import ClusterConfig
    from cube_lab.workspace import Workspace

    status, body = hub.admin(
        "POST",
        "groups",
        {"name": "trainers", "users": ["carol"], "quota": {"accelerators": {"nvidia.com/gpu": 2}}},
    )
    assert status == 201, body
    monkeypatch.setenv("CUBE_HUB_ADMIN_URL", f"{hub.url}/services/cube-admin/")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", tokens["carol"])
    carol = Caller("carol")
    ws = Workspace.open(Settings.resolve(tmp_path / "cube-data"))
    ws.projects.create(carol, "trainers")
    job = {"script": "train.py", "image": "reg/t:1", "backend": "kubernetes",
           "project": "trainers", "resources": {"gpus": 1}}  # fmt: skip

    async def scenario() -> None:
        async with api_server() as km:
            ws.training.cluster_config = ClusterConfig(host=str(km.url), token="t", namespace="ml")
            with pytest.raises(QuotaExceeded, match=r"project trainers uses 0 of 2 GPUs"):
                ws.training.prepare(carol, {**job, "workers": 3})  # 3 GPUs > 2
            assert list(km) == [] and ws.training.list(carol) == []
            first = ws.training.prepare(carol, {**job, "workers": 2})
            await ws.training.submit(first)
            _, group = hub.admin("GET", "groups/trainers")
            assert group["usage"]["total"] == {"jobs": 1, "nvidia.com/gpu": 2}
            await asyncio.to_thread(ws.training._release, first.job_id)  # the job's end
            _, group = hub.admin("GET", "groups/trainers")
            assert group["usage"]["total"] == {}

    try:
        asyncio.run(scenario())
    finally:
        ws.close()


def test_tuning_and_serving_reserve_quota_at_the_hub(
    hub: devhub.DevHub, tokens: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Experiments and deployments ask the hub first (a job each) and give the quota back."""
    from sklearn.dummy import DummyClassifier

    from cube_lab.config import Settings
    from cube_lab.identity import Caller
    from cube_lab.workspace import Workspace

    status, body = hub.admin(
        "POST", "groups", {"name": "tuners", "users": ["carol"], "quota": {"jobs": 0}}
    )
    assert status == 201, body
    monkeypatch.setenv("CUBE_HUB_ADMIN_URL", f"{hub.url}/services/cube-admin/")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", tokens["carol"])
    carol = Caller("carol")
    ws = Workspace.open(Settings.resolve(tmp_path / "cube-data"))
    try:
        ws.projects.create(carol, "tuners")
        (tmp_path / "trial.py").write_text(
            "import nni\nx = nni.get_next_parameter()['x']\nnni.report_final_result(x)\n"
        )
        config = {
            "searchSpace": {"x": {"_type": "uniform", "_value": [0, 1]}},
            "trialCommand": "python3 trial.py",
            "maxTrialNumber": 2,
            "project": "tuners",
        }
        spec = ws.tuning.parse(config, tmp_path)
        with pytest.raises(QuotaExceeded, match="project tuners uses 0 of 0"):
            ws.tuning.prepare(carol, spec)
        assert ws.tuning.list(carol) == []
        model = DummyClassifier().fit([[0.0], [1.0]], [0, 1])
        ws.registry.register(carol, name="dummy", obj=model, project="tuners")
        with pytest.raises(QuotaExceeded, match="project tuners uses 0 of 0"):
            ws.serving.deploy(carol, "dummy:1", project="tuners")

        hub.admin("PATCH", "groups/tuners", {"quota": {"jobs": 1}})
        time.sleep(1.5)  # the admin service caches group quotas for a second
        assert ws.tuning.run_foreground(ws.tuning.prepare(carol, spec)) == "done"
        _, group = hub.admin("GET", "groups/tuners")
        assert group["usage"]["total"] == {}  # the experiment gave its job back
        ws.serving.deploy(carol, "dummy:1", project="tuners")
        _, group = hub.admin("GET", "groups/tuners")
        assert group["usage"]["total"].get("jobs") == 1
        ws.serving.undeploy(carol, "dummy", project="tuners")
        _, group = hub.admin("GET", "groups/tuners")
        assert group["usage"]["total"] == {}
    finally:
        for dep in ws.serving.list(carol):
            if dep.status in ("starting", "running", "updating"):
                ws.serving.undeploy(carol, dep.name, project=dep.project)
        ws.close()
