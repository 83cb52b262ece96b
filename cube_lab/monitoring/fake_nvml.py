"""A stand-in for ``pynvml``: the calls ``gpu.GpuReader`` makes, answered from devices set up
by ``install`` (GPUs, MIG instances, the processes on each), so the GPU paths run without a
GPU. Select it with ``$CUBE_LAB_NVML=cube_lab.monitoring.fake_nvml`` or ``nvml.use(fake_nvml)``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

NVML_DEVICE_MIG_DISABLE = 0
NVML_DEVICE_MIG_ENABLE = 1


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):
    pass


class NVMLError_NotFound(NVMLError):
    pass


class NVMLError_Uninitialized(NVMLError):
    pass


@dataclass
class FakeProcess:
    pid: int
    used_memory: int | None  # bytes; None: the driver does not say (pynvml gives None)
    sm_util: int = 0  # percent of the device
    mem_util: int = 0


@dataclass
class FakeDevice:
    uuid: str
    name: str = "NVIDIA Fake GPU"
    processes: list[FakeProcess] = field(default_factory=list)
    mig: list[FakeDevice] | None = None  # MIG instances (the processes then run on them)
    memory_total: int = 80 * 2**30


@dataclass
class _ProcessInfo:  # what nvmlDeviceGetComputeRunningProcesses lists
    pid: int
    usedGpuMemory: int | None
    gpuInstanceId: int = 0xFFFFFFFF
    computeInstanceId: int = 0xFFFFFFFF


@dataclass
class _UtilSample:  # what nvmlDeviceGetProcessUtilization lists
    pid: int
    timeStamp: int
    smUtil: int
    memUtil: int
    encUtil: int = 0
    decUtil: int = 0


DEVICES: list[FakeDevice] = []
_initialised = False
calls: list[str] = []  # the calls made, for tests that check what was asked


def install(devices: list[FakeDevice]) -> None:
    """Answer for these devices from now on."""
    DEVICES[:] = devices
    calls.clear()


def _check() -> None:
    if not _initialised:
        raise NVMLError_Uninitialized("nvmlInit was not called")


def nvmlInit() -> None:
    global _initialised
    _initialised = True


def nvmlShutdown() -> None:
    global _initialised
    _initialised = False


def nvmlDeviceGetCount() -> int:
    _check()
    return len(DEVICES)


def nvmlDeviceGetHandleByIndex(index: int) -> FakeDevice:
    _check()
    return DEVICES[index]


def nvmlDeviceGetUUID(handle: FakeDevice) -> str:
    return handle.uuid


def nvmlDeviceGetName(handle: FakeDevice) -> str:
    return handle.name


def nvmlDeviceGetMigMode(handle: FakeDevice) -> list[int]:
    if handle.mig is None:
        raise NVMLError_NotSupported("MIG not supported")
    return [NVML_DEVICE_MIG_ENABLE, NVML_DEVICE_MIG_ENABLE]


def nvmlDeviceGetMaxMigDeviceCount(handle: FakeDevice) -> int:
    return 7 if handle.mig is not None else 0


def nvmlDeviceGetMigDeviceHandleByIndex(handle: FakeDevice, index: int) -> FakeDevice:
    if handle.mig is None or index >= len(handle.mig):
        raise NVMLError_NotFound("no MIG device there")
    return handle.mig[index]


def nvmlDeviceGetComputeRunningProcesses(handle: FakeDevice) -> list[Any]:
    calls.append(f"processes {handle.uuid}")
    return [_ProcessInfo(p.pid, p.used_memory) for p in handle.processes]


def nvmlDeviceGetProcessUtilization(handle: FakeDevice, last_seen: int) -> list[Any]:
    calls.append(f"utilization {handle.uuid}")
    if handle.mig is not None or handle.uuid.startswith("MIG-"):
        raise NVMLError_NotSupported("per-process utilisation is not supported on MIG")
    if not handle.processes:
        raise NVMLError_NotFound("no samples")
    stamp = int(time.time() * 1e6)
    return [_UtilSample(p.pid, stamp, p.sm_util, p.mem_util) for p in handle.processes]
