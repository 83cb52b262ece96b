"""`cube-lab train` and `cube-lab training ...` under the hub."""

from __future__ import annotations

import argparse
import posixpath
import sys
import time
from pathlib import Path

from ...errors import InvalidInput
from ...locale.messages import _t
from ...rest_client import ServiceClient, follow_log, relative, segment
from ...rest_client.logs import LOG_POLL_S
from ..args import print_json
from ..output import job_finished_line
from ..training import _train_spec, show_jobs
from .common import ACTIVE, KUBE_CLIENT_FLAGS, POLL_S, emit, given


def train_run(client: ServiceClient, a: argparse.Namespace) -> None:
    """Start the job at the service, print every rank's output as it comes, exit with its
    status (as the local command does)."""
    if a.dry_run:
        raise InvalidInput(
            _t("cube-lab train --dry-run is not available under the hub yet"),
            _t("Start the job without --dry-run, or look at it in the Training panel."),
        )
    refused = given(a, KUBE_CLIENT_FLAGS)  # the in-process command's cluster credentials
    if refused:
        raise InvalidInput(
            _t(
                "cube-lab {what} {value} are not available under the hub",
                what="train",
                value=" / ".join(refused),
            ),
            _t(
                "Leave them out: with --backend kubernetes the cube-lab service submits the "
                "job to its namespace with its own cluster credentials."
            ),
        )
    spec = _train_spec(a)
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
            follow_log(client, where, True, out)
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
        print(job_finished_line(job_id, status, view), file=sys.stderr)
    if status != "succeeded":
        raise SystemExit(130 if status == "cancelled" else 1)


def training_list(client: ServiceClient, a: argparse.Namespace) -> None:
    jobs = client.get("training/jobs", project=a.project, limit=a.limit)["jobs"]
    emit(a, jobs, show_jobs)


def training_logs(client: ServiceClient, a: argparse.Namespace) -> None:
    follow_log(client, f"training/jobs/{segment(a.job)}", a.follow)


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
