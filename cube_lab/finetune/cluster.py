"""A fine-tune on Kubernetes: the training job spec for a PyTorchJob / TrainJob whose pods
run ``torchrun -m cube_lab.finetune.trainer`` (cube-lab and the ``llm`` extra in the image).

The pods read the config's files where the lab server reads them, so every path the config
names (base model, data, eval data, reward file, DeepSpeed file, checkpoint to resume) and
the output folder must lie on a volume the pods mount at the same path (``mounts``: a
PersistentVolumeClaim and its mount path, as training jobs take them); one that does not is
refused, with the fix, before anything is submitted.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t
from .config import FinetuneConfig

# the training job spec's keys a fine-tune takes for the cluster (see training/spec.py)
PLACEMENT = (
    "image",
    "workers",
    "resources",
    "mounts",
    "gang",
    "queue",
    "kind",
    "shm_size",
    "rdma",
    "retries",
    "timeout_s",
)
COMMAND = ["torchrun", "-m", "cube_lab.finetune.trainer"]


def paths(config: FinetuneConfig) -> dict[str, str]:
    """What the pods read or write, by the config key that names it."""
    from .deepspeed import PRESETS

    found = {
        "model": config.model,
        "data.path": config.data.path,
        "eval_data.path": config.eval_data.path if config.eval_data else None,
        "reward_file": config.reward_file,
        "deepspeed": config.deepspeed if config.deepspeed not in PRESETS else None,
        "output_dir": config.output_dir,
        "resume_from_checkpoint": config.resume_from_checkpoint
        if isinstance(config.resume_from_checkpoint, str)
        else None,
    }
    return {k: v for k, v in found.items() if v}


def cluster_spec(
    spec: dict[str, Any], config: FinetuneConfig, cluster: dict[str, Any]
) -> dict[str, Any]:
    """``spec`` (the local fine-tune job's) made a Kubernetes job's."""
    unknown = sorted(set(cluster) - set(PLACEMENT))
    if unknown:
        raise InvalidInput(
            _t("unknown cluster fields {unknown}", unknown=unknown),
            _t("Known: {value}", value=", ".join(PLACEMENT)),
        )
    if not config.output_dir:
        raise InvalidInput(
            _t("output_dir is required for a fine-tune on the cluster"),
            _t("The pods save the model there: give a folder on a mounted volume."),
        )
    mounted = [PurePosixPath(str(m.get("mount_path"))) for m in cluster.get("mounts") or []]
    for key, path in paths(config).items():
        if not any(PurePosixPath(path).is_relative_to(m) for m in mounted):
            raise InvalidInput(
                _t("{key}: {path} is not on a volume the job's pods mount", key=key, path=path),
                _t(
                    "Mount the volume that holds it (--mount CLAIM:PATH, the path it has "
                    "here), or move it under a mounted path ({mounted}).",
                    mounted=", ".join(map(str, mounted)) or "none",
                ),
            )
    return {
        **spec,
        **cluster,
        "backend": "kubernetes",
        "script": None,
        "command": COMMAND,
        "args": ["--config-json", config.to_json()],
    }
