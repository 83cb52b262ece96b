"""Which local NVIDIA GPUs are free, for ``CUDA_VISIBLE_DEVICES``.

Asks ``nvidia-smi`` (present wherever the driver is): a GPU is free when no compute
process runs on it and no job of this server holds it. No ``nvidia-smi`` means no GPU.
"""

from __future__ import annotations

import shutil
import subprocess
import threading

from ..errors import Conflict, InvalidInput
from ..locale.messages import _t

_held: dict[str, list[int]] = {}  # job id -> GPU indexes, for jobs this process launched
_lock = threading.Lock()


def _smi(*query: str) -> list[list[str]]:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run(
            [exe, *query, "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [[c.strip() for c in line.split(",")] for line in out.splitlines() if line.strip()]


def inventory() -> tuple[list[int], set[int]]:
    """(every GPU index, the indexes some compute process is using)."""
    gpus = _smi("--query-gpu=index,uuid")
    by_uuid = {row[1]: int(row[0]) for row in gpus if len(row) >= 2 and row[0].isdigit()}
    busy = {by_uuid[row[0]] for row in _smi("--query-compute-apps=gpu_uuid") if row[0] in by_uuid}
    return sorted(by_uuid.values()), busy


def assign(job_id: str, count: int) -> list[int]:
    """Hold ``count`` free GPUs for a job; release them with ``release``."""
    if count <= 0:
        return []
    every, busy = inventory()
    if not every:
        raise InvalidInput(
            _t("the job asks for {count} GPU(s) but this machine has no NVIDIA GPU", count=count),
            _t(
                "nvidia-smi found no device. Run without --gpus (CPU, gloo), or on the "
                "cluster with --backend kubernetes."
            ),
        )
    with _lock:
        held = {i for ids in _held.values() for i in ids}
        free = [i for i in every if i not in busy and i not in held]
        if len(free) < count:
            raise Conflict(
                _t(
                    "the job asks for {count} GPU(s) but only {n_free} of {n_every} are free",
                    count=count,
                    n_free=len(free),
                    n_every=len(every),
                ),
                _t(
                    (
                        "In use by other processes: {value}; by cube-lab jobs: {value2}. Wait"
                        " for them to finish or ask for fewer."
                    ),
                    value=sorted(busy),
                    value2=sorted(held),
                ),
            )
        _held[job_id] = free[:count]
        return list(free[:count])


def release(job_id: str) -> None:
    with _lock:
        _held.pop(job_id, None)
