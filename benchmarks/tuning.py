"""Hyperparameter tuning side by side: plain NNI 3.0 local mode vs `cube-lab tune`.

Speed: the same 12 trivial trials (each reports 3 intermediate results and a final one),
TPE, concurrency 2, run by NNI's Python API (``Experiment('local').run(...)``, the
clock runs from the call to its return) and by ``cube-lab tune CONFIG.yml`` (the clock
runs from the command's start to its exit, so the CLI's start-up is included),
alternating, each in a fresh temp folder with its own HOME.

Quality (``--quality``): a real objective (a scikit-learn SVC on the digits data set
that ships with scikit-learn, 3-fold accuracy over C and gamma), 12 trials, TPE, for 3
seeds each; the best accuracy each found.

    python benchmarks/tuning.py [--runs 3] [--quality] [--write-results]

Target (issue 7): cube-lab <= 10.6 s where NNI took 21.2 s (2x the trials per minute).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = Path(sys.executable)

TRIVIAL = """\
import nni
params = nni.get_next_parameter()
x = params["x"]
for i in range(3):
    nni.report_intermediate_result(-(x - 2) ** 2 + i * 0.01)
nni.report_final_result(-(x - 2) ** 2)
"""
TRIVIAL_SPACE = {"x": {"_type": "uniform", "_value": [-5, 5]}}

DIGITS = """\
import nni
from sklearn.datasets import load_digits
from sklearn.model_selection import cross_val_score
from sklearn.svm import SVC
params = nni.get_next_parameter()
X, y = load_digits(return_X_y=True)
score = cross_val_score(SVC(C=params["C"], gamma=params["gamma"]), X[:600], y[:600], cv=3)
for i, s in enumerate(score):
    nni.report_intermediate_result(float(s))
nni.report_final_result(float(score.mean()))
"""
DIGITS_SPACE = {
    "C": {"_type": "loguniform", "_value": [0.01, 100]},
    "gamma": {"_type": "loguniform", "_value": [0.0001, 0.1]},
}

NNI_DRIVER = """\
import json, sys, time
from nni.experiment import Experiment
cfg = json.load(open(sys.argv[1]))
exp = Experiment("local")
exp.config.trial_command = "python3 trial.py"
exp.config.trial_code_directory = cfg["dir"]
exp.config.search_space = cfg["space"]
exp.config.tuner.name = "TPE"
exp.config.tuner.class_args = {"optimize_mode": "maximize", "seed": cfg["seed"]}
exp.config.max_trial_number = cfg["trials"]
exp.config.trial_concurrency = cfg["concurrency"]
exp.config.experiment_working_directory = cfg["work"]
started = time.time()
exp.run(cfg["port"], wait_completion=True, debug=False)
took = time.time() - started
finals = [t.value for t in exp.export_data()]
exp.stop()
print("RESULT " + json.dumps({"wall_s": took, "best": max(finals) if finals else None,
                             "trials": len(finals)}))
"""


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUBE_LAB_", "NNI_"))}
    env.update(
        {
            "HOME": str(home),
            "CUBE_LAB_DATA_DIR": str(home / "cube-data"),
            "PATH": f"{PY.parent}{os.pathsep}{env.get('PATH', '')}",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_nni(trial: str, space: dict, seed: int, trials: int, concurrency: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-nni-") as tmp:
        home = Path(tmp)
        code = home / "code"
        code.mkdir()
        (code / "trial.py").write_text(trial)
        cfg = {
            "dir": str(code),
            "space": space,
            "seed": seed,
            "trials": trials,
            "concurrency": concurrency,
            "work": str(home / "nni-experiments"),
            "port": free_port(),
        }
        (home / "cfg.json").write_text(json.dumps(cfg))
        (home / "driver.py").write_text(NNI_DRIVER)
        out = subprocess.run(
            [str(PY), str(home / "driver.py"), str(home / "cfg.json")],
            env=env_for(home),
            capture_output=True,
            text=True,
            timeout=900,
        )
        line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
        if line is None:
            raise RuntimeError(f"NNI failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
        return json.loads(line[len("RESULT ") :])


def run_cube(trial: str, space: dict, seed: int, trials: int, concurrency: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-cube-") as tmp:
        home = Path(tmp)
        (home / "trial.py").write_text(trial)
        config = {
            "searchSpace": space,
            "trialCommand": "python3 trial.py",
            "trialCodeDirectory": ".",
            "trialConcurrency": concurrency,
            "maxTrialNumber": trials,
            "tuner": {"name": "TPE", "classArgs": {"optimize_mode": "maximize", "seed": seed}},
        }
        (home / "config.json").write_text(json.dumps(config))
        started = time.time()
        out = subprocess.run(
            [str(PY), "-m", "cube_lab.cli", "tune", str(home / "config.json"), "--json"],
            env=env_for(home),
            capture_output=True,
            text=True,
            timeout=900,
            cwd=home,
        )
        took = time.time() - started
        if out.returncode != 0:
            raise RuntimeError(f"cube-lab failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
        result = json.loads(out.stdout[out.stdout.index("{") :])
        return {"wall_s": took, "best": result["best"]["metric"], "trials": result["trials"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quality", action="store_true")
    parser.add_argument("--write-results", action="store_true")
    a = parser.parse_args()
    load = os.getloadavg()[0]
    speed: dict[str, list[float]] = {"nni": [], "cube-lab": []}
    for i in range(a.runs):
        for name, fn in (("nni", run_nni), ("cube-lab", run_cube)):
            r = fn(TRIVIAL, TRIVIAL_SPACE, i, 12, 2)
            speed[name].append(r["wall_s"])
            print(f"speed run {i + 1}: {name:<8} {r['wall_s']:6.2f} s ({r['trials']} trials)")
    med = {k: statistics.median(v) for k, v in speed.items()}
    ratio = med["nni"] / med["cube-lab"]
    print(f"median: NNI {med['nni']:.2f} s, cube-lab {med['cube-lab']:.2f} s, {ratio:.2f}x")
    quality: dict[str, list[float]] = {"nni": [], "cube-lab": []}
    if a.quality:
        for seed in (1, 2, 3):
            for name, fn in (("nni", run_nni), ("cube-lab", run_cube)):
                r = fn(DIGITS, DIGITS_SPACE, seed, 12, 2)
                quality[name].append(r["best"])
                print(f"quality seed {seed}: {name:<8} best accuracy {r['best']:.4f}")
    if a.write_results:
        write_results(speed, med, ratio, quality, load, " ".join(sys.argv[1:]))


def write_results(speed, med, ratio, quality, load, args) -> None:  # type: ignore[no-untyped-def]
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    rows = [
        f"| {stamp} | {load:.1f} | 12 trivial trials, TPE, 2 at a time | "
        f"{med['nni']:.2f} ({', '.join(f'{x:.1f}' for x in speed['nni'])}) | "
        f"{med['cube-lab']:.2f} ({', '.join(f'{x:.1f}' for x in speed['cube-lab'])}) | "
        f"**{ratio:.2f}x** | <= 10.6 s: {'met' if med['cube-lab'] <= 10.6 else 'not met'} |"
    ]
    if quality["nni"]:
        gap = max(abs(a - b) for a, b in zip(quality["nni"], quality["cube-lab"], strict=True))
        rows.append(
            f"| {stamp} | {load:.1f} | digits SVC accuracy, best of 12, seeds 1-3 | "
            f"{', '.join(f'{x:.4f}' for x in quality['nni'])} | "
            f"{', '.join(f'{x:.4f}' for x in quality['cube-lab'])} | mean "
            f"{statistics.mean(quality['nni']):.4f} vs {statistics.mean(quality['cube-lab']):.4f}"
            f" | same tuner, best within noise: largest per-seed gap {gap:.4f} |"
        )
    section = (
        textwrap.dedent(
            f"""\
        ## Tuning (issue 7)

        Command: `.venv/bin/python benchmarks/tuning.py {args}`. Plain NNI 3.0 local mode
        (Python API, `Experiment('local')`, clock around `run()`) vs `cube-lab tune` (clock
        around the whole CLI process), same trial code, same tuner and seed, alternating,
        fresh temp folders. Machine: {platform.machine()}, {os.cpu_count()} cores, load
        average at start in the table.

        | date (UTC) | load | case | NNI s (runs) | cube-lab s (runs) | NNI / cube-lab | target |
        |---|---|---|---|---|---|---|
        """
        )
        + "\n".join(rows)
        + "\n"
    )
    results = REPO / "benchmarks" / "RESULTS.md"
    text = results.read_text()
    start = text.find("## Tuning (issue 7)")
    if start >= 0:
        end = text.find("\n## ", start + 1)
        text = text[:start] + section + (text[end + 1 :] if end >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    results.write_text(text)
    print("wrote the Tuning section of benchmarks/RESULTS.md")


if __name__ == "__main__":
    main()
