"""A deployment's model servers answer only its router (issue 15, defect 5).

The router enforces API keys, rate limits and address lists, but the model servers behind it
listen on 127.0.0.1 on ports anyone on the machine can find (``ss -ltnp``, the ready files).
Before the backend key, a request straight to such a port got predictions with no key at all.
These run real deployments (router and model server processes, a real sklearn model, HTTP)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from serving_util import stop_serving

from cube_lab.config import Settings
from cube_lab.identity import Caller
from cube_lab.serving import access, backend_auth
from cube_lab.serving.server import ModelApp
from cube_lab.workspace import Workspace

ALICE = Caller("alice")
ROW = [[5.1, 3.5, 1.4, 0.2]]
INFER = {
    "inputs": [{"name": "input-0", "shape": [1, 4], "datatype": "FP64", "data": ROW[0]}],
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    from sklearn.datasets import load_iris
    from sklearn.ensemble import RandomForestClassifier

    root = tmp_path_factory.mktemp("backend-auth")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root))
        mp.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
        mp.setenv("CUBE_LAB_SERVING_WARM_IDLE_S", "15")
        for var in ("JUPYTERHUB_API_URL", "JUPYTERHUB_API_TOKEN", "CUBE_HUB_ADMIN_URL"):
            mp.delenv(var, raising=False)
        mp.delenv(access.ENV_DEFAULT_AUTH, raising=False)
        mp.delenv(backend_auth.KEY_ENV, raising=False)
        ws = Workspace.open(Settings.resolve(root / "cube-data"))
        x, y = load_iris(return_X_y=True)
        for seed in (0, 1):
            model = RandomForestClassifier(n_estimators=5, random_state=seed).fit(x, y)
            ws.registry.register(ALICE, name="iris", obj=model)
        try:
            yield ws
        finally:
            stop_serving(ws, ALICE)
            ws.close()


def server_ports(ws: Workspace, name: str) -> list[int]:
    ports = [p["port"] for p in ws.serving.get(ALICE, name).processes if p["role"] == "server"]
    assert ports
    return ports


def ready_file_ports(ws: Workspace, name: str) -> list[int]:
    """The model servers' ports as anyone on the machine finds them: the ready files."""
    folder = Path(ws.serving._folder(ALICE, name, None)[1])
    return [json.loads(f.read_text())["port"] for f in (folder / "ready").glob("server-*.json")]


def assert_refused_directly(port: int) -> None:
    base = f"http://127.0.0.1:{port}"
    calls = [
        ("POST", "/predict", {"instances": ROW}),
        ("POST", "/v2/models/iris/infer", INFER),
        ("POST", "/v2/models/iris/versions/1/infer", INFER),
        ("GET", "/v2/models/iris", None),
        ("GET", "/v2", None),
        ("GET", "/v2/models/iris/ready", None),
    ]
    for method, path, body in calls:
        resp = requests.request(method, base + path, json=body, timeout=30)
        assert resp.status_code == 401, (path, resp.status_code, resp.text)
        answer = resp.json()
        assert answer["error"] == "this model server needs its router's backend key"
        assert "deployment's endpoint" in answer["detail"]
        # a key that is not the right one (or a router token, or nonsense bytes): 403
        for wrong in ("0" * 64, "x", "caf\u00e9"):
            resp = requests.request(
                method, base + path, json=body, headers={backend_auth.HEADER: wrong}, timeout=30
            )
            assert resp.status_code == 403, (path, wrong, resp.text)
            assert resp.json()["error"] == "the backend key is not this model server's"
    # the health probes carry no data: they stay open (GET only)
    for path in ("/v2/health/live", "/v2/health/ready"):
        assert requests.get(base + path, timeout=10).status_code == 200, path
        assert requests.post(base + path, json={}, timeout=10).status_code == 401, path


def test_a_model_server_refuses_requests_that_pass_by_the_router(served: Workspace) -> None:
    ws = served
    dep = ws.serving.deploy(ALICE, "iris:1", name="keyed", auth="required")
    assert dep.endpoint
    ports = ready_file_ports(ws, "keyed")
    assert sorted(ports) == sorted(server_ports(ws, "keyed"))
    for port in ports:
        assert_refused_directly(port)  # before the fix: 200 with predictions, no key at all

    # through the router, with an API key, it answers as before
    key = ws.serving.create_key(ALICE, "keyed", "ci").key
    assert key
    bearer = {"Authorization": f"Bearer {key}"}
    resp = requests.post(f"{dep.endpoint}/predict", json={"instances": ROW}, headers=bearer)
    assert resp.status_code == 200, resp.text
    assert resp.json()["predictions"] == [0]
    resp = requests.post(f"{dep.endpoint}/v2/models/iris/infer", json=INFER, headers=bearer)
    assert resp.status_code == 200 and resp.json()["outputs"][0]["data"] == [0], resp.text
    resp = requests.get(f"{dep.endpoint}/v2/models/iris", headers=bearer, timeout=10)
    assert resp.status_code == 200 and resp.json()["name"] == "iris"
    assert requests.post(f"{dep.endpoint}/predict", json={"instances": ROW}).status_code == 401

    # the key is in no world-readable place: not in argv, not in the ready files
    token = ws.serving.router_token(ALICE, "keyed")
    secret = backend_auth.derive(token)
    assert secret and secret != token
    for proc in dep.processes:
        assert secret not in Path(f"/proc/{proc['pid']}/cmdline").read_text()
    folder = Path(ws.serving._folder(ALICE, "keyed", None)[1])
    for ready in (folder / "ready").iterdir():
        assert secret not in ready.read_text()
    # with the right key a direct call works: what refused the others was the key alone
    resp = requests.post(
        f"http://127.0.0.1:{ports[0]}/predict",
        json={"instances": ROW},
        headers={backend_auth.HEADER: secret},
        timeout=30,
    )
    assert resp.status_code == 200 and resp.json()["predictions"] == [0], resp.text
    ws.serving.undeploy(ALICE, "keyed")


def test_open_deployments_work_end_to_end_and_shadows_and_switches_keep_the_key(
    served: Workspace,
) -> None:
    """``auth none``: no API key needed through the router, but still none straight to a model
    server; the shadow copies and the servers a version switch starts get the key too."""
    from cube_lab.serving.warmhost import ask

    ws = served
    dep = ws.serving.deploy(ALICE, "iris:1", name="open", auth="none", replicas=2)
    assert dep.access["auth"] == "none" and dep.endpoint
    for _ in range(4):  # both replicas answer the router
        resp = requests.post(f"{dep.endpoint}/predict", json={"instances": ROW}, timeout=30)
        assert resp.status_code == 200 and resp.json()["predictions"] == [0], resp.text
    state = requests.get(f"{dep.endpoint}/v2/health/ready", timeout=10)
    assert state.status_code == 200 and state.json() == {"ready": True}
    for port in server_ports(ws, "open"):
        assert_refused_directly(port)

    # the shadow's copies carry the key: the mirrored answers are the model's, not 401s
    ws.serving.shadow(ALICE, "open", "2")  # starts v2's servers: keyed too
    both = set(server_ports(ws, "open"))
    assert len(both) == 4  # two of v1, two of v2
    for port in both:
        assert_refused_directly(port)
    for _ in range(3):
        resp = requests.post(f"{dep.endpoint}/v2/models/iris/infer", json=INFER, timeout=30)
        assert resp.status_code == 200 and resp.headers["X-Cube-Version"] == "1"
    deadline = time.monotonic() + 10
    shadowed: list[dict[str, Any]] = []
    while len(shadowed) < 3 and time.monotonic() < deadline:
        shadowed = ws.serving.shadow_log(ALICE, "open")
        time.sleep(0.05)
    assert len(shadowed) == 3, shadowed
    for record in shadowed:
        assert record["shadow"]["status"] == 200, record
        assert record["shadow"]["version"] == "2"
        assert json.loads(record["shadow"]["body"])["model_name"] == "iris"

    # switched over to the shadow's servers: the router reaches them, nobody else does
    ws.serving.switch(ALICE, "open", "2")
    resp = requests.post(f"{dep.endpoint}/predict", json={"instances": ROW}, timeout=30)
    assert resp.status_code == 200 and resp.headers["X-Cube-Version"] == "2", resp.text
    for port in server_ports(ws, "open"):
        assert_refused_directly(port)
    ws.serving.undeploy(ALICE, "open")

    # a deploy once the warm host answers forks its servers from it: keyed the same way
    sock = Path(ws.settings.data_dir) / "serving" / "warmhost.sock"
    deadline = time.monotonic() + 60
    while ask(sock, {"op": "hello"}) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    fresh = ws.serving.deploy(ALICE, "iris:2", name="forked", auth="none")
    hello = ask(sock, {"op": "hello"})
    assert hello is not None
    servers = [p for p in fresh.processes if p["role"] == "server"]
    for proc in servers:  # forked from the warm host, not started afresh
        stat = Path(f"/proc/{proc['pid']}/stat").read_text()
        assert int(stat.rsplit(")", 1)[1].split()[1]) == hello["pid"], proc
    resp = requests.post(f"{fresh.endpoint}/predict", json={"instances": ROW}, timeout=30)
    assert resp.status_code == 200, resp.text
    for port in server_ports(ws, "forked"):
        assert_refused_directly(port)
    ws.serving.undeploy(ALICE, "forked")


def test_the_warm_hosts_socket_is_its_owners_alone(served: Workspace) -> None:
    """Whoever can connect to it starts processes as its owner, with the environment it names
    (a backend key among it): mode 0600 whatever the umask."""
    from cube_lab.serving.warmhost import ask

    ws = served
    sock = Path(ws.settings.data_dir) / "serving" / "warmhost.sock"
    # as after a deploy from this data dir (the module's earlier tests may run on another
    # worker); prewarm starts the host in the background, unless it is up already
    sock.parent.mkdir(exist_ok=True)
    assert ws.serving.prewarm() or ask(sock, {"op": "hello"}) is not None
    deadline = time.monotonic() + 300  # it imports NumPy and scikit-learn first: long when busy
    while ask(sock, {"op": "hello"}) is None:
        assert time.monotonic() < deadline, "no warm host answered in 300 s"
        time.sleep(0.1)
    assert sock.stat().st_mode & 0o777 == 0o600


def test_the_check_itself() -> None:
    """The model app alone: the key first, probes open, odd header bytes a 403 (not a 500)."""

    class Stub:
        platform = "stub"

        def inputs(self) -> list[Any]:
            return []

        def outputs(self) -> list[Any]:
            return []

        def predict_rows(self, rows: list[Any]) -> list[Any]:
            return [len(r) for r in rows]

    from cube_lab.serving.http import Request

    app = ModelApp("m", "1", Stub(), key="k" * 64)  # type: ignore[arg-type]
    open_app = ModelApp("m", "1", Stub())  # type: ignore[arg-type]

    def call(a: ModelApp, path: str, headers: dict[str, str], method: str = "POST") -> Any:
        body = b'{"instances": [[1, 2]]}'
        resp = a(Request(method, path, "", headers, body, True, path))
        return resp.status, json.loads(resp.body)

    assert call(app, "/predict", {})[0] == 401
    assert call(app, "/predict", {"x-cube-backend-key": "k" * 63})[0] == 403
    assert call(app, "/predict", {"x-cube-backend-key": "\xff\x00" * 32})[0] == 403
    assert call(app, "/nowhere", {})[0] == 401  # not even which routes exist
    assert call(app, "/predict", {"x-cube-backend-key": "k" * 64}) == (
        200,
        {"predictions": [2], "model_name": "m", "model_version": "1"},
    )
    assert call(app, "/v2/health/live", {}, "GET") == (200, {"live": True})
    assert call(app, "/v2/health/ready", {}, "HEAD")[0] == 200
    assert call(open_app, "/predict", {})[0] == 200  # started by hand without a key: open
    assert backend_auth.derive("") == ""
    assert backend_auth.derive("a") != backend_auth.derive("b")
