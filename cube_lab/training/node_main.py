"""What a pipeline's training node runs: one recorded training job, then its values.

The job spec comes in ``$CUBE_TRAINING_SPEC`` (written by ``TrainingKind.command``); the
data dir, database and user come from the environment every node gets. Under the hub (a node
the cube-lab service started, with its job token) the job is started through the service's
REST API instead, its log streamed into the node's, its record awaited. Exit status 0
means the job succeeded; SIGTERM (a cancelled run) stops the job's every rank.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

from ..config import local_username
from ..errors import CubeError
from ..identity import Caller
from ..jobtemplates.contract import ENV_VALUES_FILE
from ..workspace import default_workspace
from .nodekind import ENV_SPEC

if TYPE_CHECKING:
    from ..rest_client import ServiceClient

POLL_S = 0.2


def main() -> int:
    try:
        data = json.loads(os.environ[ENV_SPEC])
    except (KeyError, json.JSONDecodeError) as exc:
        print(f"cube-lab: no valid training spec in ${ENV_SPEC}: {exc}", file=sys.stderr)
        return 2
    from ..rest_client import ServiceClient

    try:
        client = ServiceClient.from_env()
    except CubeError as exc:
        print(f"cube-lab: error: {exc.error}\n  {exc.detail or ''}", file=sys.stderr)
        return 2
    if client is not None:  # under the hub: the cube-lab service runs the job, as our owner
        return _main_remote(client, data)
    caller = Caller(local_username())
    try:
        ws = default_workspace()  # none in a node run as its owner's account: says so
        spec = ws.training.parse(data)
        job = ws.training.prepare(caller, spec, None, on_line=_echo)
    except CubeError as exc:
        print(f"cube-lab: error: {exc.error}\n  {exc.detail or ''}", file=sys.stderr)
        return 2
    job_id = job.job_id if hasattr(job, "job_id") else job.plan.job_id  # cluster or local
    print(f"cube-lab: training job {job_id} ({spec.framework}, {spec.processes} process(es))")
    status = ws.training.run_foreground(job)
    view = ws.training.get(caller, job_id)
    last = ws.training.metrics(caller, job_id).last
    values = {
        "job_id": job_id,
        "status": status,
        "output_dir": view.output_dir,
        "last_checkpoint": view.last_checkpoint,
        **{f"metric_{k}": v for k, v in last.items()},
    }
    _write_values(values)
    print(f"cube-lab: training job {job_id} {status}", flush=True)
    return 0 if status == "succeeded" else 1


class _Stopped(Exception):
    """SIGTERM (the run was cancelled): the job at the service is stopped too."""


def _main_remote(client: ServiceClient, data: dict[str, Any]) -> int:
    """Start the job through the service's REST API (its paths, in the owner's home, resolve
    there; its output in this node's folder is made by the job, as the owner), print its log as
    it comes, wait for its record, write the same values as in-process."""
    from ..rest_client import follow_log, segment
    from .service import ACTIVE

    def stop(_signum: int, _frame: Any) -> None:
        raise _Stopped

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        try:
            job = client.post("training/jobs", data)
        except CubeError as exc:
            print(f"cube-lab: error: {exc.error}\n  {exc.detail or ''}", file=sys.stderr)
            return 2
        except _Stopped:
            return 143
        job_id = job["id"]
        procs = job["workers"] * job["nproc_per_worker"]
        print(f"cube-lab: training job {job_id} ({job['framework']}, {procs} process(es))")
        where = f"training/jobs/{segment(job_id)}"
        try:
            follow_log(client, where, True, sys.stdout)
            view = client.get(where)
            while view["status"] in ACTIVE:  # the log is done; the record follows shortly
                time.sleep(POLL_S)
                view = client.get(where)
        except _Stopped:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one stop is enough
            view = client.post(f"{where}/stop")
            print(f"cube-lab: training job {job_id} {view['status']} (stopped)", flush=True)
            return 143
        last = client.get(f"{where}/metrics").get("last") or {}
    finally:
        signal.signal(signal.SIGTERM, previous)
    status = view["status"]
    _write_values(
        {
            "job_id": job_id,
            "status": status,
            "output_dir": view.get("output_dir"),
            "last_checkpoint": view.get("last_checkpoint"),
            **{f"metric_{k}": v for k, v in last.items()},
        }
    )
    print(f"cube-lab: training job {job_id} {status}", flush=True)
    return 0 if status == "succeeded" else 1


def _write_values(values: dict[str, Any]) -> None:
    values_file = os.environ.get(ENV_VALUES_FILE)
    if values_file:
        with open(values_file, "w") as f:
            json.dump(values, f)


def _echo(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
