"""A Katib trial container's entry: run unchanged NNI trial code under Katib.

``python -m cube_lab.tuning.katib_trial --param=lr=0.01 ... -- trial.py ARGS`` writes the
parameters where NNI's runtime reads them, runs the trial, and turns each metric the
trial reports into a ``name=value`` line for Katib's StdOut collector (a dict metric
gives one line per numeric key). The trial's own output passes through unchanged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any

from .engine import PLATFORM

_MARK = "NNISDK_MEb'"


def _value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            continue
    return text


def parse_args(argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    params: dict[str, Any] = {}
    rest = list(argv)
    while rest and rest[0] != "--":
        arg = rest.pop(0)
        if not arg.startswith("--param=") or "=" not in arg[len("--param=") :]:
            raise SystemExit(f"cube-lab katib trial: expected --param=NAME=VALUE, got {arg!r}")
        name, value = arg[len("--param=") :].split("=", 1)
        params[name] = _value(value)
    if not rest or len(rest) < 2:
        raise SystemExit("cube-lab katib trial: give the trial after --, e.g. -- trial.py")
    return params, rest[1:]


def metric_lines(line: str) -> list[str]:
    """``name=value`` lines for one NNI metric line ([] for anything else)."""
    if not line.startswith(_MARK):
        return []
    try:
        value = json.loads(json.loads(line[len(_MARK) : line.rindex("'")])["value"])
    except (ValueError, KeyError, TypeError):
        return []
    if isinstance(value, dict):
        return [f"{k}={v}" for k, v in value.items() if isinstance(v, int | float)]
    return [f"default={value}"] if isinstance(value, int | float) else []


def main(argv: list[str]) -> int:
    params, trial = parse_args(argv)
    sys_dir = tempfile.mkdtemp(prefix="nni-trial-")
    record = {"parameter_id": 0, "parameter_source": "algorithm", "parameters": params}
    with open(os.path.join(sys_dir, "parameter.cfg"), "w") as f:
        json.dump({**record, "parameter_index": 0}, f)
    env = {
        **os.environ,
        "NNI_PLATFORM": PLATFORM,
        "NNI_SYS_DIR": sys_dir,
        "NNI_OUTPUT_DIR": os.path.join(sys_dir, "output"),
        "NNI_TRIAL_JOB_ID": os.environ.get("HOSTNAME", "katib-trial"),
        "NNI_EXP_ID": os.environ.get("KATIB_EXPERIMENT_NAME", "katib"),
        "PYTHONUNBUFFERED": "1",
    }
    out = subprocess.PIPE
    proc = subprocess.Popen(
        [sys.executable, *trial], env=env, stdout=out, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        found = metric_lines(line.rstrip("\n"))
        for out in found or [line.rstrip("\n")]:
            print(out, flush=True)
    return proc.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
