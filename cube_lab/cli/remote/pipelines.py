"""`cube-lab pipeline ...` under the hub."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ...errors import InvalidInput
from ...locale.messages import _t
from ...rest_client import ServiceClient, follow_log, read_log, relative, segment
from ..args import output_target, parse_pairs, print_json
from ..output import _print_problems
from ..pipelines import deliver_compiled, progress_line, show_runs, show_scheduled, show_schedules
from .common import ACTIVE, POLL_S, emit


def _problems(detail: Any) -> list[Any]:
    return [SimpleNamespace(**p) for p in detail or [] if isinstance(p, dict) and "field" in p]


def pipeline_validate(client: ServiceClient, a: argparse.Namespace) -> None:
    found = client.post("pipelines/validate", {"path": relative(a.path, "pipeline")})
    if a.json:
        print_json({"valid": found["valid"], "problems": found["problems"]})
    if found["problems"]:
        if not a.json:
            print(f"{a.path}: {len(found['problems'])} problem(s)", file=sys.stderr)
            _print_problems(_problems(found["problems"]))
        raise SystemExit(1)
    if not a.json:
        migrated = found.get("migrated_from")
        note = f" (migrated from Elyra version {migrated})" if migrated else ""
        print(f"{a.path}: valid, {found['nodes']} nodes{note}")


def pipeline_run(client: ServiceClient, a: argparse.Namespace) -> None:
    body: dict[str, Any] = {
        "path": relative(a.path, "pipeline"),
        "params": parse_pairs(a.param, "param"),
        "only": a.only,
        "from": a.from_node,
        "cache": a.cache,
        "parallelism": a.parallel,
        "project": a.project,
    }
    started = time.monotonic()
    try:
        run = client.post("pipelines/runs", {k: v for k, v in body.items() if v is not None})
    except InvalidInput as exc:
        exc.problems = _problems(exc.detail)  # type: ignore[attr-defined]
        raise
    run_id = run["id"]
    progress_to = sys.stderr if a.json else sys.stdout  # --json keeps stdout for the result
    nodes = run.get("nodes") or []
    total = len([n for n in nodes if n["status"] != "skipped"]) or len(nodes)
    if not a.quiet:
        print(
            f"run {run_id}: {run['pipeline']}, {total} node(s), "
            f"parallelism {run['options'].get('parallelism')}",
            file=progress_to,
            flush=True,
        )
    seen: dict[str, tuple[str, int]] = {}
    finished: set[str] = set()
    try:
        while True:
            for n in run.get("nodes") or []:
                state = (n["status"], n["attempts"])
                if n["status"] == "pending" or seen.get(n["id"]) == state:
                    continue
                seen[n["id"]] = state
                if n["status"] != "running":
                    finished.add(n["id"])
                if a.quiet:
                    continue
                took = n["duration_s"] if n["finished_at"] and n["started_at"] else None
                line = progress_line(
                    time.monotonic() - started,
                    len(finished),
                    total,
                    n["status"],
                    n["label"],
                    n["attempts"],
                    took,
                    n["error"],
                )
                print(line, file=progress_to, flush=True)
            if run["status"] not in ACTIVE:
                break
            time.sleep(POLL_S)
            run = client.get(f"pipelines/runs/{segment(run_id)}")
    except KeyboardInterrupt:
        run = client.post(f"pipelines/runs/{segment(run_id)}/cancel")
        print(f"run {run_id}: {run['status']} (interrupted)", file=sys.stderr)
        raise SystemExit(130) from None
    status = run["status"]
    if a.json:
        print_json(run)
    else:
        print(f"run {run_id} {status} in {time.monotonic() - started:.2f}s")
    if status != "succeeded":
        for n in run.get("nodes") or []:
            if n["status"] != "failed":
                continue
            print(f"--- {n['label']}: last lines of its log", file=sys.stderr)
            log = read_log(client, f"pipelines/runs/{segment(run_id)}/nodes/{segment(n['id'])}")
            print("\n".join(log.splitlines()[-15:]), file=sys.stderr)
        raise SystemExit(1)


def pipeline_runs(client: ServiceClient, a: argparse.Namespace) -> None:
    path = relative(a.path, "pipeline") if a.path else None
    runs = client.get("pipelines/runs", path=path, project=a.project, limit=a.limit)["runs"]
    emit(a, runs, show_runs)


def pipeline_logs(client: ServiceClient, a: argparse.Namespace) -> None:
    run = client.get(f"pipelines/runs/{segment(a.run)}")
    node = next((n for n in run.get("nodes") or [] if a.node in (n["id"], n["label"])), None)
    if node is None:
        raise InvalidInput(
            _t("run {run} has no node {node!r}", run=a.run, node=a.node),
            "Nodes: " + ", ".join(n["label"] for n in run.get("nodes") or []),
        )
    follow_log(client, f"pipelines/runs/{segment(a.run)}/nodes/{segment(node['id'])}", a.follow)


def pipeline_cancel(client: ServiceClient, a: argparse.Namespace) -> None:
    run = client.post(f"pipelines/runs/{segment(a.run)}/cancel")
    if a.json:
        print_json(run)
    else:
        print(f"run {run['id']}: {run['status']}")


def pipeline_compile(client: ServiceClient, a: argparse.Namespace) -> None:
    """The service compiles the pipeline (KFP v2 IR); the YAML is written here, where the
    local command writes it."""

    if a.submit and not a.host:
        raise InvalidInput(_t("--submit needs --host URL of the Kubeflow Pipelines API"))
    path = Path(a.path)
    try:
        body = {"path": relative(path, "pipeline"), "target": a.target}
        found = client.post("pipelines/compile", body)
    except InvalidInput as exc:
        exc.problems = _problems(exc.detail)  # type: ignore[attr-defined]
        raise
    name = path.with_suffix(".yaml").name
    output = output_target(
        a.output or str(path.with_suffix(".yaml")),
        what="the compiled pipeline (KFP v2 IR YAML)",
        single=name,
        replace=True,  # compiling again refreshes the file
    )
    for note in found.get("notes") or []:
        print(f"note: {note}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="cube-kfp-") as tmp:
        compiled = Path(tmp) / name
        compiled.write_text(found["yaml"], encoding="utf-8")
        deliver_compiled(compiled, output, path, a)


def pipeline_schedule(client: ServiceClient, a: argparse.Namespace) -> None:
    body: dict[str, Any] = {
        "path": relative(a.path, "pipeline"),
        "cron": a.cron,
        "name": a.name,
        "project": a.project,
        "start_at": a.start,
        "end_at": a.end,
        "catchup": a.catchup,
        "depends_on_past": a.depends_on_past,
        "max_active_runs": a.max_active,
        "expire_after_s": a.expire_after,
        "params": parse_pairs(a.param, "param"),
    }
    view = client.post("pipelines/schedules", {k: v for k, v in body.items() if v is not None})
    if a.json:
        print_json(view)
    else:
        show_scheduled(view, "the cube-lab service fires it")


def pipeline_schedules(client: ServiceClient, a: argparse.Namespace) -> None:
    views = client.get("pipelines/schedules")["schedules"]
    emit(a, views, show_schedules)


def pipeline_unschedule(client: ServiceClient, a: argparse.Namespace) -> None:
    client.delete(f"pipelines/schedules/{a.id}")
    if a.json:
        print_json({"deleted": a.id})
    else:
        print(f"deleted schedule {a.id}")
