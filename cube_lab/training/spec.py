"""A training job's spec: what to run, how many processes, on what hardware.

One dataclass read from REST bodies, CLI flags and magics alike. ``JobSpec.from_dict``
checks every field and names the one that is wrong, so each interface reports the same
clear error. Accelerator names go through the one table in ``cube_lab.accelerators``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from .. import accelerators
from ..errors import InvalidInput
from ..locale.messages import _t

FRAMEWORKS = ("pytorch", "deepspeed", "tensorflow", "mpi", "plain")
BACKENDS = ("local", "kubernetes")
CLUSTER_KINDS = ("pytorchjob", "tfjob", "mpijob", "trainjob")
MAX_PROCESSES = 1024
_QUANTITY = re.compile(r"^(\d+(\.\d+)?|\.\d+)([KMGTPE]i|[numkMGTPE])?\Z")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


def _int(value: Any, name: str, low: int, high: int | None = None) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InvalidInput(
            _t("{name} must be a whole number of at least {low}", name=name, low=low),
            _t("got {value!r}", value=value),
        )
    if high is not None and value > high:
        raise InvalidInput(
            _t("{name} must be at most {high}", name=name, high=high),
            _t("got {value!r}", value=value),
        )
    return value


def _str(value: Any, name: str, *, required: bool = False) -> str | None:
    if value is None or value == "":
        if required:
            raise InvalidInput(_t("{name} is required", name=name))
        return None
    if not isinstance(value, str):
        raise InvalidInput(
            _t("{name} must be a string", name=name),
            _t("got {name__}", name__=type(value).__name__),
        )
    return value


def _strings(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise InvalidInput(
            _t("{name} must be a list of strings", name=name), _t("got {value!r}", value=value)
        )
    return [str(v) for v in value]


def _quantity(value: Any, name: str) -> str | None:
    if value is None or value == "":
        return None
    text = str(value).strip()
    if not _QUANTITY.match(text):
        raise InvalidInput(
            _t("{name} must be a Kubernetes quantity", name=name),
            _t("got {value!r}; e.g. 4, 500m, 16Gi", value=value),
        )
    return text


@dataclass
class Resources:
    """What each worker (one node: ``nproc_per_worker`` processes) asks for."""

    cpu: str | None = None
    memory: str | None = None
    gpus: int = 0
    gpu_type: str = "nvidia-gpu"  # a key of the accelerator table (GPU, MIG, vGPU, NPU)
    gpu_memory_mib: int | None = None  # a share, for vGPU / NPU slices
    gpu_cores_percent: int | None = None

    @classmethod
    def from_dict(cls, data: Any) -> Resources:
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise InvalidInput(_t("resources must be an object"), _t("got {data!r}", data=data))
        _unknown(data, cls, "resources")
        out = cls(
            cpu=_quantity(data.get("cpu"), "resources.cpu"),
            memory=_quantity(data.get("memory"), "resources.memory"),
            gpus=_int(data.get("gpus") or 0, "resources.gpus", 0, 64),
            gpu_type=_str(data.get("gpu_type"), "resources.gpu_type") or "nvidia-gpu",
            gpu_memory_mib=data.get("gpu_memory_mib"),
            gpu_cores_percent=data.get("gpu_cores_percent"),
        )
        out.accelerator_limits()  # raises on an unknown type or a share it cannot take
        return out

    @property
    def accelerator(self) -> accelerators.Accelerator:
        return accelerators.get(self.gpu_type)

    def accelerator_limits(self) -> dict[str, str]:
        """Container limits for the accelerators, named by the one table."""
        acc = self.accelerator  # checked even with 0 GPUs: a typo should not wait for later
        if not self.gpus:
            if self.gpu_memory_mib or self.gpu_cores_percent:
                raise InvalidInput(_t("resources.gpus must be at least 1 to ask for a GPU share"))
            return {}
        return accelerators.resources_for(
            acc.key, self.gpus, self.gpu_memory_mib, self.gpu_cores_percent
        )

    def limits(self) -> dict[str, str]:
        out = {k: v for k, v in (("cpu", self.cpu), ("memory", self.memory)) if v}
        return out | self.accelerator_limits()


@dataclass
class Mount:
    """A data volume for cluster jobs: a PersistentVolumeClaim mounted in every pod."""

    claim: str
    mount_path: str
    read_only: bool = False


@dataclass
class JobSpec:
    framework: str = "pytorch"
    script: str | None = None  # a Python file (or, for ``plain``, a program)
    command: list[str] = field(default_factory=list)  # instead of script: any command line
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    working_dir: str | None = None
    workers: int = 1  # nodes (pods on a cluster); processes per node below
    nproc_per_worker: int = 1
    resources: Resources = field(default_factory=Resources)
    retries: int = 0
    timeout_s: int | None = None
    project: str | None = None
    name: str | None = None
    image: str | None = None  # the container image on a cluster
    backend: str = "local"
    output_dir: str | None = None  # where checkpoints go (default: the job folder)
    mounts: list[Mount] = field(default_factory=list)
    # cluster-only scheduling options
    gang: bool = False  # Volcano gang scheduling: all pods or none
    queue: str | None = None  # the Volcano queue
    shm_size: str | None = None  # a /dev/shm of this size (PyTorch data loaders need one)
    rdma: bool = False  # request an RDMA device and let NCCL use InfiniBand/RoCE
    kind: str | None = None  # the cluster object: pytorchjob, tfjob, mpijob, trainjob

    @property
    def processes(self) -> int:
        return self.workers * self.nproc_per_worker

    @property
    def gpus_total(self) -> int:
        return self.workers * self.resources.gpus

    @classmethod
    def from_dict(cls, data: Any) -> JobSpec:
        if not isinstance(data, dict):
            raise InvalidInput(
                _t("a job spec must be an object"), _t("got {name__}", name__=type(data).__name__)
            )
        _unknown(data, cls, "job spec")
        framework = data.get("framework") or "pytorch"
        if framework not in FRAMEWORKS:
            raise InvalidInput(
                _t("framework {framework!r} is not supported", framework=framework),
                _t("Use one of {value}.", value=", ".join(FRAMEWORKS)),
            )
        backend = data.get("backend") or "local"
        if backend not in BACKENDS:
            raise InvalidInput(
                _t("backend {backend!r} is unknown", backend=backend),
                _t("Use one of {BACKENDS}.", BACKENDS=BACKENDS),
            )
        script = _str(data.get("script"), "script")
        command = _strings(data.get("command"), "command")
        if script and command:
            raise InvalidInput(_t("give script or command, not both"))
        if not script and not command:
            raise InvalidInput(
                _t("script is required"), _t("Give the training script (or a command for 'plain').")
            )
        env = data.get("env") or {}
        if not isinstance(env, dict):
            raise InvalidInput(_t("env must be an object of NAME -> value"))
        for key in env:
            if not _ENV_NAME.match(str(key)):
                raise InvalidInput(_t("env: {key!r} is not a valid variable name", key=key))
        workers = _int(data.get("workers", 1), "workers", 1, MAX_PROCESSES)
        nproc = _int(data.get("nproc_per_worker", 1), "nproc_per_worker", 1, 256)
        if workers * nproc > MAX_PROCESSES:
            raise InvalidInput(
                _t(
                    "workers x nproc_per_worker must be at most {MAX_PROCESSES}",
                    MAX_PROCESSES=MAX_PROCESSES,
                )
            )
        timeout = data.get("timeout_s")
        mounts = []
        for i, m in enumerate(data.get("mounts") or []):
            if not isinstance(m, dict) or not m.get("claim") or not m.get("mount_path"):
                raise InvalidInput(
                    _t("mounts[{i}] needs claim and mount_path", i=i), _t("got {m!r}", m=m)
                )
            if not str(m["mount_path"]).startswith("/"):
                raise InvalidInput(_t("mounts[{i}].mount_path must be absolute", i=i))
            mounts.append(Mount(str(m["claim"]), str(m["mount_path"]), bool(m.get("read_only"))))
        name = _str(data.get("name"), "name")
        if name and not re.match(r"^[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?$", name):
            raise InvalidInput(
                _t("name {name!r} is not a valid job name", name=name),
                _t(
                    "Use up to 42 lower-case letters, digits and '-' (it names Kubernetes objects)."
                ),
            )
        kind = _str(data.get("kind"), "kind")
        if kind is not None and kind.lower() not in CLUSTER_KINDS:
            raise InvalidInput(
                _t("kind {kind!r} is unknown", kind=kind),
                _t("Use one of {value}.", value=", ".join(CLUSTER_KINDS)),
            )
        return cls(
            framework=framework,
            script=script,
            command=command,
            args=_strings(data.get("args"), "args"),
            env={str(k): str(v) for k, v in env.items()},
            working_dir=_str(data.get("working_dir"), "working_dir"),
            workers=workers,
            nproc_per_worker=nproc,
            resources=Resources.from_dict(data.get("resources")),
            retries=_int(data.get("retries", 0), "retries", 0, 20),
            timeout_s=None if timeout in (None, "") else _int(timeout, "timeout_s", 1),
            project=_str(data.get("project"), "project"),
            name=name,
            image=_str(data.get("image"), "image"),
            backend=backend,
            output_dir=_str(data.get("output_dir"), "output_dir"),
            mounts=mounts,
            gang=bool(data.get("gang")),
            queue=_str(data.get("queue"), "queue"),
            shm_size=_quantity(data.get("shm_size"), "shm_size"),
            rdma=bool(data.get("rdma")),
            kind=kind.lower() if kind else None,
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def argv(self) -> list[str]:
        """The user's program and its arguments (before any launcher)."""
        return [*(self.command or [self.script or ""]), *self.args]


def _unknown(data: dict[str, Any], cls: type, what: str) -> None:
    known = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise InvalidInput(
            _t("unknown {what} fields {unknown}", what=what, unknown=unknown),
            _t("Known: {value}.", value=", ".join(known)),
        )
