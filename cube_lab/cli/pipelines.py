"""`cube-lab pipeline validate|run|runs|logs|cancel|compile|schedule|schedules|unschedule`:
Elyra-compatible pipelines, run here or compiled for Kubeflow Pipelines."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import ENV_ROOT_DIR
from ..errors import InvalidInput
from ..identity import Caller
from ..locale.messages import _t, env_locale, localize
from ..serialize import to_jsonable
from .args import output_target, parse_pairs, print_json, print_table
from .output import _print_problems, _stamp

if TYPE_CHECKING:
    from ..pipelines.runner import NodeState
    from ..workspace import Workspace


def show_runs(runs: list[dict[str, Any]]) -> None:
    print_table(
        [
            [
                r["id"],
                r["pipeline"],
                r["status"],
                r["trigger"],
                _stamp(r["created_at"], "%Y-%m-%d %H:%M:%S"),
                f"{r['duration_s']:.1f}s" if r["duration_s"] is not None else "",
                " ".join(f"{k}={v}" for k, v in sorted(r["counts"].items())),
            ]
            for r in runs
        ],
        ["RUN", "PIPELINE", "STATUS", "TRIGGER", "CREATED", "TOOK", "NODES"],
    )


def progress_line(
    elapsed: float,
    finished: int,
    total: int,
    status: str,
    label: str,
    attempts: int,
    took_s: float | None,
    error: str | None,
) -> str:
    """One line of a pipeline run's progress: ``[   0.41s]   1/2     ok load 0.12s``."""
    attempt = f" (attempt {attempts})" if attempts > 1 else ""
    took = f" {took_s:.2f}s" if took_s is not None else ""
    failure = f" - {error}" if error and status == "failed" else ""
    return (
        f"[{elapsed:7.2f}s] {finished:>3}/{total} "
        f"{SYMBOLS.get(status, status):>6} {label}{attempt}{took}{failure}"
    )


SYMBOLS = {
    "running": ">",
    "succeeded": "ok",
    "failed": "FAIL",
    "cached": "cached",
    "reused": "reused",
    "skipped": "skip",
    "cancelled": "cancel",
}


def _pipeline_root(path: Path) -> Path:
    """The project folder nothing may escape: the server root when inside it, else the
    current folder when the file lies under it (as Elyra's CLI takes its root), else the
    file's own folder. Node paths still resolve relative to the pipeline file, so
    ``../scripts/x.py`` works wherever the root covers it."""
    env_root = os.environ.get(ENV_ROOT_DIR)
    if env_root and path.resolve().is_relative_to(Path(env_root).resolve()):
        return Path(env_root).resolve()
    cwd = Path.cwd().resolve()
    if path.resolve().is_relative_to(cwd):
        return cwd
    return path.resolve().parent


def pipeline_validate(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    path = Path(a.path)
    pipeline, problems = ws.pipelines.check(path, _pipeline_root(path), caller)
    if a.json:
        found = localize([asdict(p) for p in problems], env_locale())
        print_json({"valid": not problems, "problems": found})
    if problems:
        if not a.json:
            count = _t("{path}: {n} problem(s)", path=str(path), n=len(problems))
            print(count.translated(env_locale()), file=sys.stderr)
            _print_problems(problems)
        raise SystemExit(1)
    if not a.json:
        migrated = (
            f" (migrated from Elyra version {pipeline.migrated_from})"
            if pipeline.migrated_from
            else ""
        )
        print(f"{path}: valid, {len(pipeline.nodes)} nodes{migrated}")


def pipeline_run(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    from ..pipelines import launch
    from ..pipelines.recorder import StoreRecorder

    path = Path(a.path)
    root = _pipeline_root(path)
    params = parse_pairs(a.param, "param")
    if a.only or a.from_node or a.cache or a.project:
        # These look things up in the store (earlier runs, the project) before starting.
        runner, recorder = ws.pipelines.prepare(
            caller,
            path,
            root,
            project=a.project,
            params=params,
            only=a.only,
            from_node=a.from_node,
            cache=a.cache,
            parallelism=a.parallel,
            trigger="cli",
        )
    else:
        # Nothing to look up: nodes start while the recorder's thread opens the store
        # and writes the run record (SQLAlchemy's import alone is a third of a second).
        plan = launch.plan_launch(path, root, ws.templates, params=params, parallelism=a.parallel)
        recorder = StoreRecorder(
            lambda: ws.store,
            plan.run_id,
            setup=lambda: ws.pipelines.record(caller, plan, None, "cli"),
        )
        runner = launch.build_runner(plan, ws.settings, caller, ws.templates, recorder)
    started = time.monotonic()
    total = len(runner.plan.selected)
    finished: set[str] = set()

    def progress(state: NodeState) -> None:
        if a.quiet or state.status == "pending":
            return
        if state.status not in ("running",):
            finished.add(state.node.id)
        took = None
        if state.finished_at and state.started_at:
            took = (state.finished_at - state.started_at).total_seconds()
        line = progress_line(
            time.monotonic() - started,
            len(finished),
            total,
            state.status,
            state.node.label,
            state.attempts,
            took,
            state.error,
        )
        print(line, file=progress_to, flush=True)

    progress_to = sys.stderr if a.json else sys.stdout  # --json keeps stdout for the result
    if not a.quiet:
        print(
            f"run {runner.plan.run_id}: {runner.pipeline.name}, {total} node(s), "
            f"parallelism {runner.plan.parallelism}",
            file=progress_to,
            flush=True,
        )
    status = launch.run_foreground(runner, recorder, progress)
    if a.json:
        print_json(ws.pipelines.get_run(caller, runner.plan.run_id))
    else:
        print(f"run {runner.plan.run_id} {status} in {time.monotonic() - started:.2f}s")
    if status != "succeeded":
        failed = [s for s in runner.states.values() if s.status == "failed"]
        for state in failed:
            print(f"--- {state.node.label}: last lines of {state.log_path}", file=sys.stderr)
            lines = (
                state.log_path.read_text(errors="replace").splitlines()[-15:]
                if state.log_path.exists()
                else []
            )
            print("\n".join(lines), file=sys.stderr)
        raise SystemExit(1)


def pipeline_runs(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    path = Path(a.path).resolve() if a.path else None
    runs = ws.pipelines.list_runs(caller, path=path, project=a.project, limit=a.limit)
    if a.json:
        print_json(runs)
        return
    show_runs(to_jsonable(runs))


def pipeline_logs(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    run = ws.pipelines.get_run(caller, a.run)
    node = next((n for n in run.nodes or [] if a.node in (n.id, n.label)), None)
    if node is None:
        raise InvalidInput(
            _t("run {run} has no node {node!r}", run=a.run, node=a.node),
            "Nodes: " + ", ".join(n.label for n in run.nodes or []),
        )
    offset = 0
    while True:
        chunk = ws.pipelines.tail_log(caller, a.run, node.id, offset)
        sys.stdout.write(chunk.text)
        sys.stdout.flush()
        offset = chunk.offset
        if chunk.done or not a.follow:
            return
        time.sleep(0.5)


def pipeline_cancel(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    run = ws.pipelines.cancel(caller, a.run)
    if a.json:
        print_json(run)
    else:
        print(f"run {run.id}: {run.status}")


def pipeline_schedule(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    path = Path(a.path)
    view = ws.schedules.create(
        caller,
        path.resolve(),
        _pipeline_root(path),
        a.cron,
        name=a.name,
        project=a.project,
        start_at=a.start,
        end_at=a.end,
        catchup=a.catchup,
        depends_on_past=a.depends_on_past,
        max_active_runs=a.max_active,
        expire_after_s=a.expire_after,
        params=parse_pairs(a.param, "param"),
    )
    if a.json:
        print_json(view)
        return
    show_scheduled(to_jsonable(view), "the JupyterLab server fires it (make lab)")


def show_scheduled(view: dict[str, Any], fired_by: str) -> None:
    upcoming = view["next_fire_at"] or "never"
    head = f"schedule {view['id']} ({view['name']}): {view['cron']}"
    print(f"{head}, next run {upcoming}; {fired_by}")


def show_schedules(views: list[dict[str, Any]]) -> None:
    print_table(
        [
            [
                str(v["id"]),
                v["name"],
                v["cron"],
                "on" if v["enabled"] else "paused",
                _stamp(v["next_fire_at"]),
                v["last_error"] or "",
            ]
            for v in views
        ],
        ["ID", "NAME", "CRON", "STATE", "NEXT", "LAST ERROR"],
    )


def pipeline_schedules(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    views = ws.schedules.list(caller)
    if a.json:
        print_json(views)
        return
    show_schedules(to_jsonable(views))


def pipeline_unschedule(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    ws.schedules.delete(caller, a.id)
    if a.json:
        print_json({"deleted": a.id})
    else:
        print(f"deleted schedule {a.id}")


def pipeline_compile(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    from ..pipelines import kfp_compiler

    path = Path(a.path)
    pipeline, problems = ws.pipelines.check(path, _pipeline_root(path))
    # Nodes run in their images on the cluster: what this machine lacks (Rscript) is fine.
    problems = [p for p in problems if not p.message.startswith("R nodes need Rscript")]
    if problems:
        from ..pipelines.validation import PipelineInvalid

        raise PipelineInvalid(problems)
    if a.submit and not a.host:
        raise InvalidInput(_t("--submit needs --host URL of the Kubeflow Pipelines API"))
    name = path.with_suffix(".yaml").name
    output = output_target(
        a.output or str(path.with_suffix(".yaml")),
        what="the compiled pipeline (KFP v2 IR YAML)",
        single=name,
        replace=True,  # compiling again refreshes the file
    )
    for note in kfp_compiler.plan_pipeline(pipeline, ws.templates).notes:
        print(f"note: {note}", file=sys.stderr)
    logging.getLogger(kfp_compiler.__name__).setLevel(logging.ERROR)  # notes printed above
    with tempfile.TemporaryDirectory(prefix="cube-kfp-") as tmp:
        identity = kfp_compiler.identity_of(ws, caller)  # the steps' pods' labels
        compiled = kfp_compiler.compile_pipeline(
            pipeline, ws.templates, Path(tmp) / name, identity=identity
        )
        deliver_compiled(compiled, output, path, a)


def deliver_compiled(compiled: Path, output: Any, path: Path, a: argparse.Namespace) -> None:
    """Write a compiled pipeline where ``-o`` says, submit it with ``--submit``, and say so
    (the local and the hub command alike)."""
    written = output.deliver(compiled)
    if not a.json:
        print(f"compiled {path} to {written} (Kubeflow Pipelines v2 IR)")
    run_id = None
    if a.submit:
        from ..pipelines import kfp_compiler

        run_id = kfp_compiler.submit(compiled, a.host, params=parse_pairs(a.param, "param"))
        if not a.json:
            print(f"submitted: KFP run {run_id}")
    if a.json:
        print_json({"pipeline": str(path), "output": str(written.resolve()), "kfp_run": run_id})


def add_commands(groups: Any, command: Callable[..., Any]) -> None:
    pipes = groups.add_parser("pipeline", help="Elyra-compatible pipelines").add_subparsers(
        dest="command", required=True
    )
    p = command(pipes, "validate", pipeline_validate, "check a .pipeline file")
    p.add_argument("path")
    p = command(pipes, "run", pipeline_run, "run a .pipeline locally, nodes in parallel")
    p.add_argument("path")
    p.add_argument("--parallel", type=int, help="nodes at once (default: pipeline or CPUs)")
    p.add_argument("--from", dest="from_node", metavar="NODE", help="this node and downstream")
    p.add_argument("--only", metavar="NODE", help="only this node")
    p.add_argument("--cache", action="store_true", help="skip nodes whose inputs are unchanged")
    p.add_argument("--param", action="append", metavar="K=V", help="a pipeline parameter")
    p.add_argument("--quiet", "-q", action="store_true")
    p = command(pipes, "runs", pipeline_runs, "list runs")
    p.add_argument("path", nargs="?")
    p.add_argument("--limit", type=int, default=20)
    p = command(pipes, "logs", pipeline_logs, "print a node's log", json=False)
    p.add_argument("run")
    p.add_argument("node", help="node id or label")
    p.add_argument("--follow", "-f", action="store_true")
    p = command(pipes, "cancel", pipeline_cancel, "cancel a run")
    p.add_argument("run")
    p = command(pipes, "compile", pipeline_compile, "compile for Kubeflow Pipelines (KFP v2 IR)")
    p.add_argument("path")
    p.add_argument("--target", choices=["kfp"], default="kfp")
    p.add_argument(
        "--output", "-o", help="a .yaml file, a folder, or a .zip (default: next to the pipeline)"
    )
    p.add_argument("--submit", action="store_true", help="also submit it with the KFP client")
    p.add_argument("--host", help="the KFP API, e.g. http://ml-pipeline-ui.kubeflow")
    p.add_argument("--param", action="append", metavar="K=V")
    p = command(pipes, "schedule", pipeline_schedule, "run a pipeline on a cron schedule")
    p.add_argument("path")
    p.add_argument("--cron", required=True, help="e.g. '0 3 * * *' (03:00 UTC daily)")
    p.add_argument("--name")
    p.add_argument("--start", help="ISO date-time of the first interval (default: now)")
    p.add_argument("--end", help="ISO date-time after which it stops")
    p.add_argument("--catchup", action="store_true", help="backfill every missed interval")
    p.add_argument(
        "--depends-on-past", action="store_true", help="wait for the previous run to succeed"
    )
    p.add_argument("--max-active", type=int, default=1, help="runs at once (default 1)")
    p.add_argument(
        "--expire-after", type=int, metavar="SECONDS", help="delete finished runs older than this"
    )
    p.add_argument("--param", action="append", metavar="K=V")
    command(pipes, "schedules", pipeline_schedules, "list schedules")
    p = command(pipes, "unschedule", pipeline_unschedule, "delete a schedule")
    p.add_argument("id", type=int)
