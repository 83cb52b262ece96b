"""``--backend kubernetes`` for the serving commands under the hub: the cube-lab service
deploys to KServe with its own cluster credentials (``/kserve/inferenceservices``); the
user's server holds none. The same commands and output as ``cli_kserve`` (in-process)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ...errors import CubeError, InvalidInput
from ...locale.messages import _t
from ...rest_client import ServiceClient, segment
from ..args import print_json, print_table

WHERE = "kserve/inferenceservices"
POLL_S = 1.0


def refuse_local_options(a: argparse.Namespace, what: str) -> None:
    """What the service decides under the hub: the namespace, the artifact's address."""
    flags = [("--dry-run", "dry_run"), ("--namespace", "namespace")]
    flags.append(("--storage-uri", "storage_uri"))
    given = [flag for flag, key in flags if getattr(a, key, None)]
    if given:
        raise InvalidInput(
            _t(
                "cube-lab {what} {value} are not available under the hub",
                what=what,
                value=" / ".join(given),
            ),
            _t(
                "Leave them out: the cube-lab service deploys to its namespace, from your"
                " project's registered files, with its own cluster credentials."
            ),
        )


def deploy(client: ServiceClient, a: argparse.Namespace) -> None:
    """Submit, then follow to ready (or ``--wait`` seconds); the last line is the URL."""
    refuse_local_options(a, "deploy")
    body: dict[str, Any] = {
        "model": a.ref,
        "name": a.name,
        "project": a.project,
        "replicas": a.replicas if a.min_replicas is None else a.min_replicas,
        "max_replicas": a.max_replicas,
        "canary": None if a.canary is None else int(a.canary),
        "cpu": a.cpu,
        "memory": a.memory,
        "gpus": a.gpus or None,
        "gpu_type": a.gpu_type,
        "gpu_memory_mib": getattr(a, "gpu_memory_mib", None),
        "gpu_cores_percent": getattr(a, "gpu_cores", None),
        "runtime": getattr(a, "runtime", None),
        "engine": getattr(a, "engine", None),
        "llm_backend": getattr(a, "llm_backend", None),
        "image": getattr(a, "image", None),
    }
    started = time.monotonic()
    got = client.post(WHERE, {k: v for k, v in body.items() if v is not None})
    seen = ""
    while True:
        line = f"{got['status']}{' - ' + got['message'] if got.get('message') else ''}"
        if line != seen:
            seen = line
            print(f"[{time.monotonic() - started:6.1f}s] {got['name']}: {line}", file=sys.stderr)
        if got["status"] in ("ready", "failed") or time.monotonic() - started >= a.wait:
            break
        time.sleep(POLL_S)
        got = client.get(f"{WHERE}/{segment(got['name'])}")
    if a.json:
        print_json(got)
    if got["status"] == "failed":
        raise CubeError(
            _t(
                "InferenceService {name} failed: {message}",
                name=got["name"],
                message=got["message"],
            )
        )
    if got["status"] != "ready":
        if a.wait == 0:
            print(f"{got['name']}: submitted to namespace {got['namespace']}", file=sys.stderr)
            return
        raise CubeError(
            _t(
                "InferenceService {name} is not ready: {value}",
                name=got["name"],
                value=got.get("message") or "rolling out",
            ),
            _t(
                "It stays on the cluster; follow it with `cube-lab deployments --backend "
                "kubernetes`."
            ),
        )
    if not a.json:
        print(got.get("url") or "")


def listing(client: ServiceClient, a: argparse.Namespace) -> None:
    refuse_local_options(a, "deployments")
    found = client.get(WHERE, project=a.project)["inferenceservices"]
    if a.json:
        print_json(found)
        return
    rows = [
        [
            f["name"],
            f["project"],
            f["status"],
            "" if f["canary_percent"] is None else f"{f['canary_percent']}%",
            f.get("url") or "",
        ]
        for f in found
    ]
    print_table(rows, ["NAME", "PROJECT", "STATUS", "CANARY", "URL"])


def undeploy(client: ServiceClient, a: argparse.Namespace) -> None:
    refuse_local_options(a, "undeploy")
    client.delete(f"{WHERE}/{segment(a.name)}")
    if a.json:
        print_json({"deleted": a.name, "backend": "kubernetes"})
    else:
        print(f"{a.name}: deleted")


def action(client: ServiceClient, a: argparse.Namespace) -> None:
    """promote, rollback, traffic PERCENT (the latest revision's share)."""
    refuse_local_options(a, f"deployment {a.command}")
    if a.command not in ("promote", "rollback", "traffic"):
        raise InvalidInput(
            _t("`deployment {command}` is for local deployments", command=a.command),
            _t("On the cluster: kubectl logs / your Prometheus."),
        )
    body: dict[str, Any] = {"action": a.command}
    if a.command == "traffic":
        body = {"action": "canary", "percent": int(a.percent)}
    got = client.post(f"{WHERE}/{segment(a.name)}/traffic", body)
    if a.json:
        print_json(got)
        return
    percent = got["canary_percent"]
    share = "none: all traffic to the latest revision" if percent is None else f"{percent}%"
    print(f"{got['name']}: canary {share}")
