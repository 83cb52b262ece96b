"""Time to the first training step: `cube-lab train` vs bare `torchrun`.

The same 2-process CPU DDP script (gloo, a small model, DDP wrapper, one step) is started
both ways, alternating, N times each; rank 0 writes the wall-clock time of its first
finished step to a file. The figure is that time minus the moment the command was
started: `python -m cube_lab.cli train --nproc 2 SCRIPT` in a child process (the CLI; the
`%cube_train` magic goes through the SDK since issue 18, and is not what is timed here).

    python benchmarks/training_start.py [--runs 5]

Target (issue 6): median(cube-lab) / median(torchrun) <= 1.15.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = """
import os, sys, time
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 64), torch.randn(32, 1)
loss = torch.nn.functional.mse_loss(model(x), y)
loss.backward()
opt.step()
if dist.get_rank() == 0:
    with open(sys.argv[1], "w") as fh:
        fh.write(repr(time.time()))
    print(f"step=0 loss={loss.item():.4f}", flush=True)
dist.destroy_process_group()
"""


def once(argv: list[str], stamp: Path, env: dict[str, str]) -> float:
    stamp.unlink(missing_ok=True)
    started = time.time()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return float(stamp.read_text()) - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    a = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cube-train-bench-") as tmp:
        folder = Path(tmp)
        script, stamp = folder / "first_step.py", folder / "stamp"
        script.write_text(SCRIPT)
        env = dict(os.environ, CUBE_LAB_DATA_DIR=str(folder / "data"), OMP_NUM_THREADS="1")
        py = sys.executable
        commands = {
            "torchrun": [
                py,
                "-m",
                "torch.distributed.run",
                "--standalone",
                "--nnodes=1",
                "--nproc-per-node=2",
                str(script),
                str(stamp),
            ],
            "cube-lab": [
                py,
                "-m",
                "cube_lab.cli",
                "train",
                "--nproc",
                "2",
                str(script),
                str(stamp),
            ],
        }
        once(commands["cube-lab"], stamp, env)  # warm the page cache and create the store
        times: dict[str, list[float]] = {k: [] for k in commands}
        for i in range(a.runs):
            order = list(commands) if i % 2 == 0 else list(reversed(commands))
            for name in order:
                times[name].append(once(commands[name], stamp, env))
                print(f"run {i + 1} {name:>8}: {times[name][-1]:.2f} s", flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\n{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    for name, values in times.items():
        print(f"{name:>8}: median {med[name]:.2f} s (min {min(values):.2f}, max {max(values):.2f})")
    ratio = med["cube-lab"] / med["torchrun"]
    verdict = "met" if ratio <= 1.15 else "NOT met"
    print(f"ratio cube-lab / torchrun: {ratio:.3f} (target <= 1.15: {verdict})")


if __name__ == "__main__":
    main()
