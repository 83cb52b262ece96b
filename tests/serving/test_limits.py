"""Serving under big and hostile bodies: memory bounded across connections, small requests
fast while a big one is read and parsed, and deeply nested JSON answered with a 400.

The end-to-end tests run a real deployment (router + model server processes, a registered
scikit-learn model) and read the processes' peak memory from ``/proc/<pid>/status``.
Figures on this 2-core machine (see benchmarks/RESULTS.md, "Serving under big bodies"):
before the body budget, 8 parallel 58 MB bodies took the router from 24 to 1,325 MB and the
model server from 193 to 660 MB, and a 2-row request waited up to 6.4 s behind a 48 MB one.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from serving_util import stop_serving

from cube_lab.config import Settings
from cube_lab.identity import Caller
from cube_lab.serving import backend_auth, protocol
from cube_lab.serving.http import (
    BodyBudget,
    Request,
    Response,
    Server,
    json_response,
    parse_size,
)
from cube_lab.workspace import Workspace

ALICE = Caller("alice")
MB = 1_000_000
MiB = 1024 * 1024
BUDGET = 128 * MiB  # the deployment's budget in these tests ($CUBE_SERVING_BODY_BUDGET)
SLACK = 100 * MiB  # what a process may grow by beyond its budget (one request's arrays, etc.)
INFER = "/v2/models/iris/infer"
SMALL = json.dumps(
    {"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP64", "data": [5.1, 3.5, 1.4, 0.2]}]}
).encode()


def big_body(nbytes: int, seed: int = 0) -> tuple[bytes, np.ndarray]:
    """An OIP v2 request of about ``nbytes`` ([N, 4] FP64 rows, ``predict`` output only) and
    its rows."""
    rows = max(1, nbytes // 77)
    values = np.random.default_rng(seed).uniform(0.1, 7.9, size=(rows, 4))
    head = b'{"inputs":[{"name":"x","shape":[%d,4],"datatype":"FP64","data":' % rows
    tail = b'}],"outputs":[{"name":"predict"}]}'
    return head + json.dumps(values.ravel().tolist()).encode() + tail, values


def post(
    port: int, path: str, body: bytes, timeout: float = 300, key: dict[str, str] | None = None
) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, body, {"Content-Type": "application/json", **(key or {})})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, Any]]:
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    root = tmp_path_factory.mktemp("limits")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root))
        mp.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
        mp.setenv("CUBE_SERVING_BODY_BUDGET", "128MiB")  # the router and model server read it
        ws = Workspace.open(Settings.resolve(root / "cube-data"))
        x, y = load_iris(return_X_y=True)
        model = LogisticRegression(max_iter=500).fit(x, y)
        ws.registry.register(ALICE, name="iris", obj=model)
        try:
            yield ws, model
        finally:
            stop_serving(ws, ALICE)
            ws.close()


def ports_and_pids(dep: Any) -> tuple[int, int, int, int]:
    router = next(p for p in dep.processes if p["role"] == "router")
    server = next(p for p in dep.processes if p["role"] == "server")
    return int(dep.endpoint.rsplit(":", 1)[1]), router["pid"], server["port"], server["pid"]


def backend_key(ws: Workspace, name: str) -> dict[str, str]:
    """The header a model server wants straight at its port (it answers only its router)."""
    token = ws.serving.router_token(ALICE, name)
    return {backend_auth.HEADER: backend_auth.derive(token)}


def parallel(
    port: int, body: bytes, n: int, key: dict[str, str] | None = None
) -> list[tuple[int, Any]]:
    out: list[tuple[int, Any]] = []
    threads = [
        threading.Thread(target=lambda: out.append(post(port, INFER, body, key=key)))
        for _ in range(n)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_parallel_big_bodies_stay_within_the_budget(deployed: Any) -> None:
    ws, model = deployed
    dep = ws.serving.deploy(ALICE, "iris:1", name="mem")
    port, router_pid, server_port, server_pid = ports_and_pids(dep)
    body, rows = big_body(60 * MB)
    expected = model.predict(rows).tolist()
    idle = {pid: kb(pid, "VmRSS") for pid in (router_pid, server_pid)}
    started = time.monotonic()
    answers = parallel(port, body, 8)  # through the router, as users call it
    took = time.monotonic() - started
    router_growth = kb(router_pid, "VmHWM") - idle[router_pid]
    # and straight at the model server, which has its own budget
    answers += parallel(server_port, body, 4, backend_key(ws, "mem"))
    server_growth = kb(server_pid, "VmHWM") - idle[server_pid]
    print(
        f"8 x {len(body) / MB:.0f} MB via the router in {took:.1f} s; peak growth: "
        f"router {router_growth / MiB:.0f} MiB, model server {server_growth / MiB:.0f} MiB"
    )
    assert [status for status, _ in answers] == [200] * 12
    assert all(a["outputs"][0]["data"] == expected for _, a in answers)
    # before the budget: router +1,301 MB, model server +467 MB (8 bodies)
    assert router_growth < BUDGET + SLACK, router_growth
    assert server_growth < BUDGET + SLACK, server_growth
    ws.serving.undeploy(ALICE, "mem")


def test_a_small_request_stays_fast_while_a_big_one_is_read_and_parsed(deployed: Any) -> None:
    ws, _ = deployed
    dep = ws.serving.deploy(ALICE, "iris:1", name="latency")
    port = ports_and_pids(dep)[0]
    body, _ = big_body(50 * MB, seed=1)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def small() -> float:
        t = time.perf_counter()
        conn.request("POST", INFER, SMALL, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200, resp.read()
        resp.read()
        return time.perf_counter() - t

    small()
    done = threading.Event()
    big: list[tuple[int, Any]] = []

    def send() -> None:
        big.append(post(port, INFER, body))
        done.set()

    sender = threading.Thread(target=send)
    started = time.perf_counter()
    sender.start()
    during = []
    while not done.is_set():
        during.append(small())
    whole = time.perf_counter() - started
    sender.join()
    conn.close()
    print(
        f"{len(during)} small requests during a {len(body) / MB:.0f} MB one ({whole:.1f} s): "
        f"worst {max(during) * 1000:.0f} ms, median {np.median(during) * 1000:.1f} ms"
    )
    assert big[0][0] == 200
    assert len(during) >= 10  # the window was long enough to measure something
    assert max(during) < 0.5  # before: 6.4 s (the loop parsed the big body itself)
    ws.serving.undeploy(ALICE, "latency")


def test_deeply_nested_json_gets_a_400(deployed: Any) -> None:
    ws, _ = deployed
    dep = ws.serving.deploy(ALICE, "iris:1", name="nested")
    port, _, server_port, _ = ports_and_pids(dep)
    deep = b"[" * 100_000 + b"]" * 100_000
    in_object = b'{"inputs": [{"name": "x", "shape": [1], "datatype": "FP64", "data": ' + deep
    in_object += b"}]}"
    padded = deep + b" " * (2 * MiB)  # big enough to be parsed on the worker thread
    for target, key in ((port, None), (server_port, backend_key(ws, "nested"))):
        for path in (INFER, "/predict", "/v2/models/iris/versions/1/infer"):
            for body in (deep, in_object, padded):
                status, answer = post(target, path, body, key=key)
                assert status == 400, (path, len(body), answer)
                assert answer["error"] == "the request body is nested too deeply"
                assert "flat 'data' list" in answer["detail"]
    # nesting the parser accepts but numpy cannot hold is a 400 too, and BYTES data nested
    # that deep no longer overflows the flattening
    for datatype in ("FP64", "BYTES"):
        data = "[" * 900 + '"a"' + "]" * 900
        body = f'{{"inputs":[{{"name":"x","shape":[1],"datatype":"{datatype}","data":{data}}}]}}'
        status, answer = post(port, INFER, body.encode())
        assert status in (200, 400), answer
        assert status == 400 or answer["outputs"], answer
    assert post(port, INFER, SMALL)[0] == 200
    ws.serving.undeploy(ALICE, "nested")


# -- the HTTP layer, in process ---------------------------------------------------------------


def test_parse_size() -> None:
    assert parse_size("268435456") == 256 * MiB
    assert parse_size("256MiB") == parse_size("256M") == 256 * MiB
    assert parse_size("1GiB") == 1024 * MiB
    assert parse_size("512MB") == 512 * MB
    for bad in ("", "lots", "-1", "1.5G"):
        with pytest.raises(ValueError, match="not a size"):
            parse_size(bad)


def test_a_bad_budget_stops_the_server_with_a_message(tmp_path: Path) -> None:
    env = dict(os.environ, CUBE_SERVING_BODY_BUDGET="lots")
    done = subprocess.run(
        [sys.executable, "-m", "cube_lab.serving.router", "--name", "x"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "CUBE_SERVING_BODY_BUDGET" in done.stderr and "not a size" in done.stderr


def test_budget_grants_in_order() -> None:
    budget = BodyBudget(100)
    woken: list[str] = []
    assert budget.take(60, lambda: woken.append("first"))
    assert not budget.take(50, lambda: woken.append("a"))
    assert not budget.take(10, lambda: woken.append("b"))  # fits, but may not pass "a"
    budget.give(60)
    assert woken == ["a", "b"] and budget.used == 60 and budget.peak == 60


def _raw(port: int, data: bytes, answers: int) -> list[tuple[int, bytes]]:
    """Send bytes, read ``answers`` responses (status, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(data)
        got: list[tuple[int, bytes]] = []
        buf = b""
        while len(got) < answers:
            chunk = sock.recv(65536)
            if not chunk:
                break
            buf += chunk
            while b"\r\n\r\n" in buf:
                head, rest = buf.split(b"\r\n\r\n", 1)
                length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                if len(rest) < length:
                    break
                got.append((int(head.split(b" ")[1]), rest[:length]))
                buf = rest[length:]
        return got


def _request(body: bytes, path: str = "/echo") -> bytes:
    return b"POST %s HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (path.encode(), len(body)) + body


def test_bodies_wait_for_the_budget_and_small_ones_pass() -> None:
    """Three 600 KB bodies with a 1 MiB budget: one is read at a time, and a small request
    on another connection is answered while they wait."""
    seen: list[tuple[str, int, float]] = []
    gate = asyncio.Event()

    async def slow(req: Request) -> Response:
        await gate.wait()
        return json_response(200, {"n": len(req.body)})

    def handler(req: Request) -> Any:
        seen.append((req.path, len(req.body), time.monotonic()))
        if req.path == "/slow":
            return slow(req)
        return json_response(200, {"n": len(req.body), "sum": sum(req.body) % 251})

    async def main() -> None:
        budget = BodyBudget(1 * MiB)
        server = Server(handler, budget)
        port = await server.start("127.0.0.1", 0)
        loop = asyncio.get_running_loop()
        big = bytes(range(256)) * (600 * 1024 // 256)
        bigs = [loop.run_in_executor(None, _raw, port, _request(big, "/slow"), 1) for _ in range(3)]
        await asyncio.sleep(0.5)
        assert [p for p, _, _ in seen] == ["/slow"]  # one granted; two wait unread
        assert budget.used == len(big) and len(budget.waiters) == 2
        small = await loop.run_in_executor(None, _raw, port, _request(b"x" * 100), 1)
        assert small[0][0] == 200  # small bodies are not held up by the queue
        # pipelined requests on one connection, answered in order
        piped = await loop.run_in_executor(
            None, _raw, port, _request(b"a" * 10) + _request(b"b" * 60_000), 2
        )
        assert [json.loads(b)["n"] for _, b in piped] == [10, 60_000]
        gate.set()
        answers = await asyncio.gather(*bigs)
        assert [json.loads(a[0][1])["n"] for a in answers] == [len(big)] * 3
        assert budget.peak <= budget.limit and budget.used == 0
        await server.stop()

    asyncio.run(main())


def test_a_body_larger_than_the_budget_is_refused() -> None:
    async def main() -> None:
        server = Server(lambda req: json_response(200, {}), BodyBudget(1 * MiB))
        port = await server.start("127.0.0.1", 0)
        head = b"POST /x HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (2 * MiB)
        got = await asyncio.get_running_loop().run_in_executor(None, _raw, port, head, 1)
        assert got[0][0] == 413
        assert "CUBE_SERVING_BODY_BUDGET" in json.loads(got[0][1])["error"]
        await server.stop()

    asyncio.run(main())


# -- parsing in pieces ------------------------------------------------------------------------


def _same(a: list[protocol.Tensor], b: list[protocol.Tensor]) -> None:
    assert [n for n, _ in a] == [n for n, _ in b]
    for (_, x), (_, y) in zip(a, b, strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape and (x == y).all()


@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": ")])
def test_big_bodies_parse_in_pieces_as_json_loads_does(separators: tuple[str, str]) -> None:
    x = np.random.default_rng(0).uniform(0, 8, size=(60_000, 4))
    cases = [
        {
            "inputs": [
                {"name": "a", "shape": [60_000, 4], "datatype": "FP64", "data": x.ravel().tolist()}
            ]
        },
        {
            "id": "r",
            "inputs": [
                {"name": "a", "shape": [60_000, 4], "datatype": "FP32", "data": x.tolist()},
                {"name": "b", "shape": [3], "datatype": "INT64", "data": [1, 2, 3]},
            ],
        },
        {
            "inputs": [
                {"name": "i", "shape": [200_000], "datatype": "INT32", "data": list(range(200_000))}
            ]
        },
        {
            "inputs": [
                {"name": "s", "shape": [50_000], "datatype": "BYTES", "data": ["abcdefgh"] * 50_000}
            ]
        },
    ]
    for case in cases:
        raw = json.dumps(case, separators=separators).encode()
        assert len(raw) >= protocol.PIECEWISE_MIN
        pieces = protocol._piecewise(raw, "data")
        assert pieces is not None  # these are parsed in pieces, not by the fallback
        _same(protocol.decode_inputs(pieces), protocol.decode_inputs(json.loads(raw)))
    rows = {"instances": x.tolist()}
    raw = json.dumps(rows).encode()
    assert protocol._piecewise(raw, "instances") == rows


def test_what_pieces_cannot_be_sure_of_falls_back_to_json_loads() -> None:
    many = b",".join(b"1.5" for _ in range(200_000))
    # a string that looks like a data array; a "data" key outside the inputs
    for raw in (
        b'{"inputs":[{"name":"x","shape":[1],"datatype":"FP64","data":[1]}],'
        b'"s":"\\"data\\": [' + many + b']"}',
        b'{"inputs":[{"name":"x","shape":[1],"datatype":"FP64","data":[1]}],'
        b'"parameters":{"data":[' + many + b"]}}",
    ):
        assert protocol._piecewise(raw, "data") is None
        assert protocol.loads(raw) == json.loads(raw)
    # a 3-D array: cuts inside a row do not parse, and then the whole body is parsed at once;
    # either way the tensor is the same
    rows = np.random.default_rng(1).uniform(size=(100_000, 2, 2)).round(3)
    item = {"name": "x", "shape": [100_000, 2, 2], "datatype": "FP64", "data": rows.tolist()}
    raw = json.dumps({"inputs": [item]}).encode()
    _same(protocol.decode_inputs(protocol.loads(raw)), protocol.decode_inputs(json.loads(raw)))
    for bad in (b'{"inputs":[{"data":[' + many + b",,1]}]}", b'{"inputs":[{"data":[' + many):
        with pytest.raises(protocol.InferError, match="not valid JSON"):
            protocol.loads(bad)
    # more values than the shape holds: decode says so, as it does for a small body
    item = {"name": "x", "shape": [3], "datatype": "FP64", "data": [1.5] * 200_000}
    with pytest.raises(protocol.InferError, match="holds 3 values but data has 200000"):
        protocol.decode_inputs(protocol.loads(json.dumps({"inputs": [item]}).encode()))


def test_big_answers_are_written_in_pieces() -> None:
    value = {"outputs": [{"name": "p", "data": np.arange(200_000)}], "ids": list(range(100_000))}
    assert json.loads(protocol.dumps(value)) == {
        "outputs": [{"name": "p", "data": list(range(200_000))}],
        "ids": list(range(100_000)),
    }
