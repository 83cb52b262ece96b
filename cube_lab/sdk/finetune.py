"""``cl.finetune(config)``: fine-tune a language model (SFT or DPO, LoRA or full weights) as a
training job, without blocking; the answer is that job's ``Job`` handle (``.wait()``,
``.metrics()``, ``.logs()``, ``.register(name)``). See ``docs/finetune.md`` for the config:
cube-lab's keys, or a LLaMA-Factory training YAML as it is."""

from __future__ import annotations

import os
from typing import Any

from ..errors import InvalidInput
from . import current
from .configs import read_config
from .training import Job


def finetune(
    config: str | os.PathLike[str] | dict[str, Any],
    base_dir: str | os.PathLike[str] | None = None,
    *,
    project: str | None = None,
    nproc: int = 1,
    **overrides: Any,
) -> Job:
    """Start a fine-tune; returns at once. ``config`` is a YAML/JSON file or a dict; its
    relative paths (model, data, output_dir) start at ``base_dir`` (default: the file's
    folder, else the current one). ``overrides`` replace fields, e.g. ``max_steps=20``.
    ``nproc`` processes (torchrun, DDP) on this machine."""
    if isinstance(nproc, bool) or not isinstance(nproc, int) or nproc < 1:
        raise InvalidInput("nproc must be a whole number of at least 1", f"got {nproc!r}")
    data, folder = read_config(config, base_dir, "a fine-tune")
    return Job(current().start_finetune({**data, **overrides}, folder, project, nproc))


def preview(
    config: str | os.PathLike[str] | dict[str, Any],
    n: int = 3,
    base_dir: str | os.PathLike[str] | None = None,
    **overrides: Any,
) -> Any:
    """The first ``n`` records as the model reads them, the trained tokens marked (a list of
    ``{"text", "segments", "tokens", "trained_tokens"}`` that shows itself highlighted in a
    notebook). Read here, in this process: the base model must be a local folder."""
    from ..finetune.config import FinetuneConfig
    from ..finetune.records_preview import preview as render

    data, folder = read_config(config, base_dir, "a fine-tune")
    return render(FinetuneConfig.from_dict({**data, **overrides}, folder), n)
