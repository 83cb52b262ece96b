"""Admission for code running in a lab server under the hub: training, tuning and serving call
``admit`` before they start anything and ``release`` when it ends.

Outside a hub (no ``$CUBE_HUB_ADMIN_URL``) ``admit`` returns None: the embedded single-user
shape has no quotas. A refusal raises ``QuotaExceeded`` whose ``error`` is the sentence to
show, e.g. "project vision uses 4 of 4 GPUs (nvidia.com/gpu)". Blocking (urllib): services
run it in a worker thread, as they do their other I/O.

    reservation = admit(project="vision", accelerators={"nvidia.com/gpu": "2"}, pid=proc.pid)
    try: ...run the job...
    finally: release(reservation)
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from ..errors import Conflict, CubeError, Forbidden, InvalidInput, NotFound
from ..locale.messages import _t
from .ledger import QuotaExceeded

ENV_ADMIN_URL = "CUBE_HUB_ADMIN_URL"  # set by the hub's spawner for each lab server
# In the cube-lab service: the user a request came from. Its jobs are admitted for that user,
# asked for with the service's own token (which may name the user it asks for).
ON_BEHALF_OF: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "cube_lab_on_behalf_of", default=None
)


class AdmissionUnavailable(CubeError):
    status = 503


def _call(
    method: str,
    path: str,
    body: Any = None,
    *,
    base: str,
    token: str,
    timeout: float = 30,
    language: str = "",
) -> Any:
    """A JSON call to a hub service; its 4xx answers raised as the matching ``CubeError``
    with its words (in ``language``, an Accept-Language, where the service translates)."""
    headers = {"Authorization": f"token {token}", "Content-Type": "application/json"}
    if language:
        headers["Accept-Language"] = language
    request = urllib.request.Request(
        base.rstrip("/") + "/" + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers=headers,
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as exc:
        try:
            payload = json.loads(exc.read() or b"{}")
        except ValueError:
            payload = {}
        error = payload.get("error") or f"admission answered {exc.code}"
        detail = payload.get("detail")
        if payload.get("quota_exceeded"):
            raise QuotaExceeded(error, detail) from None
        cls = {400: InvalidInput, 403: Forbidden, 404: NotFound, 409: Conflict}.get(
            exc.code, AdmissionUnavailable
        )
        raise cls(error, detail) from None
    except OSError as exc:
        raise AdmissionUnavailable(
            _t("the hub's admission service cannot be reached"),
            _t("{base}: {exc}", base=base, exc=exc),
        ) from None
    return json.loads(raw) if raw else None


_held_token: str | None = None


def hold_token(token: str) -> None:
    """The cube-lab service's own token, kept here instead of in its environment (which every
    job it starts would inherit)."""
    global _held_token
    _held_token = token


def _where(base: str | None, token: str | None) -> tuple[str, str] | None:
    base = base or os.environ.get(ENV_ADMIN_URL)
    token = token or _held_token or os.environ.get("JUPYTERHUB_API_TOKEN")
    if not base or not token:
        return None
    return base, token


def admit(
    *,
    project: str | None = None,
    cpu: Any = None,
    memory: Any = None,
    accelerators: Mapping[str, Any] | None = None,
    holder: str | None = None,
    pid: int | None = None,
    base_url: str | None = None,
    token: str | None = None,
) -> dict[str, Any] | None:
    """Reserve quota for one job; the reservation (a dict with ``id``), or None outside a hub.
    ``accelerators`` are container-style limits, e.g. from ``accelerators.resources_for``."""
    where = _where(base_url, token)
    if where is None:
        return None
    on_behalf_of = ON_BEHALF_OF.get()
    user = on_behalf_of or os.environ.get("JUPYTERHUB_USER", "")
    server = (
        ""
        if on_behalf_of
        else (f"{user}/{os.environ.get('JUPYTERHUB_SERVER_NAME', '')}" if user else "")
    )
    body = {
        "kind": "job",
        "project": project or os.environ.get("CUBE_LAB_PROJECT", ""),
        "cpu": cpu,
        "memory": memory,
        "accelerators": dict(accelerators or {}),
        "holder": holder,
        "pid": pid,
        "server": server,
    }
    if on_behalf_of:
        body["user"] = on_behalf_of
    return _call("POST", "api/admission", body, base=where[0], token=where[1])


def release(reservation: Mapping[str, Any] | str | None, **where: Any) -> None:
    """Give a reservation back (a no-op for None, or when it is already gone)."""
    if reservation is None:
        return
    found = _where(where.get("base_url"), where.get("token"))
    if found is None:
        return
    rid = reservation if isinstance(reservation, str) else reservation["id"]
    with contextlib.suppress(NotFound):  # already released (e.g. reconciled)
        _call("DELETE", f"api/admission/{rid}", base=found[0], token=found[1])
