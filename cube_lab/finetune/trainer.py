"""What a fine-tuning job runs: ``python -m cube_lab.finetune.trainer CONFIG.json``.

It builds the model (with a PEFT LoRA adapter for ``finetuning_type: lora``), hands it with
the converted records to TRL's trainer for the method (their loop, not ours): ``SFTTrainer``
for ``pt`` (plain text) and ``sft``, ``RewardTrainer`` for ``rm`` (a sequence-classification
head scoring chosen above rejected), ``DPOTrainer`` for ``dpo``, ``GRPOTrainer`` for ``grpo``
(the reward is the user's Python function). It reports each logged step (loss, learning
rate, grad norm, tokens/s, rewards; on an eval split eval loss and perplexity) through
``cube_lab.training.metrics.report`` so the job's charts show them, resumes from a
checkpoint when asked, and saves the adapter (or the full model), the tokenizer and
``cube_finetune.json`` (what it was trained from and how) under ``$CUBE_OUTPUT_DIR/model``.
Under torchrun every rank runs this; rank 0 reports and saves. ``--config-json TEXT`` gives
the config inline (what the training service does).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import random
import re
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import CubeError, InvalidInput
from ..locale.messages import _t
from ..training import metrics
from . import chat_templates, masking, samples
from .config import FinetuneConfig, check_records
from .data import load_records
from .user_code import load_function

METADATA = "cube_finetune.json"
MODEL_DIR = "model"


def output_root(config: FinetuneConfig) -> Path:
    raw = os.environ.get("CUBE_OUTPUT_DIR") or config.output_dir or "output"
    return Path(raw).resolve()


def _callback(perplexity: bool = True) -> Any:
    from transformers import TrainerCallback

    class Report(TrainerCallback):
        """Each log of the trainer as a cube-lab metrics report (rank 0), and a log line."""

        def __init__(self) -> None:
            self.last: tuple[float, float] | None = None  # (time, tokens seen)
            self.history: list[dict[str, float]] = []
            self.eval_step = -1  # the step of the newest evaluation

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if not state.is_world_process_zero or not logs:
                return
            values = {
                k: float(v)
                for k, v in logs.items()
                if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            }
            tokens = values.pop("num_tokens", None)
            loss = values.get("eval_loss")
            if loss is not None:
                self.eval_step = state.global_step
            if perplexity and loss is not None and loss < 700:  # exp(700) is still finite
                values["eval_perplexity"] = math.exp(loss)
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
    if target == "all" and config.method == "rm":
        # peft's "all-linear" keeps out the output layer of causal LMs only: name them
        target = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    return LoraConfig(
        r=config.lora.rank,
        lora_alpha=config.lora.alpha,
        lora_dropout=config.lora.dropout,
        target_modules="all-linear" if target == "all" else list(target),
        # a reward model's score head is new: SEQ_CLS trains and saves it with the adapter
        task_type="SEQ_CLS" if config.method == "rm" else "CAUSAL_LM",
    )


def check_quantization(config: FinetuneConfig, cuda: bool, has_bitsandbytes: bool) -> None:
    """QLoRA needs a CUDA GPU and bitsandbytes: said before anything loads, with the fix."""
    if not cuda:
        raise InvalidInput(
            _t(
                "quantization_bit {bits} (QLoRA) needs a CUDA GPU; this machine has none",
                bits=config.quantization_bit,
            ),
            _t(
                "Leave quantization_bit out to train LoRA on the full-precision base here, or "
                "run the fine-tune where a CUDA GPU is."
            ),
        )
    if not has_bitsandbytes:
        raise InvalidInput(
            _t("quantization_bit {bits} (QLoRA) needs bitsandbytes", bits=config.quantization_bit),
            _t("pip install bitsandbytes (in the environment the job runs in)."),
        )


def _quantized_base(config: FinetuneConfig, auto_class: Any) -> Any:
    """The base in 4 bits (NF4, bf16 compute where the GPU has it) or 8, ready for LoRA."""
    import importlib.util

    import torch
    from peft import prepare_model_for_kbit_training
    from transformers import BitsAndBytesConfig

    check_quantization(
        config, torch.cuda.is_available(), importlib.util.find_spec("bitsandbytes") is not None
    )
    if config.quantization_bit == 4:
        compute = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        quantization = BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_compute_dtype=compute,
            bnb_4bit_use_double_quant=config.double_quantization,
        )
    else:
        quantization = BitsAndBytesConfig(load_in_8bit=True)
    rank = int(os.environ.get("LOCAL_RANK", "0"))
    model = auto_class.from_pretrained(
        config.model, quantization_config=quantization, device_map={"": rank}
    )
    return prepare_model_for_kbit_training(model)


def _common(config: FinetuneConfig, checkpoints: Path, has_eval: bool) -> dict[str, Any]:
    import torch

    strategy = config.eval_strategy or ("steps" if config.eval_steps else "no")
    out = {
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
        "eval_strategy": strategy if has_eval else "no",
        "eval_steps": config.eval_steps,
        "per_device_eval_batch_size": config.per_device_eval_batch_size,
    }
    if config.method == "grpo":  # prompts and completions have lengths of their own
        out.pop("max_length")
    if config.deepspeed:
        from .deepspeed import check_local, resolve

        check_local(torch.cuda.is_available(), importlib.util.find_spec("deepspeed") is not None)
        out["deepspeed"] = resolve(config.deepspeed)
    return out


def split(
    records: list[dict[str, Any]], config: FinetuneConfig
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(train, eval): ``val_size`` records held out at random (seeded), or ``eval_data``."""
    if config.eval_data is not None:
        held = load_records(config.eval_data)
        check_records(config.method, held[0], Path(config.eval_data.path).name)
        return records, held
    if not config.val_size:
        return records, []
    size = config.val_size
    count = int(size) if size >= 1 else max(1, round(len(records) * size))
    if count >= len(records):
        raise InvalidInput(
            _t(
                "val_size {size:g} holds out {count} of {total} records, leaving none to train on",
                size=size,
                count=count,
                total=len(records),
            ),
            _t("Give a smaller share (0.1) or count."),
        )
    order = list(range(len(records)))
    random.Random(config.seed).shuffle(order)
    held = set(order[:count])
    return (
        [r for i, r in enumerate(records) if i not in held],
        [r for i, r in enumerate(records) if i in held],
    )


def checkpoint_to_resume(config: FinetuneConfig, checkpoints: Path) -> str | None:
    """The checkpoint folder to resume from: the config's, or (``true``) the newest one
    this output folder holds."""
    wanted = config.resume_from_checkpoint
    if not wanted:
        return None
    if wanted is not True:
        return str(wanted)
    found = [
        (int(m.group(1)), p)
        for p in (checkpoints.iterdir() if checkpoints.is_dir() else [])
        if (m := re.fullmatch(r"checkpoint-(\d+)", p.name)) and (p / "trainer_state.json").is_file()
    ]
    if not found:
        raise InvalidInput(
            _t(
                "resume_from_checkpoint: true, and {checkpoints} holds no checkpoint",
                checkpoints=checkpoints,
            ),
            _t(
                "A job saves checkpoints with save_steps; give the same "
                "output_dir as the job to resume, or a checkpoint folder."
            ),
        )
    return str(max(found)[1])


def load_reward(path: str) -> Callable[..., list[float]]:
    """``reward(prompts, completions, **kw) -> list[float]`` from the user's Python file."""
    func = load_function(
        path, "reward_file", "reward", "reward(prompts, completions, **kw) -> list[float]"
    )

    def reward(prompts: list[Any], completions: list[Any], **kw: Any) -> list[float]:
        scores = func(prompts, completions, **kw)
        if not isinstance(scores, list | tuple) or len(scores) != len(completions):
            raise InvalidInput(
                _t("reward in {path} must return one number per completion", path=path),
                _t(
                    "got {kind} for {count} completions",
                    kind=type(scores).__name__,
                    count=len(completions),
                ),
            )
        return [float(x) for x in scores]

    reward.__name__ = "reward"
    return reward


def _grpo_prompts(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """GRPO samples the answers: a chat's prompt is its turns before the last answer."""
    out = []
    for r in records:
        turns = r["messages"]
        if turns[-1]["role"] == "assistant":
            turns = turns[:-1]
        out.append({"prompt": turns})
    return out


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
            _t("model {model!r} is a registered version that was not resolved", model=config.model),
            _t(
                "Launch through cube-lab finetune (or the REST API), which "
                "resolves it to its folder."
            ),
        )
    records = load_records(config.data)
    check_records(config.method, records[0], Path(config.data.path).name)
    records, held = split(records, config)
    asked = samples.prompts(config.sample_prompts, held or records) if config.sample_every else []
    tokenizer = chat_templates.apply(AutoTokenizer.from_pretrained(config.model), config.template)
    conversational = "text" not in records[0]
    if conversational and not tokenizer.chat_template:
        raise InvalidInput(
            _t("the tokenizer of {model} has no chat template", model=config.model),
            _t(
                "Save one with the tokenizer (tokenizer.chat_template = ...; "
                "save_pretrained), or use plain text data."
            ),
        )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if config.method == "sft" and conversational:  # the assistant's turns are the targets

        def tokenized(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
            on_prompt = config.train_on_prompt
            return [masking.tokenize(tokenizer, r["messages"], on_prompt) for r in rows]

        records, held = tokenized(records), tokenized(held)
    if config.method == "rm":
        from transformers import AutoModelForSequenceClassification
        from transformers.utils import logging as hf_logging

        level = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # not the load report of the new score head
        try:
            model = AutoModelForSequenceClassification.from_pretrained(config.model, num_labels=1)
        finally:
            hf_logging.set_verbosity(level)
        model.config.pad_token_id = tokenizer.pad_token_id
    elif config.quantization_bit is not None:
        model = _quantized_base(config, AutoModelForCausalLM)
    else:
        model = AutoModelForCausalLM.from_pretrained(config.model)
    root = output_root(config)
    checkpoints = root / "checkpoints"
    resume = checkpoint_to_resume(config, checkpoints)
    peft_config = _lora(config) if config.finetuning_type == "lora" else None
    report = _callback(perplexity=config.method in ("pt", "sft"))
    if config.method == "grpo":
        records, held = _grpo_prompts(records), _grpo_prompts(held)
    dataset = Dataset.from_list(records)
    eval_dataset = Dataset.from_list(held) if held else None
    common = _common(config, checkpoints, eval_dataset is not None)
    extra: dict[str, Any] = {}
    import trl

    if config.method in ("pt", "sft"):
        args: Any = trl.SFTConfig(**common, dataset_num_proc=None)
        trainer_class: Any = trl.SFTTrainer
    elif config.method == "rm":
        args = trl.RewardConfig(**common)
        trainer_class = trl.RewardTrainer
    elif config.method == "dpo":
        args = trl.DPOConfig(**common, beta=config.beta)
        trainer_class = trl.DPOTrainer
    else:
        assert config.reward_file is not None  # checked with the config
        args = trl.GRPOConfig(
            **common,
            beta=config.beta,
            num_generations=config.num_generations,
            max_completion_length=config.max_completion_length,
        )
        trainer_class = trl.GRPOTrainer
        extra["reward_funcs"] = load_reward(config.reward_file)
    trainer = trainer_class(
        model=model,
        args=args,
        train_dataset=dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=[report],
        **extra,
    )
    trainer.remove_callback(PrinterCallback)  # Report prints each step instead
    if asked and config.sample_every:
        every, most = config.sample_every, config.sample_max_new_tokens
        trainer.add_callback(
            samples.callback(tokenizer, asked, every, most, root / "samples.jsonl")
        )
    if resume and trainer.is_world_process_zero():
        state = json.loads((Path(resume) / "trainer_state.json").read_text())
        print(f"resuming from {resume} at step {state.get('global_step')}", flush=True)
    started = time.monotonic()
    result = trainer.train(resume_from_checkpoint=resume)
    took = time.monotonic() - started
    if eval_dataset is not None and report.eval_step != trainer.state.global_step:
        trainer.evaluate()  # at the end always: eval loss (and perplexity) into the metrics
    target = root / MODEL_DIR
    trainer.save_model(str(target))
    history = report.history
    losses = [h["loss"] for h in history if "loss" in h]
    final = {"train_loss": float(result.training_loss), "train_runtime_s": took}
    if losses:
        final["final_loss"] = losses[-1]
    for key in (
        "rewards/margins",
        "rewards/accuracies",
        "accuracy",
        "margin",
        "reward",
        "eval_loss",
        "eval_perplexity",
        "eval_accuracy",
        "eval_margin",
        "eval_reward",
    ):
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
        "task": "reward-model" if config.method == "rm" else "causal-lm",
        "resumed_from": resume,
        "train_records": len(records),
        "eval_records": len(held),
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
        # the eval figures are in the stream already (at this step): not twice
        last = {k: v for k, v in final.items() if not k.startswith("eval_")}
        metrics.report(step=int(trainer.state.global_step), checkpoint=str(target), **last)
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
