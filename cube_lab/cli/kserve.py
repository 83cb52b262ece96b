"""``--backend kubernetes`` for the serving commands: KServe InferenceServices on a cluster.

cube-lab deploy iris:3 --backend kubernetes [--namespace ml] [--gpus 1] [--wait 300]
cube-lab deploy iris:4 --name iris --canary 10 --backend kubernetes
cube-lab deploy my-llm:2 --backend kubernetes --gpus 1 [--engine vllm --image IMAGE]
cube-lab deployment promote|rollback iris --backend kubernetes
cube-lab deployments --backend kubernetes
cube-lab undeploy iris --backend kubernetes
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from .. import accelerators
from ..errors import CubeError, NotFound
from ..identity import Caller
from ..locale.messages import _t
from ..workspace import Workspace
from .args import print_json, print_table


def _config(a: argparse.Namespace) -> Any:
    from ..k8s import ClusterConfig

    return ClusterConfig.from_env(namespace=getattr(a, "namespace", None))


def deploy(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    """Print the InferenceService (--dry-run), or submit it and follow it to Ready; the last
    line printed is its URL."""
    import yaml

    from ..serving import kserve_cluster

    config = _config(a)
    doc = ws.serving.manifest(
        caller,
        a.ref,
        name=a.name,
        project=a.project,
        storage_uri=a.storage_uri,
        namespace=config.default_namespace(),
        min_replicas=a.replicas if a.min_replicas is None else a.min_replicas,
        max_replicas=a.max_replicas,
        canary_percent=None if a.canary is None else int(a.canary),
        cpu=a.cpu,
        memory=a.memory,
        gpus=a.gpus,
        gpu_type=a.gpu_type or "nvidia-gpu",
        gpu_memory_mib=a.gpu_memory_mib,
        gpu_cores_percent=a.gpu_cores,
        runtime=a.runtime,
        engine=a.engine,
        llm_backend=a.llm_backend,
        image=a.image,
    )
    if a.dry_run:
        if a.json:
            print_json(doc)
        else:
            print(yaml.safe_dump(doc, sort_keys=False), end="")
        return
    started = time.monotonic()
    seen: list[str] = []

    def show(p: kserve_cluster.ClusterServing) -> None:
        line = f"{p.status}{' - ' + p.message if p.message else ''}"
        if not seen or seen[-1] != line:
            seen.append(line)
            print(f"[{time.monotonic() - started:6.1f}s] {p.name}: {line}", file=sys.stderr)

    # the quota covers the replicas KServe starts with
    replicas = max(doc["spec"]["predictor"].get("minReplicas", 1), 1)
    gpu_type = a.gpu_type or "nvidia-gpu"
    with ws.store.read() as s:
        project = ws.projects.resolve(s, caller, a.project).name
    got = asyncio.run(
        kserve_cluster.apply(
            doc,
            config,
            project=project,
            on_progress=show,
            wait_s=a.wait,
            cpu=float(a.cpu) * replicas if a.cpu else None,
            accelerators=accelerators.resources_for(
                gpu_type, a.gpus * replicas, a.gpu_memory_mib, a.gpu_cores
            )
            if a.gpus
            else None,
        )
    )
    if a.json:
        print_json(got)
    if got.status == "failed":
        raise CubeError(
            _t("InferenceService {name} failed: {message}", name=got.name, message=got.message),
            _t(
                "kubectl describe inferenceservice {name} -n {namespace}",
                name=got.name,
                namespace=got.namespace,
            ),
        )
    if got.status != "ready":
        if a.wait == 0:
            print(f"{got.name}: submitted to namespace {got.namespace}", file=sys.stderr)
            return
        raise CubeError(
            _t(
                "InferenceService {name} is not ready: {message}",
                name=got.name,
                message=got.message,
            ),
            _t(
                "It stays on the cluster; follow it with `cube-lab deployments --backend "
                "kubernetes`."
            ),
        )
    if not a.json:
        print(got.url or "")


def listing(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    from ..serving import kserve_cluster

    found = asyncio.run(kserve_cluster.listing(_config(a), a.namespace))
    if a.json:
        print_json(found)
        return
    rows = [
        [
            f.name,
            f.namespace,
            f.status,
            "" if f.canary_percent is None else f"{f.canary_percent}%",
            f.storage_uri or "",
            f.url or "",
        ]
        for f in found
    ]
    print_table(rows, ["NAME", "NAMESPACE", "STATUS", "CANARY", "STORAGE", "URL"])


def undeploy(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    from ..serving import kserve_cluster

    if not asyncio.run(kserve_cluster.remove(a.name, a.namespace, _config(a))):
        raise NotFound(
            _t(
                "no InferenceService {name!r} in namespace {value}",
                name=a.name,
                value=a.namespace or "default",
            )
        )
    if a.json:
        print_json({"deleted": a.name, "backend": "kubernetes"})
    else:
        print(f"{a.name}: deleted")


def action(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    """promote (all traffic to the latest revision), rollback (all to the previous one),
    traffic PERCENT (the latest revision's share)."""
    from ..serving import kserve_cluster

    percent = {"promote": None, "rollback": 0}.get(a.command)
    if a.command == "traffic":
        percent = int(a.percent)
    elif a.command not in ("promote", "rollback"):
        raise CubeError(
            _t("`deployment {command}` is for local deployments", command=a.command),
            _t("On the cluster: kubectl logs / your Prometheus."),
        )
    got = asyncio.run(kserve_cluster.set_canary(a.name, a.namespace, percent, _config(a)))
    if a.json:
        print_json(got)
        return
    share = "none: all traffic to the latest revision" if percent is None else f"{percent}%"
    print(f"{got.name}: canary {share}")
