"""LLaMA-Factory training YAMLs and ``dataset_info.json`` entries, read as they are.

The keys are LLaMA-Factory's (``model_name_or_path``, ``stage``, ``finetuning_type``,
``lora_rank``, ``lora_target``, ``dataset`` + ``dataset_dir``...), mapped onto a
``FinetuneConfig``. Keys that only tune LLaMA-Factory's own bookkeeping are accepted and
have no effect here (``IGNORED``); keys for what cube-lab does not do yet are refused by
name (anything else), so a config never trains differently from what it says.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t
from .config import FinetuneConfig, is_kind, resolve_model_path, user_path

# LLaMA-Factory key -> FinetuneConfig field (same meaning)
MAPPED = {
    "model_name_or_path": "model",
    "stage": "method",
    "finetuning_type": "finetuning_type",
    "template": "template",
    "cutoff_len": "cutoff_len",
    "train_on_prompt": "train_on_prompt",
    "quantization_bit": "quantization_bit",
    "double_quantization": "double_quantization",
    "deepspeed": "deepspeed",
    "learning_rate": "learning_rate",
    "num_train_epochs": "num_train_epochs",
    "max_steps": "max_steps",
    "per_device_train_batch_size": "per_device_train_batch_size",
    "gradient_accumulation_steps": "gradient_accumulation_steps",
    "output_dir": "output_dir",
    "seed": "seed",
    "logging_steps": "logging_steps",
    "save_steps": "save_steps",
    "lr_scheduler_type": "lr_scheduler_type",
    "warmup_ratio": "warmup_ratio",
    "bf16": "bf16",
    "fp16": "fp16",
    "pref_beta": "beta",
    "val_size": "val_size",
    "eval_strategy": "eval_strategy",
    "eval_steps": "eval_steps",
    "per_device_eval_batch_size": "per_device_eval_batch_size",
    "resume_from_checkpoint": "resume_from_checkpoint",
}
LORA = {
    "lora_rank": "rank",
    "lora_alpha": "alpha",
    "lora_dropout": "dropout",
    "lora_target": "target",
}
DATA = ("dataset", "dataset_dir", "max_samples", "eval_dataset")
# bookkeeping of LLaMA-Factory's own runs: no effect on what is trained
IGNORED = (
    "do_train",
    "overwrite_output_dir",
    "overwrite_cache",
    "plot_loss",
    "report_to",
    "preprocessing_num_workers",
    "dataloader_num_workers",
    "ddp_timeout",
    "save_only_model",
    "trust_remote_code",
    "run_name",
)
_SHAREGPT_TAGS = {
    "role_tag": "from",
    "content_tag": "value",
    "user_tag": "human",
    "assistant_tag": "gpt",
    "system_tag": "system",
}


def from_llamafactory(data: dict[str, Any], base_dir: Path | None = None) -> FinetuneConfig:
    base = base_dir or Path.cwd()
    known = {*MAPPED, *LORA, *DATA, *IGNORED}
    unsupported = sorted(set(data) - known)
    if unsupported:
        raise InvalidInput(
            _t(
                "LLaMA-Factory keys cube-lab does not support yet: {unsupported}",
                unsupported=unsupported,
            ),
            _t(
                "Remove them to run this config here (they would change what "
                "is trained: cube-lab will not ignore them). Supported: "
                "{known}.",
                known=", ".join(sorted(known)),
            ),
        )
    if data.get("trust_remote_code"):
        raise InvalidInput(
            _t("trust_remote_code: true is not supported"),
            _t("cube-lab fine-tunes models whose code ships with transformers; remove the key."),
        )
    if data.get("do_train") is False:
        raise InvalidInput(_t("do_train: false asks for no training"), _t("Set do_train: true."))
    ours: dict[str, Any] = {ours: data[lf] for lf, ours in MAPPED.items() if lf in data}
    if "model" not in ours:
        raise InvalidInput(_t("model_name_or_path is required"))
    if isinstance(ours["model"], str):  # checked first: the error a hub id gets says why
        resolve_model_path(ours["model"], base)
    lora = {ours: data[lf] for lf, ours in LORA.items() if lf in data}
    if lora:
        ours["lora"] = lora
    ours["data"] = dataset_entry(data.get("dataset"), data.get("dataset_dir"), base)
    if data.get("max_samples") not in (None, ""):
        ours["data"]["max_samples"] = data["max_samples"]
    if data.get("eval_dataset") not in (None, ""):
        ours["eval_data"] = dataset_entry(
            data["eval_dataset"], data.get("dataset_dir"), base, "eval_dataset"
        )
    return FinetuneConfig.from_dict(ours, base)


def dataset_entry(
    dataset: Any, dataset_dir: Any, base: Path, key: str = "dataset"
) -> dict[str, Any]:
    """The ``data`` mapping for ``dataset`` (one name of ``dataset_info.json`` in
    ``dataset_dir``, default ``data``), or a file given directly. ``key``: the YAML key
    named in errors (``dataset`` or ``eval_dataset``)."""
    if not isinstance(dataset, str) or not dataset.strip():
        raise InvalidInput(
            _t("{key} is required", key=key), _t("Name an entry of dataset_info.json.")
        )
    names = [n.strip() for n in dataset.split(",") if n.strip()]
    if len(names) > 1:
        raise InvalidInput(
            _t(
                "{key}: {count} datasets ({dataset}); this version takes one",
                key=key,
                count=len(names),
                dataset=dataset,
            ),
            _t("Give one dataset name (merging several comes later)."),
        )
    name = names[0]
    folder = user_path(str(dataset_dir or "data"), base, "dataset_dir")
    info_path = folder / "dataset_info.json"
    if not is_kind(info_path, "file"):
        if is_kind(folder / name, "file"):  # a file named directly
            return {"path": str(folder / name)}
        raise InvalidInput(
            _t("dataset_dir: {info_path} not found", info_path=info_path),
            _t("Give dataset_dir: the folder holding dataset_info.json and the data files."),
        )
    try:
        info = json.loads(info_path.read_text())
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            _t("{info_path} is not valid JSON", info_path=info_path), str(exc)
        ) from None
    entry = info.get(name) if isinstance(info, dict) else None
    if not isinstance(entry, dict):
        raise InvalidInput(
            _t("dataset {name!r} is not in {info_path}", name=name, info_path=info_path),
            _t(
                "Known: {known}.",
                known=", ".join(sorted(info)) if isinstance(info, dict) else "none",
            ),
        )
    for remote in ("hf_hub_url", "ms_hub_url", "om_hub_url", "script_url", "cloud_file_name"):
        if entry.get(remote):
            raise InvalidInput(
                _t(
                    "dataset {name!r} is fetched from {remote}, and this machine is offline",
                    name=name,
                    remote=remote,
                ),
                _t("Download the data and point file_name at the file."),
            )
    file_name = entry.get("file_name")
    if not isinstance(file_name, str):
        raise InvalidInput(
            _t("dataset {name!r} in {name2} has no file_name", name=name, name2=info_path.name)
        )
    formatting = entry.get("formatting", "alpaca")
    if formatting not in ("alpaca", "sharegpt"):
        raise InvalidInput(
            _t(
                "dataset {name!r}: formatting {formatting!r} is not supported",
                name=name,
                formatting=formatting,
            ),
            _t("Use alpaca or sharegpt."),
        )
    columns = entry.get("columns") or {}
    tags = entry.get("tags") or {}
    if not isinstance(columns, dict) or not isinstance(tags, dict):
        raise InvalidInput(_t("dataset {name!r}: columns and tags must be mappings", name=name))
    fmt = formatting
    if formatting == "sharegpt":
        tags = {**_SHAREGPT_TAGS, **tags}
        if tags.get("role_tag") == "role" and tags.get("content_tag") == "content":
            fmt = "openai"
    ranking = bool(entry.get("ranking", False))
    if formatting == "alpaca" and set(columns) == {"prompt"}:  # pre-training text
        fmt = "text"
    return {
        "path": str(folder / file_name),
        "format": fmt,
        "columns": {str(k): str(v) for k, v in columns.items()},
        "tags": {str(k): str(v) for k, v in tags.items()},
        "ranking": ranking,
    }
