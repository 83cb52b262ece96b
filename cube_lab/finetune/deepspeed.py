"""DeepSpeed ZeRO for fine-tunes: a preset name or the user's JSON file, handed to the
Hugging Face Trainer (``TrainingArguments(deepspeed=...)``), which runs it under torchrun.

Presets (``deepspeed: zero2`` ...) are ZeRO configs whose sizes are ``"auto"``, so the Trainer
fills batch size, accumulation, learning rate, clipping and precision from the fine-tune's
own keys (the way LLaMA-Factory's ``examples/deepspeed`` files are written):
``zero2`` shards optimizer states and gradients, ``zero3`` the parameters too, and the
``_offload`` variants move optimizer states (and ZeRO-3 parameters) to CPU memory.

DeepSpeed needs CUDA GPUs and the ``deepspeed`` package in the job's Python; where the job
would run without them it is refused before a job is recorded, with the fix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t

PRESETS = ("zero2", "zero2_offload", "zero3", "zero3_offload")


def preset(name: str) -> dict[str, Any]:
    """The ZeRO config a preset name stands for."""
    stage = 3 if name.startswith("zero3") else 2
    zero: dict[str, Any] = {
        "stage": stage,
        "overlap_comm": False,
        "contiguous_gradients": True,
        "reduce_bucket_size": "auto",
    }
    if stage == 2:
        zero |= {"allgather_partitions": True, "allgather_bucket_size": 5e8, "reduce_scatter": True}
    else:
        zero |= {
            "sub_group_size": 1e9,
            "stage3_prefetch_bucket_size": "auto",
            "stage3_param_persistence_threshold": "auto",
            "stage3_max_live_parameters": 1e9,
            "stage3_max_reuse_distance": 1e9,
            "stage3_gather_16bit_weights_on_model_save": True,
        }
    if name.endswith("_offload"):
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
        if stage == 3:
            zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    return {
        "train_batch_size": "auto",
        "train_micro_batch_size_per_gpu": "auto",
        "gradient_accumulation_steps": "auto",
        "gradient_clipping": "auto",
        "zero_allow_untested_optimizer": True,
        "fp16": {
            "enabled": "auto",
            "loss_scale": 0,
            "loss_scale_window": 1000,
            "initial_scale_power": 16,
            "hysteresis": 2,
            "min_loss_scale": 1,
        },
        "bf16": {"enabled": "auto"},
        "zero_optimization": zero,
    }


def resolve(value: str) -> dict[str, Any]:
    """A preset's config, or the JSON file's (a ``zero_optimization`` mapping required)."""
    if value in PRESETS:
        return preset(value)
    try:
        found = json.loads(Path(value).read_text())
    except OSError as exc:
        raise InvalidInput(_t("deepspeed: {value} cannot be read", value=value), str(exc)) from None
    except ValueError as exc:
        raise InvalidInput(_t("deepspeed: {value} is not JSON", value=value), str(exc)) from None
    if not isinstance(found, dict) or not isinstance(found.get("zero_optimization"), dict):
        raise InvalidInput(
            _t("deepspeed: {value} has no zero_optimization section", value=value),
            _t("Give a DeepSpeed config file, or a preset: {presets}.", presets=", ".join(PRESETS)),
        )
    return found


def check_local(cuda: bool, has_deepspeed: bool) -> None:
    """Refuse DeepSpeed where the job would run without CUDA or without the package."""
    if not cuda:
        raise InvalidInput(
            _t("deepspeed needs CUDA GPUs, and this machine has none"),
            _t(
                "Remove deepspeed to train here (plain DDP), or run the fine-tune on the "
                "cluster: cube-lab finetune CONFIG --backend kubernetes --image IMAGE --gpus N."
            ),
        )
    if not has_deepspeed:
        raise InvalidInput(
            _t("deepspeed is not installed in the job's Python"),
            _t("pip install deepspeed (it builds its CUDA ops on first use)."),
        )
