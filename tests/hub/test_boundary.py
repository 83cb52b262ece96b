"""The trust boundary on a real hub (local shape): user servers hold no keys to the store, the
cube-lab service owns it and decides who calls from the hub token alone.

Two users, alice and bob, each run a real lab server. Code runs in bob's kernel through the
kernel API, as bob's notebook would run it; nothing it can do there reaches alice's objects
or the store's credentials, while alice's own work (a model, a pipeline run) goes on.
"""

from __future__ import annotations

import json
import pwd
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cube_lab import accounts
from cube_lab.handlers import routes
from cube_lab.hub import devhub
from tests.hub_kernel import Kernel
from tests.hub_util import (
    cube,
    home,
    login,
    needs_accounts,
    running_hub,
    spawn_servers,
    wait_for_run,
)
from tests.labeling_util import make_csv
from tests.pipeline_util import node, script, write_pipeline
from tests.server.test_routes import METHODS, concrete

pytestmark = pytest.mark.hub

USERS = ("alice", "bob")


@pytest.fixture(scope="module")
def hub() -> Iterator[devhub.DevHub]:
    with running_hub("cube-hub-boundary-", USERS) as running:
        yield running


@pytest.fixture(scope="module")
def tokens(hub: devhub.DevHub) -> dict[str, str]:
    return {name: hub.user_token(name) for name in USERS}


@pytest.fixture(scope="module")
def servers(hub: devhub.DevHub, tokens: dict[str, str]) -> dict[str, Any]:
    return spawn_servers(hub, USERS)


@pytest.fixture(scope="module")
def bob_kernel(
    hub: devhub.DevHub, tokens: dict[str, str], servers: dict[str, Any]
) -> Iterator[Kernel]:
    kernel = Kernel(hub.url, "bob", tokens["bob"])
    yield kernel
    kernel.shutdown()


def server_env(server: dict[str, Any]) -> dict[str, str]:
    raw = Path(f"/proc/{server['state']['pid']}/environ").read_text()
    return dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)


def test_user_servers_hold_no_keys_to_the_store(
    hub: devhub.DevHub, servers: dict[str, Any]
) -> None:
    store = str(hub.data_dir / "cube-lab")
    for name in USERS:
        env = server_env(servers[name])
        assert "CUBE_LAB_DB_URL" not in env and "CUBE_LAB_DATA_DIR" not in env
        assert "CUBE_HUB_SETTINGS" not in env  # the settings file may hold the database URL
        assert not [k for k, v in env.items() if store in v], "the store's folder is named"
        assert env["CUBE_LAB_SERVICE_URL"].endswith("/services/cube-lab/")
    # the store exists, and no other account may list or read it
    db = hub.data_dir / "cube-lab" / "cube-lab.db"
    assert db.is_file() and db.stat().st_mode & 0o077 == 0
    assert (hub.data_dir / "cube-lab").stat().st_mode & 0o066 == 0


def test_alices_work_runs_and_stays_hers(
    hub: devhub.DevHub, tokens: dict[str, str], servers: dict[str, Any]
) -> None:
    folder = home(hub, "alice")
    (folder / "model.bin").write_bytes(b"weights" * 100)
    status, version = cube(
        hub, "alice", "models", tokens["alice"], method="POST",
        body={"name": "secret-model", "path": "model.bin", "project": "alice"},
    )  # fmt: skip
    assert status == 201, version
    code = "import os\nprint('hello from', os.getcwd(), 'JUPYTERHUB_API_TOKEN' in os.environ)\n"
    step = script(folder, "step.py", code)
    write_pipeline(folder, [node("a", filename=step)], filename="p.pipeline")
    status, run = cube(
        hub, "alice", "pipelines/runs", tokens["alice"], method="POST",
        body={"path": "p.pipeline"},
    )  # fmt: skip
    assert status in (200, 201), run
    run_id = run["id"]
    found = wait_for_run(hub, tokens["alice"], run_id)
    assert found["status"] == "succeeded", json.dumps(found)[:3000]
    status, log = cube(hub, "alice", f"pipelines/runs/{run_id}/nodes/a/log", tokens["alice"])
    assert status == 200 and "hello from" in str(log)
    assert "False" in str(log), log  # no hub token of the service's reaches the job
    # bob, through his own server, sees none of it
    status, models = cube(hub, "bob", "models", tokens["bob"])
    assert status == 200 and "secret-model" not in json.dumps(models)
    status, _ = cube(hub, "bob", "projects/alice/models/secret-model", tokens["bob"])
    assert status in (403, 404)
    status, _ = cube(hub, "bob", f"pipelines/runs/{run_id}", tokens["bob"])
    assert status == 404
    status, _ = cube(hub, "bob", f"pipelines/runs/{run_id}/nodes/a/log", tokens["bob"])
    assert status == 404


def test_alices_labeling_task_is_hers(hub: devhub.DevHub, tokens: dict[str, str]) -> None:
    make_csv(home(hub, "alice") / "reviews.csv", ["great", "awful"])
    status, made = cube(
        hub, "alice", "datasets", tokens["alice"], method="POST",
        body={"name": "reviews", "path": "reviews.csv"},
    )  # fmt: skip
    assert status == 201, made
    body = {"name": "sentiment", "dataset": "reviews", "type": "text-class", "labels": ["+", "-"]}
    status, made = cube(hub, "alice", "labeling", tokens["alice"], method="POST", body=body)
    assert status == 201, made
    status, task = cube(
        hub, "alice", "projects/alice/labeling/sentiment/next", tokens["alice"], method="POST"
    )
    assert status == 200 and task["item"]["text"] == "great", task
    status, listed = cube(hub, "bob", "datasets", tokens["bob"])
    assert status == 200 and listed["datasets"] == []
    status, _ = cube(
        hub, "bob", "projects/alice/labeling/sentiment/next", tokens["bob"], method="POST"
    )
    assert status in (403, 404)


BOB_TRIES = textwrap.dedent(
    """
    import json, os, subprocess, urllib.request, urllib.error
    found = {}
    found["env_keys"] = sorted(
        k for k in os.environ if k.startswith("CUBE_LAB_DB") or k == "CUBE_LAB_DATA_DIR"
    )
    cli = subprocess.run(
        ["cube-lab", "model", "list", "--project", "alice"],
        env={**os.environ, "CUBE_LAB_USER": "alice"}, capture_output=True, text=True,
    )
    found["cli"] = [cli.returncode, cli.stdout + cli.stderr]
    base = os.environ["CUBE_LAB_SERVICE_URL"] + "cube/api/v1/"
    def call(path, token=os.environ["JUPYTERHUB_API_TOKEN"], headers=None):
        h = {"Authorization": f"token {token}"} if token else {}
        h.update(headers or {})
        try:
            with urllib.request.urlopen(urllib.request.Request(base + path, headers=h)) as r:
                return [r.status, json.loads(r.read())]
        except urllib.error.HTTPError as e:
            return [e.code, e.read().decode()[:300]]
    found["whoami"] = call("whoami", headers={"X-Cube-User": "alice"})
    found["alice_models"] = call("projects/alice/models/secret-model")
    found["listed"] = call("models?project=alice")
    found["no_token"] = call("whoami", token=None)
    found["bad_token"] = call("whoami", token="0" * 32)
    found["cookie_only"] = call("whoami", token=None, headers={"Cookie": "jupyterhub-session-id=x"})
    print(json.dumps(found))
    """
)


def test_code_in_bobs_kernel_cannot_reach_alices_objects(
    hub: devhub.DevHub, tokens: dict[str, str], bob_kernel: Kernel
) -> None:
    # alice's model exists (made by the previous test, or here when run alone)
    (home(hub, "alice") / "model.bin").write_bytes(b"weights" * 100)
    cube(
        hub, "alice", "models", tokens["alice"], method="POST",
        body={"name": "secret-model", "path": "model.bin", "project": "alice"},
    )  # fmt: skip
    outcome = bob_kernel.run(BOB_TRIES)
    assert outcome.error is None, outcome
    found = json.loads(outcome.stdout.strip().splitlines()[-1])
    assert found["env_keys"] == []
    code, text = found["cli"]
    # the CLI goes through the service as bob: alice's project is not his to list
    assert code != 0 and "project 'alice' not found" in text, text
    assert "secret-model" not in text
    status, me = found["whoami"]
    assert status == 200 and me["user"] == "bob", me  # no header or variable makes him alice
    assert found["alice_models"][0] in (403, 404), found["alice_models"]
    assert found["listed"][0] in (403, 404) or "secret-model" not in json.dumps(found["listed"])
    for key in ("no_token", "bad_token", "cookie_only"):
        assert found[key][0] == 403, (key, found[key])


def test_the_service_refuses_tokens_without_its_scope(
    hub: devhub.DevHub, tokens: dict[str, str], servers: dict[str, Any]
) -> None:
    status, made = hub.hub(
        "POST", "/users/bob/tokens", {"note": "narrow", "scopes": ["read:users:name!user"]}
    )
    assert status == 201, made
    whoami = server_env(servers["bob"])["CUBE_LAB_SERVICE_URL"] + "cube/api/v1/whoami"
    narrow = httpx.get(whoami, headers={"Authorization": f"token {made['token']}"})
    assert narrow.status_code == 403, narrow.text
    full = httpx.get(whoami, headers={"Authorization": f"token {tokens['bob']}"})
    assert full.status_code == 200 and full.json()["user"] == "bob"


def test_every_route_of_the_service_needs_a_hub_token(
    hub: devhub.DevHub, tokens: dict[str, str], servers: dict[str, Any]
) -> None:
    """The service answers nothing without a token of a user, on any route and method; a
    lab server's cookie (what a browser would send there) means nothing to it."""
    base = server_env(servers["bob"])["CUBE_LAB_SERVICE_URL"].rstrip("/")
    cookies = {"jupyterhub-session-id": "x", "_xsrf": "x"}
    with httpx.Client(base_url=base, timeout=30) as web:
        for pattern, handler in routes():
            for method in METHODS:
                if method not in vars(handler):
                    continue
                path = "/cube/api/v1/" + concrete(pattern)
                answer = web.request(method.upper(), path, cookies=cookies)
                assert answer.status_code == 403, (method, path, answer.status_code)
                assert answer.json()["error"], answer.text


def test_a_browser_calls_the_service_with_its_oauth_cookie_and_xsrf_token(
    hub: devhub.DevHub, tokens: dict[str, str]
) -> None:
    """What the panels do under the hub (src/service_session.ts): load the service's session
    page as a page load (the hub's OAuth redirects), then call the API at the service's path
    through the proxy with the service's cookie and the XSRF token the page gave."""
    base = "/services/cube-lab"
    page_load = {"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}
    with httpx.Client(base_url=hub.url, timeout=60) as browser:
        assert login(browser, "admin", hub.admin_password()).status_code == 302
        page = browser.get(f"{base}/browser-session", headers=page_load, follow_redirects=True)
        assert page.status_code == 200, page.text[:300]
        assert "frame-ancestors 'self'" in page.headers["Content-Security-Policy"]
        found = re.search(r'id="cube-lab-session">(.*?)</script>', page.text)
        session = json.loads(found.group(1))
        assert session["user"] == "admin" and session["xsrf"]

        fetch = {"Sec-Fetch-Mode": "cors", "Sec-Fetch-Site": "same-origin"}
        api = f"{base}/cube/api/v1"
        with_xsrf = {**fetch, "X-XSRFToken": session["xsrf"]}
        me = browser.get(f"{api}/whoami", headers=with_xsrf)
        assert me.status_code == 200 and me.json()["user"] == "admin", me.text
        made = browser.post(f"{api}/projects", json={"name": "browser-made"}, headers=with_xsrf)
        assert made.status_code == 201, made.text
        # the cookie alone is not taken from a page's fetch, read or write: no XSRF token, no
        # user; the answer says so (WWW-Authenticate), which the page takes as "session gone"
        for method in ("GET", "POST"):
            bare = browser.request(method, f"{api}/projects", headers=fetch, json={"name": "x"})
            assert bare.status_code == 403, (method, bare.text)
            assert bare.headers["WWW-Authenticate"].startswith("token")
            assert bare.json()["error"]
        forged = browser.get(f"{api}/whoami", headers={**fetch, "X-XSRFToken": "forged"})
        assert forged.status_code == 403
        # a refusal that is the service's own decision carries no such header
        other = browser.get(f"{api}/projects/bob", headers=with_xsrf)
        assert other.status_code in (403, 404) and "WWW-Authenticate" not in other.headers
    # the same store as every other route: what the browser made is the admin's only
    status, mine = hub.request("GET", f"{api}/projects", token=hub.user_token("admin"))
    assert status == 200 and "browser-made" in [p["name"] for p in mine["projects"]]
    status, bobs = hub.request("GET", f"{api}/projects", token=tokens["bob"])
    assert status == 200 and "browser-made" not in [p["name"] for p in bobs["projects"]]


@needs_accounts
def test_bobs_kernel_runs_as_his_account_and_cannot_read_alices_files_or_the_store(
    hub: devhub.DevHub, tokens: dict[str, str], bob_kernel: Kernel
) -> None:
    alice_file = home(hub, "alice") / "diary.txt"
    alice_file.write_text("alice's")
    store = hub.data_dir / "cube-lab" / "cube-lab.db"
    tries = textwrap.dedent(
        f"""
        import json, os
        found = {{"uid": os.getuid()}}
        for name, path in (("home", {str(alice_file)!r}), ("store", {str(store)!r})):
            try:
                open(path).read()
                found[name] = "read"
            except OSError as exc:
                found[name] = type(exc).__name__
        try:
            os.listdir({str(home(hub, "alice"))!r})
            found["listing"] = "listed"
        except OSError as exc:
            found["listing"] = type(exc).__name__
        print(json.dumps(found))
        """
    )
    outcome = bob_kernel.run(tries)
    assert outcome.error is None, outcome
    found = json.loads(outcome.stdout.strip().splitlines()[-1])
    assert found["uid"] != 0
    assert found == {
        "uid": found["uid"],
        "home": "PermissionError",
        "store": "PermissionError",
        "listing": "PermissionError",
    }


@needs_accounts
def test_alices_pipeline_node_runs_as_her_account(
    hub: devhub.DevHub, tokens: dict[str, str], servers: dict[str, Any]
) -> None:
    folder = home(hub, "alice")
    step = script(folder, "whoami.py", "import os\nprint('uid', os.getuid())\n")
    write_pipeline(folder, [node("who", filename=step)], filename="who.pipeline")
    status, run = cube(
        hub, "alice", "pipelines/runs", tokens["alice"], method="POST",
        body={"path": "who.pipeline"},
    )  # fmt: skip
    assert status in (200, 201), run
    found = wait_for_run(hub, tokens["alice"], run["id"])
    assert found["status"] == "succeeded", json.dumps(found)[:3000]
    status, log = cube(hub, "alice", f"pipelines/runs/{run['id']}/nodes/who/log", tokens["alice"])
    assert status == 200
    uid = pwd.getpwnam(accounts.user_account("alice")).pw_uid
    assert f"uid {uid}" in str(log) and uid != 0
    # her server runs as that account too
    assert Path(f"/proc/{servers['alice']['state']['pid']}").stat().st_uid == uid
