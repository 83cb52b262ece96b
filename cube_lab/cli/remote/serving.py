"""`cube-lab deploy|deployments|undeploy|deployment ...` under the hub (KServe: kserve.py)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ...rest_client import ServiceClient, follow_log, segment
from ..args import print_json, split_ref
from ..serving import (
    access_changes,
    deploy_request,
    refuse_cluster_only,
    show_access,
    show_deployed,
    show_deployment_state,
    show_deployments,
    show_key_made,
    show_keys,
    show_samples,
    show_traffic,
)
from . import kserve
from .common import emit, project_of


def deployments_list(client: ServiceClient, a: argparse.Namespace) -> None:
    if a.backend == "kubernetes":
        kserve.listing(client, a)
        return
    found = client.get("deployments", project=a.project)["deployments"]
    emit(a, found, show_deployments)


def _deployment(client: ServiceClient, a: argparse.Namespace, name: str | None = None) -> str:
    return f"projects/{segment(project_of(client, a))}/deployments/{segment(name or a.name)}"


def _on_cluster(a: argparse.Namespace) -> bool:
    """``--backend kubernetes``: KServe, deployed by the service (``cli_kserve_remote``)."""
    return getattr(a, "backend", "local") == "kubernetes"


def deploy(client: ServiceClient, a: argparse.Namespace) -> None:
    """Deploy NAME:VERSION at the service (or change a running deployment's traffic)."""
    if _on_cluster(a):
        kserve.deploy(client, a)
        return
    kserve.refuse_local_options(a, "deploy")
    refuse_cluster_only(a)
    name, ref = split_ref(a.ref)
    if a.switch or a.canary is not None or a.shadow:
        action = "switch" if a.switch else "canary" if a.canary is not None else "shadow"
        body: dict[str, Any] = {"action": action, "version": ref}
        if a.canary is not None:
            body["percent"] = a.canary
        view = client.post(f"{_deployment(client, a, a.name or name)}/traffic", body)
    else:
        started = time.monotonic()
        request = deploy_request(a)  # the in-process command's, field for field
        view = client.post("deployments", {k: v for k, v in request.items() if v is not None})
        if not a.json:
            show_deployed(view, time.monotonic() - started)
    emit(a, view, show_deployment_state)


def undeploy(client: ServiceClient, a: argparse.Namespace) -> None:
    if _on_cluster(a):
        kserve.undeploy(client, a)
        return
    where = _deployment(client, a)
    if a.forget:
        client.delete(where, forget=True)
        if a.json:
            print_json({"deleted": a.name})
        else:
            print(f"{a.name}: undeployed and forgotten")
        return
    view = client.delete(where)
    if a.json:
        print_json(view)
    else:
        print(f"{a.name}: {view['status']}")


def deployment_action(client: ServiceClient, a: argparse.Namespace) -> None:
    if _on_cluster(a):
        kserve.action(client, a)
        return
    where = _deployment(client, a)
    if a.command == "logs":
        follow_log(client, where, a.follow)
        return
    if a.command == "metrics":
        with client.stream(f"{where}/metrics") as answer:
            for chunk in answer.iter_bytes():
                sys.stdout.write(chunk.decode(errors="replace"))
        sys.stdout.flush()
        return
    if a.command == "samples":
        if a.set is not None:
            client.put(f"{where}/samples", {"percent": a.set})
        found = client.get(f"{where}/samples", limit=a.limit)
        emit(a, found, show_samples)
        return
    body: dict[str, Any] = {"action": a.command}
    if a.command == "traffic":
        body = {"action": "split", "percent": a.percent}
    view = client.post(f"{where}/traffic", body)
    emit(a, view, show_traffic)


def deployment_keys(client: ServiceClient, a: argparse.Namespace) -> None:
    """``cube-lab deployment keys create|list|revoke NAME ...``"""
    where = f"{_deployment(client, a)}/keys"
    if a.keys_command == "create":
        body = {
            "name": a.key_name,
            "expires_at": a.expires_at,
            "expires_in_days": a.expires_in_days,
        }
        made = client.post(where, {k: v for k, v in body.items() if v is not None})
        if a.json:
            print_json(made)
        else:
            show_key_made(made, a.name)
        return
    if a.keys_command == "revoke":
        revoked = client.delete(f"{where}/{segment(a.key)}")
        if a.json:
            print_json(revoked)
        else:
            print(f"key {revoked['name']} ({revoked['id']}) of {a.name}: revoked")
        return
    found = client.get(where)
    if a.json:
        print_json(found)
    else:
        show_keys(found["keys"])


def deployment_access(client: ServiceClient, a: argparse.Namespace) -> None:
    changes = access_changes(a)
    where = _deployment(client, a)
    if changes:
        settings = client.put(f"{where}/access", changes)["access"]
    else:
        settings = client.get(f"{where}/access")
    emit(a, settings, show_access)
