"""Serving under big bodies: peak memory and a small request's latency, cube-lab vs MLServer.

Two loads against one deployed scikit-learn model (LogisticRegression on iris, so the model's
own work is small and what is measured is the server's handling of the bodies):

- memory: 8 clients post a ~60 MB Open Inference Protocol v2 request each, all at once
  (a [N, 4] FP64 tensor, 17-digit floats, only the ``predict`` output asked for); the figure
  is each process's peak resident memory (``VmHWM`` in ``/proc/<pid>/status``) and its growth
  over the idle figure taken just before;
- latency: while one client posts a ~50 MB request, another sends 2-row requests one after
  the other on one keep-alive connection until the big answer is back; the figures are the
  worst and the median small-request latency in that window (and, for reference, alone).

cube-lab is a local deployment (router + one model server, each its own process; the router
is in front, as users call it). MLServer 1.7.1 runs with its defaults (its REST server plus
one inference worker process); its figures are summed over its processes, as are cube-lab's.

    python benchmarks/serving_limits.py [--skip-mlserver] [--write-results]

MLServer lives in ``benchmarks/.peers/mlserver`` (see benchmarks/serving.py, which creates it).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
MB = 1_000_000
SMALL = {
    "inputs": [
        {
            "name": "input-0",
            "shape": [2, 4],
            "datatype": "FP64",
            "data": [5.1, 3.5, 1.4, 0.2, 6.7, 3.0, 5.2, 2.3],
        }
    ]
}


def big_body(nbytes: int, seed: int = 0) -> bytes:
    """An OIP v2 request of about ``nbytes`` bytes: [N, 4] FP64 rows of 17-digit floats."""
    rows = max(1, nbytes // 80)  # ~19-20 bytes a value, 4 values a row
    values = np.random.default_rng(seed).uniform(0.1, 7.9, size=(rows, 4))
    data = json.dumps(values.ravel().tolist()).encode()
    head = b'{"inputs":[{"name":"input-0","shape":[%d,4],"datatype":"FP64","data":' % rows
    return head + data + b'}],"outputs":[{"name":"predict"}]}'


def post(port: int, path: str, body: bytes, timeout: float = 600) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def memory_load(port: int, path: str, pids: list[int], body: bytes, clients: int = 8) -> dict:
    idle = {pid: status_kb(pid, "VmRSS") for pid in pids}
    results: list[tuple[int, float]] = []

    def one() -> None:
        t = time.perf_counter()
        status, _ = post(port, path, body)
        results.append((status, time.perf_counter() - t))

    threads = [threading.Thread(target=one) for _ in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    peak = {pid: status_kb(pid, "VmHWM") for pid in pids}
    return {
        "statuses": sorted(s for s, _ in results),
        "wall_s": wall,
        "idle_mb": sum(idle.values()) / 1024,
        "peak_mb": sum(peak.values()) / 1024,
        "growth_mb": sum(peak[p] - idle[p] for p in pids) / 1024,
        "per_process": {pid: (idle[pid] / 1024, peak[pid] / 1024) for pid in pids},
    }


def small_latency(port: int, path: str, body: bytes, alone_n: int = 50) -> dict:
    small = json.dumps(SMALL).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def once() -> float:
        t = time.perf_counter()
        conn.request("POST", path, small, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 200, resp.status
        return time.perf_counter() - t

    alone = [once() for _ in range(alone_n)]
    done = threading.Event()
    big: dict[str, Any] = {}

    def send_big() -> None:
        t = time.perf_counter()
        big["status"], _ = post(port, path, body)
        big["s"] = time.perf_counter() - t
        done.set()

    sender = threading.Thread(target=send_big)
    sender.start()
    during: list[float] = []
    while not done.is_set():
        during.append(once())
    sender.join()
    conn.close()
    return {
        "alone_p50_ms": statistics.median(alone) * 1000,
        "during_max_ms": max(during) * 1000,
        "during_p50_ms": statistics.median(during) * 1000,
        "during_n": len(during),
        "big_status": big["status"],
        "big_s": big["s"],
    }


def train(folder: Path) -> Path:
    import joblib
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    x, y = load_iris(return_X_y=True)
    model = LogisticRegression(max_iter=500).fit(x, y)
    path = folder / "model.joblib"
    joblib.dump(model, path)
    return path


def run_cube(folder: Path, model_path: Path, bodies: tuple[bytes, bytes]) -> dict:
    import joblib

    os.environ["HOME"] = str(folder)
    os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"
    from cube_lab.config import Settings
    from cube_lab.identity import Caller
    from cube_lab.workspace import Workspace

    me = Caller("bench")
    ws = Workspace.open(Settings.resolve(folder / "cube-data"))
    try:
        ws.registry.register(me, name="iris", obj=joblib.load(model_path))
        out = {}
        for scenario in ("memory", "latency"):
            dep = ws.serving.deploy(me, "iris:1", name=f"limits-{scenario}")
            port = int(str(dep.endpoint).rsplit(":", 1)[1])
            pids = [p["pid"] for p in dep.processes]
            try:
                if scenario == "memory":
                    out["memory"] = memory_load(port, "/v2/models/iris/infer", pids, bodies[0])
                else:
                    out["latency"] = small_latency(port, "/v2/models/iris/infer", bodies[1])
            finally:
                ws.serving.undeploy(me, dep.name)
        return out
    finally:
        ws.serving.quit_warm_hosts()
        ws.close()


def run_mlserver(folder: Path, model_path: Path, bodies: tuple[bytes, bytes]) -> dict:
    import psutil
    from serving import MLServer, ensure_peer

    mlserver = ensure_peer()
    peer = folder / "mlserver"
    peer.mkdir(exist_ok=True)
    (peer / "model.joblib").write_bytes(model_path.read_bytes())
    (peer / "model-settings.json").write_text(
        json.dumps(
            {
                "name": "iris",
                "implementation": "mlserver_sklearn.SKLearnModel",
                "parameters": {"uri": "./model.joblib", "version": "v1"},
            }
        )
    )
    out = {}
    for scenario in ("memory", "latency"):
        server = MLServer(folder, mlserver)
        url, _ = server.start()
        port = int(url.split(":")[2].split("/")[0])
        try:
            assert server.proc is not None
            root = psutil.Process(server.proc.pid)
            pids = [root.pid, *(c.pid for c in root.children(recursive=True))]
            if scenario == "memory":
                out["memory"] = memory_load(port, "/v2/models/iris/infer", pids, bodies[0])
            else:
                out["latency"] = small_latency(port, "/v2/models/iris/infer", bodies[1])
        finally:
            server.stop()
    return out


def table(results: dict[str, dict]) -> str:
    labels = list(results)
    lines = [
        "| figure | " + " | ".join(labels) + " |",
        "|---|" + "---|" * len(labels),
    ]

    def row(title: str, get: Any) -> None:
        lines.append(f"| {title} | " + " | ".join(get(results[k]) for k in labels) + " |")

    row("8 x 60 MB at once: answers", lambda r: ", ".join(map(str, r["memory"]["statuses"])))
    row("8 x 60 MB at once: wall (s)", lambda r: f"{r['memory']['wall_s']:.1f}")
    row("idle resident memory, all processes (MB)", lambda r: f"{r['memory']['idle_mb']:.0f}")
    row("peak resident memory, all processes (MB)", lambda r: f"{r['memory']['peak_mb']:.0f}")
    row("peak growth over idle (MB)", lambda r: f"{r['memory']['growth_mb']:.0f}")
    row(
        "peak per process, idle -> peak (MB)",
        lambda r: "; ".join(f"{a:.0f} -> {b:.0f}" for a, b in r["memory"]["per_process"].values()),
    )
    row("2-row request alone, p50 (ms)", lambda r: f"{r['latency']['alone_p50_ms']:.1f}")
    row(
        "2-row request during a 50 MB one, worst (ms)",
        lambda r: f"{r['latency']['during_max_ms']:.0f}",
    )
    row(
        "2-row request during a 50 MB one, p50 (ms)",
        lambda r: f"{r['latency']['during_p50_ms']:.1f}",
    )
    row("2-row requests answered in that window", lambda r: str(r["latency"]["during_n"]))
    row("the 50 MB request itself (s)", lambda r: f"{r['latency']['big_s']:.1f}")
    return "\n".join(lines)


def write_results(text: str, command: str, note: str) -> None:
    path = REPO / "benchmarks" / "RESULTS.md"
    current = path.read_text() if path.exists() else "# Benchmark results\n"
    title = "## Serving under big bodies (issue 15)"
    section = (
        f"{title}\n\n"
        f"- Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine: {platform.node()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load {os.getloadavg()[0]:.1f} at the end\n"
        f"- Command: `{command}`\n"
        "- Model: scikit-learn LogisticRegression on iris; bodies: OIP v2 [N, 4] FP64 tensors "
        "of 17-digit floats, `predict` output only. Memory: `VmHWM` of each process after the "
        "load, summed (cube-lab: router + model server; MLServer: its server + worker).\n\n"
        f"{text}\n\n{note}\n"
    )
    if title in current:
        head, _, rest = current.partition(title)
        nxt = rest.find("\n## ")
        current = head + section + (rest[nxt + 1 :] if nxt >= 0 else "")
    else:
        current = current.rstrip("\n") + "\n\n" + section
    path.write_text(current)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--skip-mlserver", action="store_true")
    p.add_argument("--label", default="cube-lab")
    p.add_argument("--json", help="also write the figures here")
    p.add_argument("--write-results", action="store_true")
    p.add_argument("--note", default="", help="a paragraph under the table in RESULTS.md")
    a = p.parse_args()
    bodies = (big_body(60 * MB), big_body(50 * MB, seed=1))
    print(f"bodies: {len(bodies[0]) / MB:.1f} MB and {len(bodies[1]) / MB:.1f} MB", flush=True)
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="cube-limits-bench-") as tmp:
        folder = Path(tmp)
        model = train(folder)
        if not a.skip_mlserver:
            results["MLServer 1.7.1"] = run_mlserver(folder, model, bodies)
            print(json.dumps(results["MLServer 1.7.1"]), flush=True)
        results[a.label] = run_cube(folder, model, bodies)
        print(json.dumps(results[a.label]), flush=True)
    text = table(results)
    print(text)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    if a.write_results:
        args = ["--note", '"..."'] if a.note else []
        args += [x for x in sys.argv[1:] if x != a.note and x != "--note"]
        command = "python benchmarks/serving_limits.py " + " ".join(args)
        write_results(text, command, a.note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
