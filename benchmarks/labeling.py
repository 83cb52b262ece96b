"""Labeling speed (issue 9): register a 10,000-image dataset, create a labeling project over
it, then time the next-task API while two annotators work at once over real HTTP.

    python benchmarks/labeling.py [--images 10000] [--tasks 300] [--write-results]

- `cube-lab dataset create` and `cube-lab label create` are timed as a user runs them: the
  whole CLI process, wall clock (target: registration < 30 s).
- A real jupyter-server with cube-lab on loopback; alice and bob (two tokens) each run a
  loop on their own keep-alive connection, at the same time: POST .../next, GET the item's
  content, PUT the result with submit. Phase 1 claims every task from the pool; phase 2
  works through a queue filled by POST .../assign (batch). Target: next-task p95 < 50 ms.

The generated PNGs are cached outside the repository ($XDG_CACHE_HOME or ~/.cache,
cube-lab-benchmarks/labeling-<N>) so reruns skip generating them. No peer is named by the
issue; Label Studio (pip-installable as label-studio) is a full Django server with its own
database and was not installed or measured here.
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
import textwrap
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TOKENS = {"alice": "alice-bench-token", "bob": "bob-bench-token"}
PROJECT, DATASET, LABELING = "bench", "photos", "boxes"
API = "/cube/api/v1"

IDENTITY = f'''
from jupyter_server.auth.identity import IdentityProvider, User

TOKENS = {TOKENS!r}


class TwoUsers(IdentityProvider):
    """alice and bob, one fixed token each (as JupyterHub gives each user one)."""

    def get_user(self, handler):
        header = handler.request.headers.get("Authorization", "")
        for name, token in TOKENS.items():
            if header == f"token {{token}}":
                handler._token_authenticated = True
                return User(username=name)
        return None
'''


def cache_dir(count: int) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "cube-lab-benchmarks" / f"labeling-{count}"


def make_images(folder: Path, count: int) -> float:
    """Small PNGs (64x48 and 48x64) in 20 subfolders; seconds spent, 0 when cached."""
    done = folder / ".complete"
    if done.exists():
        return 0.0
    from PIL import Image, ImageDraw

    started = time.perf_counter()
    shutil.rmtree(folder, ignore_errors=True)
    for i in range(count):
        sub = folder / f"part{i % 20:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        size = (64, 48) if i % 3 else (48, 64)
        image = Image.new("RGB", size, (i * 7 % 256, i * 13 % 256, i * 29 % 256))
        ImageDraw.Draw(image).rectangle((i % 20, i % 16, 30 + i % 20, 28 + i % 16), fill="white")
        image.save(sub / f"img{i:05d}.png")
    done.write_text(str(count))
    return time.perf_counter() - started


def cli(env: dict[str, str], *args: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cube_lab.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"cube-lab {' '.join(args)} failed: {done.stderr}")
    return took, done.stdout.strip()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Client:
    """One user's keep-alive connection."""

    def __init__(self, port: int, user: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.headers = {"Authorization": f"token {TOKENS[user]}"}

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any, float]:
        data = json.dumps(body) if body is not None else ("{}" if method != "GET" else None)
        started = time.perf_counter()
        self.conn.request(method, path, body=data, headers=self.headers)
        resp = self.conn.getresponse()
        raw = resp.read()
        took = (time.perf_counter() - started) * 1000
        if resp.status >= 400:
            raise RuntimeError(f"{method} {path}: {resp.status} {raw[:300]!r}")
        parsed = (
            json.loads(raw)
            if raw and resp.getheader("Content-Type", "").startswith("application/json")
            else raw
        )
        return resp.status, parsed, took


def wait_ready(port: int, timeout: float = 90) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            status, _, _ = Client(port, "alice").call("GET", f"{API}/whoami")
            if status == 200:
                return
        except (OSError, RuntimeError):
            pass
        time.sleep(0.3)
    raise RuntimeError("server did not start")


def annotate(port: int, user: str, count: int, out: dict[str, list[float]]) -> None:
    """``count`` rounds of next -> content -> submit; latencies (ms) into ``out``."""
    client = Client(port, user)
    base = f"{API}/projects/{PROJECT}/labeling/{LABELING}"
    for _ in range(count):
        status, task, took = client.call("POST", f"{base}/next")
        if status == 204:
            raise RuntimeError(f"{user}: the queue ran dry")
        out["next"].append(took)
        _, content, took = client.call("GET", task["item"]["content_url"])
        assert isinstance(content, bytes) and content[:4] == b"\x89PNG"
        out["content"].append(took)
        width, height = task["item"]["width"], task["item"]["height"]
        box = {"label": "cat" if task["id"] % 2 else "dog", "x": 2, "y": 3, "w": width // 2,
               "h": height // 3}  # fmt: skip
        _, saved, took = client.call(
            "PUT", f"{base}/tasks/{task['id']}", {"result": {"boxes": [box]}, "submit": True}
        )
        assert saved["status"] == "submitted" and saved["assignee"] == user
        out["submit"].append(took)
        out["ids"].append(task["id"])


def run_phase(port: int, count: int) -> dict[str, dict[str, list[float]]]:
    results: dict[str, dict[str, list[float]]] = {
        u: {"next": [], "content": [], "submit": [], "ids": []} for u in TOKENS
    }
    errors: list[BaseException] = []

    def work(user: str) -> None:
        try:
            annotate(port, user, count, results[user])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(u,)) for u in TOKENS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    ids = [i for r in results.values() for i in r["ids"]]
    if len(ids) != len(set(ids)):
        raise RuntimeError("a task was handed to both annotators")
    return results


def stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "p50": statistics.median(ordered),
        "p95": ordered[max(0, int(len(ordered) * 0.95) - 1)],
        "max": ordered[-1],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=10_000)
    parser.add_argument("--tasks", type=int, default=300, help="tasks per annotator per phase")
    parser.add_argument("--images-dir", type=Path, help="where the generated PNGs are cached")
    parser.add_argument("--write-results", action="store_true", help="update RESULTS.md")
    args = parser.parse_args()

    images = (args.images_dir or cache_dir(args.images)).resolve()
    generated = make_images(images, args.images)
    work = Path(tempfile.mkdtemp(prefix="cube-bench-labeling-"))
    data_dir, root = work / "data", work / "root"
    root.mkdir()
    (work / "bench_identity.py").write_text(IDENTITY)
    env = {
        **os.environ,
        "CUBE_LAB_DATA_DIR": str(data_dir),
        "CUBE_LAB_USER": "alice",
        "JUPYTER_RUNTIME_DIR": str(work / "rt"),
        "JUPYTER_CONFIG_DIR": str(work / "cfg"),
        "JUPYTER_DATA_DIR": str(work / "jdata"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(work), os.environ.get("PYTHONPATH")])),
    }
    env.pop("CUBE_LAB_DB_URL", None)
    load = os.getloadavg()[0]
    server = None
    try:
        cli(env, "project", "create", PROJECT)
        cli(env, "project", "member", PROJECT, "bob", "--role", "member")
        create_s, _ = cli(env, "dataset", "create", DATASET, str(images), "--project", PROJECT)
        label_s, _ = cli(
            env, "label", "create", LABELING, "--dataset", DATASET, "--project", PROJECT,
            "--type", "image-bbox", "--labels", "cat,dog", "--no-review",
        )  # fmt: skip
        port = free_port()
        cmd = [
            sys.executable,
            "-m",
            "jupyter_server",
            f"--port={port}",
            "--ip=127.0.0.1",
            f"--ServerApp.root_dir={root}",
            f"--CubeLab.data_dir={data_dir}",
            "--ServerApp.identity_provider_class=bench_identity.TwoUsers",
            "--no-browser",
            "--allow-root",
            "--ServerApp.log_level=WARN",
        ]
        server = subprocess.Popen(
            cmd, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        wait_ready(port)
        warm = Client(port, "alice")  # first requests import the labeling modules
        for _ in range(5):
            warm.call("GET", f"{API}/projects/{PROJECT}/labeling/{LABELING}")
        pool = run_phase(port, args.tasks)
        base = f"{API}/projects/{PROJECT}/labeling/{LABELING}"
        body = {"users": list(TOKENS), "mode": "batch", "batch_size": args.tasks}
        _, assigned, assign_ms = warm.call("POST", f"{base}/assign", body)
        queued = run_phase(port, args.tasks)
        _, project, progress_ms = warm.call("GET", base)
    finally:
        if server is not None:
            server.terminate()
            server.wait(15)
        shutil.rmtree(work, ignore_errors=True)

    done = project["progress"]["submitted"]
    requests = ("next", "content", "submit")
    figures = {
        phase: {k: stats([x for r in found.values() for x in r[k]]) for k in requests}
        for phase, found in (("pool", pool), ("queue", queued))
    }
    worst_next = max(figures["pool"]["next"]["p95"], figures["queue"]["next"]["p95"])
    print(
        f"# labeling, {args.images:,} images ({images}), generated in {generated:.1f} s "
        f"(0 = cached); {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
        f"{os.cpu_count()} cores, load {load:.1f}"
    )
    print(f"cube-lab dataset create ({args.images:,} images, whole CLI process): {create_s:.2f} s")
    print(f"cube-lab label create ({args.images:,} tasks, whole CLI process):    {label_s:.2f} s")
    print(f"assign {sum(assigned['assigned'].values())} tasks (batch): {assign_ms:.1f} ms; "
          f"project with progress ({done} submitted): {progress_ms:.1f} ms")  # fmt: skip
    print(f"{'phase':<22} {'request':<10} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for phase, label in (("pool", "claim from pool"), ("queue", "assigned queue")):
        for request, s in figures[phase].items():
            print(
                f"{label:<22} {request:<10} {s['n']:>5} {s['p50']:8.1f} {s['p95']:8.1f} "
                f"{s['max']:8.1f}"
            )
    summary = {
        "dataset_create_s": round(create_s, 2),
        "target_create_s": 30,
        "next_p95_ms": round(worst_next, 2),
        "target_next_p95_ms": 50,
        "met": create_s < 30 and worst_next < 50,
    }
    print(json.dumps(summary))
    if args.write_results:
        write_results(args, images, create_s, label_s, assign_ms, figures, load)
    return 0


def write_results(  # type: ignore[no-untyped-def]
    args, images: Path, create_s: float, label_s: float, assign_ms: float, figures, load: float
) -> None:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    command = (
        "benchmarks/labeling.py"
        + (f" --images {args.images}" if args.images != 10_000 else "")
        + (f" --tasks {args.tasks}" if args.tasks != 300 else "")
        + " --write-results"
    )
    rows = [
        f"| {stamp} | {load:.1f} | `cube-lab dataset create` ({args.images:,} PNGs) | "
        f"**{create_s:.2f} s** | < 30 s: {'met' if create_s < 30 else 'not met'} |",
        f"| {stamp} | {load:.1f} | `cube-lab label create` ({args.images:,} tasks) | "
        f"{label_s:.2f} s | |",
        f"| {stamp} | {load:.1f} | `POST .../assign` batch, {2 * args.tasks} tasks | "
        f"{assign_ms:.0f} ms | |",
    ]
    for phase, label in (("pool", "claimed from the pool"), ("queue", "from the assigned queue")):
        for request, what in (
            ("next", "`POST .../next`"),
            ("content", "`GET` item content"),
            ("submit", "`PUT` task, submit"),
        ):
            s = figures[phase][request]
            target = ""
            if request == "next":
                target = f"p95 < 50 ms: {'met' if s['p95'] < 50 else 'not met'}"
            rows.append(
                f"| {stamp} | {load:.1f} | {what}, {label} (n={s['n']}) | "
                f"p50 {s['p50']:.1f} / **p95 {s['p95']:.1f}** / max {s['max']:.1f} ms | "
                f"{target} |"
            )
    section = (
        textwrap.dedent(
            f"""\
        ## Labeling (issue 9)

        Command: `.venv/bin/python {command}`. {args.images:,} generated PNGs (64x48 and
        48x64, cached under `~/.cache/cube-lab-benchmarks/`, so the files were in the page
        cache), registered by the CLI (header-only size reads, one-pass sha256, bulk insert in
        one transaction; wall clock of the whole process). Then a real jupyter-server with
        cube-lab on loopback (SQLite store) and two annotators, alice and bob, working at the
        same time, each on its own keep-alive connection: {args.tasks} rounds each of next ->
        item content -> submit, first claiming from the pool, then from a queue filled by
        assign. No task went to both. Machine: {platform.machine()}, {os.cpu_count()} cores
        (client and server share them), load average at start in the table. No peer is named
        by the issue; Label Studio is pip-installable (`label-studio`) but is a full Django
        server with its own database; it was not installed or measured.

        | date (UTC) | load | case | figure | target |
        |---|---|---|---|---|
        """
        )
        + "\n".join(rows)
        + "\n"
    )
    results = REPO / "benchmarks" / "RESULTS.md"
    text = results.read_text()
    start = text.find("## Labeling (issue 9)")
    if start >= 0:
        end = text.find("\n## ", start + 1)
        text = text[:start] + section + (text[end:] if end >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    results.write_text(text)
    print(f"wrote {results.relative_to(REPO)} ({images})")


if __name__ == "__main__":
    sys.exit(main())
