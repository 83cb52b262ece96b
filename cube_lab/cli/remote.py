"""The ``cube-lab`` commands under the hub: the same commands, through the cube-lab service.

A lab server under JupyterHub has no store (``$CUBE_LAB_SERVICE_URL`` names the service that
owns it), so ``cli._run`` hands each command here instead of opening a ``Workspace``. Every
command is one thin call of the REST API with the user's hub token (``rest_client``) and
prints what the local command prints (its module's ``show_*``); ``--json`` prints the REST JSON.
Identity is the token's: ``$CUBE_LAB_USER`` means nothing here. Paths on the command line
are resolved against the current folder and sent relative to the user's home (the lab
server's root, ``$CUBE_LAB_ROOT_DIR``), the only folder the service reads for them.
"""

from __future__ import annotations

import argparse
import os
import posixpath
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .. import cli
from ..config import ENV_ROOT_DIR
from ..errors import InvalidInput
from ..locale.messages import _t
from ..rest_client import ServiceClient, segment
from . import kserve_remote, models, output, pipelines, projects, serving, training
from .args import output_target, parse_pairs, print_json, print_table, split_ref

POLL_S = 0.25
LOG_POLL_S = 0.5
ACTIVE = ("queued", "pending", "running", "starting", "stopping")

Command = Callable[[ServiceClient, argparse.Namespace], None]


def emit(a: argparse.Namespace, view: Any, show: Callable[[Any], None]) -> None:
    """``--json`` prints the service's JSON as it came; otherwise the local command's text."""
    if a.json:
        print_json(view)
    else:
        show(view)


# -- paths and names ---------------------------------------------------------------------


def home() -> Path:
    """The folder the service resolves paths in: this lab server's root."""
    raw = os.environ.get(ENV_ROOT_DIR)
    if not raw:
        raise InvalidInput(
            _t(
                "${ENV_ROOT_DIR} is not set, so paths cannot be sent to the cube-lab service",
                ENV_ROOT_DIR=ENV_ROOT_DIR,
            ),
            _t(
                (
                    "Run cube-lab in a terminal or notebook of your JupyterHub server, or set"
                    " {ENV_ROOT_DIR} to your home folder there."
                ),
                ENV_ROOT_DIR=ENV_ROOT_DIR,
            ),
        )
    return Path(os.path.abspath(Path(raw).expanduser()))


def relative(raw: str | os.PathLike[str], what: str = "path") -> str:
    """``raw`` (from the current folder) relative to the home; outside it is an error."""
    root = home()
    given = Path(raw).expanduser()
    absolute = Path(os.path.abspath(Path.cwd() / given))
    for base, path in ((root, absolute), (root.resolve(), absolute.resolve())):
        if path.is_relative_to(base):
            return path.relative_to(base).as_posix() or "."
    raise InvalidInput(
        _t("{what} {value!r} is outside your home {root}", what=what, value=str(raw), root=root),
        _t(
            (
                "Under the hub cube-lab reaches only files in your home (the lab server's "
                "root, ${ENV_ROOT_DIR}); copy or move it there first."
            ),
            ENV_ROOT_DIR=ENV_ROOT_DIR,
        ),
    )


def personal_project(client: ServiceClient) -> str:
    me = client.get("whoami")
    for project in me.get("projects") or []:
        if project.get("kind") == "personal" and project.get("role") == "owner":
            return str(project["name"])
    raise InvalidInput(
        _t("the cube-lab service names no personal project of {value}", value=me.get("user")),
        _t("Pass --project NAME (see cube-lab project list)."),
    )


def project_of(client: ServiceClient, a: argparse.Namespace) -> str:
    return str(a.project) if a.project else personal_project(client)


def _model(project: str, name: str) -> str:
    return f"projects/{segment(project)}/models/{segment(name)}"


# -- model commands ----------------------------------------------------------------------


def model_register(client: ServiceClient, a: argparse.Namespace) -> None:
    body: dict[str, Any] = {
        "name": a.name,
        "path": relative(a.path),
        "project": a.project,
        "flavor": a.flavor,
        "description": a.description,
        "metrics": parse_pairs(a.metric, "metric", numeric=True),
        "params": parse_pairs(a.param, "param"),
        "tags": parse_pairs(a.tag, "tag"),
        "aliases": a.alias,
        "source": a.source,
        "pipeline_run_id": a.pipeline_run,
        "training_job_id": a.training_job,
    }
    v = client.post("models", {k: val for k, val in body.items() if val is not None})
    emit(a, v, models.show_registered)


def model_list(client: ServiceClient, a: argparse.Namespace) -> None:
    models: list[dict[str, Any]] = []
    while True:
        page = client.get(
            "models",
            q=a.search,
            project=a.project,
            include_archived=a.all,
            limit=500,
            offset=len(models),
        )
        models.extend(page["models"])
        if len(models) >= page["total"] or not page["models"]:
            break
    emit(a, models, models.show_models)


def model_show(client: ServiceClient, a: argparse.Namespace) -> None:
    detail = client.get(_model(project_of(client, a), a.name))
    emit(a, detail, models.show_model)


def model_alias(client: ServiceClient, a: argparse.Namespace) -> None:
    where = f"{_model(project_of(client, a), a.name)}/aliases/{segment(a.alias)}"
    if a.remove:
        detail = client.delete(where)
        message = f"Removed alias {a.alias} from {a.name}"
    else:
        if a.version is None:
            raise InvalidInput(
                _t("give the version to point the alias at"),
                _t("cube-lab model alias NAME ALIAS VERSION"),
            )
        detail = client.put(where, {"version": a.version})
        message = f"{a.name}@{a.alias} -> v{a.version}"
    if a.json:
        print_json(detail)
    else:
        print(message)


def model_download(client: ServiceClient, a: argparse.Namespace) -> None:
    name, ref = split_ref(a.ref)
    where = f"{_model(project_of(client, a), name)}/versions/{segment(ref)}"
    version = client.get(where)
    with client.stream(f"{where}/download") as answer:
        filename = Path(version["artifact_name"]).name or answer.filename or name
        is_dir = answer.headers.get("Content-Type", "").startswith("application/zip")
        output = output_target(
            a.output, what=f"model {name}:{ref} (a folder)", single=None if is_dir else filename
        )
        with tempfile.TemporaryDirectory(prefix="cube-download-") as tmp:
            received = Path(tmp) / "received"
            answer.save(received)
            source = received
            if is_dir:  # the folder comes as a zip holding it under its own name
                unpacked = Path(tmp) / "unpacked"
                with zipfile.ZipFile(received) as archive:
                    archive.extractall(unpacked)
                inside = list(unpacked.iterdir())
                source = inside[0] if len(inside) == 1 and inside[0].is_dir() else unpacked
            else:
                source = received.rename(Path(tmp) / filename)
            written = output.deliver(source)
    if a.json:
        print_json({"model": name, "version": version["version"], "output": str(written.resolve())})
    else:
        print(f"Downloaded {name}:{ref} to {written}")


def model_compare(client: ServiceClient, a: argparse.Namespace) -> None:
    cmp = client.get(
        f"{_model(project_of(client, a), a.name)}/compare", versions=",".join(a.versions)
    )
    if a.json:
        print_json(cmp)
        return
    versions = cmp["versions"]
    header = ["", *[f"v{v['version']}" for v in versions]]
    rows = [
        [f"metric {m}", *[str(v["metrics"].get(m, "")) for v in versions]] for m in cmp["metrics"]
    ]
    rows += [
        [f"param {p}", *[str(v["params"].get(p, "")) for v in versions]] for p in cmp["params"]
    ]
    print_table(rows, header)


def model_archive(client: ServiceClient, a: argparse.Namespace) -> None:
    name, ref = a.ref.partition(":")[0], a.ref.partition(":")[2]
    where = _model(project_of(client, a), name)
    if ref:
        where += f"/versions/{segment(ref)}"
    view = client.patch(where, {"archived": not a.undo})
    if a.json:
        print_json(view)
    else:
        print(f"{'Restored' if a.undo else 'Archived'} {a.ref}")


def model_delete(client: ServiceClient, a: argparse.Namespace) -> None:
    name, ref = a.ref.partition(":")[0], a.ref.partition(":")[2]
    project = project_of(client, a)
    if not a.yes:
        raise InvalidInput(
            _t("deleting {ref} removes its artifacts for good", ref=a.ref),
            _t("Add --yes to confirm."),
        )
    where = _model(project, name)
    client.delete(f"{where}/versions/{segment(ref)}" if ref else where)
    if a.json:
        print_json({"deleted": a.ref, "project": project})
    else:
        print(f"Deleted {a.ref}")


# -- project commands --------------------------------------------------------------------


def project_list(client: ServiceClient, a: argparse.Namespace) -> None:
    found = client.get("projects")
    if a.json:
        print_json(found["projects"])
    else:
        projects.show_projects(found["projects"], found.get("invitations") or [])


def project_create(client: ServiceClient, a: argparse.Namespace) -> None:
    p = client.post("projects", {"name": a.name, "description": a.description})
    if a.json:
        print_json(p)
    else:
        print(f"Created project {p['name']}")


def project_member(client: ServiceClient, a: argparse.Namespace) -> None:
    """Invite someone (or change a member's role); --remove removes or withdraws."""
    where = f"projects/{segment(a.project_name)}"
    members = {m["username"] for m in client.get(where)["members"]}
    was_member = a.username in members
    if a.remove:
        view = client.delete(f"{where}/members/{segment(a.username)}")
    else:
        view = client.put(f"{where}/members/{segment(a.username)}", {"role": a.role})
    emit(a, view, lambda _: print(projects.member_message(a, was_member)))


def project_invitations(client: ServiceClient, a: argparse.Namespace) -> None:
    invitations = client.get("invitations")["invitations"]
    if a.json:
        print_json(invitations)
        return
    if not invitations:
        print("No invitations.")
        return
    print_table(
        [
            [i["project"], i["role"], i["invited_by"], output._stamp(i["invited_at"])]
            for i in invitations
        ],
        ["PROJECT", "ROLE", "INVITED BY", "INVITED AT"],
    )


def project_accept(client: ServiceClient, a: argparse.Namespace) -> None:
    view = client.post(f"invitations/{segment(a.project_name)}/accept")
    if a.json:
        print_json(view)
    else:
        print(f"You are now {view['role']} of {view['name']}")


def project_decline(client: ServiceClient, a: argparse.Namespace) -> None:
    client.post(f"invitations/{segment(a.project_name)}/decline")
    if a.json:
        print_json({"declined": a.project_name})
    else:
        print(f"Declined the invitation to {a.project_name}")


# -- pipeline commands -------------------------------------------------------------------


def _problems(detail: Any) -> list[Any]:
    return [SimpleNamespace(**p) for p in detail or [] if isinstance(p, dict) and "field" in p]


def pipeline_validate(client: ServiceClient, a: argparse.Namespace) -> None:
    found = client.post("pipelines/validate", {"path": relative(a.path, "pipeline")})
    if a.json:
        print_json({"valid": found["valid"], "problems": found["problems"]})
    if found["problems"]:
        if not a.json:
            print(f"{a.path}: {len(found['problems'])} problem(s)", file=sys.stderr)
            output._print_problems(_problems(found["problems"]))
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
                line = pipelines.progress_line(
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
            log = _read_log(client, f"pipelines/runs/{segment(run_id)}/nodes/{segment(n['id'])}")
            print("\n".join(log.splitlines()[-15:]), file=sys.stderr)
        raise SystemExit(1)


def _read_log(client: ServiceClient, where: str) -> str:
    text, offset = "", 0
    while True:
        chunk = client.get(f"{where}/log", offset=offset)
        text += chunk["text"]
        if chunk["done"] or chunk["offset"] == offset or chunk["offset"] >= chunk["size"]:
            return text
        offset = chunk["offset"]


def _follow(client: ServiceClient, where: str, follow: bool, out: Any = None) -> None:
    """Print a log from the start: what there is now, or with ``follow`` until its writer is
    done."""
    stream = out or sys.stdout
    offset = 0
    while True:
        chunk = client.get(f"{where}/log", offset=offset)
        stream.write(chunk["text"])
        stream.flush()
        moved = chunk["offset"] != offset
        offset = chunk["offset"]
        if chunk["done"] or (not follow and (not moved or offset >= chunk["size"])):
            return
        if not moved:
            time.sleep(LOG_POLL_S)


def pipeline_runs(client: ServiceClient, a: argparse.Namespace) -> None:
    path = relative(a.path, "pipeline") if a.path else None
    runs = client.get("pipelines/runs", path=path, project=a.project, limit=a.limit)["runs"]
    emit(a, runs, pipelines.show_runs)


def pipeline_logs(client: ServiceClient, a: argparse.Namespace) -> None:
    run = client.get(f"pipelines/runs/{segment(a.run)}")
    node = next((n for n in run.get("nodes") or [] if a.node in (n["id"], n["label"])), None)
    if node is None:
        raise InvalidInput(
            _t("run {run} has no node {node!r}", run=a.run, node=a.node),
            "Nodes: " + ", ".join(n["label"] for n in run.get("nodes") or []),
        )
    _follow(client, f"pipelines/runs/{segment(a.run)}/nodes/{segment(node['id'])}", a.follow)


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
        found = client.post("pipelines/compile", {"path": relative(path, "pipeline")})
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
        pipelines.deliver_compiled(compiled, output, path, a)


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
        pipelines.show_scheduled(view, "the cube-lab service fires it")


def pipeline_schedules(client: ServiceClient, a: argparse.Namespace) -> None:
    views = client.get("pipelines/schedules")["schedules"]
    emit(a, views, pipelines.show_schedules)


def pipeline_unschedule(client: ServiceClient, a: argparse.Namespace) -> None:
    client.delete(f"pipelines/schedules/{a.id}")
    if a.json:
        print_json({"deleted": a.id})
    else:
        print(f"deleted schedule {a.id}")


# -- training commands -------------------------------------------------------------------


def train_run(client: ServiceClient, a: argparse.Namespace) -> None:
    """Start the job at the service, print every rank's output as it comes, exit with its
    status (as the local command does)."""
    if a.dry_run:
        raise InvalidInput(
            _t("cube-lab train --dry-run is not available under the hub yet"),
            _t("Start the job without --dry-run, or look at it in the Training panel."),
        )
    spec = training._train_spec(a)
    workdir = relative(a.workdir or ".", "working directory")
    spec["working_dir"] = None if workdir == "." else workdir
    script = spec.get("script")
    if script and Path(script).expanduser().is_absolute():  # the service takes it from workdir
        spec["script"] = posixpath.relpath(relative(script, "script"), workdir)
    if a.output_dir:
        spec["output_dir"] = relative(a.output_dir, "output dir")
    job = client.post("training/jobs", {k: v for k, v in spec.items() if v is not None})
    job_id = job["id"]
    out = sys.stderr if a.json else sys.stdout
    if not a.quiet:
        procs = job["workers"] * job["nproc_per_worker"]
        extra = f", GPUs {job['gpus']}" if job.get("gpus") else ""
        print(f"job {job_id}: {job['framework']}, {procs} process(es){extra}", file=out, flush=True)
    where = f"training/jobs/{segment(job_id)}"
    try:
        if a.quiet:
            while client.get(where)["status"] in ACTIVE:
                time.sleep(LOG_POLL_S)
        else:
            _follow(client, where, True, out)
        view = client.get(where)
        while view["status"] in ACTIVE:  # the log is done; the record follows a moment later
            time.sleep(POLL_S)
            view = client.get(where)
    except KeyboardInterrupt:
        view = client.post(f"{where}/stop")
        print(f"job {job_id}: {view['status']} (interrupted)", file=sys.stderr)
        raise SystemExit(130) from None
    status = view["status"]
    if a.json:
        print_json(view)
    else:
        print(output.job_finished_line(job_id, status, view), file=sys.stderr)
    if status != "succeeded":
        raise SystemExit(130 if status == "cancelled" else 1)


def training_list(client: ServiceClient, a: argparse.Namespace) -> None:
    jobs = client.get("training/jobs", project=a.project, limit=a.limit)["jobs"]
    emit(a, jobs, training.show_jobs)


def training_logs(client: ServiceClient, a: argparse.Namespace) -> None:
    _follow(client, f"training/jobs/{segment(a.job)}", a.follow)


def training_stop(client: ServiceClient, a: argparse.Namespace) -> None:
    view = client.post(f"training/jobs/{segment(a.job)}/stop")
    if a.json:
        print_json(view)
    else:
        print(f"job {a.job}: {view['status']}")


def training_metrics(client: ServiceClient, a: argparse.Namespace) -> None:
    found = client.get(f"training/jobs/{segment(a.job)}/metrics")
    if a.json:
        print_json(found)
        return
    for key, points in found["series"].items():
        print(f"{key}: {len(points)} points, last {points[-1][1]:g} at step {points[-1][0]:g}")


def training_register(client: ServiceClient, a: argparse.Namespace) -> None:
    body = {
        "name": a.name,
        "path": relative(a.path, "checkpoint") if a.path else None,
        "project": a.project,
    }
    v = client.post(
        f"training/jobs/{segment(a.job)}/register",
        {k: val for k, val in body.items() if val is not None},
    )
    if a.json:
        print_json(v)
    else:
        print(f"Registered {v['model']} v{v['version']} from job {a.job} in project {v['project']}")


# -- serving commands --------------------------------------------------------------------


def deployments_list(client: ServiceClient, a: argparse.Namespace) -> None:
    if a.backend == "kubernetes":
        kserve_remote.listing(client, a)
        return
    found = client.get("deployments", project=a.project)["deployments"]
    emit(a, found, serving.show_deployments)


def _deployment(client: ServiceClient, a: argparse.Namespace, name: str | None = None) -> str:
    return f"projects/{segment(project_of(client, a))}/deployments/{segment(name or a.name)}"


def _on_cluster(a: argparse.Namespace) -> bool:
    """``--backend kubernetes``: KServe, deployed by the service (``cli_kserve_remote``)."""
    return getattr(a, "backend", "local") == "kubernetes"


def deploy(client: ServiceClient, a: argparse.Namespace) -> None:
    """Deploy NAME:VERSION at the service (or change a running deployment's traffic)."""
    if _on_cluster(a):
        kserve_remote.deploy(client, a)
        return
    kserve_remote.refuse_local_options(a, "deploy")
    name, ref = split_ref(a.ref)
    if a.switch or a.canary is not None or a.shadow:
        action = "switch" if a.switch else "canary" if a.canary is not None else "shadow"
        body: dict[str, Any] = {"action": action, "version": ref}
        if a.canary is not None:
            body["percent"] = a.canary
        view = client.post(f"{_deployment(client, a, a.name or name)}/traffic", body)
    else:
        started = time.monotonic()
        spec = {
            "model": a.ref,
            "name": a.name,
            "project": a.project,
            "replicas": a.replicas,
            "port": a.port,
            "batch_max_rows": a.batch_max_rows,
            "batch_wait_ms": a.batch_wait_ms,
            "samples_percent": a.samples,
            "auth": a.auth,
            "runtime": a.runtime,
        }
        view = client.post("deployments", {k: v for k, v in spec.items() if v is not None})
        if not a.json:
            serving.show_deployed(view, time.monotonic() - started)
    emit(a, view, serving.show_deployment_state)


def undeploy(client: ServiceClient, a: argparse.Namespace) -> None:
    if _on_cluster(a):
        kserve_remote.undeploy(client, a)
        return
    where = _deployment(client, a)
    if a.forget:
        client.delete(where, forget=True)
        if a.json:
            print_json({"deleted": a.name})
        else:
            print(f"{a.name}: undeployed and forgotten")
        return
    view = client.delete(where)
    if a.json:
        print_json(view)
    else:
        print(f"{a.name}: {view['status']}")


def deployment_action(client: ServiceClient, a: argparse.Namespace) -> None:
    if _on_cluster(a):
        kserve_remote.action(client, a)
        return
    where = _deployment(client, a)
    if a.command == "logs":
        _follow(client, where, a.follow)
        return
    if a.command == "metrics":
        with client.stream(f"{where}/metrics") as answer:
            for chunk in answer.iter_bytes():
                sys.stdout.write(chunk.decode(errors="replace"))
        sys.stdout.flush()
        return
    if a.command == "samples":
        if a.set is not None:
            client.put(f"{where}/samples", {"percent": a.set})
        found = client.get(f"{where}/samples", limit=a.limit)
        emit(a, found, serving.show_samples)
        return
    body: dict[str, Any] = {"action": a.command}
    if a.command == "traffic":
        body = {"action": "split", "percent": a.percent}
    view = client.post(f"{where}/traffic", body)
    emit(a, view, serving.show_traffic)


def deployment_keys(client: ServiceClient, a: argparse.Namespace) -> None:
    """``cube-lab deployment keys create|list|revoke NAME ...``"""
    where = f"{_deployment(client, a)}/keys"
    if a.keys_command == "create":
        body = {
            "name": a.key_name,
            "expires_at": a.expires_at,
            "expires_in_days": a.expires_in_days,
        }
        made = client.post(where, {k: v for k, v in body.items() if v is not None})
        if a.json:
            print_json(made)
        else:
            serving.show_key_made(made, a.name)
        return
    if a.keys_command == "revoke":
        revoked = client.delete(f"{where}/{segment(a.key)}")
        if a.json:
            print_json(revoked)
        else:
            print(f"key {revoked['name']} ({revoked['id']}) of {a.name}: revoked")
        return
    found = client.get(where)
    if a.json:
        print_json(found)
    else:
        serving.show_keys(found["keys"])


def deployment_access(client: ServiceClient, a: argparse.Namespace) -> None:
    changes = serving.access_changes(a)
    where = _deployment(client, a)
    if changes:
        settings = client.put(f"{where}/access", changes)["access"]
    else:
        settings = client.get(f"{where}/access")
    emit(a, settings, serving.show_access)


# -- tuning commands ---------------------------------------------------------------------

TUNING_ACTIVE = ("queued", "running")


def tune(client: ServiceClient, a: argparse.Namespace) -> None:
    """Start the experiment at the service, print each trial as it ends, then the best."""
    from .tuning import _read_config

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
    from .tuning import _fmt

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
    from .tuning import _fmt

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
    from .tuning import _fmt

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
    sys.stdout.write(_read_log(client, where))


def tuning_stop(client: ServiceClient, a: argparse.Namespace) -> None:
    view = client.post(f"tuning/experiments/{segment(a.experiment)}/stop")
    if a.json:
        print_json(view)
    else:
        print(f"experiment {a.experiment}: {view['status']}")


# -- labeling commands -------------------------------------------------------------------


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def dataset_create(client: ServiceClient, a: argparse.Namespace) -> None:
    from . import labeling

    body = {
        "name": a.name,
        "path": relative(a.path, "dataset"),
        "project": a.project,
        "kind": a.kind,
        "text_field": a.text_field,
    }
    view = client.post("datasets", {k: v for k, v in body.items() if v is not None})
    emit(a, view, labeling.show_dataset_created)


def dataset_list(client: ServiceClient, a: argparse.Namespace) -> None:
    from . import labeling

    views = client.get("datasets", project=a.project)["datasets"]
    emit(a, views, labeling.show_datasets)


def dataset_show(client: ServiceClient, a: argparse.Namespace) -> None:
    from . import labeling

    view = client.get(f"projects/{segment(project_of(client, a))}/datasets/{segment(a.name)}")
    emit(a, view, labeling.show_dataset)


def _labeling(client: ServiceClient, a: argparse.Namespace) -> str:
    return f"projects/{segment(project_of(client, a))}/labeling/{segment(a.name)}"


def label_create(client: ServiceClient, a: argparse.Namespace) -> None:
    from . import labeling

    body = {
        "name": a.name,
        "dataset": a.dataset,
        "type": a.type,
        "labels": _split(a.labels),
        "project": a.project,
        "multi_label": a.multi_label,
        "instructions": Path(a.instructions).read_text() if a.instructions else None,
        "review": not a.no_review,
        "reviewers": _split(a.reviewers) if a.reviewers else None,
    }
    view = client.post("labeling", {k: v for k, v in body.items() if v is not None})
    emit(a, view, labeling.show_label_created)


def label_list(client: ServiceClient, a: argparse.Namespace) -> None:
    from . import labeling

    views = client.get("labeling", project=a.project)["projects"]
    emit(a, views, labeling.show_label_projects)


def label_show(client: ServiceClient, a: argparse.Namespace) -> None:
    from . import labeling

    view = client.get(_labeling(client, a))
    emit(a, view, labeling.show_label_project)


def label_assign(client: ServiceClient, a: argparse.Namespace) -> None:
    body = {"users": _split(a.users), "mode": a.mode, "batch_size": a.batch_size}
    found = client.post(
        f"{_labeling(client, a)}/assign", {k: v for k, v in body.items() if v is not None}
    )
    if a.json:
        print_json(found)
    else:
        print("Assigned " + ", ".join(f"{n} to {user}" for user, n in found["assigned"].items()))


# -- dispatch ----------------------------------------------------------------------------

# by the local command's name
REMOTE: dict[str, Command] = {
    "model_register": model_register,
    "model_list": model_list,
    "model_show": model_show,
    "model_alias": model_alias,
    "model_compare": model_compare,
    "model_archive": model_archive,
    "model_delete": model_delete,
    "model_download": model_download,
    "project_list": project_list,
    "project_create": project_create,
    "project_member": project_member,
    "project_invitations": project_invitations,
    "project_accept": project_accept,
    "project_decline": project_decline,
    "pipeline_validate": pipeline_validate,
    "pipeline_run": pipeline_run,
    "pipeline_runs": pipeline_runs,
    "pipeline_logs": pipeline_logs,
    "pipeline_cancel": pipeline_cancel,
    "pipeline_compile": pipeline_compile,
    "pipeline_schedule": pipeline_schedule,
    "pipeline_schedules": pipeline_schedules,
    "pipeline_unschedule": pipeline_unschedule,
    "train_run": train_run,
    "training_list": training_list,
    "training_logs": training_logs,
    "training_stop": training_stop,
    "training_metrics": training_metrics,
    "training_register": training_register,
    "deployments_list": deployments_list,
    "deploy": deploy,
    "undeploy": undeploy,
    "deployment_action": deployment_action,
    "deployment_keys": deployment_keys,
    "deployment_access": deployment_access,
}
TUNING: dict[str, Command] = {
    "tune": tune,
    "tuning_list": tuning_list,
    "tuning_show": tuning_show,
    "tuning_stop": tuning_stop,
    "tuning_resume": tuning_resume,
    "tuning_register": tuning_register,
    "tuning_log": tuning_log,
}


def label_import(client: ServiceClient, a: argparse.Namespace) -> None:
    from . import labeling

    body = {"format": a.format, "data": labeling.read_import(a.file), "pick": a.pick}
    answer = client.post(
        f"{_labeling(client, a)}/import", {k: v for k, v in body.items() if v is not None}
    )
    emit(a, answer, labeling.show_imported)


def label_export(client: ServiceClient, a: argparse.Namespace) -> None:
    """The service makes the version; with ``-o`` it is downloaded and copied there."""
    from . import labeling

    output, annotations_only = labeling.export_target(a)
    project = project_of(client, a)
    body = {"format": a.format, "only": a.only, "class_order": a.class_order}
    view = client.post(
        f"projects/{segment(project)}/labeling/{segment(a.name)}/export",
        {k: v for k, v in body.items() if v is not None},
    )
    target = None
    if output is not None:
        version = view["version"]
        where = (
            f"projects/{segment(project)}/datasets/{segment(view['dataset'])}"
            f"/versions/{segment(version['version'])}/download"
        )
        with tempfile.TemporaryDirectory(prefix="cube-export-") as tmp:
            copy = _fetch(client, where, Path(tmp), Path(version["path"]).name)
            source = copy / labeling.COCO_ANNOTATIONS if annotations_only else copy
            target = output.deliver(source)
    labeling.show_exported(view, a, target, annotations_only)


def _fetch(client: ServiceClient, where: str, tmp: Path, name: str) -> Path:
    """A download saved under ``tmp`` as ``name``: the file, or the folder a zip holds."""
    with client.stream(where) as answer:
        received = tmp / "received"
        answer.save(received)
        is_dir = answer.headers.get("Content-Type", "").startswith("application/zip")
    if not is_dir:
        return received.rename(tmp / name)
    unpacked = tmp / "unpacked"
    with zipfile.ZipFile(received) as archive:
        archive.extractall(unpacked)
    inside = list(unpacked.iterdir())
    folder = inside[0] if len(inside) == 1 and inside[0].is_dir() else unpacked
    return folder.rename(tmp / name)


def label_prelabel(client: ServiceClient, a: argparse.Namespace) -> None:
    body = {"model": a.model, "version": a.version, "threshold": a.threshold, "limit": a.limit}
    found = client.post(
        f"{_labeling(client, a)}/prelabel", {k: v for k, v in body.items() if v is not None}
    )
    if a.json:
        print_json(found)
    else:
        print(f"Pre-labeled {found['prelabeled']} task(s) with {a.model}")


LABELING: dict[str, Command] = {
    "dataset_create": dataset_create,
    "dataset_list": dataset_list,
    "dataset_show": dataset_show,
    "label_create": label_create,
    "label_list": label_list,
    "label_show": label_show,
    "label_assign": label_assign,
    "label_import": label_import,
    "label_export": label_export,
    "label_prelabel": label_prelabel,
}


def _remote(local: Any) -> Command | None:
    """The remote implementation of a local command function of ``cube_lab.cli``."""
    module, name = getattr(local, "__module__", None), getattr(local, "__name__", "")
    if module == "cube_lab.cli.tuning":
        return TUNING.get(name)
    if module == "cube_lab.cli.labeling":
        return LABELING.get(name)
    if module == "cube_lab.cli.finetune":
        from .finetune import REMOTE as FINETUNE

        return FINETUNE.get(name)
    if module == "cube_lab.cli.kb":
        from .kb import REMOTE as KB

        return KB.get(name)
    if module not in (m.__name__ for m in (models, projects, pipelines, training, serving)):
        return None
    return REMOTE.get(name)


def command_name(a: argparse.Namespace) -> str:
    words = [a.group, getattr(a, "command", None), getattr(a, "keys_command", None)]
    return " ".join(w for w in words if w)


def _names() -> list[str]:
    parser = cli.build_parser()
    found: list[str] = []

    def walk(p: argparse.ArgumentParser, prefix: list[str]) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for word, sub in action.choices.items():
                    if _remote(sub.get_default("fn")) is not None:
                        found.append(" ".join([*prefix, word]))
                    walk(sub, [*prefix, word])

    walk(parser, [])
    return found


def run(client: ServiceClient, a: argparse.Namespace) -> None:
    """Run the parsed command ``a`` through the service; errors are ``CubeError``s."""
    if os.environ.get("CUBE_LAB_USER"):
        print(
            "cube-lab: note: $CUBE_LAB_USER is ignored under the hub; you act as the owner of "
            "$JUPYTERHUB_API_TOKEN",
            file=sys.stderr,
        )
    fn = _remote(a.fn)
    if fn is None:
        raise InvalidInput(
            _t("`cube-lab {value}` does not work under the hub yet", value=command_name(a)),
            "Under the hub these commands reach the cube-lab service: "
            + ", ".join(_names())
            + ". Use the cube-lab panels for the rest.",
        )
    fn(client, a)
