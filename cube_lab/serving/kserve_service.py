"""KServe deployments made by the server for its callers (REST ``backend: kubernetes``).

Under the hub this runs in the cube-lab service, with the service's cluster credentials: a
user deploys a registered version to KServe without holding any. The cluster is the record
(``kserve_cluster``): each InferenceService carries its project's label, and a caller sees,
changes and deletes only those of projects they are a member of. One of another project
with the same name is refused, never rolled forward. The artifact is always addressed by
the server (on the ``cube-lab-artifacts`` volume claim): a caller names no storage URI, so
nobody serves another project's files.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING, Any

from .. import accelerators
from ..errors import Conflict, CubeError, InvalidInput, NotFound
from ..identity import Caller
from ..k8s import ClusterConfig, Kube, require
from ..locale.messages import _t
from . import kserve_cluster
from .kserve import k8s_name
from .kserve_cluster import ISVC, MANAGED, ClusterServing

if TYPE_CHECKING:
    from ..workspace import Workspace

PROJECT_LABEL = "cube-lab/project"


def view(found: ClusterServing, project: str) -> dict[str, Any]:
    return {**dataclasses.asdict(found), "project": project, "backend": "kubernetes"}


def _project_names(ws: Workspace, caller: Caller) -> dict[str, str]:
    """The caller's projects by the label value their InferenceServices carry."""
    ws.projects.ensure_personal(caller)
    return {k8s_name(p.name): p.name for p in ws.projects.list(caller)}


async def deploy(
    ws: Workspace,
    caller: Caller,
    ref: str,
    config: ClusterConfig,
    *,
    name: str | None = None,
    project: str | None = None,
    replicas: int = 1,
    max_replicas: int | None = None,
    canary: int | None = None,
    cpu: str | None = None,
    memory: str | None = None,
    gpus: int = 0,
    gpu_type: str = "nvidia-gpu",
    gpu_memory_mib: int | None = None,
    gpu_cores_percent: int | None = None,
    runtime: str | None = None,
    engine: str | None = None,
    llm_backend: str | None = None,
    image: str | None = None,
) -> dict[str, Any]:
    """Submit (or roll forward) the InferenceService of ``MODEL[:VERSION]``; answers at once
    with what the cluster says (``GET`` follows it to ``ready``). An LLM (``runtime`` auto or
    llm) gets the OpenAI-compatible shape of ``kserve_llm`` (``engine``, ``llm_backend``,
    ``image``)."""
    require()
    for key, value in (("runtime", runtime), ("engine", engine), ("llm_backend", llm_backend),
                       ("image", image)):  # fmt: skip
        if value is not None and not isinstance(value, str):
            raise InvalidInput(
                _t("{key} must be a string", key=key), _t("got {value!r}", value=value)
            )
    for key, value in (("gpu_memory_mib", gpu_memory_mib),
                       ("gpu_cores_percent", gpu_cores_percent)):  # fmt: skip
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise InvalidInput(
                _t("{key} must be a whole number", key=key), _t("got {value!r}", value=value)
            )
    if isinstance(replicas, bool) or not isinstance(replicas, int) or not 0 <= replicas <= 64:
        raise InvalidInput(
            _t("replicas must be a whole number from 0 to 64"),
            _t("got {replicas!r}", replicas=replicas),
        )
    if max_replicas is not None and (
        isinstance(max_replicas, bool)
        or not isinstance(max_replicas, int)
        or not max(replicas, 1) <= max_replicas <= 64
    ):
        raise InvalidInput(
            _t("max_replicas must be a whole number from replicas (at least 1) to 64"),
            _t("got {max_replicas!r}", max_replicas=max_replicas),
        )
    if isinstance(gpus, bool) or not isinstance(gpus, int) or not 0 <= gpus <= 64:
        raise InvalidInput(
            _t("gpus must be a whole number from 0 to 64"), _t("got {gpus!r}", gpus=gpus)
        )
    if canary is not None and (
        isinstance(canary, bool) or not isinstance(canary, int) or not 0 <= canary <= 100
    ):
        raise InvalidInput(
            _t("canary must be a percentage from 0 to 100"), _t("got {canary!r}", canary=canary)
        )
    doc = await asyncio.to_thread(
        ws.serving.manifest,
        caller,
        ref,
        name=name,
        project=project,
        namespace=config.default_namespace(),
        min_replicas=replicas,
        max_replicas=max_replicas,
        canary_percent=canary,
        cpu=cpu,
        memory=memory,
        gpus=gpus,
        gpu_type=gpu_type,
        gpu_memory_mib=gpu_memory_mib,
        gpu_cores_percent=gpu_cores_percent,
        runtime=runtime,
        engine=engine,
        llm_backend=llm_backend,
        image=image,
    )
    meta = doc["metadata"]
    label = meta["labels"][PROJECT_LABEL]
    project_name = _project_names(ws, caller)[label]
    await _refuse_foreign(config, meta["name"], meta["namespace"], label)
    count = max(replicas, 1)  # the quota covers the replicas KServe starts with
    found = await kserve_cluster.apply(
        doc,
        config,
        project=project_name,
        wait_s=0,
        cpu=float(cpu) * count if cpu else None,
        accelerators=accelerators.resources_for(
            gpu_type, gpus * count, gpu_memory_mib, gpu_cores_percent
        )
        if gpus
        else None,
    )
    return view(found, project_name)


async def _refuse_foreign(config: ClusterConfig, name: str, namespace: str, label: str) -> None:
    async with Kube(config) as kube:
        try:
            current = await kube.get(ISVC, name, namespace)
        except CubeError as exc:
            if exc.status == 404:
                return
            raise
    theirs = ((current.get("metadata") or {}).get("labels") or {}).get(PROJECT_LABEL)
    if theirs != label:
        raise Conflict(
            _t(
                "InferenceService {name} in {namespace} belongs to another project",
                name=name,
                namespace=namespace,
            ),
            _t("Deploy under another name."),
        )


async def listing(
    ws: Workspace, caller: Caller, config: ClusterConfig, project: str | None = None
) -> list[dict[str, Any]]:
    """The InferenceServices of the caller's projects (of ``project`` only, when given)."""
    require()
    names = await asyncio.to_thread(_project_names, ws, caller)
    if project is not None and project not in names.values():
        raise NotFound(
            _t("project {project!r} not found", project=project),
            _t("GET /cube/api/v1/projects lists yours."),
        )
    async with Kube(config) as kube:
        found = await kube.list(ISVC, config.default_namespace(), label_selector=MANAGED)
    out = []
    for obj in found:
        mine = names.get(((obj.get("metadata") or {}).get("labels") or {}).get(PROJECT_LABEL, ""))
        if mine is not None and project in (None, mine):
            out.append(view(kserve_cluster.progress(obj), mine))
    return out


async def _own(ws: Workspace, caller: Caller, config: ClusterConfig, name: str) -> str:
    """The project of the caller's InferenceService ``name``; NotFound for any other."""
    require()
    names = await asyncio.to_thread(_project_names, ws, caller)
    async with Kube(config) as kube:
        try:
            obj = await kube.get(ISVC, name, config.default_namespace())
        except CubeError as exc:
            if exc.status != 404:
                raise
            obj = {}
    labels = (obj.get("metadata") or {}).get("labels") or {}
    mine = names.get(labels.get(PROJECT_LABEL, ""))
    if mine is None or labels.get("app.kubernetes.io/managed-by") != "cube-lab":
        raise NotFound(
            _t("no InferenceService {name!r} of yours", name=name),
            _t("GET /cube/api/v1/deployments?backend=kubernetes lists yours."),
        )
    return mine


async def get(ws: Workspace, caller: Caller, config: ClusterConfig, name: str) -> dict[str, Any]:
    project = await _own(ws, caller, config, name)
    async with Kube(config) as kube:
        obj = await kube.get(ISVC, name, config.default_namespace())
    return view(kserve_cluster.progress(obj), project)


async def remove(ws: Workspace, caller: Caller, config: ClusterConfig, name: str) -> None:
    await _own(ws, caller, config, name)
    await kserve_cluster.remove(name, config.default_namespace(), config)


async def traffic(
    ws: Workspace, caller: Caller, config: ClusterConfig, name: str, action: str, percent: Any
) -> dict[str, Any]:
    """``promote`` (all traffic to the latest revision), ``rollback`` (all to the previous
    one) or ``canary`` with ``percent`` (the latest revision's share)."""
    if action not in ("promote", "rollback", "canary"):
        raise InvalidInput(
            _t("unknown action {action!r}", action=action),
            _t("Use promote, rollback, or canary with a percent."),
        )
    share = {"promote": None, "rollback": 0}.get(action, percent)
    if action == "canary" and (
        isinstance(share, bool) or not isinstance(share, int) or not 0 <= share <= 100
    ):
        raise InvalidInput(
            _t("canary needs percent, from 0 to 100"), _t("got {percent!r}", percent=percent)
        )
    project = await _own(ws, caller, config, name)
    found = await kserve_cluster.set_canary(name, config.default_namespace(), share, config)
    return view(found, project)
