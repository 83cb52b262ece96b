"""A fine-tune config: what to train, on what, how; read from our keys or a LLaMA-Factory YAML.

``FinetuneConfig.from_dict`` checks every field and names the one that is wrong
(``InvalidInput``, a 400 over REST, a message and exit 2 on the CLI). A LLaMA-Factory
training YAML (``model_name_or_path``, ``stage``, ``lora_rank``, ``dataset`` +
``dataset_dir``...) is recognised by its keys and read as it is (``from_llamafactory``);
keys it has that cube-lab does not support yet are refused by name, never ignored silently.
Pure Python: nothing heavy is imported here (the CLI and the server read configs).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t
from . import chat_templates

METHODS = ("pt", "sft", "rm", "dpo", "grpo")
PREFERENCE_METHODS = ("rm", "dpo")
EVAL_STRATEGIES = ("no", "steps", "epoch")
FINETUNING_TYPES = ("lora", "full")
DATA_FORMATS = ("auto", "alpaca", "sharegpt", "openai", "preference", "text")
_REF = re.compile(r"^[A-Za-z0-9][\w.-]*:(\d+|[A-Za-z][\w-]*)\Z")  # name:version (or :alias)
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+\Z")


@dataclass
class DataConfig:
    """One data file and how to read it (LLaMA-Factory's ``dataset_info.json`` entry)."""

    path: str
    format: str = "auto"
    columns: dict[str, str] = field(default_factory=dict)  # our name -> the file's column
    tags: dict[str, str] = field(default_factory=dict)  # sharegpt role_tag, user_tag...
    ranking: bool = False  # preference pairs (LLaMA-Factory ``ranking: true``)
    max_samples: int | None = None


@dataclass
class LoraConfig:
    rank: int = 8
    alpha: int = 16
    dropout: float = 0.0
    target: list[str] | str = "all"  # "all": every linear layer but the output head


@dataclass
class FinetuneConfig:
    model: str  # a local Hugging Face folder, or a registered version "name:version"
    data: DataConfig
    method: str = "sft"
    finetuning_type: str = "lora"
    lora: LoraConfig = field(default_factory=LoraConfig)
    # QLoRA: the base loaded in 4 (or 8) bits by bitsandbytes, LoRA trained on top (CUDA only)
    quantization_bit: int | None = None
    double_quantization: bool = True
    # DeepSpeed ZeRO: a preset (zero2, zero3, *_offload) or a DeepSpeed JSON file (CUDA only)
    deepspeed: str | None = None
    # a chat template by name (chat_templates.TEMPLATES); None or "auto": the tokenizer's
    template: str | None = None
    # SFT on conversations: False trains on the assistant's turns only (LLaMA-Factory's default)
    train_on_prompt: bool = False
    cutoff_len: int = 1024
    learning_rate: float = 1e-4
    num_train_epochs: float = 3.0
    max_steps: int = -1
    per_device_train_batch_size: int = 1
    gradient_accumulation_steps: int = 1
    output_dir: str | None = None  # default: the job's $CUBE_OUTPUT_DIR
    seed: int = 42
    logging_steps: int = 1
    save_steps: int | None = None  # None: no intermediate checkpoints
    lr_scheduler_type: str = "linear"
    warmup_ratio: float = 0.0
    bf16: bool = False
    fp16: bool = False
    beta: float = 0.1  # DPO
    # evaluation: a share (below 1) or a count of the records held out, or a file of its own
    val_size: float = 0.0
    eval_data: DataConfig | None = None
    eval_strategy: str | None = None  # None: "steps" when eval_steps is given, else at the end
    eval_steps: int | None = None
    per_device_eval_batch_size: int = 1
    # True: the newest checkpoint of this output folder; or a checkpoint folder
    resume_from_checkpoint: str | bool | None = None
    # GRPO: a Python file with def reward(prompts, completions, **kw) -> list[float]
    reward_file: str | None = None
    num_generations: int = 4
    max_completion_length: int = 32
    # sample generations every N steps (log and OUTPUT/samples.jsonl); prompts: the data's
    sample_every: int | None = None
    sample_prompts: list[str] | None = None
    sample_max_new_tokens: int = 32
    project: str | None = None
    name: str | None = None
    # set when a registered version was resolved to its folder: "project/name:version"
    base_ref: str | None = None
    # set when the data is a registered dataset's: "project/name:version" (or ":source")
    dataset_ref: str | None = None

    # -- reading ------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Any, base_dir: Path | None = None) -> FinetuneConfig:
        """Our keys, or (recognised by ``model_name_or_path`` / ``stage``) LLaMA-Factory's.

        ``base_dir``: where relative paths start (the config file's folder)."""
        if not isinstance(data, dict):
            raise InvalidInput(
                _t("a fine-tune config must be a mapping"),
                _t("got {kind}", kind=type(data).__name__),
            )
        if "model_name_or_path" in data or "stage" in data:
            from .llamafactory import from_llamafactory

            return from_llamafactory(data, base_dir)
        known = {f.name for f in dataclasses.fields(cls)} - {"base_ref", "dataset_ref"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InvalidInput(
                _t("unknown fine-tune config fields {unknown}", unknown=unknown),
                _t("Known: {known}.", known=", ".join(sorted(known))),
            )
        base = base_dir or Path.cwd()
        model = _text(data.get("model"), "model", required=True)
        assert model is not None
        out = cls(
            model=resolve_model_path(model, base),
            data=_data(data.get("data"), base),
            method=_choice(data.get("method", "sft"), "method", METHODS),
            finetuning_type=_choice(
                data.get("finetuning_type", "lora"), "finetuning_type", FINETUNING_TYPES
            ),
            lora=_lora(data.get("lora")),
            quantization_bit=_quantization(data.get("quantization_bit")),
            double_quantization=_bool(data.get("double_quantization", True), "double_quantization"),
            deepspeed=_deepspeed(data.get("deepspeed"), base),
            template=chat_templates.check(_text(data.get("template"), "template")),
            train_on_prompt=_bool(data.get("train_on_prompt", False), "train_on_prompt"),
            cutoff_len=_int(data.get("cutoff_len", 1024), "cutoff_len", 8, 1 << 20),
            learning_rate=_float(data.get("learning_rate", 1e-4), "learning_rate", 0.0, 1.0),
            num_train_epochs=_float(data.get("num_train_epochs", 3.0), "num_train_epochs", 0, 1e6),
            max_steps=_int(data.get("max_steps", -1), "max_steps", -1, 10**9),
            per_device_train_batch_size=_int(
                data.get("per_device_train_batch_size", 1), "per_device_train_batch_size", 1, 65536
            ),
            gradient_accumulation_steps=_int(
                data.get("gradient_accumulation_steps", 1), "gradient_accumulation_steps", 1, 65536
            ),
            output_dir=_path(data.get("output_dir"), "output_dir", base),
            seed=_int(data.get("seed", 42), "seed", 0, 2**32 - 1),
            logging_steps=_int(data.get("logging_steps", 1), "logging_steps", 1, 10**9),
            save_steps=_optional_int(data.get("save_steps"), "save_steps", 1, 10**9),
            lr_scheduler_type=_text(data.get("lr_scheduler_type"), "lr_scheduler_type") or "linear",
            warmup_ratio=_float(data.get("warmup_ratio", 0.0), "warmup_ratio", 0.0, 1.0),
            bf16=_bool(data.get("bf16", False), "bf16"),
            fp16=_bool(data.get("fp16", False), "fp16"),
            beta=_float(data.get("beta", 0.1), "beta", 0.0, 1e3),
            val_size=_val_size(data.get("val_size", 0.0)),
            eval_data=None
            if data.get("eval_data") in (None, "")
            else _data(data.get("eval_data"), base, "eval_data"),
            eval_strategy=None
            if data.get("eval_strategy") in (None, "")
            else _choice(data.get("eval_strategy"), "eval_strategy", EVAL_STRATEGIES),
            eval_steps=_optional_int(data.get("eval_steps"), "eval_steps", 1, 10**9),
            per_device_eval_batch_size=_int(
                data.get("per_device_eval_batch_size", 1), "per_device_eval_batch_size", 1, 65536
            ),
            resume_from_checkpoint=_resume(data.get("resume_from_checkpoint"), base),
            reward_file=_path(data.get("reward_file"), "reward_file", base),
            num_generations=_int(data.get("num_generations", 4), "num_generations", 2, 1024),
            max_completion_length=_int(
                data.get("max_completion_length", 32), "max_completion_length", 1, 1 << 20
            ),
            sample_every=_optional_int(data.get("sample_every"), "sample_every", 1, 10**9),
            sample_prompts=_texts(data.get("sample_prompts"), "sample_prompts"),
            sample_max_new_tokens=_int(
                data.get("sample_max_new_tokens", 32), "sample_max_new_tokens", 1, 4096
            ),
            project=_text(data.get("project"), "project"),
            name=_text(data.get("name"), "name"),
            base_ref=_text(data.get("base_ref"), "base_ref"),
            dataset_ref=_text(data.get("dataset_ref"), "dataset_ref"),
        )
        out.check()
        return out

    def check(self) -> None:
        """Checks across fields, and against the data file."""
        if self.max_steps == -1 and self.num_train_epochs <= 0:
            raise InvalidInput(_t("num_train_epochs must be above 0 (or give max_steps)"))
        if self.max_steps == 0:
            raise InvalidInput(_t("max_steps must be at least 1, or -1 for num_train_epochs"))
        if self.bf16 and self.fp16:
            raise InvalidInput(_t("give bf16 or fp16, not both"))
        if self.sample_every is not None and self.method == "rm":
            raise InvalidInput(
                _t("sample_every: a reward model scores, it does not generate"),
                _t("Remove sample_every; its accuracy and margin show how it learns."),
            )
        if self.quantization_bit is not None and self.method == "rm":
            raise InvalidInput(
                _t("quantization_bit is not supported for reward models yet"),
                _t("Train the reward model with LoRA on the full-precision base."),
            )
        if self.quantization_bit is not None and self.finetuning_type != "lora":
            raise InvalidInput(
                _t(
                    "quantization_bit needs finetuning_type lora (QLoRA), not {kind}",
                    kind=self.finetuning_type,
                ),
                _t("A quantized base cannot be trained in full: set finetuning_type: lora."),
            )
        for data in (self.data, self.eval_data):
            if data is not None:
                check_format(self.method, data)
        if self.val_size and self.eval_data is not None:
            raise InvalidInput(
                _t("give val_size or eval_data, not both"),
                _t("val_size holds part of the training data out; eval_data is a file of its own."),
            )
        has_eval = bool(self.val_size) or self.eval_data is not None
        if (self.eval_steps or self.eval_strategy not in (None, "no")) and not has_eval:
            raise InvalidInput(
                _t("eval_steps / eval_strategy need an eval split"),
                _t("Set val_size (e.g. 0.1 of the records, or a count) or eval_data (a file)."),
            )
        if self.method == "grpo":
            if not self.reward_file:
                raise InvalidInput(
                    _t("method grpo needs reward_file"),
                    _t(
                        "Give a Python file with def reward(prompts, completions, "
                        "**kw) -> list[float]."
                    ),
                )
            if not is_kind(Path(self.reward_file), "file"):
                raise InvalidInput(
                    _t("reward_file: {reward_file} is not a file", reward_file=self.reward_file)
                )
            if self.per_device_train_batch_size % self.num_generations:
                raise InvalidInput(
                    _t(
                        "per_device_train_batch_size ({per_device_train_batch_size}) "
                        "must be a multiple of num_generations ({num_generations})",
                        per_device_train_batch_size=self.per_device_train_batch_size,
                        num_generations=self.num_generations,
                    ),
                    _t("GRPO samples num_generations completions per prompt within a batch."),
                )
        elif self.reward_file:
            raise InvalidInput(
                _t("reward_file is for method grpo (method is {method})", method=self.method),
                _t("Remove reward_file, or set method: grpo."),
            )

    @classmethod
    def from_json(cls, text: str) -> FinetuneConfig:
        """The resolved config the trainer is given (``to_json``), paths absolute already."""
        raw = json.loads(text)
        raw["data"] = DataConfig(**raw["data"])
        if raw.get("eval_data"):
            raw["eval_data"] = DataConfig(**raw["eval_data"])
        raw["lora"] = LoraConfig(**raw["lora"])
        return cls(**raw)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def hyperparameters(self) -> dict[str, Any]:
        """What the registered version's params record."""
        out: dict[str, Any] = {
            "method": self.method,
            "finetuning_type": self.finetuning_type,
            "base_model": self.base_ref or self.model,
            "dataset": self.data.path,
            "cutoff_len": self.cutoff_len,
            "train_on_prompt": self.train_on_prompt,
            "quantization_bit": self.quantization_bit,
            "deepspeed": self.deepspeed,
            "learning_rate": self.learning_rate,
            "num_train_epochs": self.num_train_epochs,
            "max_steps": self.max_steps,
            "per_device_train_batch_size": self.per_device_train_batch_size,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
            "seed": self.seed,
        }
        if self.finetuning_type == "lora":
            out.update(
                lora_rank=self.lora.rank,
                lora_alpha=self.lora.alpha,
                lora_dropout=self.lora.dropout,
                lora_target=self.lora.target
                if isinstance(self.lora.target, str)
                else ",".join(self.lora.target),
            )
        if chat_templates.is_named(self.template):
            out["template"] = self.template
        if self.method == "dpo":
            out["beta"] = self.beta
        if self.val_size:
            out["val_size"] = self.val_size
        if self.eval_data is not None:
            out["eval_dataset"] = self.eval_data.path
        if self.method == "grpo":
            out.update(
                reward_file=self.reward_file,
                num_generations=self.num_generations,
                max_completion_length=self.max_completion_length,
                beta=self.beta,
            )
        return out


def check_format(method: str, data: DataConfig) -> None:
    """The data's declared format fits the method (``auto`` is checked on the records,
    ``check_records``)."""
    preference = data.ranking or data.format == "preference"
    if method in PREFERENCE_METHODS:
        if data.format not in ("auto", "preference") and not data.ranking:
            raise InvalidInput(
                _t(
                    "method {method} needs preference data, and data.format is {format!r}",
                    method=method,
                    format=data.format,
                ),
                _t(
                    "Give prompt/chosen/rejected records (data.format: "
                    "preference), or ranking: true in dataset_info.json."
                ),
            )
        return
    if preference:
        raise InvalidInput(
            _t(
                "method {method} takes {takes}, not preference pairs",
                method=method,
                takes=_TAKES[method],
            ),
            _t("Use method dpo (or rm, a reward model) for prompt/chosen/rejected data."),
        )
    if method == "pt" and data.format not in ("auto", "text"):
        raise InvalidInput(
            _t("method pt trains on plain text, and data.format is {format!r}", format=data.format),
            _t("Give records with a text column (data.format: text), or use method sft."),
        )


_TAKES = {
    "pt": "plain text",
    "sft": "instruction or chat data",
    "grpo": "prompts (instruction or chat data)",
}


def check_records(method: str, first: dict[str, Any], name: str) -> None:
    """The converted records (``data.load_records``) are what the method trains on."""
    kind = "preference pairs" if "chosen" in first else "text" if "text" in first else "chats"
    fits = {
        "pt": kind == "text",
        "sft": kind != "preference pairs",
        "rm": kind == "preference pairs",
        "dpo": kind == "preference pairs",
        "grpo": kind == "chats",
    }[method]
    if fits:
        return
    needs = {
        "pt": "plain text (records with a text column)",
        "sft": "instruction or chat data, not preference pairs",
        "rm": "preference data (prompt / chosen / rejected)",
        "dpo": "preference data (prompt / chosen / rejected)",
        "grpo": "prompts (instruction or chat records; their answers are not used)",
    }[method]
    raise InvalidInput(
        _t("method {method} needs {needs}", method=method, needs=needs),
        _t("{name} holds {kind}.", name=name, kind=kind),
    )


# -- field checks --------------------------------------------------------------------------


def resolve_model_path(model: str, base: Path) -> str:
    """A local folder (absolute), a registered ``name:version`` (kept for the service to
    resolve), or an error that says why a hub id cannot be used here."""
    if _REF.match(model) and not is_kind(base / model, "any"):
        return model
    path = user_path(model, base, "model")
    if is_kind(path, "dir"):
        if not is_kind(path / "config.json", "file"):
            raise InvalidInput(
                _t(
                    "model: {path} is not a Hugging Face model folder (it has no config.json)",
                    path=path,
                ),
                _t(
                    "Give a folder saved with save_pretrained, or a registered "
                    "version name:version."
                ),
            )
        return str(path.resolve())
    if _HUB_ID.match(model) and not model.startswith((".", "/")):
        raise InvalidInput(
            _t(
                "model: {model!r} looks like a Hugging Face Hub id, and this "
                "machine is offline for model downloads",
                model=model,
            ),
            _t(
                "Download it where the hub can be reached (huggingface-cli "
                "download {model} --local-dir DIR), then give the folder, or "
                "register it (cube-lab model register DIR --name NAME) and "
                "give NAME:VERSION.",
                model=model,
            ),
        )
    raise InvalidInput(
        _t("model: {model!r} is neither a folder nor a registered version", model=model),
        _t("Looked for the folder {path}; give a Hugging Face folder or NAME:VERSION.", path=path),
    )


def is_kind(path: Path, kind: str) -> bool:
    """Whether ``path`` is a file / folder / anything, False for a name the system refuses
    (too long, a NUL byte): a config's text never turns into a server error."""
    try:
        if kind == "file":
            return path.is_file()
        return path.is_dir() if kind == "dir" else path.exists()
    except (OSError, ValueError):
        return False


def _data(value: Any, base: Path, name: str = "data") -> DataConfig:
    if isinstance(value, str):
        value = {"path": value}
    if not isinstance(value, dict):
        if name != "data":
            raise InvalidInput(
                _t("{name} must be a file or a mapping", name=name),
                _t("got {value!r}", value=value),
            )
        raise InvalidInput(
            _t("data is required"), _t("e.g. data: {{path: train.jsonl, format: alpaca}}")
        )
    known = {f.name for f in dataclasses.fields(DataConfig)}
    unknown = sorted(set(value) - known)
    if unknown:
        raise InvalidInput(
            _t("unknown {name} fields {unknown}", name=name, unknown=unknown),
            _t("Known: {known}.", known=", ".join(sorted(known))),
        )
    path = _path(value.get("path"), f"{name}.path", base, required=True)
    assert path is not None
    if not is_kind(Path(path), "file"):
        raise InvalidInput(
            _t("{name}.path: {path} is not a file", name=name, path=path),
            _t("Give a JSON, JSONL, CSV or Parquet file."),
        )
    for key in ("columns", "tags"):
        mapping = value.get(key) or {}
        if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
            raise InvalidInput(
                _t("{name}.{key} must map names to column names", name=name, key=key),
                _t("got {mapping!r}", mapping=mapping),
            )
    max_samples = value.get("max_samples")
    return DataConfig(
        path=path,
        format=_choice(value.get("format") or "auto", f"{name}.format", DATA_FORMATS),
        columns=dict(value.get("columns") or {}),
        tags=dict(value.get("tags") or {}),
        ranking=_bool(value.get("ranking", False), f"{name}.ranking"),
        max_samples=None
        if max_samples in (None, "")
        else _int(max_samples, f"{name}.max_samples", 1, 10**9),
    )


def _deepspeed(value: Any, base: Path) -> str | None:
    """A preset name as it is, a file as an absolute path (read in the job)."""
    from .deepspeed import PRESETS

    text = _text(value, "deepspeed")
    if text is None or text in PRESETS:
        return text
    path = _path(text, "deepspeed", base)
    if path is None or not is_kind(Path(path), "file"):
        raise InvalidInput(
            _t("deepspeed: {text!r} is neither a preset nor a file", text=text),
            _t(
                "Use one of {presets}, or a DeepSpeed JSON config file.", presets=", ".join(PRESETS)
            ),
        )
    return path


def _texts(value: Any, name: str) -> list[str] | None:
    if value in (None, []):
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise InvalidInput(
            _t("{name} must be a list of texts", name=name), _t("got {value!r}", value=value)
        )
    return list(value)


def _val_size(value: Any) -> float:
    """LLaMA-Factory's ``val_size``: below 1 a share of the records, from 1 a count."""
    size = _float(value if value not in (None, "") else 0.0, "val_size", 0.0, 1e9)
    if size >= 1 and not size.is_integer():
        raise InvalidInput(
            _t("val_size must be a share below 1 (0.1) or a whole count of records (20)"),
            _t("got {value!r}", value=value),
        )
    return size


def _resume(value: Any, base: Path) -> str | bool | None:
    """``true``: the newest checkpoint of the job's output folder (found when it starts);
    a path: that checkpoint folder (one the trainer saved: it holds trainer_state.json)."""
    if value in (None, "", False):
        return None
    if value is True:
        return True
    path = _path(value, "resume_from_checkpoint", base)
    assert path is not None
    if not is_kind(Path(path) / "trainer_state.json", "file"):
        raise InvalidInput(
            _t(
                "resume_from_checkpoint: {path} is not a checkpoint (it has no trainer_state.json)",
                path=path,
            ),
            _t(
                "Give a checkpoint-N folder saved by a fine-tune "
                "(save_steps), or true for the newest one in the output "
                "folder."
            ),
        )
    return path


def _optional_int(value: Any, name: str, low: int, high: int) -> int | None:
    return None if value in (None, "") else _int(value, name, low, high)


def _lora(value: Any) -> LoraConfig:
    if value is None:
        return LoraConfig()
    if not isinstance(value, dict):
        raise InvalidInput(_t("lora must be a mapping"), _t("e.g. lora: {{rank: 8, alpha: 16}}"))
    known = {f.name for f in dataclasses.fields(LoraConfig)}
    unknown = sorted(set(value) - known)
    if unknown:
        raise InvalidInput(
            _t("unknown lora fields {unknown}", unknown=unknown),
            _t("Known: {known}.", known=", ".join(sorted(known))),
        )
    return LoraConfig(
        rank=_int(value.get("rank", 8), "lora.rank", 1, 4096),
        alpha=_int(value.get("alpha", 16), "lora.alpha", 1, 1 << 16),
        dropout=_float(value.get("dropout", 0.0), "lora.dropout", 0.0, 0.99),
        target=lora_target(value.get("target", "all"), "lora.target"),
    )


def lora_target(value: Any, name: str) -> list[str] | str:
    """``all``, a comma list (LLaMA-Factory's ``lora_target``), or a list of module names."""
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
    elif isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        parts = [v.strip() for v in value]
    else:
        raise InvalidInput(
            _t("{name} must be 'all' or module names", name=name), _t("got {value!r}", value=value)
        )
    if not parts:
        raise InvalidInput(
            _t("{name} is empty", name=name), _t("Give 'all' or e.g. q_proj,v_proj.")
        )
    if parts == ["all"]:
        return "all"
    for part in parts:
        if not re.match(r"^[A-Za-z_][\w.]*$", part):
            raise InvalidInput(
                _t("{name}: {part!r} is not a module name", name=name, part=part),
                _t("e.g. q_proj,v_proj"),
            )
    return parts


def _quantization(value: Any) -> int | None:
    if value in (None, ""):
        return None
    if isinstance(value, bool) or value not in (4, 8):
        raise InvalidInput(
            _t("quantization_bit {value!r} is not supported", value=value),
            _t(
                "Use 4 (QLoRA, NF4) or 8 (bitsandbytes' int8), or leave it out for no quantization."
            ),
        )
    return int(value)


def _choice(value: Any, name: str, options: tuple[str, ...]) -> str:
    if value not in options:
        hint = _t("Use one of {options}.", options=", ".join(options))
        if name in ("method", "stage") and value in ("ppo", "kto"):
            hint = _t(
                "{value!r} is not supported yet; this version runs {options}.",
                value=value,
                options=", ".join(options),
            )
        raise InvalidInput(_t("{name} {value!r} is not supported", name=name, value=value), hint)
    return str(value)


def _text(value: Any, name: str, *, required: bool = False) -> str | None:
    if value is None or value == "":
        if required:
            raise InvalidInput(_t("{name} is required", name=name))
        return None
    if not isinstance(value, str):
        raise InvalidInput(
            _t("{name} must be a string", name=name), _t("got {value!r}", value=value)
        )
    return value


def _path(value: Any, name: str, base: Path, *, required: bool = False) -> str | None:
    text = _text(value, name, required=required)
    if text is None:
        return None
    path = user_path(text, base, name)
    try:
        return str(path.resolve())
    except (OSError, RuntimeError, ValueError) as exc:
        raise InvalidInput(
            _t("{name}: {text!r} is not a usable path", name=name, text=text), str(exc)
        ) from None


def user_path(text: str, base: Path, name: str) -> Path:
    """``text`` as a path (``~`` expanded), relative ones under ``base``."""
    try:
        path = Path(text).expanduser()
    except (RuntimeError, ValueError) as exc:  # ~nobody, a NUL byte
        raise InvalidInput(
            _t("{name}: {text!r} is not a usable path", name=name, text=text), str(exc)
        ) from None
    return path if path.is_absolute() else base / path


def _int(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, str) and re.match(r"^-?\d+$", value.strip()):
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(
            _t("{name} must be a whole number from {low} to {high}", name=name, low=low, high=high),
            _t("got {value!r}", value=value),
        )
    return value


def _float(value: Any, name: str, low: float, high: float) -> float:
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value)  # YAML reads 1e-4 (no dot) as a string
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(
            _t("{name} must be a number", name=name), _t("got {value!r}", value=value)
        )
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int past any float
        finite = False
    if not finite:
        raise InvalidInput(
            _t("{name} must be a finite number", name=name),
            _t("got {value}", value=str(value)[:40]),
        )
    if not low <= value <= high:
        raise InvalidInput(
            _t("{name} must be from {low:g} to {high:g}", name=name, low=low, high=high),
            _t("got {value!r}", value=value),
        )
    return float(value)


def _bool(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(
            _t("{name} must be true or false", name=name), _t("got {value!r}", value=value)
        )
    return value
