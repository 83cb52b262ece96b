"""What a fine-tuning job runs: ``python -m cube_lab.finetune.trainer CONFIG.json``.

It builds the model (with a PEFT LoRA adapter for ``finetuning_type: lora``), hands it with
the converted records to TRL's ``SFTTrainer`` or ``DPOTrainer`` (their loop, not ours),
reports each logged step (loss, learning rate, grad norm, tokens/s, DPO's rewards) through
``cube_lab.training.metrics.report`` so the job's charts show them, and saves the adapter
(or the full model), the tokenizer and ``cube_finetune.json`` (what it was trained from and
how) under ``$CUBE_OUTPUT_DIR/model``. Under torchrun every rank runs this; rank 0 reports
and saves. ``--config-json TEXT`` gives the config inline (what the training service does).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from ..errors import CubeError, InvalidInput
from ..training import metrics
from .config import FinetuneConfig
from .data import load_records

METADATA = "cube_finetune.json"
MODEL_DIR = "model"


def output_root(config: FinetuneConfig) -> Path:
    raw = os.environ.get("CUBE_OUTPUT_DIR") or config.output_dir or "output"
    return Path(raw).resolve()


def _callback() -> Any:
    from transformers import TrainerCallback

    class Report(TrainerCallback):
        """Each log of the trainer as a cube-lab metrics report (rank 0), and a log line."""

        def __init__(self) -> None:
            self.last: tuple[float, float] | None = None  # (time, tokens seen)
            self.history: list[dict[str, float]] = []

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if not state.is_world_process_zero or not logs:
                return
            values = {
                k: float(v)
                for k, v in logs.items()
                if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            }
            tokens = values.pop("num_tokens", None)
            now = time.monotonic()
            if tokens is not None:
                if self.last is not None and now > self.last[0] and tokens > self.last[1]:
                    values["tokens_per_second"] = (tokens - self.last[1]) / (now - self.last[0])
                self.last = (now, tokens)
                values["tokens"] = tokens
            if not values:
                return
            self.history.append(values)
            metrics.report(step=state.global_step, **values)
            pairs = " ".join(f"{k}={v:.6g}" for k, v in values.items())
            print(f"step={state.global_step} {pairs}", flush=True)

    return Report()


def _lora(config: FinetuneConfig) -> Any:
    from peft import LoraConfig

    target = config.lora.target
    return LoraConfig(
        r=config.lora.rank,
        lora_alpha=config.lora.alpha,
        lora_dropout=config.lora.dropout,
        target_modules="all-linear" if target == "all" else list(target),
        task_type="CAUSAL_LM",
    )


def _common(config: FinetuneConfig, checkpoints: Path) -> dict[str, Any]:
    import torch

    return {
        "output_dir": str(checkpoints),
        "learning_rate": config.learning_rate,
        "num_train_epochs": config.num_train_epochs,
        "max_steps": config.max_steps,
        "per_device_train_batch_size": config.per_device_train_batch_size,
        "gradient_accumulation_steps": config.gradient_accumulation_steps,
        "logging_steps": config.logging_steps,
        "save_strategy": "steps" if config.save_steps else "no",
        "save_steps": config.save_steps or 500,
        "seed": config.seed,
        "lr_scheduler_type": config.lr_scheduler_type,
        "warmup_steps": config.warmup_ratio,  # a float below 1: a ratio of the steps
        "bf16": config.bf16,
        "fp16": config.fp16,
        "max_length": config.cutoff_len,
        "report_to": "none",
        "disable_tqdm": True,
        "use_cpu": not torch.cuda.is_available(),
        "dataloader_num_workers": 0,
        "ddp_find_unused_parameters": False,  # every trainable weight is used: no extra pass
    }


def quiet_libraries() -> None:
    """A job's log holds its steps, not progress bars drawn into a file or the libraries'
    deprecation notices about their own calls to each other (nothing a user can act on)."""
    import datasets
    import transformers

    datasets.disable_progress_bars()
    transformers.utils.logging.disable_progress_bar()
    for module in ("transformers", "trl", "peft", "accelerate"):
        warnings.filterwarnings("ignore", category=FutureWarning, module=module)
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=module)


def train(config: FinetuneConfig) -> dict[str, Any]:
    """Train; returns the metadata saved next to the model."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback

    quiet_libraries()

    if config.model and ":" in config.model and not Path(config.model).exists():
        raise InvalidInput(
            f"model {config.model!r} is a registered version that was not resolved",
            "Launch through cube-lab finetune (or the REST API), which resolves it to its folder.",
        )
    records = load_records(config.data)
    tokenizer = AutoTokenizer.from_pretrained(config.model)
    conversational = "text" not in records[0]
    if conversational and not tokenizer.chat_template:
        raise InvalidInput(
            f"the tokenizer of {config.model} has no chat template",
            "Save one with the tokenizer (tokenizer.chat_template = ...; save_pretrained), "
            "or use plain text data.",
        )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(config.model)
    root = output_root(config)
    checkpoints = root / "checkpoints"
    peft_config = _lora(config) if config.finetuning_type == "lora" else None
    report = _callback()
    dataset = Dataset.from_list(records)
    from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer

    if config.method == "sft":
        args: Any = SFTConfig(**_common(config, checkpoints), dataset_num_proc=None)
        trainer_class: Any = SFTTrainer
    else:
        args = DPOConfig(**_common(config, checkpoints), beta=config.beta)
        trainer_class = DPOTrainer
    trainer = trainer_class(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=[report],
    )
    trainer.remove_callback(PrinterCallback)  # Report prints each step instead
    started = time.monotonic()
    result = trainer.train()
    took = time.monotonic() - started
    target = root / MODEL_DIR
    trainer.save_model(str(target))
    history = report.history
    losses = [h["loss"] for h in history if "loss" in h]
    final = {"train_loss": float(result.training_loss), "train_runtime_s": took}
    if losses:
        final["final_loss"] = losses[-1]
    for key in ("rewards/margins", "rewards/accuracies"):
        seen = [h[key] for h in history if key in h]
        if seen:
            final[key] = seen[-1]
    meta = {
        "kind": "cube-lab-finetune",
        "method": config.method,
        "finetuning_type": config.finetuning_type,
        "base_model": config.model,
        "base_ref": config.base_ref,
        "dataset": config.data.path,
        "hyperparameters": config.hyperparameters(),
        "metrics": final,
        "steps": int(trainer.state.global_step),
        "job_id": os.environ.get("CUBE_TRAINING_JOB_ID"),
        "world_size": int(trainer.args.world_size),
        "config": config.to_dict(),
    }
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(str(target))
        (target / METADATA).write_text(json.dumps(meta, indent=2, sort_keys=True))
        metrics.report(step=int(trainer.state.global_step), checkpoint=str(target), **final)
        print(f"saved the {config.finetuning_type} model to {target}", flush=True)
    return meta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cube_lab.finetune.trainer")
    parser.add_argument("config", nargs="?", help="a resolved fine-tune config (JSON)")
    parser.add_argument("--config-json", help="the config itself, as JSON text")
    a = parser.parse_args(argv)
    try:
        if a.config_json:
            config = FinetuneConfig.from_json(a.config_json)
        elif a.config:
            path = Path(a.config)
            raw = json.loads(path.read_text()) if path.suffix == ".json" else _yaml(path)
            config = FinetuneConfig.from_dict(raw, path.resolve().parent)
        else:
            parser.error("give CONFIG or --config-json")
        train(config)
    except CubeError as exc:
        print(f"cube-lab finetune: error: {exc.error}", file=sys.stderr)
        if exc.detail:
            print(f"  {exc.detail}", file=sys.stderr)
        return 2
    return 0


def _yaml(path: Path) -> Any:
    import yaml

    return yaml.safe_load(path.read_text())


if __name__ == "__main__":
    sys.exit(main())
