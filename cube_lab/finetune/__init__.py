"""LLM fine-tuning with TRL and PEFT, run as training jobs: continued pre-training, SFT,
reward models, DPO and GRPO, LoRA or full weights.

``config`` reads fine-tune configs and LLaMA-Factory YAMLs, ``data`` the data formats,
``trainer`` is what the job runs, ``service`` launches it through the training service and
registers the result. Nothing here imports torch, transformers or TRL at import time.

The package is also the SDK's ``cl.finetune(config, ...)`` (``cube_lab.sdk.finetune``):
once imported it is what ``cube_lab.finetune`` names, so calling it starts a fine-tune, and
``cl.finetune.preview(config)`` shows the first records with the trained tokens marked.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..sdk.training import Job


class _Callable(types.ModuleType):
    def __call__(self, config: Any, *args: Any, **kwargs: Any) -> Job:
        from ..sdk.finetune import finetune

        return finetune(config, *args, **kwargs)


sys.modules[__name__].__class__ = _Callable


def preview(config: Any, n: int = 3, *args: Any, **kwargs: Any) -> Any:
    """``cl.finetune.preview(config, n=3)``: see ``cube_lab.sdk.finetune.preview``."""
    from ..sdk.finetune import preview as _preview

    return _preview(config, n, *args, **kwargs)


def estimate(config: Any, *args: Any, **kwargs: Any) -> Any:
    """``cl.finetune.estimate(config)``: see ``cube_lab.sdk.finetune.estimate``."""
    from ..sdk.finetune import estimate as _estimate

    return _estimate(config, *args, **kwargs)


def merge(model: str, **kwargs: Any) -> Any:
    """``cl.finetune.merge("adapter:1")``: see ``cube_lab.sdk.finetune.merge``."""
    from ..sdk.finetune import merge as _merge

    return _merge(model, **kwargs)


def evaluate(config: Any, *args: Any, **kwargs: Any) -> Any:
    """``cl.finetune.evaluate(config)``: see ``cube_lab.sdk.finetune.evaluate``."""
    from ..sdk.finetune import evaluate as _evaluate

    return _evaluate(config, *args, **kwargs)
