"""Servers idle longer than their project group allows (a course's ``idle_timeout``): found
here, stopped by cube-admin (``Context.stop_idle``, at each reconcile) with a notice the user
reads on the hub's pages, so a class's unused servers give their share of the quota back.

The hub's own idle culler (the settings file's ``idle_timeout``) stays the limit for every
server; a group's timeout is its own, often shorter one. A server counts as the group's when
the ledger charges it there (it was started for that project). Idle means the hub's
``last_activity`` of the server (kernels, terminals, the browser's requests through the proxy)
is older than the timeout; a server still starting is never idle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .ledger import Reservation
from .quotas import GroupPolicy


@dataclass(frozen=True)
class IdleServer:
    user: str
    server: str  # "" for the default server
    group: str
    timeout: int  # seconds the group allows
    idle: float  # seconds since its last activity


def _seconds(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def idle_servers(
    policies: Mapping[str, GroupPolicy],
    reservations: Iterable[Reservation],
    users: Iterable[Mapping[str, Any]],
    now: float,
) -> list[IdleServer]:
    """The running servers charged to a group with an ``idle_timeout`` and idle for longer.
    ``users``: the hub's user models (``GET /users?state=active``), with their servers."""
    servers = {
        (u["name"], name): server
        for u in users
        for name, server in (u.get("servers") or {}).items()
    }
    found = []
    for res in reservations:
        policy = policies.get(res.group)
        if res.kind != "server" or policy is None or not policy.idle_timeout:
            continue
        user, _, name = res.holder.removeprefix("server:").partition("/")  # server_holder
        server = servers.get((user, name))
        if server is None or server.get("pending") or not server.get("ready", True):
            continue
        last = _seconds(server.get("last_activity")) or _seconds(server.get("started"))
        if last is not None and now - last > policy.idle_timeout:
            found.append(IdleServer(user, name, res.group, policy.idle_timeout, now - last))
    return found
