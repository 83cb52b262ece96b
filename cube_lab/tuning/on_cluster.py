"""Tuning experiments the cube-lab service runs on a cluster as Katib Experiments.

The service creates the Experiment (and, under the hub, a Secret with the experiment's own
token for the trial pods) with its own cluster credentials, so a user needs none. It follows
the Experiment's status to its end and copies Katib's Trials into the experiment's record as
they change: parameters, state, the objective's latest value. So the same list, views and
"register the best trial" serve local and cluster experiments. Stopping deletes the
Experiment (Katib deletes its trials and their pods with it).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ..errors import CubeError
from ..k8s import ClusterConfig, Kube, Resource, k8s_name, pod_labels
from ..k8s.names import user_label
from ..k8s.objects import create_all, token_secret
from .cluster import EXPERIMENT, ClusterProgress, number, progress
from .katib import CONTAINER

log = logging.getLogger(__name__)

TRIAL = Resource("kubeflow.org", "v1beta1", "trials", "Trial")
EXPERIMENT_LABEL = "katib.kubeflow.org/experiment"  # Katib sets it on each of its Trials
ID_LABEL = "cube-lab.io/experiment-id"
OWNER_LABEL = "cube-lab.io/owner"
POLL_S = 2.0
MAX_BACKOFF_S = 30.0
ENDED = ("done", "failed", "stopped", "interrupted")

# a Trial's last true condition, in cube-lab's trial states (those of the local engine)
_TRIAL_STATES = {
    "Created": "waiting",
    "Running": "running",
    "Succeeded": "succeeded",
    "EarlyStopped": "early_stopped",
    "Failed": "failed",
    "MetricsUnavailable": "failed",
    "Killed": "cancelled",
}


def object_name(experiment_name: str, experiment_id: str) -> str:
    """The Experiment's name: the user's name for it, made unique by the record's id (Katib
    appends 9 characters for each Trial and the Trial's Job adds more: room is kept)."""
    return f"{k8s_name(experiment_name, 36)}-{experiment_id[-4:]}"


# a trial parameter Katib fills with the Trial's name (trial metadata, not the search space)
TRIAL_NAME_PARAMETER = "cubeLabTrialName"


def with_owner(
    manifest: dict[str, Any], experiment_id: str, owner: str, project: str | None = None
) -> dict[str, Any]:
    """The Experiment labelled with its record and its owner, and its trials' pods with
    ``cube_lab.k8s.pod_labels``' vocabulary: project, owner, kind ``trial``, the experiment's
    id and the Trial's name (Katib writes it in for ``${trialSpec.Name}``)."""
    doc = copy.deepcopy(manifest)
    labels = {ID_LABEL: experiment_id, OWNER_LABEL: user_label(owner)}
    doc["metadata"].setdefault("labels", {}).update(labels)
    trial_template = doc["spec"]["trialTemplate"]
    template = trial_template["trialSpec"]["spec"]["template"]
    pod = template.setdefault("metadata", {}).setdefault("labels", {})
    pod.update(labels)
    if project is not None:
        placeholder = f"${{trialParameters.{TRIAL_NAME_PARAMETER}}}"
        pod.update(pod_labels.trial(project, owner, experiment_id, placeholder, placeholder=True))
        params = trial_template.setdefault("trialParameters", [])
        if not any(p.get("name") == TRIAL_NAME_PARAMETER for p in params):
            params.append(
                {
                    "name": TRIAL_NAME_PARAMETER,
                    "description": "the Trial's name, for its pods' cube-lab.io/trial label",
                    "reference": "${trialSpec.Name}",
                }
            )
    return doc


def with_service_access(manifest: dict[str, Any], values: dict[str, str]) -> list[dict[str, Any]]:
    """A Secret holding ``values`` (the service's URL and the experiment's token), and the
    Experiment whose trial container takes them from it: the token is never in the
    Experiment, which more people may read than the pods' secrets."""
    doc = copy.deepcopy(manifest)
    meta = doc["metadata"]
    secret, env = token_secret(f"{meta['name']}-token", meta, values)
    pod = doc["spec"]["trialTemplate"]["trialSpec"]["spec"]["template"]["spec"]
    for container in pod["containers"]:
        if container["name"] == CONTAINER:
            container["env"] = [*container.get("env", []), *env]
    return [secret, doc]


def trial_fields(obj: dict[str, Any], metric: str, experiment_id: str, seq: int) -> dict[str, Any]:
    """A Katib Trial as the columns of a ``tuning_trials`` row."""
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    state, error = "waiting", None
    for cond in status.get("conditions") or []:  # the last true condition wins
        if str(cond.get("status")) == "True" and cond.get("type") in _TRIAL_STATES:
            state = _TRIAL_STATES[cond["type"]]
            error = (cond.get("message") or cond.get("reason")) if state == "failed" else None
    latest = next(
        (
            m.get("latest")
            for m in (status.get("observation") or {}).get("metrics") or []
            if m.get("name") == metric
        ),
        None,
    )
    final = _float(latest) if state in ("succeeded", "early_stopped") else None
    return {
        "id": f"{experiment_id}-{str(meta.get('name', ''))[-8:]}",
        "seq": seq,
        "parameter_id": seq,
        "parameters": {
            a["name"]: number(a.get("value")) for a in spec.get("parameterAssignments") or []
        },
        "status": state,
        "intermediate": [],
        "final": final,
        "final_raw": latest,
        "exit_code": None,
        "error": error,
        "started_at": _time(status.get("startTime")),
        "finished_at": _time(status.get("completionTime")),
    }


def _float(text: Any) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None  # "unavailable", or nothing reported


def _time(text: Any) -> datetime | None:
    if not text:
        return None
    with contextlib.suppress(ValueError):
        return datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    return None


Changed = Callable[[ClusterProgress, list[dict[str, Any]]], None]  # called in a worker thread


class KatibRun:
    """One Experiment on a cluster: ``submit``, then ``follow`` to its end; ``stop`` deletes
    it. ``on_change`` gets each status seen, with the experiment's Trials at that moment."""

    def __init__(
        self,
        experiment_id: str,
        refs: list[dict[str, str]],
        config: ClusterConfig,
        metric: str,
        on_change: Changed,
        *,
        manifests: list[dict[str, Any]] | None = None,
        poll_s: float = POLL_S,
    ) -> None:
        self.experiment_id = experiment_id
        self.refs = refs  # what was created, in order; the Experiment is the last
        self.config = config
        self.metric = metric
        self.on_change = on_change
        self.manifests = manifests or []
        self.poll_s = poll_s
        self.status = "queued"
        self.stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watching: asyncio.Future[str] | None = None

    @property
    def name(self) -> str:
        return self.refs[-1]["name"]

    @property
    def namespace(self) -> str:
        return self.refs[-1]["namespace"]

    async def submit(self) -> None:
        """Create the objects in order; if one fails, those created before it go again."""
        async with Kube(self.config) as kube:
            await create_all(kube, self.manifests)

    async def delete(self) -> None:
        """Delete the Experiment (its trials go with it), then the token's Secret."""
        self.stopping = True
        async with Kube(self.config) as kube:
            for ref in reversed(self.refs):
                await kube.delete(Resource.of(ref), ref["name"], ref["namespace"])
        if self._watching is not None:  # a watch begun after the deletion hears nothing
            self._watching.cancel()

    def stop(self, timeout: float = 30.0) -> None:
        """``delete`` from another thread (a request handler's worker), waiting for it."""
        if self._loop is None:
            asyncio.run(self.delete())
            return
        asyncio.run_coroutine_threadsafe(self.delete(), self._loop).result(timeout)

    async def follow(self) -> str:
        """Follow to the end: ``done``, ``failed``, ``stopped`` (deleted by ``stop``) or
        ``interrupted`` (deleted by someone else). A lost connection is tried again with a
        growing pause."""
        self._loop = asyncio.get_running_loop()
        failures = 0
        while self.status not in ENDED:
            self._watching = asyncio.ensure_future(self._watch())
            try:
                self.status = await self._watching
                failures = 0
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not self.stopping or (task is not None and task.cancelling()):
                    raise  # someone cancels the follower itself (the server stops)
                self.status = "stopped"
            except CubeError as exc:
                if exc.status == 404:  # gone, and no DELETED was heard
                    self.status = "stopped" if self.stopping else "interrupted"
                    break
                failures += 1
                wait = min(MAX_BACKOFF_S, self.poll_s * 2**failures)
                log.warning("%s: %s; trying again in %g s", self.name, exc.error, wait)
                await asyncio.sleep(wait)
            finally:
                self._watching = None
        return self.status

    async def _watch(self) -> str:
        async with Kube(self.config) as kube:
            status = await self._seen(kube, await kube.get(EXPERIMENT, self.name, self.namespace))
            if status in ENDED:
                return status
            events = kube.watch(EXPERIMENT, self.name, self.namespace)
            async with contextlib.aclosing(events):
                async for event, obj in events:
                    if event == "DELETED":
                        return "stopped" if self.stopping else "interrupted"
                    status = await self._seen(kube, obj)
                    if status in ENDED:
                        return status
        return "interrupted"  # the watch ends only on DELETED

    async def _seen(self, kube: Kube, obj: dict[str, Any]) -> str:
        found = progress(obj, self.metric)
        trials = await kube.list(TRIAL, self.namespace, f"{EXPERIMENT_LABEL}={self.name}")
        await asyncio.to_thread(self.on_change, found, trials)
        return found.status
