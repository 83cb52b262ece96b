"""Katib on a cluster: create an Experiment, follow it to its end, read its best trial.

Katib's controller does the work (suggestions, one trial Job each, metrics collection);
this follows ``status``: the conditions (Created, Running, Restarting, Succeeded, Failed),
the trial counters, and ``currentOptimalTrial``. Stopping deletes the Experiment (its
trials and their pods go with it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..k8s import ClusterConfig, Kube, Resource

EXPERIMENT = Resource("kubeflow.org", "v1beta1", "experiments", "Experiment")
_STATUS = {"Created": "queued", "Running": "running", "Restarting": "running"}
_STATUS |= {"Succeeded": "done", "Failed": "failed"}


@dataclass
class ClusterProgress:
    status: str = "queued"
    message: str | None = None
    trials: int = 0
    succeeded: int = 0
    failed: int = 0
    early_stopped: int = 0
    best_parameters: dict[str, Any] = field(default_factory=dict)
    best_metric: float | None = None
    best_trial: str | None = None


def progress(obj: dict[str, Any], metric: str) -> ClusterProgress:
    """What an Experiment object's status says."""
    status = obj.get("status") or {}
    found = ClusterProgress()
    for cond in status.get("conditions") or []:  # the last true condition wins
        if cond.get("status") == "True" and cond.get("type") in _STATUS:
            found.status = _STATUS[cond["type"]]
            found.message = cond.get("message") or cond.get("reason")
    found.trials = int(status.get("trials") or 0)
    found.succeeded = int(status.get("trialsSucceeded") or 0)
    found.failed = int(status.get("trialsFailed") or 0)
    found.early_stopped = int(status.get("trialsEarlyStopped") or 0)
    best = status.get("currentOptimalTrial") or {}
    found.best_trial = best.get("bestTrialName") or None
    found.best_parameters = {
        a["name"]: number(a.get("value")) for a in best.get("parameterAssignments") or []
    }
    for m in (best.get("observation") or {}).get("metrics") or []:
        if m.get("name") == metric:
            found.best_metric = number(m.get("latest"))
    return found


def number(text: Any) -> Any:
    """Katib's string values as the numbers they spell (else as they are)."""
    for cast in (int, float):
        try:
            return cast(text)
        except (TypeError, ValueError):
            continue
    return text


async def run(
    manifest: dict[str, Any],
    config: ClusterConfig,
    metric: str,
    on_progress: Callable[[ClusterProgress], None],
) -> ClusterProgress:
    """Create the Experiment and follow it to its end (or its deletion)."""
    async with Kube(config) as kube:
        meta = manifest["metadata"]
        meta["namespace"] = meta.get("namespace") or kube.namespace
        await kube.create(manifest)
        last = ClusterProgress()
        try:
            async for event, obj in kube.watch(EXPERIMENT, meta["name"], meta["namespace"]):
                if event == "DELETED":
                    last.status, last.message = "stopped", "the Experiment was deleted"
                    break
                last = progress(obj, metric)
                on_progress(last)
                if last.status in ("done", "failed"):
                    break
        except BaseException:  # Ctrl-C or a lost follower: take the Experiment down too
            await kube.delete(EXPERIMENT, meta["name"], meta["namespace"])
            raise
        return last
