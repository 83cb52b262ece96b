"""The ``cube-lab`` command line: a thin caller of the same services as the REST API.

It opens the workspace the server uses (``$CUBE_LAB_DATA_DIR`` / ``$CUBE_LAB_DB_URL``,
exported to JupyterLab terminals), so it works with or without a running server.
"""

from __future__ import annotations

import sys

from ..locale.messages import _t

# jsonschema imports rfc3987_syntax when it is installed (jupyter-events pulls it in),
# which builds a parser for ~6 s on every start; cube-lab never checks "iri" formats.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

import argparse
import logging
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import ENV_ROOT_DIR, Settings, local_username
from ..errors import CubeError, InvalidInput
from ..identity import Caller
from ..locale.messages import env_locale, localize
from ..serialize import to_jsonable
from ..workspace import Workspace
from . import finetune as cli_finetune
from . import kb as cli_kb
from . import kserve as cli_kserve
from . import labeling as cli_labeling
from . import tuning as cli_tuning
from .args import (
    json_printed,
    json_stdout,
    output_target,
    parse_pairs,
    print_json,
    print_table,
    quiet_libraries,
    split_ref,
)
from .i18n import argparse_words, translate_parser

if TYPE_CHECKING:
    from ..pipelines.runner import NodeState


# -- what commands print, from the REST JSON of a result (local and remote alike) ----------


def _stamp(value: str | None, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """An ISO time of the JSON form, as the tables show it ("" when there is none)."""
    from datetime import datetime

    return datetime.fromisoformat(value).strftime(fmt) if value else ""


def show_registered(v: dict[str, Any]) -> None:
    print(
        f"Registered {v['model']} v{v['version']} ({v['flavor']}, {v['format']}, "
        f"{v['size_bytes']:,} bytes, {v['checksum'][:19]}) in project {v['project']}"
    )


def show_models(models: list[dict[str, Any]]) -> None:
    if not models:
        print("No models yet. Register one: cube-lab model register PATH --name NAME")
        return
    print_table(
        [
            [
                m["project"],
                m["name"],
                f"v{m['latest_version']}",
                str(m["version_count"]),
                m["flavor"] or "",
                " ".join(f"{k}=v{v}" for k, v in m["aliases"].items()),
                _stamp(m["updated_at"]),
            ]
            for m in models
        ],
        ["PROJECT", "NAME", "LATEST", "VERSIONS", "FLAVOR", "ALIASES", "UPDATED"],
    )


def show_model(detail: dict[str, Any]) -> None:
    print(f"{detail['project']}/{detail['name']}  {detail['description']}".rstrip())
    print_table(
        [
            [
                f"v{v['version']}",
                v["flavor"],
                v["format"],
                f"{v['size_bytes']:,}",
                " ".join(f"{k}={val:g}" for k, val in v["metrics"].items()),
                ",".join(v["aliases"]),
                v["created_by"],
                _stamp(v["created_at"]),
                "archived" if v["archived"] else "",
            ]
            for v in detail["versions"]
        ],
        ["VERSION", "FLAVOR", "FORMAT", "BYTES", "METRICS", "ALIASES", "BY", "CREATED", ""],
    )


def show_projects(projects: list[dict[str, Any]], invitations: list[dict[str, Any]]) -> None:
    print_table(
        [
            [p["name"], p["kind"], p["role"], str(len(p["members"])), p["description"]]
            for p in projects
        ],
        ["NAME", "KIND", "ROLE", "MEMBERS", "DESCRIPTION"],
    )
    if invitations:
        names = ", ".join(f"{i['project']} (from {i['invited_by']})" for i in invitations)
        print(f"\nInvited to: {names}; answer with `cube-lab project accept|decline NAME`.")


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


def show_jobs(jobs: list[dict[str, Any]]) -> None:
    print_table(
        [
            [
                j["id"],
                j["name"],
                j["framework"],
                j["status"],
                str(j["workers"] * j["nproc_per_worker"]),
                f"{j['duration_s']:.1f}s" if j["duration_s"] is not None else "",
                j["command"],
            ]
            for j in jobs
        ],
        ["JOB", "NAME", "FRAMEWORK", "STATUS", "PROCS", "TOOK", "COMMAND"],
    )


def job_finished_line(job_id: str, status: str, view: dict[str, Any]) -> str:
    error = f" ({view['error']})" if view.get("error") else ""
    took = f" in {view['duration_s']:.1f}s" if view.get("duration_s") is not None else ""
    return f"job {job_id} {status}{took}{error}"


def show_deployments(found: list[dict[str, Any]]) -> None:
    print_table(
        [
            [
                d["name"],
                d["project"],
                f"{d['model']}:{d['version']}",
                d["status"],
                str(d["replicas"]),
                " ".join(
                    f"v{t['version']}={'shadow' if t['shadow'] else format(t['weight'], 'g')}"
                    for t in d["traffic"]
                ),
                d["endpoint"] or "",
            ]
            for d in found
        ],
        ["NAME", "PROJECT", "MODEL", "STATUS", "REPLICAS", "TRAFFIC", "ENDPOINT"],
    )


def show_deployed(view: dict[str, Any], took: float) -> None:
    """What ``deploy`` says (on stderr) once a new deployment answers."""
    print(
        f"deployed {view['model']} v{view['version']} as {view['name']} "
        f"({view['replicas']} replica(s)) in {took:.1f}s",
        file=sys.stderr,
    )
    if view["access"]["auth"] == "required":
        print(
            f"callers need an API key: cube-lab deployment keys create {view['name']} "
            "KEY-NAME, then send 'Authorization: Bearer <key>'",
            file=sys.stderr,
        )
    if view.get("runtime") == "llm" and view.get("endpoint"):
        print(
            f"OpenAI-compatible API: base_url {view['endpoint']}/v1, model {view['model']!r}",
            file=sys.stderr,
        )


def show_deployment_state(view: dict[str, Any]) -> None:
    """``deploy``'s last lines: status and traffic (stderr), the endpoint (stdout)."""
    traffic = ", ".join(
        f"v{t['version']} {'shadow' if t['shadow'] else format(t['weight'], 'g') + '%'}"
        for t in view["traffic"]
    )
    print(f"{view['name']}: {view['status']}, traffic {traffic}", file=sys.stderr)
    print(view["endpoint"])


def show_traffic(view: dict[str, Any]) -> None:
    print(", ".join(f"v{t['version']} {t['weight']:g}%" for t in view["traffic"]))


def show_samples(found: dict[str, Any]) -> None:
    print(f"sampling {found['percent']:g}% of requests", file=sys.stderr)
    for s in found["samples"]:
        head = f"{s['status']} v{s['version']} {s['latency_ms']:.1f}ms"
        print(f"{head} {s['request']} -> {s['response']}")


def show_key_made(made: dict[str, Any], deployment: str) -> None:
    until = f", expires {_stamp(made['expires_at'])} UTC" if made.get("expires_at") else ""
    print(
        f"key {made['name']} ({made['id']}{until}) for {deployment}; it is shown only now, "
        "send it as 'Authorization: Bearer <key>':",
        file=sys.stderr,
    )
    print(made["key"])


def show_keys(keys: list[dict[str, Any]]) -> None:
    print_table(
        [
            [
                k["id"],
                k["name"],
                k["prefix"] + "…",
                k["state"],
                _stamp(k["created_at"]),
                _stamp(k["expires_at"]),
                _stamp(k["last_used_at"]),
            ]
            for k in keys
        ],
        ["ID", "NAME", "PREFIX", "STATE", "CREATED", "EXPIRES", "LAST USED"],
    )


def show_access(settings: dict[str, Any]) -> None:
    limit = settings["rate_limit"]
    rate = (
        f"{limit['rps']:g} requests/s, bursts of {limit['burst']}"
        + (", per key" if limit["per_key"] else "")
        if limit
        else "none"
    )
    print(f"auth: {settings['auth']}")
    print(f"rate limit: {rate}")
    print(f"allow: {' '.join(settings['allow']) or 'any address'}")
    print(f"deny: {' '.join(settings['deny']) or 'none'}")


def access_changes(a: argparse.Namespace) -> dict[str, Any]:
    """``deployment access``'s options as the changes ``set_access`` takes."""
    changes: dict[str, Any] = {}
    if a.auth is not None:
        changes["auth"] = a.auth
    if a.no_rate_limit:
        changes["rate_limit"] = None
    elif a.rps is not None:
        changes["rate_limit"] = {"rps": a.rps, "per_key": a.per_key}
        if a.burst is not None:
            changes["rate_limit"]["burst"] = a.burst
    elif a.burst is not None or a.per_key:
        raise InvalidInput(
            _t("--burst and --per-key go with --rps"), _t("e.g. --rps 20 --burst 40")
        )
    for field in ("allow", "deny"):
        given = getattr(a, field)
        if given is not None:
            changes[field] = [x for x in given if x]  # --allow '' clears the list
    return changes


# -- model commands ----------------------------------------------------------------------


def model_register(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    v = ws.registry.register(
        caller,
        name=a.name,
        path=Path(a.path).expanduser().resolve(),
        project=a.project,
        flavor=a.flavor,
        description=a.description,
        metrics=parse_pairs(a.metric, "metric", numeric=True),
        params=parse_pairs(a.param, "param"),
        tags=parse_pairs(a.tag, "tag"),
        aliases=a.alias,
        source=a.source,
        pipeline_run_id=a.pipeline_run,
        training_job_id=a.training_job,
    )
    if a.json:
        print_json(v)
    else:
        show_registered(to_jsonable(v))


def model_list(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    models, offset = [], 0
    while True:  # --json prints every model the caller can see, page by page
        page = ws.registry.list_models(
            caller, q=a.search, project=a.project, include_archived=a.all, limit=500, offset=offset
        )
        models.extend(page.models)
        offset += len(page.models)
        if offset >= page.total or not page.models:
            break
    if a.json:
        print_json(models)
        return
    show_models(to_jsonable(models))


def model_show(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    detail = ws.registry.get_model(caller, _project(ws, caller, a), a.name)
    if a.json:
        print_json(detail)
        return
    show_model(to_jsonable(detail))


def model_compare(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    cmp = ws.registry.compare(caller, _project(ws, caller, a), a.name, a.versions)
    if a.json:
        print_json(cmp)
        return
    header = ["", *[f"v{v.version}" for v in cmp.versions]]
    rows = [
        [f"metric {m}", *[str(v.metrics.get(m, "")) for v in cmp.versions]] for m in cmp.metrics
    ]
    rows += [[f"param {p}", *[str(v.params.get(p, "")) for v in cmp.versions]] for p in cmp.params]
    print_table(rows, header)


def model_alias(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    project = _project(ws, caller, a)
    if a.remove:
        detail = ws.registry.delete_alias(caller, project, a.name, a.alias)
        message = f"Removed alias {a.alias} from {a.name}"
    else:
        if a.version is None:
            raise InvalidInput(
                _t("give the version to point the alias at"),
                _t("cube-lab model alias NAME ALIAS VERSION"),
            )
        detail = ws.registry.set_alias(caller, project, a.name, a.alias, a.version)
        message = f"{a.name}@{a.alias} -> v{a.version}"
    if a.json:
        print_json(detail)
    else:
        print(message)


def model_archive(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    name, ref = a.ref.partition(":")[0], a.ref.partition(":")[2]
    project = _project(ws, caller, a)
    view: Any
    if ref:
        view = ws.registry.update_version(caller, project, name, ref, archived=not a.undo)
    else:
        view = ws.registry.update_model(caller, project, name, archived=not a.undo)
    if a.json:
        print_json(view)
    else:
        print(f"{'Restored' if a.undo else 'Archived'} {a.ref}")


def model_delete(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    name, ref = a.ref.partition(":")[0], a.ref.partition(":")[2]
    project = _project(ws, caller, a)
    if not a.yes:
        raise InvalidInput(
            _t("deleting {ref} removes its artifacts for good", ref=a.ref),
            _t("Add --yes to confirm."),
        )
    if ref:
        ws.registry.delete_version(caller, project, name, ref)
    else:
        ws.registry.delete_model(caller, project, name)
    if a.json:
        print_json({"deleted": a.ref, "project": project})
    else:
        print(f"Deleted {a.ref}")


def model_download(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    name, ref = split_ref(a.ref)
    project = _project(ws, caller, a)
    found = ws.registry.download(caller, project, name, ref)
    output = output_target(
        a.output,
        what=f"model {name}:{ref} (a folder)",
        single=None if found.is_dir else Path(found.path).name,
    )
    written = output.deliver(Path(found.path))
    if a.json:
        version = ws.registry.get_version(caller, project, name, ref)
        print_json({"model": name, "version": version.version, "output": str(written.resolve())})
    else:
        print(f"Downloaded {name}:{ref} to {written}")


def _project(ws: Workspace, caller: Caller, a: argparse.Namespace) -> str:
    if a.project:
        return str(a.project)
    with ws.store.write() as s:
        return ws.projects.personal_project(s, caller).name


# -- project commands --------------------------------------------------------------------


def project_list(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    projects = ws.projects.list(caller)
    if a.json:
        print_json(projects)
        return
    show_projects(to_jsonable(projects), to_jsonable(ws.projects.invitations(caller)))


def project_create(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    p = ws.projects.create(caller, a.name, a.description)
    if a.json:
        print_json(p)
    else:
        print(f"Created project {p.name}")


def project_member(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    """Invite someone (or change a member's role); --remove removes or withdraws."""
    was_member = a.username in {m.username for m in ws.projects.get(caller, a.project_name).members}
    if a.remove:
        view = ws.projects.remove_member(caller, a.project_name, a.username)
    else:
        view = ws.projects.set_member(caller, a.project_name, a.username, a.role)
    if a.json:
        print_json(view)
    else:
        print(member_message(a, was_member))


def member_message(a: argparse.Namespace, was_member: bool) -> str:
    """What ``project member`` did, in words (the local and the hub command alike)."""
    if a.remove:
        done = "Removed" if was_member else "Withdrew the invitation of"
        return f"{done} {a.username} from {a.project_name}"
    if was_member:
        return f"{a.username} is now {a.role} of {a.project_name}"
    return (
        f"Invited {a.username} to {a.project_name} as {a.role}: they become a member "
        f"when they accept (cube-lab project accept {a.project_name})"
    )


def project_invitations(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    invitations = ws.projects.invitations(caller)
    if a.json:
        print_json(invitations)
        return
    if not invitations:
        print("No invitations.")
        return
    print_table(
        [[i.project, i.role, i.invited_by, f"{i.invited_at:%Y-%m-%d %H:%M}"] for i in invitations],
        ["PROJECT", "ROLE", "INVITED BY", "INVITED AT"],
    )


def project_accept(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    view = ws.projects.accept(caller, a.project_name)
    if a.json:
        print_json(view)
    else:
        print(f"You are now {view.role} of {view.name}")


def project_decline(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    ws.projects.decline(caller, a.project_name)
    if a.json:
        print_json({"declined": a.project_name})
    else:
        print(f"Declined the invitation to {a.project_name}")


# -- pipeline commands -------------------------------------------------------------------

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


def _print_problems(problems: list[Any]) -> None:
    for p in problems:
        where = f"node {p.node_label or p.node_id!r}: " if p.node_id else ""
        print(f"  {where}{p.field}: {p.message}", file=sys.stderr)


def pipeline_validate(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    path = Path(a.path)
    pipeline, problems = ws.pipelines.check(path, _pipeline_root(path))
    if a.json:
        print_json({"valid": not problems, "problems": problems})
    if problems:
        if not a.json:
            print(f"{path}: {len(problems)} problem(s)", file=sys.stderr)
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
        compiled = kfp_compiler.compile_pipeline(pipeline, ws.templates, Path(tmp) / name)
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


# -- training commands -------------------------------------------------------------------


def _train_spec(a: argparse.Namespace) -> dict[str, Any]:
    script, args = a.script, list(a.args)
    command: list[str] = []
    if a.framework == "plain" and not script.endswith(".py"):
        command, script, args = [script, *args], None, []
    resources: dict[str, Any] = {"gpus": a.gpus, "cpu": a.cpu, "memory": a.memory}
    if a.gpu_type:
        resources["gpu_type"] = a.gpu_type
    return {
        "framework": a.framework,
        "script": script,
        "command": command,
        "args": args,
        "env": {k: str(v) for k, v in parse_pairs(a.env, "env").items()},
        "working_dir": a.workdir,
        "workers": a.workers,
        "nproc_per_worker": a.nproc,
        "resources": resources,
        "retries": a.retries,
        "timeout_s": a.timeout,
        "project": a.project,
        "name": a.name,
        "image": a.image,
        "backend": a.backend,
        "output_dir": a.output_dir,
        "gang": a.gang,
        "queue": a.queue,
        "shm_size": a.shm_size,
        "rdma": a.rdma,
        "kind": a.kind,
    }


def train_run(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    """Run a training job here, streaming every rank's output; exit with its status."""
    spec = ws.training.parse(_train_spec(a))
    if spec.backend == "kubernetes":
        from ..k8s import ClusterConfig

        cluster = ClusterConfig.from_env(
            kubeconfig=a.kubeconfig, context=a.kube_context, namespace=a.namespace
        )
        if a.dry_run:
            import yaml

            from ..training import kubernetes

            name = spec.name or Path(spec.argv()[0]).stem
            namespace = cluster.default_namespace()
            docs = kubernetes.manifests(spec, name, namespace=namespace, kind=a.kind)
            if a.json:
                print_json({"manifests": docs})
            else:
                print(yaml.safe_dump_all(docs, sort_keys=False), end="")
            return
    if a.dry_run:
        commands = ws.training.dry_run(spec)
        if a.json:
            print_json({"commands": commands})
        else:
            for line in commands:
                print(line)
        return
    out = sys.stderr if a.json else sys.stdout  # --json keeps stdout for the result

    def echo(text: str) -> None:
        out.write(text)
        out.flush()

    on_line = None if a.quiet else echo
    if spec.backend == "kubernetes":
        job = ws.training.prepare(caller, spec, None, on_line=on_line, cluster=cluster)
        job_id = job.job_id
        if not a.quiet:
            where = f"{job.kind} {job.namespace}/{job.name} on {job.config.describe()}"
            print(f"job {job_id}: {where}; Ctrl-C deletes it", file=out, flush=True)
    else:
        job = ws.training.prepare(caller, spec, None, on_line=on_line)
        job_id = job.plan.job_id
        if not a.quiet:
            gpus = f", GPUs {job.plan.gpus}" if job.plan.gpus else ""
            print(
                f"job {job_id}: {spec.framework}, {spec.processes} process(es){gpus}",
                file=out,
                flush=True,
            )
    status = ws.training.run_foreground(job)
    view = ws.training.get(caller, job_id)
    if a.json:
        print_json(view)
    else:
        print(job_finished_line(job_id, status, to_jsonable(view)), file=sys.stderr)
    if status != "succeeded":
        raise SystemExit(130 if status == "cancelled" else 1)


def training_list(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    jobs = ws.training.list(caller, project=a.project, limit=a.limit)
    if a.json:
        print_json(jobs)
        return
    show_jobs(to_jsonable(jobs))


def training_logs(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    offset = 0
    while True:
        chunk = ws.training.tail_log(caller, a.job, offset)
        sys.stdout.write(chunk.text)
        sys.stdout.flush()
        offset = chunk.offset
        if chunk.done or not a.follow:
            return
        time.sleep(0.5)


def training_stop(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    view = ws.training.stop(caller, a.job)
    if a.json:
        print_json(view)
    else:
        print(f"job {a.job}: {view.status}")


def training_metrics(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    found = ws.training.metrics(caller, a.job)
    if a.json:
        print_json(found)
        return
    for key, points in found.series.items():
        print(f"{key}: {len(points)} points, last {points[-1][1]:g} at step {points[-1][0]:g}")


def training_register(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    path = str(Path(a.path).resolve()) if a.path else None
    v = ws.training.register_model(caller, a.job, a.name, path, project=a.project)
    if a.json:
        print_json(v)
    else:
        print(f"Registered {v.model} v{v.version} from job {a.job} in project {v.project}")


# -- serving commands ----------------------------------------------------------------------


def deploy(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    """Deploy NAME:VERSION (or change a running deployment's traffic); the last line printed
    is the endpoint's base URL."""
    if a.backend == "kubernetes":
        cli_kserve.deploy(ws, caller, a)
        return
    if a.dry_run:
        raise InvalidInput(_t("--dry-run goes with --backend kubernetes"))
    name = a.name or split_ref(a.ref)[0]
    if a.switch:
        view = ws.serving.switch(caller, name, split_ref(a.ref)[1], project=a.project)
    elif a.canary is not None:
        view = ws.serving.canary(caller, name, split_ref(a.ref)[1], a.canary, project=a.project)
    elif a.shadow:
        view = ws.serving.shadow(caller, name, split_ref(a.ref)[1], project=a.project)
    else:
        started = time.monotonic()
        view = ws.serving.deploy(
            caller,
            a.ref,
            name=a.name,
            project=a.project,
            replicas=a.replicas,
            port=a.port,
            batch_max_rows=a.batch_max_rows,
            batch_wait_ms=a.batch_wait_ms,
            samples_percent=a.samples,
            auth=a.auth,
            runtime=a.runtime,
        )
        if not a.json:
            show_deployed(to_jsonable(view), time.monotonic() - started)
    if a.json:
        print_json(view)
        return
    show_deployment_state(to_jsonable(view))


def deployments_list(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    if a.backend == "kubernetes":
        cli_kserve.listing(ws, caller, a)
        return
    found = ws.serving.list(caller, project=a.project)
    if a.json:
        print_json(found)
        return
    show_deployments(to_jsonable(found))


def undeploy(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    if a.backend == "kubernetes":
        cli_kserve.undeploy(ws, caller, a)
        return
    if a.forget:
        ws.serving.delete(caller, a.name, project=a.project)
        if a.json:
            print_json({"deleted": a.name})
        else:
            print(f"{a.name}: undeployed and forgotten")
        return
    view = ws.serving.undeploy(caller, a.name, project=a.project)
    if a.json:
        print_json(view)
    else:
        print(f"{a.name}: {view.status}")


def deployment_action(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    if a.backend == "kubernetes":
        cli_kserve.action(ws, caller, a)
        return
    service = ws.serving
    if a.command == "logs":
        offset = 0
        while True:
            chunk = service.tail_log(caller, a.name, offset, project=a.project)
            sys.stdout.write(chunk.text)
            sys.stdout.flush()
            offset = chunk.offset
            if chunk.done or not a.follow:
                return
            time.sleep(0.5)
    if a.command == "metrics":
        print(service.metrics(caller, a.name, a.project), end="")
        return
    if a.command == "samples":
        if a.set is not None:
            service.set_samples(caller, a.name, a.set, project=a.project)
        found = service.samples(caller, a.name, a.limit, project=a.project)
        if a.json:
            print_json(found)
            return
        show_samples(to_jsonable(found))
        return
    if a.command == "traffic":
        view = service.set_traffic(caller, a.name, a.percent, project=a.project)
    elif a.command == "promote":
        view = service.promote(caller, a.name, project=a.project)
    else:
        view = service.rollback(caller, a.name, project=a.project)
    if a.json:
        print_json(view)
        return
    show_traffic(to_jsonable(view))


TEXT_ACTIONS = ("logs", "metrics")  # text streams (a log, Prometheus' format): no --json


def deployment_keys(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    """``cube-lab deployment keys create|list|revoke NAME ...``"""
    service = ws.serving
    if a.keys_command == "create":
        made = service.create_key(
            caller,
            a.name,
            a.key_name,
            expires_at=a.expires_at,
            expires_in_days=a.expires_in_days,
            project=a.project,
        )
        if a.json:
            print_json(made)
            return
        show_key_made(to_jsonable(made), a.name)
        return
    if a.keys_command == "revoke":
        revoked = service.revoke_key(caller, a.name, a.key, project=a.project)
        if a.json:
            print_json(revoked)
        else:
            print(f"key {revoked.name} ({revoked.id}) of {a.name}: revoked")
        return
    keys = service.list_keys(caller, a.name, project=a.project)
    if a.json:
        print_json({"keys": keys})
        return
    show_keys(to_jsonable(keys))


def deployment_access(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    """Show or change who may call a deployment."""
    changes = access_changes(a)
    service = ws.serving
    view = (
        service.set_access(caller, a.name, changes, project=a.project)
        if changes
        else service.get(caller, a.name, a.project)
    )
    settings = view.access
    if a.json:
        print_json(settings)
        return
    show_access(to_jsonable(settings))


# -- parser --------------------------------------------------------------------------------


def _cluster_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=["local", "kubernetes"], default="local")
    p.add_argument("--namespace", help="kubernetes: the namespace (default: the context's)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cube-lab", description="cube-lab ML workspace")
    parser.add_argument("--data-dir", help="state folder (default: $CUBE_LAB_DATA_DIR)")
    parser.add_argument("--db-url", help="SQLAlchemy URL (default: $CUBE_LAB_DB_URL)")
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="also show libraries' logs and warnings"
    )
    groups = parser.add_subparsers(dest="group", required=True)

    def command(
        sub: Any, name: str, fn: Callable[..., None], help_: str, *, json: bool = True
    ) -> Any:
        """A subcommand; ``json=False`` for the ones whose output is a text stream (logs)."""
        p = sub.add_parser(name, help=help_, description=help_)
        p.set_defaults(fn=fn, json=False)
        p.add_argument("--project", help="project name (default: your personal project)")
        if json:
            p.add_argument(
                "--json", action="store_true", help="print one JSON document (logs to stderr)"
            )
        return p

    models = groups.add_parser("model", help="the model registry").add_subparsers(
        dest="command", required=True
    )
    p = command(models, "register", model_register, "register a file or folder as a model version")
    p.add_argument("path")
    p.add_argument("--name", required=True)
    p.add_argument("--metric", action="append", metavar="K=V")
    p.add_argument("--param", action="append", metavar="K=V")
    p.add_argument("--tag", action="append", metavar="K=V")
    p.add_argument("--alias", action="append", metavar="ALIAS")
    p.add_argument("--flavor")
    p.add_argument("--description", default="")
    p.add_argument("--source", help="the notebook or script that produced it")
    p.add_argument("--pipeline-run")
    p.add_argument("--training-job")
    p = command(models, "list", model_list, "list the models you can see")
    p.add_argument("--search", "-q")
    p.add_argument("--all", action="store_true", help="include archived models")
    p = command(models, "show", model_show, "show a model and its versions")
    p.add_argument("name")
    p = command(models, "compare", model_compare, "compare versions' metrics and params")
    p.add_argument("name")
    p.add_argument("versions", nargs="+")
    p = command(models, "alias", model_alias, "point an alias (e.g. production) at a version")
    p.add_argument("name")
    p.add_argument("alias")
    p.add_argument("version", nargs="?")
    p.add_argument("--remove", action="store_true")
    p = command(models, "archive", model_archive, "archive NAME or NAME:VERSION")
    p.add_argument("ref")
    p.add_argument("--undo", action="store_true")
    p = command(models, "delete", model_delete, "delete NAME or NAME:VERSION and its artifacts")
    p.add_argument("ref")
    p.add_argument("--yes", action="store_true")
    p = command(models, "download", model_download, "copy NAME[:VERSION|ALIAS] to a path")
    p.add_argument("ref")
    p.add_argument(
        "--output", "-o", required=True, help="a file (a file model), a folder, or a .zip"
    )

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

    p = command(groups, "train", train_run, "run a distributed training job, streaming its logs")
    p.add_argument(
        "--framework",
        choices=["pytorch", "deepspeed", "tensorflow", "mpi", "plain"],
        default="pytorch",
    )
    p.add_argument("--workers", type=int, default=1, help="nodes (pods on a cluster)")
    p.add_argument("--nproc", type=int, default=1, help="processes per worker")
    p.add_argument("--gpus", type=int, default=0, help="GPUs per worker")
    p.add_argument("--gpu-type", help="accelerator table key (default nvidia-gpu)")
    p.add_argument("--cpu", help="CPU per worker (cluster), e.g. 4")
    p.add_argument("--memory", help="memory per worker (cluster), e.g. 16Gi")
    p.add_argument("--backend", choices=["local", "kubernetes"], default="local")
    p.add_argument("--dry-run", action="store_true", help="print the commands or manifest")
    p.add_argument("--env", action="append", metavar="K=V")
    p.add_argument("--workdir", help="working directory (default: here)")
    p.add_argument("--output-dir", help="checkpoint folder ($CUBE_OUTPUT_DIR)")
    p.add_argument("--retries", type=int, default=0)
    p.add_argument("--timeout", type=int, metavar="SECONDS")
    p.add_argument("--name")
    p.add_argument("--image", help="container image (kubernetes)")
    p.add_argument("--kind", choices=["pytorchjob", "tfjob", "mpijob", "trainjob"])
    p.add_argument("--namespace", help="kubernetes namespace (default: the context's)")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    p.add_argument("--kube-context", help="kubeconfig context (default: the current one)")
    p.add_argument("--gang", action="store_true", help="Volcano gang scheduling")
    p.add_argument("--queue", help="Volcano queue")
    p.add_argument("--shm-size", help="a memory-backed /dev/shm of this size (kubernetes)")
    p.add_argument("--rdma", action="store_true", help="request an RDMA device (kubernetes)")
    p.add_argument("--quiet", "-q", action="store_true")
    p.add_argument("script", help="the training script (or, for plain, a program)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    jobs = groups.add_parser("training", help="training jobs").add_subparsers(
        dest="command", required=True
    )
    p = command(jobs, "list", training_list, "list training jobs")
    p.add_argument("--limit", type=int, default=20)
    p = command(jobs, "logs", training_logs, "print a job's log (every rank)", json=False)
    p.add_argument("job")
    p.add_argument("--follow", "-f", action="store_true")
    p = command(jobs, "stop", training_stop, "stop a job")
    p.add_argument("job")
    p = command(jobs, "metrics", training_metrics, "a job's metric series")
    p.add_argument("job")
    p = command(jobs, "register", training_register, "register a job's checkpoint as a model")
    p.add_argument("job")
    p.add_argument("--name", required=True)
    p.add_argument("--path", help="what to register (default: the last checkpoint)")

    p = command(groups, "deploy", deploy, "serve a registered model version (OIP v2 over REST)")
    p.add_argument("ref", metavar="NAME[:VERSION|ALIAS]")
    p.add_argument("--name", help="deployment name (default: the model name)")
    p.add_argument("--replicas", type=int, default=1, help="model server processes")
    p.add_argument("--port", type=int, help="the endpoint's port (default: a free one)")
    p.add_argument(
        "--batch-max-rows", type=int, default=0, help="adaptive batching: rows a call (0: off)"
    )
    p.add_argument("--batch-wait-ms", type=float, default=0.0, help="wait for a fuller batch")
    p.add_argument("--samples", type=float, default=0.0, metavar="PERCENT",
                   help="keep PERCENT of requests with their answers (opt-in)")  # fmt: skip
    p.add_argument("--auth", choices=["required", "none"],
                   help="API keys: required (default under the hub) or none (default "
                        "alone; a name deployed before keeps its setting)")  # fmt: skip
    p.add_argument("--runtime", choices=["auto", "oip", "llm"],
                   help="llm: OpenAI's /v1 API (a causal LM or a peft adapter); oip: OIP v2; "
                        "auto (default): by the model's flavor")  # fmt: skip
    change = p.add_mutually_exclusive_group()
    change.add_argument("--switch", action="store_true", help="a running deployment: serve this")
    change.add_argument("--canary", type=float, metavar="PERCENT", help="send PERCENT to this")
    change.add_argument("--shadow", action="store_true", help="mirror traffic to this version")
    p.add_argument("--backend", choices=["local", "kubernetes"], default="local")
    p.add_argument("--dry-run", action="store_true", help="print the KServe InferenceService")
    p.add_argument("--namespace", help="kubernetes: the namespace (default: the context's)")
    p.add_argument("--wait", type=float, default=300, help="kubernetes: seconds to wait for Ready")
    p.add_argument("--storage-uri", help="where the cluster finds the model (kubernetes)")
    p.add_argument("--min-replicas", type=int)
    p.add_argument("--max-replicas", type=int)
    p.add_argument("--gpus", type=int, default=0, help="accelerators per replica (kubernetes)")
    p.add_argument("--gpu-type", help="accelerator table key (default nvidia-gpu)")
    p.add_argument("--cpu", help="CPU per replica (kubernetes), e.g. 2")
    p.add_argument("--memory", help="memory per replica (kubernetes), e.g. 4Gi")
    p = command(groups, "deployments", deployments_list, "list deployments")
    _cluster_args(p)
    p = command(groups, "undeploy", undeploy, "stop a deployment")
    p.add_argument("name")
    p.add_argument("--forget", action="store_true", help="also delete its record and folder")
    _cluster_args(p)
    serving = groups.add_parser("deployment", help="a deployment's traffic, logs, metrics")
    actions = serving.add_subparsers(dest="command", required=True)
    for action, help_ in (
        ("promote", "the canary or shadow version takes all traffic"),
        ("rollback", "drop the canary or shadow, else go back to the previous version"),
        ("traffic", "move the canary's share"),
        ("logs", "print the processes' output"),
        ("metrics", "print the Prometheus metrics"),
        ("samples", "print sampled requests with their answers; --set PERCENT to sample"),
    ):
        p = command(actions, action, deployment_action, help_, json=action not in TEXT_ACTIONS)
        p.add_argument("name")
        _cluster_args(p)
        if action == "traffic":
            p.add_argument("percent", type=float, help="percent to the canary")
        if action == "logs":
            p.add_argument("--follow", "-f", action="store_true")
        if action == "samples":
            p.add_argument("--set", type=float, metavar="PERCENT")
            p.add_argument("--limit", type=int, default=20)
    keys = actions.add_parser(
        "keys", help="a deployment's API keys", description="a deployment's API keys"
    ).add_subparsers(dest="keys_command", required=True)
    p = command(keys, "create", deployment_keys, "make an API key (printed once)")
    p.add_argument("name", help="the deployment")
    p.add_argument("key_name", metavar="KEY-NAME", help="what the key is for, e.g. ci")
    until = p.add_mutually_exclusive_group()
    until.add_argument("--expires-in-days", type=float, metavar="DAYS")
    until.add_argument("--expires-at", metavar="ISO-TIME", help="e.g. 2030-01-31T00:00:00Z")
    p = command(keys, "list", deployment_keys, "list the keys (never the keys themselves)")
    p.add_argument("name", help="the deployment")
    p = command(keys, "revoke", deployment_keys, "revoke a key: it is refused at once")
    p.add_argument("name", help="the deployment")
    p.add_argument("key", help="the key's id or name")
    p = command(actions, "access", deployment_access,
                "show or change who may call it: auth, rate limit, address lists")  # fmt: skip
    p.add_argument("name")
    p.add_argument("--auth", choices=["required", "none"])
    p.add_argument("--rps", type=float, help="rate limit: requests a second")
    p.add_argument("--burst", type=int, help="rate limit: requests at once (default: --rps)")
    p.add_argument("--per-key", action="store_true", help="rate limit: a bucket per key")
    p.add_argument("--no-rate-limit", action="store_true", help="turn the rate limit off")
    p.add_argument("--allow", nargs="*", metavar="ADDR",
                   help="only these addresses/CIDRs may call (none given: any)")  # fmt: skip
    p.add_argument("--deny", nargs="*", metavar="ADDR",
                   help="these addresses/CIDRs may not call (none given: clear)")  # fmt: skip

    projects = groups.add_parser("project", help="projects and members").add_subparsers(
        dest="command", required=True
    )
    command(projects, "list", project_list, "list your projects")
    p = command(projects, "create", project_create, "create a team project")
    p.add_argument("name")
    p.add_argument("--description", default="")
    p = command(
        projects,
        "member",
        project_member,
        "invite someone (a member once they accept), change a member's role, or remove one",
    )
    p.add_argument("project_name")
    p.add_argument("username")
    p.add_argument("--role", default="member", choices=["owner", "member"])
    p.add_argument(
        "--remove", action="store_true", help="remove the member or withdraw the invitation"
    )
    command(projects, "invitations", project_invitations, "list your pending invitations")
    for action, fn, help_ in [
        ("accept", project_accept, "accept an invitation: become a member of the project"),
        ("decline", project_decline, "decline an invitation"),
    ]:
        p = command(projects, action, fn, help_)
        p.add_argument("project_name")
    cli_tuning.add_commands(groups, command)
    cli_labeling.add_commands(groups, command)
    cli_finetune.add_commands(groups, command)
    cli_kb.add_commands(groups, command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    locale = env_locale()  # LC_ALL / LC_MESSAGES / LANG: --help and errors in that language
    with argparse_words(locale):
        parser = build_parser()
        translate_parser(parser, locale)
        args = parser.parse_args(argv)
    as_json = bool(getattr(args, "json", False))
    # The one place the output contract is kept: with --json stdout carries one document
    # (print_json's) and everything else goes to stderr; libraries stay quiet unless -v.
    with quiet_libraries(args.verbose), json_stdout(as_json):
        return _run(args, as_json, locale)


def _run(args: argparse.Namespace, as_json: bool, locale: str = "en") -> int:
    try:
        remote = None
        if not args.data_dir and not args.db_url:
            from ..rest_client import ServiceClient

            remote = ServiceClient.from_env()  # under the hub: the cube-lab service's store
        if remote is not None:
            from . import remote as cli_remote

            cli_remote.run(remote, args)
            return 0
        ws = Workspace(Settings.resolve(args.data_dir, args.db_url))
        try:
            args.fn(ws, Caller(local_username()), args)
        finally:
            ws.close()
    except CubeError as exc:
        print(_t("cube-lab: error: {error}", error=exc.error).translated(locale), file=sys.stderr)
        problems = getattr(exc, "problems", None)
        if problems:
            _print_problems(problems)
        elif exc.detail:
            print(f"  {localize(exc.detail, locale)}", file=sys.stderr)
        if as_json and not json_printed():  # the REST API's error body, for scripts
            print_json(localize(exc.to_json(), locale))
        return 2 if exc.status == 400 else 1
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0
