"""`cube-lab tune CONFIG.yml` and `cube-lab tuning list|show|stop|resume|log`."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..identity import Caller
from ..locale.messages import _t
from .args import print_json

if TYPE_CHECKING:
    from ..tuning.engine import Engine, Trial
    from ..workspace import Workspace


def _read_config(path: Path) -> Any:
    import yaml

    try:
        return yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise InvalidInput(_t("config file {value!r} not found", value=str(path))) from None
    except yaml.YAMLError as exc:
        raise InvalidInput(_t("{name} is not valid YAML", name=path.name), str(exc)) from None


def _fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _run(ws: Workspace, engine: Engine, a: argparse.Namespace) -> None:
    started = time.monotonic()
    spec = engine.spec

    def progress(trial: Trial | None) -> None:
        if a.quiet or trial is None or trial.status == "running":
            return
        params = " ".join(f"{k}={_fmt(v)}" for k, v in trial.parameters.items())
        done = sum(1 for t in engine.trials if t.status not in ("waiting", "running"))
        metric = f" {spec.metric}={_fmt(trial.final)}" if trial.final is not None else ""
        print(
            f"[{time.monotonic() - started:7.2f}s] {done:>3}/{spec.max_trials} "
            f"{trial.status:<13} {trial.id} {params}{metric}",
            file=sys.stderr if a.json else sys.stdout,  # --json keeps stdout for the result
            flush=True,
        )

    if not a.json and not a.quiet:
        print(
            f"experiment {engine.experiment_id}: {spec.tuner.name}, up to {spec.max_trials} "
            f"trials, {spec.concurrency} at a time, {spec.mode} {spec.metric}",
            flush=True,
        )
    status = ws.tuning.run_foreground(engine, progress)
    view = ws.tuning.get(Caller(engine.base_env["CUBE_LAB_USER"]), engine.experiment_id)
    best = view.best
    took = time.monotonic() - started
    if a.json:
        out = {
            "experiment": view.id,
            "status": status,
            "best": (
                {"trial": best.id, "parameters": best.parameters, "metric": best.final}
                if best
                else None
            ),
            "trials": view.trial_count,
            "duration_s": round(took, 3),
        }
        print_json(out)
    else:
        print(f"experiment {view.id} {status} in {took:.2f}s, {view.trial_count} trial(s)")
        if best:
            print(f"best: trial {best.id} {spec.metric}={_fmt(best.final)} {best.parameters}")
    if status not in ("done",):
        raise SystemExit(130 if status == "stopped" else 1)


def tune(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    """Run an NNI-style experiment here, printing each trial; end with the best one."""
    path = Path(a.config)
    config = _read_config(path)
    if isinstance(config, dict) and a.project:
        config["project"] = a.project
    spec = ws.tuning.parse(config, path.resolve().parent)
    for key in ("max_trials", "concurrency"):
        if getattr(a, key):
            setattr(spec, key, getattr(a, key))
    if a.backend == "kubernetes":
        _on_cluster(spec, a)
        return
    _run(ws, ws.tuning.prepare(caller, spec), a)


def _on_cluster(spec: Any, a: argparse.Namespace) -> None:
    """A Katib Experiment: printed (--dry-run), or created and followed to its end."""
    import asyncio

    import yaml

    from ..k8s import ClusterConfig
    from ..tuning import cluster, katib

    config = ClusterConfig.from_env(namespace=a.namespace)
    manifest = katib.experiment(spec, namespace=config.default_namespace(), image=a.image)
    if a.dry_run:
        if a.json:
            print_json(manifest)
        else:
            print(yaml.safe_dump(manifest, sort_keys=False), end="")
        return
    started = time.monotonic()
    seen: list[tuple[str, int, int]] = []

    def show(p: cluster.ClusterProgress) -> None:
        now = (p.status, p.succeeded, p.failed)
        if not seen or seen[-1] != now:
            seen.append(now)
            print(
                f"[{time.monotonic() - started:7.2f}s] {p.status:<8} trials {p.trials} "
                f"(succeeded {p.succeeded}, failed {p.failed}, early-stopped {p.early_stopped})",
                file=sys.stderr if a.json else sys.stdout,
                flush=True,
            )

    name = manifest["metadata"]["name"]
    print(f"Experiment {name} on {config.describe()}", file=sys.stderr if a.json else sys.stdout)
    final = asyncio.run(cluster.run(manifest, config, spec.metric, show))
    best = (
        {
            "trial": final.best_trial,
            "parameters": final.best_parameters,
            "metric": final.best_metric,
        }
        if final.best_trial
        else None
    )
    if a.json:
        out = {"experiment": name, "backend": "kubernetes", "status": final.status, "best": best}
        print_json({**out, "trials": final.trials})
    else:
        print(f"Experiment {name} {final.status}, {final.trials} trial(s)")
        if best:
            score = f"{spec.metric}={_fmt(final.best_metric)}"
            print(f"best: trial {final.best_trial} {score} {final.best_parameters}")
    if final.status != "done":
        raise SystemExit(1)


def tuning_resume(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    _run(ws, ws.tuning.resume(caller, a.experiment), a)


def tuning_list(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    views = ws.tuning.list(caller, project=a.project, limit=a.limit)
    if a.json:
        print_json(views)
        return
    if not views:
        print("no experiments yet: cube-lab tune CONFIG.yml")
        return
    for v in views:
        best = f"best {_fmt(v.best.final)}" if v.best else "no result yet"
        print(f"{v.id}  {v.status:<11} {v.name:<24} {v.trial_count:>4} trials  {best}")


def tuning_show(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    view = ws.tuning.get(caller, a.experiment)
    if a.json:
        print_json(view)
        return
    print(f"{view.id} ({view.name}) {view.status}, project {view.project}")
    for t in view.trials or []:
        final = _fmt(t.final) if t.final is not None else "-"
        star = " *" if view.best and t.id == view.best.id else ""
        print(f"  {t.id}  {t.status:<13} {final:>10}  {t.parameters}{star}")


def tuning_stop(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    view = ws.tuning.stop(caller, a.experiment)
    if a.json:
        print_json(view)
    else:
        print(f"experiment {a.experiment}: {view.status}")


def tuning_register(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    version = ws.tuning.register_trial(
        caller, a.experiment, a.name, a.trial, a.path, project=a.project
    )
    if a.json:
        print_json(version)
    else:
        print(f"registered {version.model} version {version.version}")


def tuning_log(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    path = ws.tuning.trial_log(caller, a.experiment, a.trial)
    sys.stdout.write(path.read_text(errors="replace") if path.exists() else "")


def add_commands(groups: Any, command: Callable[..., Any]) -> None:
    p = command(groups, "tune", tune, "run a hyperparameter search (NNI-style config)")
    p.add_argument("config", help="experiment config (NNI v2 YAML/JSON)")
    p.add_argument("--max-trials", dest="max_trials", type=int)
    p.add_argument("--concurrency", type=int)
    p.add_argument("--backend", choices=["local", "kubernetes"], default="local")
    p.add_argument("--dry-run", action="store_true", help="print the Katib Experiment")
    p.add_argument("--namespace", help="Kubernetes namespace (default: the context's)")
    p.add_argument("--image", help="the trial container image (kubernetes)")
    p.add_argument("--quiet", "-q", action="store_true")
    exps = groups.add_parser("tuning", help="tuning experiments").add_subparsers(
        dest="command", required=True
    )
    p = command(exps, "list", tuning_list, "list experiments")
    p.add_argument("--limit", type=int, default=20)
    p = command(exps, "show", tuning_show, "an experiment and its trials")
    p.add_argument("experiment")
    p = command(exps, "stop", tuning_stop, "stop an experiment and its trials")
    p.add_argument("experiment")
    p = command(exps, "resume", tuning_resume, "go on with a stopped or interrupted experiment")
    p.add_argument("experiment")
    p.add_argument("--quiet", "-q", action="store_true")
    p = command(exps, "register", tuning_register, "register a trial's saved model (the best)")
    p.add_argument("experiment")
    p.add_argument("--name", required=True, help="the model name")
    p.add_argument("--trial", help="default: the best trial")
    p.add_argument("--path", help="what to register (default: the trial's $NNI_OUTPUT_DIR)")
    p = command(exps, "log", tuning_log, "a trial's output", json=False)
    p.add_argument("experiment")
    p.add_argument("trial")
