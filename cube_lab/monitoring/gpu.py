"""What each process uses of each NVIDIA GPU (and MIG instance), read once per tick for every
watched object: memory from ``nvmlDeviceGetComputeRunningProcesses``, utilisation from
``nvmlDeviceGetProcessUtilization`` (samples since the last read; not offered on MIG
instances, whose rows then carry memory only). No NVML, or no GPU: an empty snapshot.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from . import nvml

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GpuUse:
    """One process on one GPU or MIG instance."""

    pid: int
    uuid: str  # GPU-... or MIG-...
    name: str
    parent: str | None  # the GPU's UUID, for a MIG instance
    memory_bytes: int | None
    util_percent: float | None  # SM utilisation, % of the device; None where NVML has none


@dataclass
class _Device:
    handle: Any
    uuid: str
    name: str
    parent: str | None
    last_seen: int = 0  # microseconds: the newest utilisation sample read
    util: dict[int, float] = field(default_factory=dict)  # the last known, per pid


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class GpuReader:
    def __init__(self, module: ModuleType | None = None) -> None:
        self._module = module
        self._devices: list[_Device] | None = None

    @property
    def module(self) -> ModuleType | None:
        return self._module if self._module is not None else nvml.load()

    def devices(self) -> list[_Device]:
        """The GPUs, each MIG-enabled one as its instances (found once)."""
        if self._devices is not None:
            return self._devices
        found: list[_Device] = []
        m = self.module
        if m is not None:
            try:
                for index in range(m.nvmlDeviceGetCount()):
                    handle = m.nvmlDeviceGetHandleByIndex(index)
                    uuid, name = (
                        _text(m.nvmlDeviceGetUUID(handle)),
                        _text(m.nvmlDeviceGetName(handle)),
                    )
                    instances = self._mig_instances(m, handle, uuid)
                    found += instances or [_Device(handle, uuid, name, None)]
            except m.NVMLError as exc:
                log.debug("NVML: cannot list devices: %s", exc)
        self._devices = found
        return found

    @staticmethod
    def _mig_instances(m: ModuleType, handle: Any, parent: str) -> list[_Device]:
        try:
            current, _pending = m.nvmlDeviceGetMigMode(handle)
        except m.NVMLError:
            return []  # not a MIG-capable GPU
        if current != getattr(m, "NVML_DEVICE_MIG_ENABLE", 1):
            return []
        out = []
        for index in range(m.nvmlDeviceGetMaxMigDeviceCount(handle)):
            try:
                mig = m.nvmlDeviceGetMigDeviceHandleByIndex(handle, index)
            except m.NVMLError:
                continue  # an empty slot
            out.append(
                _Device(
                    mig, _text(m.nvmlDeviceGetUUID(mig)), _text(m.nvmlDeviceGetName(mig)), parent
                )
            )
        return out

    def snapshot(self, pids: set[int] | None = None) -> dict[int, list[GpuUse]]:
        """Per pid (of ``pids``, or all), what it uses on each device now."""
        m = self.module
        if m is None:
            return {}
        out: dict[int, list[GpuUse]] = {}
        for dev in self.devices():
            try:
                procs = m.nvmlDeviceGetComputeRunningProcesses(dev.handle)
            except m.NVMLError as exc:
                log.debug("NVML: processes of %s: %s", dev.uuid, exc)
                continue
            mine = [p for p in procs if pids is None or p.pid in pids]
            if not mine:
                continue
            util = self._utilisation(m, dev, {p.pid for p in procs})
            for p in mine:
                used = getattr(p, "usedGpuMemory", None)
                out.setdefault(p.pid, []).append(
                    GpuUse(p.pid, dev.uuid, dev.name, dev.parent, used, util.get(p.pid))
                )
        return out

    @staticmethod
    def _utilisation(m: ModuleType, dev: _Device, running: set[int]) -> dict[int, float]:
        """The newest SM utilisation per pid; a pid without a sample since the last read
        keeps its last one (while it runs on the device)."""
        if dev.parent is not None:
            return {}
        dev.util = {pid: u for pid, u in dev.util.items() if pid in running}
        try:
            samples = m.nvmlDeviceGetProcessUtilization(dev.handle, dev.last_seen)
        except m.NVMLError:
            return dev.util  # no sample since the last read, or not supported
        newest: dict[int, int] = {}
        for s in samples:
            if s.timeStamp >= newest.get(s.pid, -1):
                newest[s.pid] = s.timeStamp
                dev.util[s.pid] = float(s.smUtil)
            dev.last_seen = max(dev.last_seen, int(s.timeStamp))
        return dev.util
