"""What a pipeline's fine-tune node runs: one recorded fine-tune job, its registration, values.

The spec comes in ``$CUBE_FINETUNE_SPEC`` (written by ``FinetuneKind.command``): the config
(the node's overrides applied), its folder, ``nproc`` and ``register``. The data dir,
database and user come from the environment every node gets. The job runs in this process
through the training service, like ``cube-lab finetune`` (so it shows in the Training panel
with its log and metrics), its log streamed into the node's; with ``register`` set its model
is registered, and the node's values say which version. Exit status 0 means the job
succeeded (and registered, when asked).

Under the hub (a node the cube-lab service started, with its job token) the job is started
at the service (``POST /finetune/jobs``), its log followed, and registered there
(``POST /training/jobs/{id}/register``).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import local_username
from ..errors import CubeError
from ..identity import Caller
from ..jobtemplates.contract import ENV_VALUES_FILE
from .nodekind import ENV_SPEC

if TYPE_CHECKING:
    from ..rest_client import ServiceClient

POLL_S = 0.2


def main() -> int:
    try:
        data = json.loads(os.environ[ENV_SPEC])
    except (KeyError, json.JSONDecodeError) as exc:
        print(f"cube-lab: no valid fine-tune spec in ${ENV_SPEC}: {exc}", file=sys.stderr)
        return 2
    from ..rest_client import ServiceClient

    try:
        client = ServiceClient.from_env()
        if client is not None:  # under the hub: the cube-lab service runs the job
            return _main_remote(client, data)
        return _main_local(data)
    except CubeError as exc:
        print(f"cube-lab: error: {exc.error}\n  {exc.detail or ''}", file=sys.stderr)
        return 2


def _main_local(data: dict[str, Any]) -> int:
    from ..workspace import default_workspace
    from .service import FinetuneService

    caller = Caller(local_username())
    ws = default_workspace()  # none in a node run as its owner's account: says so
    service = FinetuneService(ws)
    base_dir = Path(data["base_dir"])
    config = service.parse(caller, data["config"], base_dir)
    nproc = int(data.get("nproc") or 1)
    job = service.prepare(caller, config, nproc=nproc, cwd=base_dir, on_line=_echo)
    job_id = job.plan.job_id
    base = config.base_ref or config.model
    print(
        f"cube-lab: fine-tune job {job_id}: {config.method} {config.finetuning_type} of {base}, "
        f"{nproc} process(es)",
        flush=True,
    )
    status = ws.training.run_foreground(job)
    view = ws.training.get(caller, job_id)
    values = _job_values(job_id, status, view.output_dir)
    values.update({f"metric_{k}": v for k, v in ws.training.metrics(caller, job_id).last.items()})
    if status == "succeeded" and data.get("register"):
        version = service.register(caller, job_id, data["register"], project=config.project)
        values.update(_registered(version.model, version.version, version.project))
    return _done(job_id, status, values)


class _Stopped(Exception):
    """SIGTERM (the run was cancelled): the job at the service is stopped too."""


def _main_remote(client: ServiceClient, data: dict[str, Any]) -> int:
    """Start the job at the service (the config's relative paths from its folder in the
    owner's home), print its log as it comes, wait for its record, register it there."""
    from ..rest_client import follow_log, relative, segment
    from ..training.service import ACTIVE

    def stop(_signum: int, _frame: Any) -> None:
        raise _Stopped

    config = data["config"]
    body = {
        "config": config,
        "folder": relative(data["base_dir"], "config folder"),
        "nproc": int(data.get("nproc") or 1),
    }
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        try:
            job = client.post("finetune/jobs", body)
        except _Stopped:
            return 143
        job_id = job["id"]
        print(f"cube-lab: fine-tune job {job_id}: {job['name']}", flush=True)
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
            print(f"cube-lab: fine-tune job {job_id} {view['status']} (stopped)", flush=True)
            return 143
        last = client.get(f"{where}/metrics").get("last") or {}
        status = view["status"]
        values = _job_values(job_id, status, view.get("output_dir"))
        values.update({f"metric_{k}": v for k, v in last.items()})
        if status == "succeeded" and data.get("register"):
            wanted = {"name": data["register"], "project": config.get("project")}
            version = client.post(
                f"{where}/register", {k: v for k, v in wanted.items() if v is not None}
            )
            values.update(_registered(version["model"], version["version"], version["project"]))
    finally:
        signal.signal(signal.SIGTERM, previous)
    return _done(job_id, status, values)


def _job_values(job_id: str, status: str, output_dir: str | None) -> dict[str, Any]:
    """The job's values: its id, status, output folder, and the final metrics its saved
    model records (``final_loss``, ``train_loss``, ``eval_loss``... when it wrote them)."""
    values: dict[str, Any] = {"job_id": job_id, "status": status, "output_dir": output_dir}
    meta = Path(output_dir or "") / "model" / "cube_finetune.json"
    if output_dir and meta.is_file():
        try:
            metrics = json.loads(meta.read_text()).get("metrics") or {}
        except (OSError, ValueError):
            metrics = {}
        values.update({k: v for k, v in metrics.items() if isinstance(v, int | float)})
        values["model_dir"] = str(meta.parent)
    return values


def _registered(model: str, version: int, project: str) -> dict[str, Any]:
    return {
        "model": model,
        "version": version,
        "project": project,
        "model_ref": f"{model}:{version}",
    }


def _done(job_id: str, status: str, values: dict[str, Any]) -> int:
    values_file = os.environ.get(ENV_VALUES_FILE)
    if values_file:
        with open(values_file, "w") as f:
            json.dump(values, f)
    line = f"cube-lab: fine-tune job {job_id} {status}"
    if "model_ref" in values:
        line += f", registered {values['project']}/{values['model_ref']}"
    print(line, flush=True)
    return 0 if status == "succeeded" else 1


def _echo(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
