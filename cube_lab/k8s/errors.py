"""Kubernetes API failures as cube-lab errors that say what went wrong and how to fix it."""

from __future__ import annotations

import json
from typing import Any

from ..errors import Conflict, CubeError, Forbidden, InvalidInput, NotFound


class ClusterUnavailable(CubeError):
    """The API server cannot be reached (or no configuration says where it is)."""

    status = 503


class NoCluster(ClusterUnavailable):
    """Nothing says where a cluster is: this server has none (a 409, not an outage)."""

    status = 409


class ClientMissing(CubeError):
    status = 503


class WatchExpired(CubeError):
    """410 Gone: the version a watch asked for is too old; watch again from now."""


def _message(body: Any) -> str:
    """The ``message`` of a Kubernetes ``Status`` body, else the body as text."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        status = json.loads(body) if isinstance(body, str) else body
    except json.JSONDecodeError:
        return str(body or "").strip()[:500]
    if isinstance(status, dict) and status.get("message"):
        return str(status["message"])
    return str(body or "").strip()[:500]


def api_error(status: int, reason: str, body: Any, what: str, server: str) -> CubeError:
    """One failed request (``what``: e.g. "create PyTorchJob demo in namespace ml")."""
    message = (_message(body) or reason).rstrip(".")
    if status == 409:
        return Conflict(
            f"cannot {what}: it already exists",
            f"{message}. Pick another job name, or delete the old object first.",
        )
    if status == 401:
        return Forbidden(
            f"cannot {what}: the Kubernetes API server at {server} did not accept our credentials",
            f"{message}. Check the token or the kubeconfig user (CUBE_LAB_K8S_TOKEN, KUBECONFIG).",
        )
    if status == 403:
        return Forbidden(
            f"cannot {what}: the Kubernetes API server refused it (403 Forbidden)",
            f"{message}. Ask an administrator for an RBAC Role that allows it in this namespace.",
        )
    if status == 404:
        return NotFound(
            f"cannot {what}: not found on the Kubernetes API server",
            f"{message}. Check the namespace, and that the operator serving this kind "
            "(its CustomResourceDefinition) is installed.",
        )
    if status in (400, 422):
        return InvalidInput(f"cannot {what}: the Kubernetes API server rejected it", message)
    if status == 410:
        return WatchExpired(f"cannot {what}: the watch expired (410 Gone)", message)
    return ClusterUnavailable(
        f"cannot {what}: the Kubernetes API server answered {status} {reason}", message
    )


def unreachable(exc: BaseException, what: str, server: str) -> ClusterUnavailable:
    return ClusterUnavailable(
        f"cannot {what}: the Kubernetes API server at {server} cannot be reached",
        f"{type(exc).__name__}: {exc}. Check the server address and the network "
        "(KUBECONFIG, --kube-context, CUBE_LAB_K8S_HOST).",
    )
