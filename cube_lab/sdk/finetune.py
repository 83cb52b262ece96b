"""``cl.finetune(config)``: fine-tune a language model (pt/sft/rm/dpo/grpo, LoRA or full
weights) as a training job, without blocking; the answer is that job's ``Job`` handle
(``.wait()``, ``.metrics()``, ``.logs()``, ``.register(name)``). See ``docs/finetune.md`` for
the config: cube-lab's keys, or a LLaMA-Factory training YAML as it is.

Around it: ``cl.finetune.preview`` (the records as the model reads them),
``cl.finetune.estimate`` (the memory per process), ``cl.finetune.merge`` (an adapter version
into its base, a job) and ``cl.finetune.evaluate`` (before vs after, a job whose
``.result()`` and ``.table()`` give the figures)."""

from __future__ import annotations

import os
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t
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
        raise InvalidInput(
            _t("nproc must be a whole number of at least 1"), _t("got {nproc!r}", nproc=nproc)
        )
    data, folder = read_config(config, base_dir, "a fine-tune")
    return Job(current().start_finetune({**data, **overrides}, folder, project, nproc))


def estimate(
    config: str | os.PathLike[str] | dict[str, Any],
    base_dir: str | os.PathLike[str] | None = None,
    *,
    project: str | None = None,
    nproc: int = 1,
    **overrides: Any,
) -> dict[str, Any]:
    """The accelerator memory the fine-tune needs per process, by part (no job starts)."""
    data, folder = read_config(config, base_dir, "a fine-tune")
    return dict(current().finetune_estimate({**data, **overrides}, folder, project, nproc))


def merge(model: str, *, project: str | None = None) -> Job:
    """Merge the LoRA adapter version ``model`` (``NAME[:VERSION]``) into its base, as a job;
    ``.wait().register(name)`` records the full model."""
    return Job(current().start_merge(model, project))


class Evaluation(Job):
    """An evaluation job: ``.result()`` waits and answers ``evaluation.json``; ``.table()``
    is its figures side by side (a row per metric, a column per model)."""

    def result(self, timeout: float | None = None) -> dict[str, Any]:
        self.wait(timeout)
        return dict(current().evaluation(self.id))

    def table(self, timeout: float | None = None) -> Any:
        import pandas as pd

        found = self.result(timeout)
        return pd.DataFrame({label: found["metrics"][label] for label in found["metrics"]})


def evaluate(
    config: str | os.PathLike[str] | dict[str, Any],
    base_dir: str | os.PathLike[str] | None = None,
    *,
    project: str | None = None,
    **overrides: Any,
) -> Evaluation:
    """Start an evaluation (model vs baseline: perplexity, a scored prompt set); returns at
    once. See ``docs/finetune.md`` for the config."""
    data, folder = read_config(config, base_dir, "an evaluation")
    return Evaluation(current().start_evaluation({**data, **overrides}, folder, project))


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
