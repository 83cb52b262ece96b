"""What ``cube-lab evaluate CONFIG.yaml`` reads: which models, on which data, scored how.

```yaml
model: my-adapter:2          # the fine-tuned model: a registered version or a folder
baseline: base               # base (what it was tuned from; default) | none | a version | a folder
data: held.jsonl             # perplexity on held-out records (text or conversations)
prompts: prompts.jsonl       # a prompt set: prompt + expected, or alpaca / chat records
metrics: [exact_match, rouge_l]
scorer_file: score.py        # def score(prediction, expected, **row) -> float
max_new_tokens: 64
cutoff_len: 1024
template: qwen               # a chat template by name for every model (default: each tokenizer's)
```

Relative paths start at the config's folder. ``EvaluationConfig.models`` is filled by the
service: each model as ``{"label", "ref", "path", "adapter"}`` (``label`` "before" or
"after", or "model" when there is no baseline; ``adapter`` the LoRA folder over ``path``).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t
from . import chat_templates
from .config import DataConfig, _data, _int, _path, _text

METRICS = ("exact_match", "rouge_l")
KEYS = {
    "model",
    "baseline",
    "data",
    "prompts",
    "metrics",
    "scorer_file",
    "max_new_tokens",
    "cutoff_len",
    "template",
    "max_samples",
    "project",
    "name",
    "output_dir",
}


@dataclass
class EvaluationConfig:
    model: str
    baseline: str = "base"
    data: DataConfig | None = None
    prompts: str | None = None
    metrics: list[str] = field(default_factory=lambda: list(METRICS))
    scorer_file: str | None = None
    max_new_tokens: int = 64
    cutoff_len: int = 1024
    template: str | None = None
    max_samples: int | None = None  # of each file, the first N
    project: str | None = None
    name: str | None = None
    output_dir: str | None = None
    models: list[dict[str, Any]] = field(default_factory=list)  # resolved by the service

    @classmethod
    def from_dict(cls, raw: Any, base_dir: Path) -> EvaluationConfig:
        if not isinstance(raw, dict):
            raise InvalidInput(
                _t("an evaluation config must be a mapping"),
                _t("got {value}", value=type(raw).__name__),
            )
        unknown = sorted(set(raw) - KEYS)
        if unknown:
            raise InvalidInput(
                _t("unknown evaluation fields {unknown}", unknown=unknown),
                _t("Known: {value}", value=", ".join(sorted(KEYS))),
            )
        model = _text(raw.get("model"), "model", required=True)
        assert model is not None
        metrics = raw.get("metrics", list(METRICS))
        if not isinstance(metrics, list) or not set(metrics) <= set(METRICS):
            raise InvalidInput(
                _t("metrics must be a list of {known}", known=", ".join(METRICS)),
                _t("got {value!r}; write your own scores in scorer_file", value=metrics),
            )
        config = cls(
            model=_local(model, base_dir),
            baseline=_local(_text(raw.get("baseline"), "baseline") or "base", base_dir),
            data=_data(raw["data"], base_dir, "data") if raw.get("data") is not None else None,
            prompts=_path(raw.get("prompts"), "prompts", base_dir),
            metrics=list(metrics),
            scorer_file=_path(raw.get("scorer_file"), "scorer_file", base_dir),
            max_new_tokens=_int(raw.get("max_new_tokens", 64), "max_new_tokens", 1, 4096),
            cutoff_len=_int(raw.get("cutoff_len", 1024), "cutoff_len", 8, 131072),
            template=chat_templates.check(_text(raw.get("template"), "template")),
            max_samples=None
            if raw.get("max_samples") in (None, "")
            else _int(raw["max_samples"], "max_samples", 1, 10**9),
            project=_text(raw.get("project"), "project"),
            name=_text(raw.get("name"), "name"),
            output_dir=_path(raw.get("output_dir"), "output_dir", base_dir),
        )
        if config.data is None and config.prompts is None:
            raise InvalidInput(
                _t("an evaluation needs data (perplexity) or prompts (a prompt set), or both"),
                _t("e.g. data: held.jsonl, prompts: prompts.jsonl"),
            )
        if config.prompts is not None and not Path(config.prompts).is_file():
            raise InvalidInput(_t("prompts: {path} is not a file", path=config.prompts))
        if config.scorer_file is not None:
            if config.prompts is None:
                raise InvalidInput(_t("scorer_file scores the answers to prompts: give prompts"))
            if not Path(config.scorer_file).is_file():
                raise InvalidInput(_t("scorer_file: {path} is not a file", path=config.scorer_file))
        return config

    @classmethod
    def from_json(cls, text: str) -> EvaluationConfig:
        raw = json.loads(text)
        if raw.get("data"):
            raw["data"] = DataConfig(**raw["data"])
        return cls(**raw)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


def _local(text: str, base_dir: Path) -> str:
    """A folder relative to the config's folder as an absolute path; a registered version
    (``name:version``) or ``base`` / ``none`` as given."""
    if text in ("base", "none") or not (base_dir / text).is_dir():
        return text
    return str((base_dir / text).resolve())
