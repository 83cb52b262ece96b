"""KServe on a cluster: submit an InferenceService, follow it to Ready, move its canary, list
and delete what cube-lab deployed. The cluster is the record: nothing is kept in the store.

A new version goes out the KServe way: the same InferenceService gets the new ``storageUri``
and a ``canaryTrafficPercent``; KServe routes that share to the new revision and the rest to
the last one that rolled out. Promote drops the percentage (all traffic to the new revision),
rollback sets it to 0. Tests drive this against kmock (an HTTP mock of the API server) with the
real client; no cluster ran here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import quota
from ..errors import Conflict, CubeError, InvalidInput
from ..k8s import ClusterConfig, Kube, Resource
from ..locale.messages import _t
from .kserve_llm import storage_uri_of

ISVC = Resource("serving.kserve.io", "v1beta1", "inferenceservices", "InferenceService")
MANAGED = "app.kubernetes.io/managed-by=cube-lab"
RESERVATION = "cube-lab/reservation"  # the hub admission id, given back on delete


@dataclass
class ClusterServing:
    name: str
    namespace: str
    status: str = "pending"  # pending | ready | failed | deleted
    url: str | None = None
    storage_uri: str | None = None
    canary_percent: int | None = None
    traffic: list[dict[str, Any]] = field(default_factory=list)
    message: str = ""


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return {}


def progress(obj: dict[str, Any]) -> ClusterServing:
    """What an InferenceService's status says, in cube-lab's words."""
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    status = obj.get("status") or {}
    predictor = spec.get("predictor") or {}
    component = (status.get("components") or {}).get("predictor") or {}
    found = ClusterServing(
        meta.get("name", ""),
        meta.get("namespace", ""),
        url=status.get("url") or (status.get("address") or {}).get("url"),
        storage_uri=storage_uri_of(predictor),
        canary_percent=predictor.get("canaryTrafficPercent"),
        traffic=list(component.get("traffic") or []),
    )
    # a status from before the last spec change says nothing about the new spec
    observed = status.get("observedGeneration")
    stale = observed is not None and observed < meta.get("generation", observed)
    ready = _condition(obj, "Ready")
    failure = ((status.get("modelStatus") or {}).get("lastFailureInfo") or {}).get("message")
    if failure and not stale:
        found.status, found.message = "failed", failure
    elif ready.get("status") == "True" and not stale:
        found.status = "ready"
    elif ready.get("status") == "False" and ready.get("reason") and not stale:
        found.message = f"{ready['reason']}: {ready.get('message', '')}".rstrip(": ")
    return found


async def _follow(
    kube: Kube,
    name: str,
    namespace: str,
    on_progress: Callable[[ClusterServing], None],
    timeout_s: float,
) -> ClusterServing:
    last = ClusterServing(name, namespace)
    deadline = time.monotonic() + timeout_s

    async def watch() -> ClusterServing:
        nonlocal last
        async for event, obj in kube.watch(ISVC, name, namespace):
            if event == "DELETED":
                last.status, last.message = "deleted", "the InferenceService was deleted"
                return last
            last = progress(obj)
            on_progress(last)
            if last.status in ("ready", "failed"):
                return last
        return last

    try:
        return await asyncio.wait_for(watch(), max(deadline - time.monotonic(), 0.1))
    except TimeoutError:
        last.message = last.message or f"not ready after {timeout_s:.0f} s (still rolling out)"
        return last


async def apply(
    manifest: dict[str, Any],
    config: ClusterConfig,
    *,
    project: str,
    on_progress: Callable[[ClusterServing], None] = lambda _: None,
    wait_s: float = 300.0,
    cpu: Any = None,
    accelerators: dict[str, Any] | None = None,
) -> ClusterServing:
    """Create the InferenceService, or roll the existing one forward (new storageUri, canary
    percentage), then follow it until Ready, failed, or ``wait_s``. A new one reserves its
    demand at the hub's admission service first; the reservation id rides on an annotation."""
    meta = manifest["metadata"]
    async with Kube(config) as kube:
        meta["namespace"] = meta.get("namespace") or kube.namespace
        name, ns = meta["name"], meta["namespace"]
        try:
            current = await kube.get(ISVC, name, ns)
        except CubeError as exc:
            if exc.status != 404:
                raise
            current = None
        if current is None:
            reservation = quota.reserve(
                project, f"kserve/{ns}/{name}", cpu=cpu, accelerators=accelerators
            )
            if reservation is not None:
                meta.setdefault("annotations", {})[RESERVATION] = str(reservation["id"])
            try:
                await kube.create(manifest)
            except BaseException:
                quota.release(reservation)
                raise
        else:
            labels = (current.get("metadata") or {}).get("labels") or {}
            if labels.get("app.kubernetes.io/managed-by") != "cube-lab":
                raise Conflict(
                    _t(
                        "InferenceService {name} in {ns} exists and was not deployed by cube-lab",
                        name=name,
                        ns=ns,
                    ),
                    _t("Pick another --name, or delete it with kubectl first."),
                )
            predictor = manifest["spec"]["predictor"]
            # a missing canaryTrafficPercent is sent as null: the merge patch removes the old one
            canary = {"canaryTrafficPercent": predictor.get("canaryTrafficPercent")}
            # the merge patch keeps keys it is not given: a move between the model shape and
            # a container (vLLM) one drops the other
            canary["model"] = predictor.get("model")
            canary["containers"] = predictor.get("containers")
            patch = {
                "metadata": {"labels": meta.get("labels", {})},
                "spec": {"predictor": {**predictor, **canary}},
            }
            await kube.patch(ISVC, name, patch, ns)
        return await _follow(kube, name, ns, on_progress, wait_s)


async def set_canary(
    name: str, namespace: str | None, percent: int | None, config: ClusterConfig
) -> ClusterServing:
    """Move the canary share: 0 rolls back to the last rolled-out revision, None promotes."""
    if percent is not None and not 0 <= percent <= 100:
        raise InvalidInput(
            _t("canary percent must be from 0 to 100"), _t("got {percent}", percent=percent)
        )
    async with Kube(config) as kube:
        patched = await kube.patch(
            ISVC, name, {"spec": {"predictor": {"canaryTrafficPercent": percent}}}, namespace
        )
        return progress(patched)


async def listing(config: ClusterConfig, namespace: str | None = None) -> list[ClusterServing]:
    async with Kube(config) as kube:
        return [progress(o) for o in await kube.list(ISVC, namespace, label_selector=MANAGED)]


async def remove(name: str, namespace: str | None, config: ClusterConfig) -> bool:
    """Delete it and give its quota back; False when it was not there."""
    async with Kube(config) as kube:
        try:
            current = await kube.get(ISVC, name, namespace)
        except CubeError as exc:
            if exc.status == 404:
                return False
            raise
        gone = await kube.delete(ISVC, name, namespace)
    rid = ((current.get("metadata") or {}).get("annotations") or {}).get(RESERVATION)
    if rid:
        quota.release(rid)
    return gone
