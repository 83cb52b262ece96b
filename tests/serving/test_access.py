"""Who may call a deployment, on real local deployments (a real sklearn model, real router and
model server processes, real HTTP): API keys (hashed in the store, checked by the router),
auth defaults per shape, rate limits (429 + Retry-After) and client address lists (403),
through ``requests``, tritonclient's HTTP client, the REST API and the CLI."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests
from serving_util import stop_serving

from cube_lab import cli
from cube_lab.config import Settings
from cube_lab.errors import InvalidInput, NotFound
from cube_lab.identity import Caller
from cube_lab.serving import access
from cube_lab.workspace import Workspace

ALICE, BOB = Caller("alice"), Caller("bob")
ROW = [[5.1, 3.5, 1.4, 0.2]]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    from sklearn.datasets import load_iris
    from sklearn.ensemble import RandomForestClassifier

    root = tmp_path_factory.mktemp("access")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root))
        mp.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
        mp.setenv("CUBE_LAB_SERVING_WARM_IDLE_S", "15")
        for var in ("JUPYTERHUB_API_URL", "JUPYTERHUB_API_TOKEN", "CUBE_HUB_ADMIN_URL"):
            mp.delenv(var, raising=False)
        mp.delenv(access.ENV_DEFAULT_AUTH, raising=False)
        ws = Workspace.open(Settings.resolve(root / "cube-data"))
        x, y = load_iris(return_X_y=True)
        ws.registry.register(
            ALICE, name="iris", obj=RandomForestClassifier(n_estimators=5, random_state=0).fit(x, y)
        )
        try:
            yield ws
        finally:
            stop_serving(ws, ALICE)
            ws.close()


def predict(endpoint: str, key: str | None = None, **headers: str) -> requests.Response:
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    return requests.post(
        f"{endpoint}/predict", json={"instances": ROW}, headers=headers, timeout=30
    )


def db_rows(ws: Workspace, table: str) -> list[tuple[Any, ...]]:
    path = ws.settings.db_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        return conn.execute(f"SELECT * FROM {table}").fetchall()


def test_api_keys_guard_a_real_deployment(served: Workspace) -> None:
    httpclient = pytest.importorskip("tritonclient.http", reason="pip install tritonclient[http]")
    from tritonclient.utils import InferenceServerException

    ws = served
    dep = ws.serving.deploy(ALICE, "iris:1", name="guarded", auth="required")
    assert dep.access == {"auth": "required", "rate_limit": None, "allow": [], "deny": []}
    endpoint = dep.endpoint
    assert endpoint
    # no key: 401 with the JSON error and a Bearer challenge; probes stay open
    resp = predict(endpoint)
    assert resp.status_code == 401, resp.text
    assert resp.json()["error"] == "deployment 'guarded' needs an API key"
    assert "Authorization: Bearer" in resp.json()["detail"]
    assert resp.headers["WWW-Authenticate"].startswith("Bearer")
    for path in ("/v2/models/iris", "/v2", "/metrics"):
        assert requests.get(endpoint + path, timeout=10).status_code == 401, path
    assert requests.get(f"{endpoint}/v2/health/live", timeout=10).status_code == 200
    assert requests.get(f"{endpoint}/v2/health/ready", timeout=10).status_code == 200

    made = ws.serving.create_key(ALICE, "guarded", "ci")
    key = made.key
    assert key and key.startswith("cube_") and len(key) >= 45
    assert made.prefix == key[:12] and made.state == "active" and made.expires_at is None
    # right key: 200, as Bearer and as X-API-Key
    resp = predict(endpoint, key)
    assert resp.status_code == 200, resp.text
    assert resp.json()["predictions"] == [0]
    assert predict(endpoint, **{"X-API-Key": key}).status_code == 200
    # wrong keys: 401 that says so
    for wrong in (key[:-1] + ("A" if key[-1] != "A" else "B"), "cube_nope", "x" * 500):
        resp = predict(endpoint, wrong)
        assert resp.status_code == 401 and "not valid" in resp.json()["error"]
        assert 'error="invalid_token"' in resp.headers["WWW-Authenticate"]
    assert predict(endpoint, **{"Authorization": f"Basic {key}"}).status_code == 401

    # tritonclient: headers= on each call, or a plugin that adds the header to every request
    url = endpoint.removeprefix("http://")
    client = httpclient.InferenceServerClient(url=url)
    inp = httpclient.InferInput("input-0", [1, 4], "FP64")
    inp.set_data_from_numpy(np.array(ROW), binary_data=False)
    try:
        with pytest.raises(InferenceServerException) as refused:
            client.infer("iris", [inp])
        assert "needs an API key" in str(refused.value)
        bearer = {"Authorization": f"Bearer {key}"}
        assert client.is_server_live()  # no key: the probe
        assert client.is_model_ready("iris", headers=bearer)
        result = client.infer("iris", [inp], headers=bearer)
        assert result.as_numpy("predict").tolist() == [0]
    finally:
        client.close()

    class BearerPlugin(httpclient.InferenceServerClientPlugin):  # type: ignore[misc]
        def __call__(self, request: Any) -> None:
            request.headers["Authorization"] = f"Bearer {key}"

    client = httpclient.InferenceServerClient(url=url)
    client.register_plugin(BearerPlugin())
    try:
        assert client.get_model_metadata("iris")["name"] == "iris"
        assert client.infer("iris", [inp]).as_numpy("predict").tolist() == [0]
    finally:
        client.close()

    # stored hashed: neither the database nor the router's table holds the key
    rows = db_rows(ws, "deployment_keys")
    assert len(rows) == 1
    assert not any(key in str(value) for value in rows[0])
    assert hashlib.sha256(key.encode()).hexdigest() in rows[0]
    db_file = Path(ws.settings.db_url.removeprefix("sqlite:///"))
    for path in [db_file, *db_file.parent.glob("cube-lab.db-*")]:
        assert key.encode() not in path.read_bytes(), path
    table = (ws.settings.data_dir / "serving" / dep.id / "config.json").read_text()
    assert key not in table and hashlib.sha256(key.encode()).hexdigest() in table
    # listed without the key, with when it was last used
    listed = ws.serving.list_keys(ALICE, "guarded")
    assert [(k.name, k.key, k.state) for k in listed] == [("ci", None, "active")]
    assert listed[0].last_used_at is not None
    # the lab server's own calls (metrics, the test form) pass with the router token
    assert "cube_serving_requests_total" in ws.serving.metrics(ALICE, "guarded")
    token = ws.serving.router_token(ALICE, "guarded")
    assert predict(endpoint, **{"X-Cube-Token": token}).status_code == 200
    assert predict(endpoint, **{"X-Cube-Token": token + "x"}).status_code == 401

    # revoked: refused at once; a second key is unaffected; names are unique among live keys
    other = ws.serving.create_key(ALICE, "guarded", "batch")
    with pytest.raises(Exception, match="already has a key named 'ci'"):
        ws.serving.create_key(ALICE, "guarded", "ci")
    revoked = ws.serving.revoke_key(ALICE, "guarded", "ci")
    assert revoked.state == "revoked" and revoked.revoked_at is not None
    resp = predict(endpoint, key)
    assert resp.status_code == 401 and "revoked" in resp.json()["detail"]
    assert predict(endpoint, other.key).status_code == 200
    with pytest.raises(NotFound):
        ws.serving.revoke_key(ALICE, "guarded", "ci")  # no live key has that name now
    assert ws.serving.revoke_key(ALICE, "guarded", revoked.id).state == "revoked"  # by id

    # expired: a key good for two seconds
    short = ws.serving.create_key(ALICE, "guarded", "short", expires_in_days=2 / 86400)
    assert short.expires_at is not None
    assert predict(endpoint, short.key).status_code == 200
    time.sleep(max(0.0, (short.expires_at.timestamp() - time.time())) + 0.2)
    resp = predict(endpoint, short.key)
    assert resp.status_code == 401 and "expired" in resp.json()["error"]
    states = {k.name: k.state for k in ws.serving.list_keys(ALICE, "guarded")}
    assert states == {"ci": "revoked", "batch": "active", "short": "expired"}

    # bob can neither list nor make keys for alice's deployment
    with pytest.raises(NotFound):
        ws.serving.list_keys(BOB, "guarded", "alice")
    with pytest.raises(NotFound):
        ws.serving.create_key(BOB, "guarded", "mine", project="alice")

    # deployed again under the same name: the same keys and settings hold
    ws.serving.undeploy(ALICE, "guarded")
    again = ws.serving.deploy(ALICE, "iris:1", name="guarded")
    assert again.access["auth"] == "required" and again.endpoint
    assert predict(again.endpoint).status_code == 401
    assert predict(again.endpoint, other.key).status_code == 200
    assert predict(again.endpoint, key).status_code == 401
    # removed: its keys go with it
    ws.serving.undeploy(ALICE, "guarded")
    assert ws.serving.undeploy(ALICE, "guarded").status == "removed"
    assert db_rows(ws, "deployment_keys") == []


def test_rate_limit_answers_429_after_the_burst_then_recovers(served: Any) -> None:
    ws = served
    dep = ws.serving.deploy(ALICE, "iris:1", name="limited", auth="none")
    assert dep.endpoint and dep.access["auth"] == "none"
    assert predict(dep.endpoint).status_code == 200  # open: no key asked
    view = ws.serving.set_access(ALICE, "limited", {"rate_limit": {"rps": 2, "burst": 3}})
    assert view.access["rate_limit"] == {"rps": 2.0, "burst": 3, "per_key": False}
    session = requests.Session()

    def call() -> requests.Response:
        return session.post(f"{dep.endpoint}/predict", json={"instances": ROW}, timeout=30)

    codes = [call().status_code for _ in range(3)]
    assert codes == [200, 200, 200]
    refused = call()
    assert refused.status_code == 429
    assert int(refused.headers["Retry-After"]) >= 1
    body = refused.json()
    assert "rate limit" in body["error"] and "Retry in" in body["detail"]
    time.sleep(0.6)  # 2 tokens a second: one is back
    assert call().status_code == 200
    # per key: each key has its own bucket
    ws.serving.set_access(
        ALICE,
        "limited",
        {"auth": "required", "rate_limit": {"rps": 0.5, "burst": 2, "per_key": True}},
    )
    a = ws.serving.create_key(ALICE, "limited", "a").key
    b = ws.serving.create_key(ALICE, "limited", "b").key
    assert [predict(dep.endpoint, a).status_code for _ in range(3)] == [200, 200, 429]
    assert [predict(dep.endpoint, b).status_code for _ in range(2)] == [200, 200]
    # off again: no limit
    ws.serving.set_access(ALICE, "limited", {"rate_limit": None, "auth": "none"})
    assert [call().status_code for _ in range(10)] == [200] * 10
    ws.serving.delete(ALICE, "limited")


def test_deny_and_allow_lists_answer_403(served: Any) -> None:
    ws = served
    dep = ws.serving.deploy(ALICE, "iris:1", name="listed", auth="none")
    assert dep.endpoint
    view = ws.serving.set_access(ALICE, "listed", {"deny": ["127.0.0.1"]})
    assert view.access["deny"] == ["127.0.0.1"]
    resp = predict(dep.endpoint)
    assert resp.status_code == 403
    assert resp.json()["error"] == "client address 127.0.0.1 may not call deployment 'listed'"
    assert requests.get(f"{dep.endpoint}/v2/health/live", timeout=10).status_code == 200
    # the admin routes still answer the service (the router token guards them)
    assert ws.serving.set_samples(ALICE, "listed", 0).status == "running"
    ws.serving.set_access(ALICE, "listed", {"deny": [], "allow": ["10.0.0.0/8", "::1"]})
    assert predict(dep.endpoint).status_code == 403  # not on the allow list
    ws.serving.set_access(ALICE, "listed", {"allow": ["127.0.0.0/8"]})
    assert predict(dep.endpoint).status_code == 200
    # deny wins over allow
    ws.serving.set_access(ALICE, "listed", {"deny": ["127.0.0.0/24"]})
    assert predict(dep.endpoint).status_code == 403
    ws.serving.set_access(ALICE, "listed", {"allow": [], "deny": []})
    assert predict(dep.endpoint).status_code == 200
    ws.serving.delete(ALICE, "listed")


def test_bad_access_settings_say_what_is_wrong(served: Any) -> None:
    ws = served
    ws.serving.deploy(ALICE, "iris:1", name="checked", auth="none")
    try:
        for changes, message in (
            ({"auth": "maybe"}, "auth must be one of"),
            ({"rate_limit": {"rps": 0}}, "rate_limit.rps"),
            ({"rate_limit": {"rps": 5, "burst": 0}}, "rate_limit.burst"),
            ({"rate_limit": {"rps": 5, "bucket": 2}}, "unknown rate_limit fields"),
            ({"rate_limit": 5}, "rate_limit must be an object"),
            ({"allow": ["10.0.0.300"]}, "not an IP address or CIDR"),
            ({"deny": ["10.1.2.3/8"]}, "not an IP address or CIDR"),
            ({"deny": "10.0.0.1"}, "must be a list"),
            ({"limit": 1}, "unknown fields"),
        ):
            with pytest.raises(InvalidInput, match=message):
                ws.serving.set_access(ALICE, "checked", changes)
        for kwargs, message in (
            ({"expires_in_days": 0}, "expires_in_days"),
            ({"expires_at": "yesterday"}, "not an ISO 8601 time"),
            ({"expires_at": "2001-01-01T00:00:00Z"}, "in the past"),
            ({"expires_at": "2100-01-01", "expires_in_days": 3}, "not both"),
        ):
            with pytest.raises(InvalidInput, match=message):
                ws.serving.create_key(ALICE, "checked", "k", **kwargs)
        with pytest.raises(InvalidInput, match="key name"):
            ws.serving.create_key(ALICE, "checked", "no spaces please")
        with pytest.raises(InvalidInput, match="auth must be one of"):
            ws.serving.deploy(ALICE, "iris:1", name="other", auth="open")
        assert ws.serving.get(ALICE, "checked").access["rate_limit"] is None  # nothing changed
    finally:
        ws.serving.delete(ALICE, "checked")


def test_auth_is_required_by_default_under_the_hub_and_off_alone(
    served: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = served
    assert access.default_auth() == "none"
    dep = ws.serving.deploy(ALICE, "iris:1", name="alone")
    assert dep.access["auth"] == "none" and dep.endpoint
    assert predict(dep.endpoint).status_code == 200
    ws.serving.delete(ALICE, "alone")
    # a lab server the hub spawned (and its terminals) has the hub's API in its environment
    monkeypatch.setenv("JUPYTERHUB_API_URL", "http://127.0.0.1:1/hub/api")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "not-used-here")
    assert access.default_auth() == "required"
    dep = ws.serving.deploy(ALICE, "iris:1", name="hubbed")
    try:
        assert dep.access["auth"] == "required" and dep.endpoint
        assert predict(dep.endpoint).status_code == 401
        # switchable per deployment
        ws.serving.set_access(ALICE, "hubbed", {"auth": "none"})
        assert predict(dep.endpoint).status_code == 200
    finally:
        ws.serving.delete(ALICE, "hubbed")
    monkeypatch.setenv(access.ENV_DEFAULT_AUTH, "none")  # a site's own default
    assert access.default_auth() == "none"


def test_cli_creates_lists_and_revokes_keys(
    ws: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import joblib
    from sklearn.datasets import load_iris
    from sklearn.ensemble import RandomForestClassifier

    x, y = load_iris(return_X_y=True)
    path = tmp_path / "iris.joblib"
    joblib.dump(RandomForestClassifier(n_estimators=3, random_state=0).fit(x, y), path)
    ws.registry.register(Caller(cli.local_username()), name="iris", path=path)
    base = ["--data-dir", str(ws.settings.data_dir)]
    assert cli.main([*base, "deploy", "iris:1", "--name", "cli-keys", "--auth", "required"]) == 0
    out = capsys.readouterr()
    endpoint = out.out.strip().splitlines()[-1]
    assert "deployment keys create cli-keys" in out.err
    try:
        assert predict(endpoint).status_code == 401
        assert cli.main([*base, "deployment", "keys", "create", "cli-keys", "ci"]) == 0
        out = capsys.readouterr()
        key = out.out.strip().splitlines()[-1]
        assert key.startswith("cube_") and "shown only now" in out.err
        assert predict(endpoint, key).status_code == 200
        assert cli.main([*base, "deployment", "keys", "list", "cli-keys"]) == 0
        table = capsys.readouterr().out
        assert "ci" in table and key[:12] in table and key not in table and "active" in table
        assert cli.main([*base, "deployment", "keys", "list", "cli-keys", "--json"]) == 0
        listed = json.loads(capsys.readouterr().out)["keys"]
        assert [(k["name"], k["key"], k["state"]) for k in listed] == [("ci", None, "active")]
        assert cli.main([*base, "deployment", "keys", "revoke", "cli-keys", "ci"]) == 0
        assert "revoked" in capsys.readouterr().out
        assert predict(endpoint, key).status_code == 401
        assert cli.main([*base, "deployment", "keys", "revoke", "cli-keys", "ci"]) == 1
        assert "has no key 'ci'" in capsys.readouterr().err
        made = [*base, "deployment", "keys", "create", "cli-keys", "x", "--expires-in-days", "-1"]
        assert cli.main(made) == 2
        assert "expires_in_days" in capsys.readouterr().err
        # access settings from the CLI
        args = [*base, "deployment", "access", "cli-keys", "--rps", "1", "--burst", "1"]
        assert cli.main([*args, "--deny", "192.0.2.0/24", "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert shown["rate_limit"] == {"rps": 1.0, "burst": 1, "per_key": False}
        assert shown["deny"] == ["192.0.2.0/24"]
        assert cli.main([*base, "deployment", "access", "cli-keys", "--allow", "bad"]) == 2
        assert "not an IP address" in capsys.readouterr().err
        assert cli.main([*base, "deployment", "access", "cli-keys", "--no-rate-limit"]) == 0
        assert "rate limit: none" in capsys.readouterr().out
    finally:
        assert cli.main([*base, "undeploy", "cli-keys", "--forget"]) == 0


async def test_keys_and_access_through_the_rest_api(api: Any, jp_root_dir: Path) -> None:
    import joblib
    from sklearn.datasets import load_iris
    from sklearn.ensemble import RandomForestClassifier

    x, y = load_iris(return_X_y=True)
    (jp_root_dir / "models").mkdir()
    joblib.dump(
        RandomForestClassifier(n_estimators=3, random_state=0).fit(x, y),
        jp_root_dir / "models" / "iris.joblib",
    )
    status, _ = await api("alice", "POST", "models", {"name": "iris", "path": "models/iris.joblib"})
    assert status == 201
    status, dep = await api("alice", "POST", "deployments", {"model": "iris:1", "auth": "required"})
    assert status == 201, dep
    base = "projects/alice/deployments/iris"
    try:
        assert dep["access"]["auth"] == "required"
        assert predict(dep["endpoint"]).status_code == 401
        # the panel's test form still works: the server passes with the router token
        body = {"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP64", "data": ROW[0]}]}
        status, answer = await api("alice", "POST", f"{base}/infer", body)
        assert status == 200 and answer["status"] == 200, answer
        status, made = await api(
            "alice", "POST", f"{base}/keys", {"name": "web", "expires_in_days": 30}
        )
        assert status == 201 and made["key"].startswith("cube_") and made["state"] == "active"
        assert made["expires_at"] and made["prefix"] == made["key"][:12]
        assert predict(dep["endpoint"], made["key"]).status_code == 200
        status, listed = await api("alice", "GET", f"{base}/keys")
        assert status == 200
        assert [(k["name"], k["key"]) for k in listed["keys"]] == [("web", None)]
        status, err = await api("alice", "POST", f"{base}/keys", {"name": "web"})
        assert status == 409 and "already has a key" in err["error"]
        status, err = await api("alice", "POST", f"{base}/keys", {"name": "w", "ttl": 3})
        assert status == 400 and "unknown fields" in err["error"]
        status, err = await api("alice", "POST", f"{base}/keys", {})
        assert status == 400 and "key name is required" in err["error"]
        status, got = await api("alice", "GET", f"{base}/access")
        assert status == 200 and got == {
            "auth": "required",
            "rate_limit": None,
            "allow": [],
            "deny": [],
        }
        status, view = await api(
            "alice", "PUT", f"{base}/access", {"rate_limit": {"rps": 50}, "allow": ["127.0.0.1"]}
        )
        assert status == 200 and view["access"]["rate_limit"] == {
            "rps": 50.0,
            "burst": 50,
            "per_key": False,
        }
        assert view["access"]["allow"] == ["127.0.0.1"] and view["access"]["auth"] == "required"
        status, err = await api("alice", "PUT", f"{base}/access", {"deny": ["nope"]})
        assert status == 400 and "not an IP address" in err["error"]
        # bob sees none of it
        for method, path in (
            ("GET", f"{base}/keys"),
            ("POST", f"{base}/keys"),
            ("GET", f"{base}/access"),
            ("PUT", f"{base}/access"),
            ("DELETE", f"{base}/keys/web"),
        ):
            status, err = await api(
                "bob", method, path, {"name": "b"} if method in ("POST", "PUT") else None
            )
            assert status == 404 and err["error"], (method, path)
        status, revoked = await api("alice", "DELETE", f"{base}/keys/{made['id']}")
        assert status == 200 and revoked["state"] == "revoked" and revoked["key"] is None
        assert predict(dep["endpoint"], made["key"]).status_code == 401
        status, err = await api("alice", "DELETE", f"{base}/keys/nothing")
        assert status == 404
    finally:
        await api("alice", "DELETE", base, params={"forget": "true"})
