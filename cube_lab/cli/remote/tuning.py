"""`cube-lab tune` and `cube-lab tuning ...` under the hub."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ...errors import InvalidInput
from ...locale.messages import _t
from ...rest_client import ServiceClient, read_log, relative, segment
from ..args import print_json
from .common import POLL_S

TUNING_ACTIVE = ("queued", "running")


def tune(client: ServiceClient, a: argparse.Namespace) -> None:
    """Start the experiment at the service, print each trial as it ends, then the best."""
    from ..tuning import _read_config

    if a.dry_run or a.namespace:
        raise InvalidInput(
            _t("cube-lab tune --dry-run / --namespace are not available under the hub"),
            _t(
                "Leave them out: the cube-lab service creates the Katib Experiment "
                "(--backend kubernetes) in your project's namespace with its own cluster "
                "credentials."
            ),
        )
    path = Path(a.config)
    folder = relative(path.parent if str(path.parent) else ".", "config folder")
    config = _read_config(path)
    if not isinstance(config, dict):
        raise InvalidInput(
            _t("{name} must hold a mapping (an NNI experiment config)", name=path.name)
        )
    if a.max_trials:
        config["maxTrialNumber"] = a.max_trials
    if a.concurrency:
        config["trialConcurrency"] = a.concurrency
    body = {"config": config, "folder": folder, "project": a.project, "image": a.image}
    if a.backend == "kubernetes":
        body["backend"] = a.backend
    started = time.monotonic()
    view = client.post("tuning/experiments", {k: v for k, v in body.items() if v is not None})
    _watch_experiment(client, view, a, started, {})


def tuning_resume(client: ServiceClient, a: argparse.Namespace) -> None:
    """Go on with a stopped experiment at the service; print the trials that end from now."""
    started = time.monotonic()
    before = client.get(f"tuning/experiments/{segment(a.experiment)}")
    seen = {
        t["id"]: t["status"]
        for t in before.get("trials") or []
        if t["status"] not in ("waiting", "running")
    }
    view = client.post(f"tuning/experiments/{segment(a.experiment)}/resume")
    _watch_experiment(client, view, a, started, seen)


def _watch_experiment(
    client: ServiceClient,
    view: dict[str, Any],
    a: argparse.Namespace,
    started: float,
    seen: dict[str, str],
) -> None:
    """Print each trial of a started experiment as it ends, then the best (as ``tune``)."""
    from ..tuning import _fmt

    exp_id, spec = view["id"], view["spec"]
    progress_to = sys.stderr if a.json else sys.stdout
    if not a.json and not a.quiet:
        print(
            f"experiment {exp_id}: {spec['tuner']['name']}, up to {spec['max_trials']} "
            f"trials, {spec['concurrency']} at a time, {spec['mode']} {spec['metric']}",
            flush=True,
        )
    where = f"tuning/experiments/{segment(exp_id)}"
    try:
        while True:
            trials = view.get("trials") or []
            for t in trials:
                if t["status"] in ("waiting", "running") or seen.get(t["id"]) == t["status"]:
                    continue
                seen[t["id"]] = t["status"]
                if a.quiet:
                    continue
                params = " ".join(f"{k}={_fmt(v)}" for k, v in t["parameters"].items())
                done = sum(1 for x in trials if x["status"] not in ("waiting", "running"))
                metric = f" {spec['metric']}={_fmt(t['final'])}" if t["final"] is not None else ""
                print(
                    f"[{time.monotonic() - started:7.2f}s] {done:>3}/{spec['max_trials']} "
                    f"{t['status']:<13} {t['id']} {params}{metric}",
                    file=progress_to,
                    flush=True,
                )
            if view["status"] not in TUNING_ACTIVE:
                break
            time.sleep(POLL_S)
            view = client.get(where)
    except KeyboardInterrupt:
        view = client.post(f"{where}/stop")
        print(f"experiment {exp_id}: {view['status']} (interrupted)", file=sys.stderr)
        raise SystemExit(130) from None
    status, best, took = view["status"], view.get("best"), time.monotonic() - started
    if a.json:
        print_json(
            {
                "experiment": exp_id,
                "status": status,
                "best": (
                    {"trial": best["id"], "parameters": best["parameters"], "metric": best["final"]}
                    if best
                    else None
                ),
                "trials": view["trial_count"],
                "duration_s": round(took, 3),
            }
        )
    else:
        print(f"experiment {exp_id} {status} in {took:.2f}s, {view['trial_count']} trial(s)")
        if best:
            score = f"{spec['metric']}={_fmt(best['final'])}"
            print(f"best: trial {best['id']} {score} {best['parameters']}")
    if status != "done":
        raise SystemExit(130 if status == "stopped" else 1)


def tuning_list(client: ServiceClient, a: argparse.Namespace) -> None:
    from ..tuning import _fmt

    views = client.get("tuning/experiments", project=a.project, limit=a.limit)["experiments"]
    if a.json:
        print_json(views)
        return
    if not views:
        print("no experiments yet: cube-lab tune CONFIG.yml")
        return
    for v in views:
        best = f"best {_fmt(v['best']['final'])}" if v.get("best") else "no result yet"
        print(f"{v['id']}  {v['status']:<11} {v['name']:<24} {v['trial_count']:>4} trials  {best}")


def tuning_show(client: ServiceClient, a: argparse.Namespace) -> None:
    from ..tuning import _fmt

    view = client.get(f"tuning/experiments/{segment(a.experiment)}")
    if a.json:
        print_json(view)
        return
    print(f"{view['id']} ({view['name']}) {view['status']}, project {view['project']}")
    best_id = (view.get("best") or {}).get("id")
    for t in view.get("trials") or []:
        final = _fmt(t["final"]) if t["final"] is not None else "-"
        star = " *" if t["id"] == best_id else ""
        print(f"  {t['id']}  {t['status']:<13} {final:>10}  {t['parameters']}{star}")


def tuning_register(client: ServiceClient, a: argparse.Namespace) -> None:
    body = {"name": a.name, "trial": a.trial, "path": a.path, "project": a.project}
    version = client.post(
        f"tuning/experiments/{segment(a.experiment)}/register",
        {k: v for k, v in body.items() if v is not None},
    )
    if a.json:
        print_json(version)
    else:
        print(f"registered {version['model']} version {version['version']}")


def tuning_log(client: ServiceClient, a: argparse.Namespace) -> None:
    where = f"tuning/experiments/{segment(a.experiment)}/trials/{segment(a.trial)}"
    sys.stdout.write(read_log(client, where))


def tuning_stop(client: ServiceClient, a: argparse.Namespace) -> None:
    view = client.post(f"tuning/experiments/{segment(a.experiment)}/stop")
    if a.json:
        print_json(view)
    else:
        print(f"experiment {a.experiment}: {view['status']}")
