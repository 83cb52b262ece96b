"""What a pipeline's tuning node runs: ``cube-lab tune`` with progress, then the best
trial published as node values (see ``nodekind.py``). Under the hub ``cube-lab tune`` starts the
experiment through the cube-lab service, with the node's job token."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from ..config import ENV_SERVICE_URL
from ..jobtemplates.contract import ENV_VALUES_FILE


def main(argv: list[str]) -> int:
    # under the hub (a node the cube-lab service started, with its job token) the command is a
    # client of the service, which runs the experiment: a cancelled run (SIGTERM) is passed on
    # as Ctrl-C, on which it stops the experiment there (in its own session, so the run's
    # SIGTERM to this node's group does not end it first)
    remote = bool(os.environ.get(ENV_SERVICE_URL))
    proc = subprocess.Popen(
        [sys.executable, "-m", "cube_lab.cli", "tune", *argv, "--json"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=remote,
    )  # stderr (progress and errors) goes straight to the node's log
    if remote:
        signal.signal(signal.SIGTERM, lambda *_: proc.send_signal(signal.SIGINT))
    out, _ = proc.communicate()
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
