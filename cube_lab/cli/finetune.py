"""`cube-lab finetune CONFIG.yaml [--nproc N] [--register NAME]`: a fine-tune as a training job.

Locally the job runs in this process through the training service (its log streamed, its
record, metrics and quota the training service's); under the hub it is started at the
cube-lab service (``POST /finetune/jobs``) and followed there (``remote_finetune``).
"""

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
from ..serialize import to_jsonable
from .args import print_json

if TYPE_CHECKING:
    from ..rest_client import ServiceClient
    from ..workspace import Workspace


def finetune(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    from ..finetune.service import FinetuneService, read_config_file
    from . import output

    path = Path(a.config)
    raw = read_config_file(path)
    if isinstance(raw, dict) and a.project:
        raw = {**raw, "project": a.project}
    service = FinetuneService(ws)
    config = service.parse(caller, raw, path.resolve().parent)
    if a.dry_run:
        spec = service.job_spec(config, nproc=a.nproc)
        commands = ws.training.dry_run(spec)
        if a.json:
            print_json({"config": config.to_dict(), "commands": commands})
        else:
            print("\n".join(commands))
        return
    out = sys.stderr if a.json else sys.stdout

    def echo(text: str) -> None:
        out.write(text)
        out.flush()

    job = service.prepare(
        caller, config, nproc=a.nproc, cwd=path.resolve().parent, on_line=None if a.quiet else echo
    )
    job_id = job.plan.job_id
    if not a.quiet:
        base = config.base_ref or config.model
        print(
            f"job {job_id}: {config.method} {config.finetuning_type} of {base}, "
            f"{a.nproc} process(es)",
            file=out,
            flush=True,
        )
    status = ws.training.run_foreground(job)
    view = ws.training.get(caller, job_id)
    registered = None
    if status == "succeeded" and a.register:
        registered = service.register(caller, job_id, a.register, project=a.project)
    if a.json:
        print_json({"job": view, "registered": registered})
    else:
        print(output.job_finished_line(job_id, status, to_jsonable(view)), file=sys.stderr)
        if registered is not None:
            print(
                f"Registered {registered.model} v{registered.version} ({registered.flavor}) "
                f"in project {registered.project}"
            )
    if status != "succeeded":
        raise SystemExit(130 if status == "cancelled" else 1)


def remote_finetune(client: ServiceClient, a: argparse.Namespace) -> None:
    """Under the hub: the service starts the job; its log is followed here."""
    from ..finetune.service import read_config_file
    from ..rest_client import segment
    from . import output
    from .remote import common

    if a.dry_run:
        raise InvalidInput(_t("cube-lab finetune --dry-run is not available under the hub yet"))
    path = Path(a.config)
    config = read_config_file(path)
    folder = common.relative(path.parent if str(path.parent) else ".", "config folder")
    body = {"config": config, "folder": folder, "project": a.project, "nproc": a.nproc}
    job = client.post("finetune/jobs", {k: v for k, v in body.items() if v is not None})
    job_id = job["id"]
    out = sys.stderr if a.json else sys.stdout
    where = f"training/jobs/{segment(job_id)}"
    if not a.quiet:
        print(f"job {job_id}: {job['name']}", file=out, flush=True)
        common._follow(client, where, True, out)
    view = client.get(where)
    while view["status"] in common.ACTIVE:
        time.sleep(common.POLL_S)
        view = client.get(where)
    registered = None
    if view["status"] == "succeeded" and a.register:
        body = {"name": a.register, "project": a.project}
        registered = client.post(
            f"{where}/register", {k: v for k, v in body.items() if v is not None}
        )
    if a.json:
        print_json({"job": view, "registered": registered})
    else:
        print(output.job_finished_line(job_id, view["status"], view), file=sys.stderr)
        if registered:
            print(f"Registered {registered['model']} v{registered['version']}")
    if view["status"] != "succeeded":
        raise SystemExit(130 if view["status"] == "cancelled" else 1)


REMOTE: dict[str, Callable[[Any, argparse.Namespace], None]] = {"finetune": remote_finetune}


def add_commands(groups: Any, command: Callable[..., Any]) -> None:
    p = command(groups, "finetune", finetune, "fine-tune an LLM (pt/sft/rm/dpo/grpo) as a job")
    p.add_argument("config", help="fine-tune config or LLaMA-Factory training YAML")
    p.add_argument("--nproc", type=int, default=1, help="processes (torchrun)")
    p.add_argument("--register", metavar="NAME", help="register the result as model NAME")
    p.add_argument("--dry-run", action="store_true", help="print the job's command")
    p.add_argument("--quiet", "-q", action="store_true")
