"""How soon a live view shows what a job reported, and what its polling costs the kernel.

A training job (``framework="plain"``, this machine's embedded store) reports a step every
``--every`` seconds and notes, beside each report, the wall time it made it. A
``cube_lab.sdk.views.LiveView`` follows the job as it does in a notebook (refreshing every
``REFRESH_S``); a watcher thread reads the view's step counter every 5 ms and notes when each
step appears. Measured:

- latency: the time from a step's report to the view showing it (median, p95, max), the
  figure the issue asks to keep under 1 s;
- cost: this process's CPU time (``os.times``) per second while the view follows the job,
  minus the same window with the job running and no view (the benchmark's own idle cost),
  as a % of one core: what polling adds to the kernel; the job's own processes are apart.

    python benchmarks/live_view.py [--steps 30] [--every 0.5]

No peer has this view (the issue names none); the figures are ours alone.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

JOB = textwrap.dedent(
    """
    import json, os, sys, time
    import cube_lab
    steps, every = int(sys.argv[1]), float(sys.argv[2])
    marks = {}
    for step in range(steps):
        time.sleep(every)
        marks[step] = time.time()
        cube_lab.report(step=step, loss=1.0 / (step + 1), total_steps=steps)
        with open("marks.json", "w") as fh:
            json.dump(marks, fh)
    """
)


def cpu() -> float:
    t = os.times()
    return t.user + t.system


def follow(steps: int, every: float, with_view: bool, folder: Path) -> dict[str, object]:
    import cube_lab as cl
    from cube_lab.sdk.views import REFRESH_S, LiveView

    (folder / "job.py").write_text(JOB)
    job = cl.train(
        "job.py", framework="plain", args=[str(steps), str(every)], working_dir=str(folder)
    )
    seen: dict[int, float] = {}
    view = LiveView(job, refresh_s=REFRESH_S).start() if with_view else None
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            if view is not None:
                shown = view.count.value.split(" ", 1)[0]
                if shown.isdigit() and int(shown) not in seen:
                    seen[int(shown)] = time.time()
            time.sleep(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    time.sleep(every)  # the job's start-up is not the view's cost
    marks_file = folder / "marks.json"
    start_cpu, start = cpu(), time.monotonic()
    while len(read_marks(marks_file)) < steps:  # the same cheap wait with and without a view
        time.sleep(0.1)
    wall, used = time.monotonic() - start, cpu() - start_cpu
    time.sleep(2 * REFRESH_S)  # the view's last refresh
    done.set()
    watcher.join()
    if view is not None:
        view.stop()
    job.wait(60)
    marks = read_marks(marks_file)
    # The view counts steps done (step + 1) and shows the latest: a step counts as shown
    # when the counter first reaches it (two steps within one refresh show together).
    latencies = [
        min(t_seen for shown, t_seen in seen.items() if shown >= k + 1) - t
        for k, t in marks.items()
        if any(shown >= k + 1 for shown in seen)
    ]
    return {"cpu_per_s": used / wall, "latencies": latencies, "status": job.status}


def read_marks(path: Path) -> dict[int, float]:
    try:
        return {int(k): v for k, v in json.loads(path.read_text()).items()}
    except (OSError, ValueError):  # not written yet, or caught mid-write
        return {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--every", type=float, default=0.5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cube-live-view-") as tmp:
        os.environ["CUBE_LAB_DATA_DIR"] = str(Path(tmp) / "data")
        os.environ.setdefault("CUBE_LAB_USER", "bench")
        folder = Path(tmp) / "work"
        folder.mkdir()
        idle = follow(args.steps, args.every, False, folder)
        viewed = follow(args.steps, args.every, True, folder)
    lat = sorted(viewed["latencies"])  # type: ignore[arg-type]
    p95 = lat[max(0, round(0.95 * len(lat)) - 1)]
    overhead = 100 * (viewed["cpu_per_s"] - idle["cpu_per_s"])  # type: ignore[operator]
    print(f"machine: {platform.node()} {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"steps seen by the view: {len(lat)} of {args.steps} ({viewed['status']})")
    print(
        f"report -> view: median {statistics.median(lat):.3f} s, p95 {p95:.3f} s, "
        f"max {lat[-1]:.3f} s (target < 1 s)"
    )
    print(
        f"kernel CPU while following: {100 * viewed['cpu_per_s']:.2f} % of a core with the view, "
        f"{100 * idle['cpu_per_s']:.2f} % without; the view adds {overhead:.2f} %"
    )


if __name__ == "__main__":
    main()
