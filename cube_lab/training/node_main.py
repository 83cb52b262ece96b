"""What a pipeline's training node runs: one recorded training job, then its values.

The job spec comes in ``$CUBE_TRAINING_SPEC`` (written by ``TrainingKind.command``); the
data dir, database and user come from the environment every node gets. Exit status 0
means the job succeeded; SIGTERM (a cancelled run) stops the job's every rank.
"""

from __future__ import annotations

import json
import os
import sys

from ..config import local_username
from ..errors import CubeError
from ..identity import Caller
from ..jobtemplates.contract import ENV_VALUES_FILE
from ..workspace import default_workspace
from .nodekind import ENV_SPEC


def main() -> int:
    try:
        data = json.loads(os.environ[ENV_SPEC])
    except (KeyError, json.JSONDecodeError) as exc:
        print(f"cube-lab: no valid training spec in ${ENV_SPEC}: {exc}", file=sys.stderr)
        return 2
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
    values_file = os.environ.get(ENV_VALUES_FILE)
    if values_file:
        with open(values_file, "w") as f:
            json.dump(values, f)
    print(f"cube-lab: training job {job_id} {status}", flush=True)
    return 0 if status == "succeeded" else 1


def _echo(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
