"""``cl.train(script, ...)``: start a training job without blocking; ``Job`` handles, and
``cl.training.jobs()`` / ``cl.training.get(id)``."""

from __future__ import annotations

import builtins
import sys
import time
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..locale.messages import _t
from . import current
from .handle import POLL_S, Handle, Json

if TYPE_CHECKING:
    import pandas as pd

    from .models import ModelVersion

STEP_TOTALS = ("total_steps", "max_steps", "epochs")
FAILURE_LINES = 10


class Job(Handle):
    """A training job: ``.status``, ``.refresh()``, ``.wait()``, ``.logs()``, ``.metrics()``,
    ``.stop()``, ``.register(name)``; ``.data`` is the REST JSON of its last refresh."""

    kind = "job"

    def __init__(self, data: Json) -> None:
        super().__init__(data)
        self._metrics: Json | None = None

    @property
    def name(self) -> str:
        return str(self.data.get("name"))

    @property
    def exit_code(self) -> int | None:
        return self.data.get("exit_code")

    def refresh(self) -> Job:
        self.data = current().get_job(self.id)
        return self

    def _metrics_json(self) -> Json:
        self._metrics = current().job_metrics(self.id)
        return self._metrics

    def metrics(self) -> pd.DataFrame:
        """What the job reported (``cube_lab.report(step=..., loss=...)``, else ``key=value``
        lines of its log): one row per step, one column per metric."""
        import pandas as pd

        series = self._metrics_json().get("series") or {}
        by_step: dict[float, dict[str, float]] = {}
        for metric, points in series.items():
            for step, value in points:
                by_step.setdefault(step, {})[metric] = value
        frame = pd.DataFrame.from_dict(by_step, orient="index", columns=sorted(series))
        frame.index.name = "step"
        frame = frame.sort_index()
        if len(frame) and all(float(s).is_integer() for s in frame.index):
            frame.index = frame.index.astype(int)
        return frame

    def logs(self, follow: bool = False) -> str:
        """The log so far (every rank, prefixed ``[rank N]``). ``follow=True`` prints it as it
        grows until the job ends (an interrupt stops following, not the job); the text."""
        transport = current()
        parts: builtins.list[str] = []
        offset = 0
        try:
            while True:
                chunk = transport.job_log(self.id, offset)
                if chunk["text"]:
                    parts.append(chunk["text"])
                    if follow:
                        sys.stdout.write(chunk["text"])
                        sys.stdout.flush()
                moved = chunk["offset"] != offset
                offset = chunk["offset"]
                if moved and offset < chunk["size"]:
                    continue  # more is written already
                if chunk["done"] or not follow:
                    return "".join(parts)
                time.sleep(POLL_S)
        except KeyboardInterrupt:
            return "".join(parts)

    def stop(self) -> Job:
        """Cancel the job (its processes are ended); self."""
        self.data = current().stop_job(self.id)
        return self

    def register(
        self,
        name: str,
        path: str | None = None,
        project: str | None = None,
        description: str = "",
    ) -> ModelVersion:
        """Register what the succeeded job saved (its last checkpoint, else its output folder,
        or ``path``) as a new version of ``name``, its last metrics and the job in lineage."""
        from .models import ModelVersion

        body = {"name": name, "path": path, "project": project, "description": description}
        return ModelVersion(current().register_job(self.id, body))

    def view_state(self) -> Json:
        state = super().view_state()
        state["title"] = _t("Training job {name} ({id})", name=self.name, id=self.id)
        try:
            found = self._metrics_json()
        except Exception:  # a job without a folder yet: nothing to chart
            found = {}
        last = dict(found.get("last") or {})
        series = found.get("series") or {}
        steps = [p[0] for points in series.values() for p in points]
        if steps:
            total = next((last[k] for k in STEP_TOTALS if k in last), None)
            done = int(max(steps)) + 1
            state["progress"] = (done, int(total) if total else None, "steps")
        state["charts"] = {m: points for m, points in series.items() if m not in STEP_TOTALS}
        state["columns"] = ["metric", "step", "last"]
        state["rows"] = [
            [metric, _num(series[metric][-1][0]), _num(value)]
            for metric, value in sorted(last.items())
            if metric not in STEP_TOTALS
        ]
        return state

    def failure_log(self) -> tuple[str, str] | None:
        """A failed job's name and last log lines (its view shows them in the log tail)."""
        if not self.done or self.status == "succeeded":
            return None
        return self.name, "\n".join(self.logs().rstrip().splitlines()[-FAILURE_LINES:])

    def view_parts(self) -> builtins.list[Any]:
        """The log tail with its rank filter (a failed job's last lines say why), and the
        register button once it succeeded."""
        from .view_parts import RankLog, RegisterBox

        return [RankLog(self), RegisterBox(self)]

    def __repr__(self) -> str:
        metrics = self._metrics.get("last") if self._metrics else None
        shown = ", ".join(f"{k}={_num(v)}" for k, v in sorted((metrics or {}).items()))
        return f"<Job {self.id} {self.name}: {self.status}" + (f" {shown}>" if shown else ">")


def _num(value: Any) -> Any:
    if isinstance(value, float):
        return int(value) if value.is_integer() else round(value, 6)
    return value


def train(
    script: str | None = None,
    *,
    nproc: int = 1,
    framework: str = "pytorch",
    gpus: int = 0,
    workers: int = 1,
    args: builtins.list[str] | None = None,
    command: builtins.list[str] | None = None,
    env: dict[str, str] | None = None,
    working_dir: str | None = None,
    name: str | None = None,
    project: str | None = None,
    backend: str | None = None,
    image: str | None = None,
    retries: int = 0,
    timeout_s: int | None = None,
    gpu_type: str | None = None,
) -> Job:
    """Start a training job; returns at once (``.wait()`` blocks).

    ``framework``: pytorch (torchrun), deepspeed, tensorflow, mpi or plain (one process per
    rank). ``nproc`` processes on each of ``workers`` nodes, ``gpus`` GPUs in all.
    ``backend``: where it runs (default: the server's); ``kubernetes`` needs ``image``."""
    if args is not None and (isinstance(args, str) or not all(isinstance(a, str) for a in args)):
        raise InvalidInput(_t("args must be a list of strings"), _t('e.g. args=["--lr", "0.1"]'))
    resources: Json = {"gpus": gpus}
    if gpu_type:
        resources["gpu_type"] = gpu_type
    spec = {
        "framework": framework,
        "script": script,
        "command": command,
        "args": args,
        "env": env,
        "working_dir": working_dir,
        "workers": workers,
        "nproc_per_worker": nproc,
        "resources": resources,
        "retries": retries,
        "timeout_s": timeout_s,
        "project": project,
        "name": name,
        "backend": backend,
        "image": image,
    }
    return Job(current().start_job({k: v for k, v in spec.items() if v is not None}))


class Training:
    """``cl.training.jobs()``, ``cl.training.get(id)``."""

    def jobs(self, project: str | None = None, limit: int = 50) -> builtins.list[Job]:
        """Recent jobs you can see, newest first."""
        return [Job(j) for j in current().list_jobs(project, limit)]

    def get(self, job_id: str) -> Job:
        return Job(current().get_job(job_id))

    def __repr__(self) -> str:
        return "<cube-lab training: jobs(), get(id); cl.train(script, ...) starts one>"


training = Training()
