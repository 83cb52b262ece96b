"""The one table of accelerator resources: spawner profiles, job specs, pipeline compilers and
quota accounting all read it, so a GPU, a MIG slice or an NPU is named the same way everywhere.

>>> resources_for("hami-vgpu", 1, memory_mib=4096, cores_percent=50)
{'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '4096', 'nvidia.com/gpucores': '50'}
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidInput
from .locale.messages import _t


@dataclass(frozen=True)
class Toleration:
    key: str
    operator: str = "Exists"
    effect: str = "NoSchedule"
    value: str | None = None

    def to_k8s(self) -> dict[str, str]:
        out = {"key": self.key, "operator": self.operator, "effect": self.effect}
        if self.value is not None:
            out["value"] = self.value
        return out


@dataclass(frozen=True)
class Accelerator:
    key: str  # what users and settings write: "nvidia-gpu", "ascend-910b", ...
    display_name: str
    vendor: str  # who makes the chip: nvidia | huawei | amd
    resource: str  # the extended resource counted in container limits
    memory_resource: str | None = None  # companion: device memory share, in MiB
    cores_resource: str | None = None  # companion: compute share, in percent of a device
    fractional: bool = False  # one unit is a share of a physical device, not a whole one
    node_selector: tuple[tuple[str, str], ...] = ()  # labels the device plugin's docs put on nodes
    tolerations: tuple[Toleration, ...] = ()
    scheduler: str | None = None  # a scheduler the device plugin needs (schedulerName)
    description: str = ""
    aliases: tuple[str, ...] = field(default=(), repr=False)

    @property
    def companions(self) -> tuple[str, ...]:
        return tuple(r for r in (self.memory_resource, self.cores_resource) if r)

    def node_selector_dict(self) -> dict[str, str]:
        return dict(self.node_selector)

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "display_name": self.display_name,
            "vendor": self.vendor,
            "resource": self.resource,
            "memory_resource": self.memory_resource,
            "cores_resource": self.cores_resource,
            "fractional": self.fractional,
            "node_selector": self.node_selector_dict(),
            "tolerations": [t.to_k8s() for t in self.tolerations],
            "scheduler": self.scheduler,
            "description": self.description,
        }


def _taint(resource: str) -> tuple[Toleration, ...]:
    # Clusters commonly taint accelerator nodes with the resource name (GKE, AKS and most
    # device-plugin guides do); tolerating it is harmless where the taint is absent.
    return (Toleration(resource),)


def _mig(profile: str, note: str) -> Accelerator:
    resource = f"nvidia.com/mig-{profile}"
    return Accelerator(
        key=f"nvidia-mig-{profile}",
        display_name=f"NVIDIA MIG {profile}",
        vendor="nvidia",
        resource=resource,
        fractional=True,
        tolerations=_taint("nvidia.com/gpu"),
        description=f"A Multi-Instance GPU slice ({note}); needs the device plugin's "
        "'mixed' MIG strategy.",
    )


# Whole devices first: get("nvidia.com/gpu") finds the plain GPU, not HAMi's share of one.
_TABLE: tuple[Accelerator, ...] = (
    Accelerator(
        "nvidia-gpu",
        "NVIDIA GPU",
        "nvidia",
        "nvidia.com/gpu",
        tolerations=_taint("nvidia.com/gpu"),
        aliases=("nvidia", "gpu"),
        description="Whole NVIDIA GPUs (NVIDIA device plugin).",
    ),
    _mig("1g.5gb", "A100 40GB"),
    _mig("2g.10gb", "A100 40GB"),
    _mig("3g.20gb", "A100 40GB"),
    _mig("4g.20gb", "A100 40GB"),
    _mig("7g.40gb", "A100 40GB"),
    _mig("1g.10gb", "A100/H100 80GB"),
    _mig("1g.20gb", "A100/H100 80GB"),
    _mig("2g.20gb", "A100/H100 80GB"),
    _mig("3g.40gb", "A100/H100 80GB"),
    _mig("4g.40gb", "A100/H100 80GB"),
    _mig("7g.80gb", "A100/H100 80GB"),
    Accelerator(
        "hami-vgpu",
        "NVIDIA vGPU (HAMi)",
        "nvidia",
        "nvidia.com/gpu",
        memory_resource="nvidia.com/gpumem",
        cores_resource="nvidia.com/gpucores",
        fractional=True,
        tolerations=_taint("nvidia.com/gpu"),
        aliases=("hami",),
        description="Shares of NVIDIA GPUs: count, memory per share (MiB), cores (%) (HAMi).",
    ),
    Accelerator(
        "volcano-vgpu",
        "NVIDIA vGPU (Volcano)",
        "nvidia",
        "volcano.sh/vgpu-number",
        memory_resource="volcano.sh/vgpu-memory",
        cores_resource="volcano.sh/vgpu-cores",
        fractional=True,
        scheduler="volcano",
        tolerations=_taint("nvidia.com/gpu"),
        description="Shares of NVIDIA GPUs scheduled by Volcano (volcano-vgpu-device-plugin).",
    ),
    Accelerator(
        "ascend-910",
        "Huawei Ascend 910",
        "huawei",
        "huawei.com/Ascend910",
        node_selector=(("accelerator", "huawei-Ascend910"),),
        tolerations=_taint("huawei.com/Ascend910"),
        aliases=("ascend",),
        description="Whole Ascend 910 NPUs (Ascend device plugin, MindX DL node labels).",
    ),
    Accelerator(
        "ascend-910b",
        "Huawei Ascend 910B",
        "huawei",
        "huawei.com/Ascend910B",
        memory_resource="huawei.com/Ascend910B-memory",
        tolerations=_taint("huawei.com/Ascend910B"),
        description="Ascend 910B NPUs; a memory share (MiB) slices one (HAMi Ascend plugin).",
    ),
    Accelerator(
        "ascend-310p",
        "Huawei Ascend 310P",
        "huawei",
        "huawei.com/Ascend310P",
        memory_resource="huawei.com/Ascend310P-memory",
        tolerations=_taint("huawei.com/Ascend310P"),
        description="Ascend 310P inference NPUs; a memory share (MiB) slices one (HAMi).",
    ),
    Accelerator(
        "amd-gpu",
        "AMD GPU",
        "amd",
        "amd.com/gpu",
        tolerations=_taint("amd.com/gpu"),
        aliases=("amd",),
        description="Whole AMD Instinct/Radeon GPUs (ROCm device plugin).",
    ),
)

_BY_KEY: dict[str, Accelerator] = {}
for _acc in _TABLE:
    for _name in (_acc.key, *_acc.aliases):
        _BY_KEY[_name] = _acc
_BY_RESOURCE: dict[str, Accelerator] = {}
for _acc in _TABLE:
    _BY_RESOURCE.setdefault(_acc.resource, _acc)


def all_accelerators() -> list[Accelerator]:
    return list(_TABLE)


def get(key_or_resource: str) -> Accelerator:
    """An entry by key ("nvidia-gpu"), alias ("ascend") or resource name ("amd.com/gpu")."""
    if isinstance(key_or_resource, str):
        name = key_or_resource.strip()
        found = _BY_KEY.get(name.lower()) or _BY_RESOURCE.get(name)
        if found is not None:
            return found
    known = [a.key for a in _TABLE]
    close = difflib.get_close_matches(str(key_or_resource), known + list(_BY_RESOURCE), n=1)
    hint = f"Did you mean {close[0]!r}? " if close else ""
    raise InvalidInput(
        _t("unknown accelerator type {key_or_resource!r}", key_or_resource=key_or_resource),
        _t(
            "{hint}Known: {value} (or their resource names, e.g. nvidia.com/gpu).",
            hint=hint,
            value=", ".join(known),
        ),
    )


def _whole(value: Any, what: str, low: int, high: int | None = None) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InvalidInput(
            _t("{what} must be a whole number of at least {low}", what=what, low=low),
            _t("got {value!r}", value=value),
        )
    if high is not None and value > high:
        raise InvalidInput(
            _t("{what} must be at most {high}", what=what, high=high),
            _t("got {value!r}", value=value),
        )
    return value


def resources_for(
    key: str, count: Any, memory_mib: Any = None, cores_percent: Any = None
) -> dict[str, str]:
    """Container limits for ``count`` units of an accelerator (and its memory/cores shares)."""
    acc = get(key)
    limits = {acc.resource: str(_whole(count, f"the {acc.display_name} count", 1))}
    for value, resource, what, high in (
        (memory_mib, acc.memory_resource, "memory (MiB)", None),
        (cores_percent, acc.cores_resource, "cores (percent)", 100),
    ):
        if value is None:
            continue
        if resource is None:
            sharing = [a.key for a in _TABLE if a.memory_resource or a.cores_resource]
            raise InvalidInput(
                _t(
                    "{display_name} cannot be given a {value} share",
                    display_name=acc.display_name,
                    value=what.split()[0],
                ),
                _t(
                    (
                        "It is allocated in whole units of {resource}; for shares use one of "
                        "{value} where the cluster runs that device plugin."
                    ),
                    resource=acc.resource,
                    value=", ".join(sharing),
                ),
            )
        limits[resource] = str(_whole(value, f"the {acc.display_name} {what}", 1, high))
    return limits


@dataclass(frozen=True)
class AcceleratorRequest:
    accelerator: Accelerator
    count: int
    memory_mib: int | None = None
    cores_percent: int | None = None


def requests_in(limits: Mapping[str, Any]) -> list[AcceleratorRequest]:
    """The accelerators a container's limits ask for (the inverse of ``resources_for``),
    for quota accounting. ``nvidia.com/gpu`` with HAMi companions counts as HAMi vGPU."""
    found: list[AcceleratorRequest] = []
    for resource, raw in limits.items():
        acc = _BY_RESOURCE.get(resource)
        if acc is None:
            continue
        if acc.key == "nvidia-gpu" and any(r in limits for r in _BY_KEY["hami-vgpu"].companions):
            acc = _BY_KEY["hami-vgpu"]
        count = _whole(raw, f"limit {resource}", 0)
        memory = limits.get(acc.memory_resource) if acc.memory_resource else None
        cores = limits.get(acc.cores_resource) if acc.cores_resource else None
        found.append(
            AcceleratorRequest(
                acc,
                count,
                None if memory is None else _whole(memory, f"limit {acc.memory_resource}", 0),
                None if cores is None else _whole(cores, f"limit {acc.cores_resource}", 0),
            )
        )
    return found
