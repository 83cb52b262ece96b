"""What sampling a busy job every second costs: the sampler's own CPU time per sample x rate.

A busy job is started (a root process with ``--children`` children, one of them burning a
core, each holding some memory: a shape like torchrun and its ranks), and the resource
monitor (``cube_lab.monitoring.monitor.Monitor``, the thread the pipeline runner and the
training launcher use) samples it for ``--seconds`` at ``--interval``, writing its series file
every ``--write`` seconds as in production. Measured:

- per sample: the sampling thread's CPU time (``time.thread_time``) / ticks, in the thread;
- the same from outside: this process's CPU time (``os.times``) over the window, minus the
  same window with no monitor running (the benchmark's own idle cost);
- a tight loop of ``--loop`` ticks (no sleeping), for a steadier per-sample figure.

overhead = CPU per sample x samples per second, as a % of one core. Target (issue 23): < 1 %.

    python benchmarks/monitoring_overhead.py [--seconds 30] [--children 4] [--fake-gpu]

``--fake-gpu`` answers NVML from ``cube_lab.monitoring.fake_nvml`` (two GPUs, a MIG one,
with the job's pids on them), so the GPU path's cost is counted too; without it the real
NVML is used where it initialises (a GPU machine), else there are no GPU rows.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cube_lab.monitoring import fake_nvml, nvml  # noqa: E402
from cube_lab.monitoring.monitor import Monitor, Watch  # noqa: E402

JOB = textwrap.dedent(
    """
    import subprocess, sys, time
    n = int(sys.argv[1])
    burn = "held = b'x' * (20 * 2**20)\\nwhile True: pass\\n"
    idle = "import time\\nheld = b'x' * (20 * 2**20)\\ntime.sleep(3600)\\n"
    kids = [subprocess.Popen([sys.executable, "-c", burn if i == 0 else idle]) for i in range(n)]
    time.sleep(3600)
    """
)


def cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--write", type=float, default=5.0)
    ap.add_argument("--children", type=int, default=4)
    ap.add_argument("--loop", type=int, default=500)
    ap.add_argument("--fake-gpu", action="store_true")
    args = ap.parse_args()

    job = subprocess.Popen([sys.executable, "-c", JOB, str(args.children)])
    try:
        time.sleep(1.5)  # the children start and allocate
        if args.fake_gpu:
            fake = fake_nvml.FakeProcess(job.pid, 2**30, 50)
            mig = fake_nvml.FakeDevice("MIG-0", "1g", [fake_nvml.FakeProcess(job.pid, 2**29)])
            fake_nvml.install(
                [
                    fake_nvml.FakeDevice("GPU-0", "fake", [fake]),
                    fake_nvml.FakeDevice("GPU-1", "fake MIG", mig=[mig]),
                ]
            )
            nvml.use(fake_nvml)
        gpu_module = nvml.load()
        folder = Path(tempfile.mkdtemp(prefix="cube-monitoring-bench-"))

        # the benchmark's own cost of waiting, without a monitor
        idle_start, wall = cpu_s(), time.monotonic()
        time.sleep(min(args.seconds, 10.0))
        idle_rate = (cpu_s() - idle_start) / (time.monotonic() - wall)

        monitor = Monitor(interval_s=args.interval, write_s=args.write)
        w = Watch(folder / "resources.json", [job.pid], "training", "bench", None, args.interval)
        start, wall = cpu_s(), time.monotonic()
        monitor.add(w)
        time.sleep(args.seconds)
        w.stop()
        elapsed = time.monotonic() - wall
        outside = (cpu_s() - start) / elapsed - idle_rate  # CPU s per s beyond idle
        ticks, busy = monitor.ticks, monitor.busy_s
        procs = (w.latest or {}).get("procs")

        # a tight loop of ticks, writing as often as the real rate would
        loop = Monitor(interval_s=args.interval, write_s=args.write * args.interval)
        lw = Watch(folder / "loop.json", [job.pid], "training", "loop", None, args.interval)
        loop._watches.append(lw)
        lw.monitor = loop
        t0 = time.thread_time()
        for _ in range(args.loop):
            loop.tick()
        per_loop = (time.thread_time() - t0) / args.loop
    finally:
        job.kill()
        job.wait()
        subprocess.run(["pkill", "-9", "-P", str(job.pid)], check=False)

    rate = 1.0 / args.interval
    per_sample = busy / max(ticks, 1)
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.2f}",
        "python": platform.python_version(),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "gpu": "fake NVML" if args.fake_gpu else ("NVML" if gpu_module else "none"),
        "processes_in_tree": procs,
        "samples": ticks,
        "cpu_ms_per_sample_thread": round(per_sample * 1e3, 3),
        "cpu_ms_per_sample_loop": round(per_loop * 1e3, 3),
        "overhead_percent_of_core_thread": round(100 * per_sample * rate, 3),
        "overhead_percent_of_core_loop": round(100 * per_loop * rate, 3),
        "overhead_percent_of_core_process": round(100 * outside, 3),
        "target_percent": 1.0,
    }
    worst = max(result["overhead_percent_of_core_thread"], result["overhead_percent_of_core_loop"])
    result["meets_target"] = worst < 1.0
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
