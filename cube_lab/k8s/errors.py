"""Kubernetes API failures as cube-lab errors that say what went wrong and how to fix it."""

from __future__ import annotations

import json
from typing import Any

from ..errors import Conflict, CubeError, Forbidden, InvalidInput, NotFound
from ..locale.messages import _t


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
            _t("cannot {what}: it already exists", what=what),
            _t(
                "{message}. Pick another job name, or delete the old object first.", message=message
            ),
        )
    if status == 401:
        return Forbidden(
            _t(
                (
                    "cannot {what}: the Kubernetes API server at {server} did not accept our "
                    "credentials"
                ),
                what=what,
                server=server,
            ),
            _t(
                (
                    "{message}. Check the token or the kubeconfig user (CUBE_LAB_K8S_TOKEN, "
                    "KUBECONFIG)."
                ),
                message=message,
            ),
        )
    if status == 403:
        return Forbidden(
            _t("cannot {what}: the Kubernetes API server refused it (403 Forbidden)", what=what),
            _t(
                (
                    "{message}. Ask an administrator for an RBAC Role that allows it in this "
                    "namespace."
                ),
                message=message,
            ),
        )
    if status == 404:
        return NotFound(
            _t("cannot {what}: not found on the Kubernetes API server", what=what),
            _t(
                (
                    "{message}. Check the namespace, and that the operator serving this kind "
                    "(its CustomResourceDefinition) is installed."
                ),
                message=message,
            ),
        )
    if status in (400, 422):
        return InvalidInput(
            _t("cannot {what}: the Kubernetes API server rejected it", what=what), message
        )
    if status == 410:
        return WatchExpired(_t("cannot {what}: the watch expired (410 Gone)", what=what), message)
    return ClusterUnavailable(
        _t(
            "cannot {what}: the Kubernetes API server answered {status} {reason}",
            what=what,
            status=status,
            reason=reason,
        ),
        message,
    )


def unreachable(exc: BaseException, what: str, server: str) -> ClusterUnavailable:
    return ClusterUnavailable(
        _t(
            "cannot {what}: the Kubernetes API server at {server} cannot be reached",
            what=what,
            server=server,
        ),
        _t(
            (
                "{name__}: {exc}. Check the server address and the network (KUBECONFIG, "
                "--kube-context, CUBE_LAB_K8S_HOST)."
            ),
            name__=type(exc).__name__,
            exc=exc,
        ),
    )
