"""The cube-admin page and its usage API with a class on the hub: p50/p95 over N requests.

Seeding (``benchmarks/hub_seed.py``): the real hub, ``--students`` students in one project
group, each with a running server through the real admission path (the server itself an
in-process stand-in), and a month of GPU-hours history in the ledger.

    python benchmarks/hub_admin_page.py [--students 60] [--requests 100]

Target (issue 24): < 300 ms p95 for both on this machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hub_seed import seeded_hub


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def measure(client: httpx.Client, path: str, n: int, warmup: int = 10) -> list[float]:
    times = []
    for i in range(n + warmup):
        start = time.perf_counter()
        resp = client.get(path)
        elapsed = (time.perf_counter() - start) * 1000
        assert resp.status_code == 200, (path, resp.status_code, resp.text[:300])
        if i >= warmup:
            times.append(elapsed)
    return times


def report(rows: dict[str, list[float]], *, students: int, running: int, requests: int) -> None:
    """The machine, the seeding and a Markdown row per case (p50, p95, the 300 ms target)."""
    load = os.getloadavg()[0]
    print(
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()} "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, load {load:.1f}; "
        f"{students} students, {running} running servers, "
        f"{requests} sequential requests each (10 warm-up)"
    )
    print("| case | p50 ms | p95 ms | target |")
    print("|---|---|---|---|")
    for name, times in rows.items():
        p95 = pct(times, 0.95)
        met = "met" if p95 < 300 else "NOT met"
        print(f"| {name} | {statistics.median(times):.1f} | {p95:.1f} | p95 < 300 ms: {met} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--requests", type=int, default=100)
    args = parser.parse_args()
    with seeded_hub(args.students) as (hub, info):
        headers = {"Authorization": f"token {hub.token}"}
        with httpx.Client(base_url=hub.url, headers=headers, timeout=60) as client:
            usage = client.get("/services/cube-admin/api/usage").json()
            assert usage["totals"]["servers"] == info["running"], usage["totals"]
            page = client.get("/services/cube-admin/").text
            assert page.count('data-live="per-user"') >= 1
            rows = {
                "admin page (HTML)": measure(client, "/services/cube-admin/", args.requests),
                "GET api/usage": measure(client, "/services/cube-admin/api/usage", args.requests),
            }
    report(rows, students=args.students, running=info["running"], requests=args.requests)


if __name__ == "__main__":
    main()
