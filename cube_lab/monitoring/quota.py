"""Project groups' quotas and use at the hub's admission service (cube_lab/hub/admin.py), as
``GET /resources`` shows them and the alerts watcher checks them (``quota.usage``).

Asked with this process's hub token: a user's lab server gets its own groups from ``api/me``;
the hub's cube-lab service (whose token is no user's, but holds the cube-admin scope) gets every
group from ``api/groups``. Outside a hub (no ``$CUBE_HUB_ADMIN_URL``) there are no quotas:
None. Answers are kept for ``CACHE_S`` so the panel's polling and the watcher do not ask the
admission service every time.

A group's ``usage`` is what its running servers and jobs hold now (``servers``, ``jobs``,
``cpu`` in cores, ``memory`` in bytes, accelerator resource names in devices); its ``quota``
holds the limits (``memory`` written as GiB, e.g. ``"16G"``; ``accelerators`` by resource
name; ``gpu_hours`` per calendar month where the hub sets one).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)
CACHE_S = 10.0
PLAIN = ("servers", "jobs", "cpu", "memory")
HOURS_LIMIT_KEYS = ("gpu_hours", "gpu_hours_month", "gpu_hours_limit")
_cache: tuple[float, dict[str, dict[str, Any]] | None] | None = None
_cache_lock = threading.Lock()


def _ask() -> dict[str, dict[str, Any]] | None:
    from ..errors import CubeError
    from ..hub import client

    where = client._where(None, None)
    if where is None:
        return None
    base, token = where
    groups: Any = None
    try:
        me = client._call("GET", "api/me", base=base, token=token)
        groups = me.get("groups") if isinstance(me, dict) else None
    except CubeError as exc:  # a service's token has no groups of its own
        log.debug("admission service api/me: %s", exc.error)
        try:
            every = client._call("GET", "api/groups", base=base, token=token)
            groups = every.get("groups") if isinstance(every, dict) else None
        except CubeError as exc2:
            log.debug("admission service api/groups: %s", exc2.error)
            return None
    except Exception as exc:  # the panel still shows what runs
        log.debug("admission service: %s", exc)
        return None
    return {str(g.get("name")): g for g in groups or [] if isinstance(g, dict) and g.get("name")}


def hub_groups(names: Iterable[str] | None = None) -> dict[str, dict[str, Any]] | None:
    """The project groups (name -> ``{"quota", "usage", ...}``), only ``names`` when given; None
    outside a hub or when the admission service cannot be asked."""
    global _cache
    if not os.environ.get("CUBE_HUB_ADMIN_URL"):
        return None
    with _cache_lock:
        if _cache is None or time.monotonic() - _cache[0] > CACHE_S:
            _cache = (time.monotonic(), _ask())
        found = _cache[1]
    if found is None:
        return None
    if names is None:
        return dict(found)
    wanted = set(names)
    return {k: v for k, v in found.items() if k in wanted}


def forget() -> None:
    """Ask again next time (tests; after a quota changed)."""
    global _cache
    with _cache_lock:
        _cache = None


def usage_of(group: dict[str, Any]) -> dict[str, float]:
    """The group's flat usage (``api/groups`` nests it under ``total``)."""
    usage = group.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("total"), dict):
        usage = usage["total"]
    if not isinstance(usage, dict):
        return {}
    return {
        str(k): float(v)
        for k, v in usage.items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    }


def quota_of(group: dict[str, Any]) -> dict[str, Any]:
    quota = group.get("quota")
    return quota if isinstance(quota, dict) else {}


def gpu_hours_limit(group: dict[str, Any] | None) -> float | None:
    """The group's GPU-hours per month, under whichever key the hub reports it; None."""
    if not group:
        return None
    for where in (quota_of(group), group):
        for key in HOURS_LIMIT_KEYS:
            value = where.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
                return float(value)
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    return None


def _memory_bytes(value: Any) -> float | None:
    """The quota's memory: bytes, or GiB written ``"16G"`` / ``"1.5G"``."""
    if isinstance(value, str):
        text = value.strip().upper().removesuffix("B").removesuffix("I")
        scale = {"G": 2**30, "M": 2**20, "T": 2**40, "K": 2**10}.get(text[-1:])
        try:
            return float(text[:-1]) * scale if scale else float(text)
        except ValueError:
            return None
    return _number(value)


@dataclass(frozen=True)
class Use:
    """One dimension of a group's quota: how much of the limit is used."""

    dimension: str  # servers, jobs, cpu, memory, a resource name, gpu_hours
    used: float
    limit: float

    @property
    def percent(self) -> float:
        if self.limit <= 0:
            return 100.0 if self.used > 0 else 0.0
        return 100.0 * self.used / self.limit


def dimensions(group: dict[str, Any], gpu_hours_month: float | None = None) -> list[Use]:
    """Every dimension the group's quota limits, with its use now (GPU-hours: this month's,
    the hub's figure where it reports one, else ``gpu_hours_month`` counted here)."""
    quota, usage = quota_of(group), usage_of(group)
    out: list[Use] = []
    for name in PLAIN:
        limit = _memory_bytes(quota.get(name)) if name == "memory" else _number(quota.get(name))
        if limit is not None:
            out.append(Use(name, usage.get(name, 0.0), limit))
    accelerators = quota.get("accelerators")
    for resource, amount in accelerators.items() if isinstance(accelerators, dict) else ():
        limit = _number(amount)
        if limit is not None:
            out.append(Use(str(resource), usage.get(str(resource), 0.0), limit))
    hours_limit = gpu_hours_limit(group)
    if hours_limit is not None:
        used = usage.get("gpu_hours", gpu_hours_month or 0.0)
        out.append(Use("gpu_hours", used, hours_limit))
    return out
