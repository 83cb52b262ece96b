"""Project-group quotas and what one server or job takes from them.

A group's quota and allowed profiles live in its JupyterHub group properties::

    {"cube_lab": {"profiles": ["cpu", "gpu-1"],
                  "quota": {"servers": 10, "jobs": 4, "cpu": 32, "memory": "128G",
                            "accelerators": {"nvidia.com/gpu": 4, "nvidia.com/gpumem": 65536}}}}

Everything is counted on flat *dimensions*: ``servers``, ``jobs``, ``cpu`` (cores), ``memory``
(bytes) and accelerator resource names from ``cube_lab.accelerators`` (companions such as
``nvidia.com/gpumem`` count MiB, ``nvidia.com/gpucores`` percent of a device). A missing
servers/jobs/cpu/memory limit means no limit; an accelerator a quota does not name is not
granted at all, so GPUs are handed out only on purpose (a share of a device - its memory or
cores - is limited only when the quota names it).

``per_member`` holds the same plain and accelerator limits for each member's own share of the
group (a course's "each student at most"): ``{"servers": 60, "cpu": 120, "per_member":
{"servers": 1, "cpu": 2, "memory": "4G", "accelerators": {"nvidia.com/gpu": 1}}}``. There, a
resource it does not name is not limited per member (the group's own limit still holds).

GPU-hours are limited per calendar month (UTC): ``gpu_hours`` for the whole group,
``gpu_hours_per_member`` for each member's own use in it (in a personal quota, ``gpu_hours`` is
the user's own). A GPU-hour is one device (any accelerator count: GPUs, MIG slices, vGPUs,
NPUs) held for one hour by a running server or job; the ledger records when each hold began and
ended. Admission refuses a new server or job that takes devices once the month's hours are spent.

Users outside every project group (admins too) are charged to a *personal* bucket with the
settings file's ``personal_quota`` (``admin_quota`` for admins), so no server runs unmetered.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import accelerators
from ..errors import InvalidInput
from ..locale.messages import _t
from .units import format_memory, parse_cpu, parse_memory

PROPERTY = "cube_lab"  # the key in JupyterHub group properties
PLAIN_DIMENSIONS = ("servers", "jobs", "cpu", "memory")
HOURS_FIELDS = ("gpu_hours", "gpu_hours_per_member")
MEMBER_FIELDS = (*PLAIN_DIMENSIONS, "accelerators")  # what ``per_member`` may limit
FIELDS = (*MEMBER_FIELDS, *HOURS_FIELDS, "per_member")


def known_resources() -> dict[str, tuple[accelerators.Accelerator, str]]:
    """Every resource name the accelerator table knows -> (accelerator, role)."""
    found: dict[str, tuple[accelerators.Accelerator, str]] = {}
    for acc in accelerators.all_accelerators():
        found.setdefault(acc.resource, (acc, "count"))
        if acc.memory_resource:
            found.setdefault(acc.memory_resource, (acc, "memory"))
        if acc.cores_resource:
            found.setdefault(acc.cores_resource, (acc, "cores"))
    return found


def label(dimension: str) -> str:
    """How a refusal names a dimension: 'GPUs (nvidia.com/gpu)', 'GiB memory'."""
    if dimension == "cpu":
        return _t("CPU cores")
    if dimension == "memory":
        return _t("GiB memory")
    if dimension == "servers":
        return _t("servers")
    if dimension == "jobs":
        return _t("jobs")
    acc_role = known_resources().get(dimension)
    if acc_role is None:
        return dimension
    acc, role = acc_role
    if role == "memory":
        return _t("MiB of device memory ({dimension})", dimension=dimension)
    if role == "cores":
        return _t("percent of device cores ({dimension})", dimension=dimension)
    if acc.key.startswith("nvidia-mig"):
        return _t("MIG slices ({dimension})", dimension=dimension)
    if acc.vendor == "huawei":
        return _t("NPUs ({dimension})", dimension=dimension)
    if acc.fractional:
        return _t("vGPUs ({dimension})", dimension=dimension)
    return _t("GPUs ({dimension})", dimension=dimension)


def show(dimension: str, amount: float) -> str:
    if dimension == "memory":
        return format_memory(amount)
    return f"{amount:g}"


@dataclass(frozen=True)
class Quota:
    servers: int | None = None
    jobs: int | None = None
    cpu: float | None = None
    memory: int | None = None  # bytes
    accelerators: dict[str, int] = field(default_factory=dict)
    gpu_hours: float | None = None  # the group's (a personal quota's: the user's) per month
    gpu_hours_per_member: float | None = None  # each member's own, per month
    per_member: Quota | None = None  # each member's own share at most (no hours, no nesting)

    @classmethod
    def parse(cls, raw: Any, *, fields: tuple[str, ...] = FIELDS) -> Quota:
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise InvalidInput(
                _t("a quota must be an object"), _t("got {name__}", name__=type(raw).__name__)
            )
        unknown = set(raw) - set(fields)
        if unknown:
            raise InvalidInput(
                _t("unknown quota field(s) {value}", value=sorted(unknown)),
                _t("Use {value}.", value=list(fields)),
            )

        def whole(name: str) -> int | None:
            value = raw.get(name)
            if value is None or value == "":
                return None
            if isinstance(value, bool) or not str(value).isdigit():
                raise InvalidInput(
                    _t("quota {name} must be a whole number >= 0", name=name),
                    _t("got {value!r}", value=value),
                )
            return int(value)

        def hours(name: str) -> float | None:
            value = raw.get(name)
            if value is None or value == "":
                return None
            try:
                number = float(value) if not isinstance(value, bool) else -1.0
            except (TypeError, ValueError):
                number = -1.0
            if not number >= 0 or number == float("inf"):
                raise InvalidInput(
                    _t("quota {name} must be a number of hours >= 0", name=name),
                    _t("got {value!r}", value=value),
                )
            return number

        cpu = raw.get("cpu")
        memory = raw.get("memory")
        accs = raw.get("accelerators") or {}
        if not isinstance(accs, Mapping):
            raise InvalidInput(_t("quota accelerators must map resource names to amounts"))
        resources = known_resources()
        checked: dict[str, int] = {}
        for resource, amount in accs.items():
            if resource not in resources:
                # let people write the table's keys ("nvidia-gpu") as well as resource names
                resource = accelerators.get(resource).resource
            if isinstance(amount, bool) or not str(amount).isdigit():
                raise InvalidInput(
                    _t("quota for {resource} must be a whole number >= 0", resource=resource),
                    _t("got {amount!r}", amount=amount),
                )
            checked[resource] = int(amount)
        return cls(
            servers=whole("servers"),
            jobs=whole("jobs"),
            cpu=None if cpu in (None, "") else parse_cpu(cpu, "quota cpu"),
            memory=None if memory in (None, "") else parse_memory(memory, "quota memory"),
            accelerators=checked,
            gpu_hours=hours("gpu_hours"),
            gpu_hours_per_member=hours("gpu_hours_per_member"),
            per_member=None
            if raw.get("per_member") in (None, {})
            else cls.parse(raw["per_member"], fields=MEMBER_FIELDS),
        )

    def limit(self, dimension: str) -> float | None:
        if dimension in PLAIN_DIMENSIONS:
            return getattr(self, dimension)
        if dimension in self.accelerators:
            return self.accelerators[dimension]
        # devices not named are not granted; their memory/cores shares are bounded by the
        # device count already, so an unnamed share is no extra limit
        role = known_resources().get(dimension, (None, "count"))[1]
        return 0 if role == "count" else None

    def amounts(self) -> dict[str, float]:
        """The limits it sets on flat dimensions (memory in bytes), as usage is counted."""
        out: dict[str, float] = {
            d: getattr(self, d) for d in PLAIN_DIMENSIONS if getattr(self, d) is not None
        }
        out.update(self.accelerators)
        return out

    def member_amounts(self) -> dict[str, float]:
        """``per_member``'s limits as ``amounts`` gives them; a dimension not there is not
        limited per member."""
        return self.per_member.amounts() if self.per_member is not None else {}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            name: getattr(self, name)
            for name in PLAIN_DIMENSIONS
            if getattr(self, name) is not None
        }
        if self.cpu is not None and self.cpu.is_integer():
            out["cpu"] = int(self.cpu)
        if self.memory is not None:
            out["memory"] = f"{format_memory(self.memory)}G"
        if self.accelerators:
            out["accelerators"] = dict(self.accelerators)
        for name in HOURS_FIELDS:
            value = getattr(self, name)
            if value is not None:
                out[name] = int(value) if value.is_integer() else value
        if self.per_member is not None and self.per_member.to_json():
            out["per_member"] = self.per_member.to_json()
        return out


@dataclass(frozen=True)
class GroupPolicy:
    """What a project group may use: the profiles its members may start, and its quota."""

    name: str
    profiles: tuple[str, ...] = ()
    quota: Quota = field(default_factory=Quota)
    # seconds a server charged to the group may sit idle before cube-admin stops it (idle.py)
    idle_timeout: int | None = None

    @classmethod
    def from_properties(cls, name: str, properties: Mapping[str, Any] | None) -> GroupPolicy:
        ours = (properties or {}).get(PROPERTY) or {}
        profiles = ours.get("profiles") or []
        if not isinstance(profiles, list) or not all(isinstance(p, str) for p in profiles):
            raise InvalidInput(_t("allowed profiles must be a list of profile names"))
        return cls(
            name,
            tuple(profiles),
            Quota.parse(ours.get("quota")),
            parse_idle_timeout(ours.get("idle_timeout")),
        )

    def to_properties(self) -> dict[str, Any]:
        out: dict[str, Any] = {"profiles": list(self.profiles), "quota": self.quota.to_json()}
        if self.idle_timeout:
            out["idle_timeout"] = self.idle_timeout
        return out


def parse_idle_timeout(value: Any) -> int | None:
    """Seconds (a whole number > 0), or None: no idle timeout of the group's own."""
    if value is None or value == "" or value == 0:
        return None
    if isinstance(value, bool) or not str(value).isdigit():
        raise InvalidInput(
            _t("idle_timeout must be a whole number of seconds > 0"),
            _t("got {value!r}; e.g. 1800 stops servers idle for 30 minutes", value=value),
        )
    return int(value)


def demand(
    *,
    servers: int = 0,
    jobs: int = 0,
    cpu: Any = None,
    memory: Any = None,
    limits: Mapping[str, Any] | None = None,
) -> dict[str, float]:
    """The amounts one server or job takes. ``limits`` are container-style accelerator limits
    ({"nvidia.com/gpu": "1", "nvidia.com/gpumem": "8192"}); per-device shares are multiplied
    by the device count, as HAMi and the Ascend plugin allocate them."""
    out: dict[str, float] = {}
    if servers:
        out["servers"] = servers
    if jobs:
        out["jobs"] = jobs
    if cpu not in (None, ""):
        out["cpu"] = parse_cpu(cpu)
    if memory not in (None, ""):
        out["memory"] = parse_memory(memory)
    for req in accelerators.requests_in(dict(limits or {})):
        acc = req.accelerator
        if req.count:
            out[acc.resource] = out.get(acc.resource, 0) + req.count
        if req.memory_mib and acc.memory_resource:
            out[acc.memory_resource] = req.memory_mib * max(req.count, 1)
        if req.cores_percent and acc.cores_resource:
            out[acc.cores_resource] = req.cores_percent * max(req.count, 1)
    return out


def uses_accelerators(amounts: Mapping[str, float]) -> bool:
    return any(k not in PLAIN_DIMENSIONS and v > 0 for k, v in amounts.items())


def device_count(amounts: Mapping[str, float]) -> float:
    """How many devices (GPUs, MIG slices, vGPUs, NPUs) ``amounts`` hold: what GPU-hours count."""
    resources = known_resources()
    return sum(
        v for k, v in amounts.items() if k in resources and resources[k][1] == "count" and v > 0
    )


def month_bounds(at: float) -> tuple[float, float]:
    """The calendar month (UTC) around the timestamp ``at``: (its start, the next one's)."""
    when = dt.datetime.fromtimestamp(at, dt.UTC)
    start = when.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    nxt = (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )
    return start.timestamp(), nxt.timestamp()


def show_time(at: float) -> str:
    """A reset moment as refusals and the admin page write it (UTC)."""
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%d %H:%M")


def _over(
    quota: Quota, used: Mapping[str, float], need: Mapping[str, float]
) -> tuple[str, float, float, float] | None:
    """The first dimension where ``need`` does not fit next to ``used``: (dimension, used,
    limit, needed); None if everything fits."""
    for dimension, amount in need.items():
        if amount <= 0:
            continue
        limit = quota.limit(dimension)
        if limit is None:
            continue
        have = used.get(dimension, 0)
        if have + amount > limit + 1e-9:
            return dimension, have, limit, amount
    return None


def refusal(
    group: str, quota: Quota, used: Mapping[str, float], need: Mapping[str, float]
) -> str | None:
    """Why ``need`` does not fit next to ``used``, in the words the user reads; None if it fits.
    e.g. "project vision uses 4 of 4 GPUs (nvidia.com/gpu)"."""
    found = _over(quota, used, need)
    if found is None:
        return None
    dimension, have, limit, amount = found
    what = label(dimension)
    if limit == 0 and dimension not in PLAIN_DIMENSIONS:
        return _t("project {group} has no quota for {what}", group=group, what=what)
    have_, limit_ = show(dimension, have), show(dimension, limit)
    if have < limit:
        return _t(
            "project {group} uses {have} of {limit} {what}; this needs {need}",
            group=group,
            have=have_,
            limit=limit_,
            what=what,
            need=show(dimension, amount),
        )
    return _t(
        "project {group} uses {have} of {limit} {what}",
        group=group,
        have=have_,
        limit=limit_,
        what=what,
    )


def member_refusal(
    user: str, group: str, quota: Quota, used: Mapping[str, float], need: Mapping[str, float]
) -> str | None:
    """Why ``need`` does not fit next to what ``user`` already holds in ``group`` (``used``),
    under the group's limits for each member; None if it fits. e.g. "stu1 uses 1 of the 1
    servers each member of project ai101 may use"."""
    limits = quota.member_amounts()
    for dimension, amount in need.items():
        limit = limits.get(dimension)
        if amount <= 0 or limit is None:
            continue
        have = used.get(dimension, 0)
        if have + amount > limit + 1e-9:
            return _t(
                "{user} uses {have} of the {limit} {what} each member of project {group} may"
                " use; this needs {need}",
                user=user,
                have=show(dimension, have),
                limit=show(dimension, limit),
                what=label(dimension),
                group=group,
                need=show(dimension, amount),
            )
    return None


def personal_refusal(
    user: str, quota: Quota, used: Mapping[str, float], need: Mapping[str, float]
) -> str | None:
    """As ``refusal``, for what a user runs outside every project group (their personal quota):
    e.g. "alice's personal quota (outside project groups) uses 1 of 1 servers"."""
    found = _over(quota, used, need)
    if found is None:
        return None
    dimension, have, limit, amount = found
    what = label(dimension)
    if limit == 0 and dimension not in PLAIN_DIMENSIONS:
        return _t(
            "the personal quota of {user} (outside project groups) has no {what}",
            user=user,
            what=what,
        )
    have_, limit_ = show(dimension, have), show(dimension, limit)
    if have < limit:
        return _t(
            (
                "the personal quota of {user} (outside project groups) uses {have} of {limit}"
                " {what}; this needs {need}"
            ),
            user=user,
            have=have_,
            limit=limit_,
            what=what,
            need=show(dimension, amount),
        )
    return _t(
        "the personal quota of {user} (outside project groups) uses {have} of {limit} {what}",
        user=user,
        have=have_,
        limit=limit_,
        what=what,
    )


def show_hours(hours: float) -> str:
    return f"{hours:.1f}" if abs(hours - round(hours)) > 0.05 else f"{round(hours):d}"


def gpu_hours_refusal(
    *,
    user: str,
    group: str,
    quota: Quota,
    group_used: float,
    member_used: float,
    resets: float,
) -> str | None:
    """Why a new server or job holding devices is refused for GPU-hours this month, or None.
    ``group`` "" is the user's personal quota (its ``gpu_hours`` is the user's own)."""
    reset = show_time(resets)
    if not group:
        if quota.gpu_hours is not None and member_used >= quota.gpu_hours - 1e-9:
            return _t(
                (
                    "{user} used {used} of {limit} personal GPU-hours this month; they reset on"
                    " {reset} UTC"
                ),
                user=user,
                used=show_hours(member_used),
                limit=show_hours(quota.gpu_hours),
                reset=reset,
            )
        return None
    if quota.gpu_hours is not None and group_used >= quota.gpu_hours - 1e-9:
        return _t(
            (
                "project {group} used {used} of {limit} GPU-hours this month; they reset on"
                " {reset} UTC"
            ),
            group=group,
            used=show_hours(group_used),
            limit=show_hours(quota.gpu_hours),
            reset=reset,
        )
    per_member = quota.gpu_hours_per_member
    if per_member is not None and member_used >= per_member - 1e-9:
        return _t(
            (
                "{user} used {used} of {limit} GPU-hours in project {group} this month; they"
                " reset on {reset} UTC"
            ),
            user=user,
            group=group,
            used=show_hours(member_used),
            limit=show_hours(per_member),
            reset=reset,
        )
    return None
