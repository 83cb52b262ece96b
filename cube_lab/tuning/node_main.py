"""What a pipeline's tuning node runs: ``cube-lab tune`` with progress, then the best
trial published as node values (see ``nodekind.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ..jobtemplates.contract import ENV_VALUES_FILE


def main(argv: list[str]) -> int:
    proc = subprocess.run(
        [sys.executable, "-m", "cube_lab.cli", "tune", *argv, "--json"],
        stdout=subprocess.PIPE,
        text=True,
    )  # stderr (progress and errors) goes straight to the node's log
    out = proc.stdout
    print(out, end="", flush=True)
    if proc.returncode != 0:
        return proc.returncode
    result = json.loads(out)  # --json prints exactly one document on stdout
    best = result.get("best") or {}
    values = {
        "experiment": result["experiment"],
        "trials": result["trials"],
        "best_trial": best.get("trial"),
        "best_metric": best.get("metric"),
        **{f"param_{k}": v for k, v in (best.get("parameters") or {}).items()},
    }
    path = os.environ.get(ENV_VALUES_FILE)
    if path:
        with open(path, "w") as f:
            json.dump(values, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
