"""Local deployments end to end: real sklearn models from the registry, real processes, real
HTTP, and a real Open Inference Protocol v2 client (tritonclient) from PyPI."""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from serving_util import stop_serving

from cube_lab.config import Settings
from cube_lab.errors import Conflict, NotFound
from cube_lab.identity import Caller
from cube_lab.workspace import Workspace

ALICE, BOB = Caller("alice"), Caller("bob")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, Any]]:
    """A workspace with two registered RandomForest versions of "iris" (different seeds)."""
    from sklearn.datasets import load_iris
    from sklearn.ensemble import RandomForestClassifier

    root = tmp_path_factory.mktemp("serving")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root))
        mp.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
        ws = Workspace.open(Settings.resolve(root / "cube-data"))
        x, y = load_iris(return_X_y=True)
        models = []
        for seed in (0, 1):
            model = RandomForestClassifier(n_estimators=20, random_state=seed).fit(x, y)
            ws.registry.register(ALICE, name="iris", obj=model)
            models.append(model)
        try:
            yield ws, (x, models)
        finally:
            stop_serving(ws, ALICE)
            ws.close()


def pid_alive(pid: int) -> bool:
    """Running (a zombie child of this test process is not: it has exited, unreaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def body_for(rows: np.ndarray) -> dict[str, Any]:
    return {
        "inputs": [
            {
                "name": "input-0",
                "shape": list(rows.shape),
                "datatype": "FP64",
                "data": rows.ravel().tolist(),
            }
        ]
    }


def post(port: int, path: str, body: Any, conn: http.client.HTTPConnection | None = None) -> Any:
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        conn.request("POST", path, data, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read()), resp.getheader("X-Cube-Version")
    finally:
        if own:
            conn.close()


def port_of(endpoint: str | None) -> int:
    assert endpoint
    return int(endpoint.rsplit(":", 1)[1])


def test_deploy_and_infer_with_an_oip_v2_client(served: Any) -> None:
    httpclient = pytest.importorskip("tritonclient.http", reason="pip install tritonclient[http]")
    ws, (x, models) = served
    started = time.monotonic()
    dep = ws.serving.deploy(ALICE, "iris:1", name="oip")
    took = time.monotonic() - started
    assert dep.status == "running" and dep.version == 1 and dep.endpoint
    print(f"deploy-to-ready {took:.2f}s")
    client = httpclient.InferenceServerClient(url=dep.endpoint.removeprefix("http://"))
    try:
        assert client.is_server_live() and client.is_server_ready()
        assert client.is_model_ready("iris") and client.is_model_ready("iris", "1")
        meta = client.get_model_metadata("iris")
        assert meta["name"] == "iris" and meta["versions"] == ["1"]
        assert meta["inputs"][0]["shape"] == [-1, 4]
        rows = x[[0, 60, 120]]
        inp = httpclient.InferInput("input-0", list(rows.shape), "FP64")
        inp.set_data_from_numpy(rows, binary_data=False)
        outputs = [
            httpclient.InferRequestedOutput("predict", binary_data=False),
            httpclient.InferRequestedOutput("predict_proba", binary_data=False),
        ]
        result = client.infer("iris", [inp], model_version="1", outputs=outputs)
        assert result.as_numpy("predict").tolist() == models[0].predict(rows).tolist()
        assert np.allclose(result.as_numpy("predict_proba"), models[0].predict_proba(rows))
        assert result.get_response()["model_version"] == "1"
    finally:
        client.close()
    # the plain JSON route answers too
    status, answer, version = post(port_of(dep.endpoint), "/predict", {"instances": rows.tolist()})
    assert status == 200 and version == "1"
    assert answer["predictions"] == models[0].predict(rows).tolist()
    pids = [p["pid"] for p in dep.processes]
    stopped = ws.serving.undeploy(ALICE, "oip")
    assert stopped.status == "stopped" and stopped.endpoint is None
    assert not any(pid_alive(p) for p in pids)


def test_malformed_requests_get_400_and_the_server_keeps_serving(served: Any) -> None:
    ws, (x, models) = served
    dep = ws.serving.deploy(ALICE, "iris:1", name="bad-input")
    port = port_of(dep.endpoint)
    good = body_for(x[:2])
    path = "/v2/models/iris/infer"
    cases: list[tuple[Any, str]] = [
        (b"{not json", "not valid JSON"),
        ({"rows": []}, "'inputs' must be a non-empty list"),
        ({"inputs": [{"name": "x", "shape": [2, 4], "datatype": "FP64"}]}, "has no data"),
        (
            {"inputs": [{"name": "x", "shape": [2, 3], "datatype": "FP64", "data": [1] * 8}]},
            "holds 6 values but data has 8",
        ),
        (
            {"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FLOAT", "data": [1] * 4}]},
            "unknown datatype",
        ),
        (
            {"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP64", "data": ["a"] * 4}]},
            "cannot be read as FP64",
        ),
        (body_for(x[:2, :3]), "expects 4 features per row, got 3"),
        ({**good, "outputs": [{"name": "nope"}]}, "unknown output 'nope'"),
    ]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for body, expected in cases:
        status, answer, _ = post(port, path, body, conn)  # one keep-alive connection throughout
        assert status == 400, (body, answer)
        assert expected in answer["error"], answer
        status, answer, _ = post(port, path, good, conn)
        assert status == 200 and answer["outputs"][0]["data"] == models[0].predict(x[:2]).tolist()
    conn.close()
    status, answer, _ = post(port, "/v2/models/other/infer", good)
    assert status == 404 and "not served" in answer["error"]
    status, answer, _ = post(port, "/v2/models/iris/versions/7/infer", good)
    assert status == 404 and "not deployed" in answer["error"]
    # garbage that is not HTTP at all: a 400, the connection closes, the server lives on
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"HELLO\r\n\r\n")
        assert sock.recv(200).startswith(b"HTTP/1.1 400")
    assert post(port, path, good)[0] == 200
    ws.serving.undeploy(ALICE, "bad-input")


def _hammer(port: int, body: Any, stop: threading.Event, out: list[Any], limit: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        while not stop.is_set() and len(out) < limit:
            try:
                status, _, version = post(port, "/v2/models/iris/infer", body, conn)
                out.append((status, version))
            except (OSError, http.client.HTTPException) as exc:
                out.append((f"{type(exc).__name__}: {exc}", None))
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    finally:
        conn.close()


def test_canary_split_is_within_tolerance_over_2000_requests(served: Any) -> None:
    ws, (x, _) = served
    dep = ws.serving.deploy(ALICE, "iris:1", name="canary")
    dep = ws.serving.canary(ALICE, "canary", "2", 25)
    assert [(t["version"], t["weight"]) for t in dep.traffic] == [(1, 75.0), (2, 25.0)]
    port = port_of(dep.endpoint)
    results: list[Any] = []
    threads = [
        threading.Thread(
            target=_hammer, args=(port, body_for(x[:2]), threading.Event(), results, 2000)
        )
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results = results[:2000]
    assert {status for status, _ in results} == {200}
    counts = Counter(version for _, version in results)
    sd = (2000 * 0.25 * 0.75) ** 0.5  # binomial: about 19 requests
    assert abs(counts["2"] - 500) < 5 * sd, counts
    # the router's Prometheus counters agree with what the clients saw
    from prometheus_client.parser import text_string_to_metric_families

    text = ws.serving.metrics(ALICE, "canary")
    samples = {
        (s.name, s.labels.get("version"), s.labels.get("code")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    served_v2 = samples[("cube_serving_requests_total", "2", "200")]
    assert served_v2 >= counts["2"]
    assert samples[("cube_serving_request_duration_seconds_count", "2", None)] == served_v2
    # promote: v2 takes everything, v1's servers stop; rollback brings v1 back
    dep = ws.serving.promote(ALICE, "canary")
    assert dep.version == 2 and dep.previous_version == 1
    assert {p["version"] for p in dep.processes if p["role"] == "server"} == {2}
    assert {post(port, "/v2/models/iris/infer", body_for(x[:1]))[2] for _ in range(10)} == {"2"}
    dep = ws.serving.rollback(ALICE, "canary")
    assert dep.version == 1
    assert {post(port, "/v2/models/iris/infer", body_for(x[:1]))[2] for _ in range(10)} == {"1"}
    ws.serving.undeploy(ALICE, "canary")


def test_version_switch_under_load_drops_no_request(served: Any) -> None:
    ws, (x, _) = served
    dep = ws.serving.deploy(ALICE, "iris:1", name="switch", replicas=2)
    port = port_of(dep.endpoint)
    old_pids = [p["pid"] for p in dep.processes if p["role"] == "server"]
    stop, results = threading.Event(), []
    threads = [
        threading.Thread(target=_hammer, args=(port, body_for(x[:2]), stop, results, 20000))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    time.sleep(0.5)
    dep = ws.serving.switch(ALICE, "switch", "2")
    n_at_switch = len(results)
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join()
    failures = [r for r in results if r[0] != 200]
    assert not failures, failures[:5]
    versions = [v for _, v in results]
    assert "1" in versions[:n_at_switch] and versions[-1] == "2"
    assert set(versions[n_at_switch + 8 :]) == {"2"}  # 4 clients: at most their last v1 answers
    assert dep.version == 2 and dep.previous_version == 1
    assert not any(pid_alive(p) for p in old_pids)
    ws.serving.undeploy(ALICE, "switch")


def test_shadow_traffic_is_mirrored_and_logged(served: Any) -> None:
    ws, (x, models) = served
    ws.serving.deploy(ALICE, "iris:1", name="shadow")
    dep = ws.serving.shadow(ALICE, "shadow", "2")
    port = port_of(dep.endpoint)
    for i in range(20):
        status, _, version = post(port, "/v2/models/iris/infer", body_for(x[i : i + 1]))
        assert status == 200 and version == "1"  # callers only ever see the primary
    deadline = time.monotonic() + 10
    while len(ws.serving.shadow_log(ALICE, "shadow")) < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    records = ws.serving.shadow_log(ALICE, "shadow")
    assert len(records) == 20
    first = records[0]
    assert first["primary"]["version"] == "1" and first["shadow"]["version"] == "2"
    shadow_answer = json.loads(first["shadow"]["body"])
    assert shadow_answer["model_version"] == "2"
    assert shadow_answer["outputs"][0]["data"] == models[1].predict(x[:1]).tolist()
    dep = ws.serving.promote(ALICE, "shadow")
    assert [(t["version"], t["shadow"]) for t in dep.traffic] == [(2, False)]
    ws.serving.undeploy(ALICE, "shadow")


def test_a_restarted_server_adopts_live_deployments_and_marks_dead_ones(served: Any) -> None:
    ws, (x, _) = served
    ws.serving.deploy(ALICE, "iris:1", name="keep")
    gone = ws.serving.deploy(ALICE, "iris:1", name="gone")
    # a new server process: a new workspace over the same store, holding no children
    fresh = Workspace.open(ws.settings)
    try:
        router = next(p["pid"] for p in gone.processes if p["role"] == "router")
        servers = [p["pid"] for p in gone.processes if p["role"] == "server"]
        os.kill(router, 9)
        deadline = time.monotonic() + 5
        while ws.serving._alive(router) and time.monotonic() < deadline:
            time.sleep(0.02)
        found = fresh.serving.recover()
        assert "keep" in found["adopted"]
        assert fresh.serving.get(ALICE, "gone").status == "dead"
        assert not any(pid_alive(p) for p in servers)  # leftovers were stopped
        keep = fresh.serving.get(ALICE, "keep")
        assert keep.status == "running"
        assert post(port_of(keep.endpoint), "/v2/models/iris/infer", body_for(x[:1]))[0] == 200
        fresh.serving.undeploy(ALICE, "keep")  # the adopter can stop what it adopted
        assert not any(pid_alive(p["pid"]) for p in keep.processes)
    finally:
        fresh.close()


def test_other_users_cannot_see_or_touch_a_deployment(served: Any) -> None:
    ws, _ = served
    ws.serving.deploy(ALICE, "iris:1", name="private")
    assert "private" not in [d.name for d in ws.serving.list(BOB)]
    for call in (
        lambda: ws.serving.get(BOB, "private"),
        lambda: ws.serving.undeploy(BOB, "private"),
        lambda: ws.serving.get(BOB, "private", "alice"),
        lambda: ws.serving.switch(BOB, "private", "2", project="alice"),
        lambda: ws.serving.metrics(BOB, "private", "alice"),
        lambda: ws.serving.deploy(BOB, "iris:1", project="alice"),
    ):
        with pytest.raises(NotFound):
            call()
    assert ws.serving.get(ALICE, "private").status == "running"
    with pytest.raises(Conflict):
        ws.serving.deploy(ALICE, "iris:2", name="private")
    ws.serving.delete(ALICE, "private")
    with pytest.raises(NotFound):
        ws.serving.get(ALICE, "private")


def test_a_model_that_cannot_load_fails_the_deploy_with_its_log(served: Any) -> None:
    ws, _ = served
    folder = Path(ws.settings.data_dir) / "broken"
    folder.mkdir(exist_ok=True)
    (folder / "weights.bin").write_bytes(b"\0" * 10)
    ws.registry.register(ALICE, name="broken", path=folder)
    with pytest.raises(Exception) as info:
        ws.serving.deploy(ALICE, "broken:1")
    assert "exited" in str(info.value) and "cannot serve flavor 'generic'" in info.value.detail
    dep = ws.serving.get(ALICE, "broken")
    assert dep.status == "failed" and not any(pid_alive(p["pid"]) for p in dep.processes)


def test_later_deploys_fork_from_the_warm_host(served: Any) -> None:
    """The first deploy starts the warm host once it is ready; later deploys fork their
    processes from it (their parent is the host) and answer exactly as cold ones do."""
    from cube_lab.serving.warmhost import ask

    ws, (x, models) = served
    sock = Path(ws.settings.data_dir) / "serving" / "warmhost.sock"
    ws.serving.deploy(ALICE, "iris:1", name="warm-a")
    deadline = time.monotonic() + 60
    while (hello := ask(sock, {"op": "hello"})) is None and time.monotonic() < deadline:
        time.sleep(0.1)  # the host imports NumPy and scikit-learn before it answers
    assert hello is not None, "no warm host answered after a deploy"
    dep = ws.serving.deploy(ALICE, "iris:2", name="warm-b", replicas=2)
    for proc in dep.processes:
        stat = Path(f"/proc/{proc['pid']}/stat").read_text()
        assert int(stat.rsplit(")", 1)[1].split()[1]) == hello["pid"], proc
    rows = x[[3, 70, 140]]
    status, answer, version = post(port_of(dep.endpoint), "/v2/models/iris/infer", body_for(rows))
    assert status == 200 and version == "2"
    assert answer["outputs"][0]["data"] == models[1].predict(rows).tolist()
    pids = [p["pid"] for p in dep.processes]
    ws.serving.undeploy(ALICE, "warm-b")
    ws.serving.undeploy(ALICE, "warm-a")
    deadline = time.monotonic() + 10
    while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)  # the host reaps what it forked
    assert not any(pid_alive(p) for p in pids)
    assert ask(sock, {"op": "quit"}) == {"bye": True}
    # a restarted server starts the host again, since this data dir has served models
    assert ws.serving.prewarm() is True
    deadline = time.monotonic() + 60
    while ask(sock, {"op": "hello"}) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ws.serving.prewarm() is False  # one answers: nothing to start
    assert ask(sock, {"op": "quit"}) == {"bye": True}


def test_batching_and_opt_in_samples_over_http(served: Any) -> None:
    """A batching deployment answers concurrent clients exactly; sampling keeps what it was
    asked to keep (all of it at 100%, nothing at 0) and is off unless turned on."""
    ws, (x, models) = served
    dep = ws.serving.deploy(ALICE, "iris:1", name="batched", batch_max_rows=64, samples_percent=100)
    assert dep.batching == {"max_rows": 64, "wait_ms": 0.0} and dep.samples_percent == 100
    port = port_of(dep.endpoint)
    answers: dict[int, Any] = {}

    def client(i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for j in range(5):
            rows = x[[(i * 5 + j) % 150, (i * 7 + j) % 150]]
            status, answer, _ = post(port, "/v2/models/iris/infer", body_for(rows), conn)
            answers[i * 5 + j] = (status, answer["outputs"][0]["data"], rows)
        conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(answers) == 80
    for status, got, rows in answers.values():
        assert status == 200 and got == models[0].predict(rows).tolist()
    found = ws.serving.samples(ALICE, "batched", limit=500)
    assert found["percent"] == 100 and len(found["samples"]) == 80
    sample = found["samples"][-1]
    assert sample["status"] == 200 and sample["version"] == "1"
    assert json.loads(sample["request"])["inputs"][0]["shape"] == [2, 4]
    assert json.loads(sample["response"])["model_name"] == "iris"
    ws.serving.set_samples(ALICE, "batched", 0)
    post(port, "/v2/models/iris/infer", body_for(x[:2]))
    assert len(ws.serving.samples(ALICE, "batched", limit=500)["samples"]) == 80
    ws.serving.undeploy(ALICE, "batched")
    plain = ws.serving.deploy(ALICE, "iris:1", name="plain")
    assert plain.batching is None and plain.samples_percent == 0
    post(port_of(plain.endpoint), "/v2/models/iris/infer", body_for(x[:2]))
    assert ws.serving.samples(ALICE, "plain")["samples"] == []
    ws.serving.undeploy(ALICE, "plain")
