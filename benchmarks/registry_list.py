"""Model registry list API latency with 10,000 versions across 500 models.

Starts a real jupyter-server with cube-lab on loopback, seeds the store, then
times sequential HTTP requests over one keep-alive connection.

    python benchmarks/registry_list.py [--models 500] [--versions 20] [--requests 400]

Target (issue 2): p95 < 50 ms for the list API.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cube_lab.config import Settings
from cube_lab.identity import Caller
from cube_lab.store.models import ModelAlias, ModelVersion, RegisteredModel
from cube_lab.workspace import Workspace

TOKEN = "benchmark-token"


def seed(data_dir: Path, user: str, n_models: int, n_versions: int) -> None:
    """Rows as the service writes them, inserted in bulk (registering 10k files takes minutes)."""
    ws = Workspace.open(Settings.resolve(data_dir))
    caller = Caller(user)
    with ws.store.write() as s:
        project = ws.projects.personal_project(s, caller)
        start = datetime.now(UTC) - timedelta(days=30)
        for m in range(n_models):
            model = RegisteredModel(
                project_id=project.id,
                name=f"model-{m:04d}",
                description=f"benchmark model {m}",
                owner=user,
                archived=False,
                updated_at=start + timedelta(minutes=m),
            )
            s.add(model)
            s.flush()
            rows = [
                ModelVersion(
                    model_id=model.id,
                    version=v,
                    flavor="sklearn",
                    format="mlflow",
                    artifact_name="model",
                    artifact_path=f"models/{model.id}/{v}/model",
                    size_bytes=1000 + v,
                    checksum="sha256:" + "0" * 64,
                    description="",
                    params={"n_estimators": 10 * v, "max_depth": v % 7},
                    metrics={"accuracy": 0.8 + v / 1000, "f1": 0.7 + v / 1000},
                    tags={"team": "bench"},
                    created_by=user,
                    archived=False,
                )
                for v in range(1, n_versions + 1)
            ]
            s.add_all(rows)
            s.flush()
            s.add(
                ModelAlias(
                    model_id=model.id, alias="production", version_id=rows[-2].id, updated_by=user
                )
            )
    ws.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(port: int, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/cube/api/v1/whoami", headers={"Authorization": f"token {TOKEN}"})
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError("server did not start")


def measure(port: int, path: str, n: int) -> dict[str, float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"token {TOKEN}"}
    times = []
    for i in range(n + 20):
        t0 = time.perf_counter()
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        elapsed = (time.perf_counter() - t0) * 1000
        if resp.status != 200:
            raise RuntimeError(f"{path}: {resp.status} {body[:200]!r}")
        if i >= 20:  # warm-up excluded
            times.append(elapsed)
    times.sort()
    return {
        "p50_ms": statistics.median(times),
        "p95_ms": times[int(len(times) * 0.95) - 1],
        "max_ms": times[-1],
        "bytes": len(body),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=500)
    parser.add_argument("--versions", type=int, default=20)
    parser.add_argument("--requests", type=int, default=400)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="cube-bench-"))
    data_dir, root = work / "data", work / "root"
    root.mkdir()
    user = "bench"
    t0 = time.perf_counter()
    seed(data_dir, user, args.models, args.versions)
    seed_s = time.perf_counter() - t0
    port = free_port()
    env = {
        **os.environ,
        "CUBE_LAB_USER": user,
        "JUPYTER_RUNTIME_DIR": str(work / "rt"),
        "JUPYTER_CONFIG_DIR": str(work / "cfg"),
    }
    cmd = [
        sys.executable,
        "-m",
        "jupyter_server",
        f"--port={port}",
        "--ip=127.0.0.1",
        f"--IdentityProvider.token={TOKEN}",
        f"--ServerApp.root_dir={root}",
        f"--CubeLab.data_dir={data_dir}",
        "--no-browser",
        "--allow-root",
        "--ServerApp.log_level=WARN",
    ]
    server = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_ready(port)
        cases = {
            "list models (first page, 50)": "/cube/api/v1/models",
            "list models (500 per page)": "/cube/api/v1/models?limit=500",
            "search models (q=model-04)": "/cube/api/v1/models?q=model-04",
            "model detail (20 versions)": f"/cube/api/v1/projects/{user}/models/model-0250",
        }
        results = {name: measure(port, path, args.requests) for name, path in cases.items()}
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(work, ignore_errors=True)

    total = args.models * args.versions
    print(
        f"# registry list API, {total:,} versions across {args.models} models "
        f"(seeded in {seed_s:.1f} s)"
    )
    print(
        f"# {datetime.now(UTC):%Y-%m-%d}, {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {args.requests} sequential requests each"
    )
    print(f"{'case':34} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'bytes':>9}")
    for name, r in results.items():
        print(
            f"{name:34} {r['p50_ms']:8.1f} {r['p95_ms']:8.1f} {r['max_ms']:8.1f} "
            f"{int(r['bytes']):9,}"
        )
    worst = results["list models (first page, 50)"]["p95_ms"]
    print(json.dumps({"target_p95_ms": 50, "list_p95_ms": round(worst, 2), "met": worst < 50}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
