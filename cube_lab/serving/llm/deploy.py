"""Which server a deployment's replicas run, and how an LLM replica is started.

A deployment's *runtime* is ``oip`` (``cube_lab.serving.server``: Open Inference Protocol v2
and ``/predict``) or ``llm`` (``cube_lab.serving.llm``: OpenAI's ``/v1`` API on the
transformers engine). ``auto`` (the default) picks ``llm`` for

- a ``transformers`` version stored as a plain Hugging Face folder whose ``config.json``
  names a causal LM architecture (``...ForCausalLM``, ``...LMHeadModel``), and
- a ``peft`` version (a LoRA adapter): served on its base, under the adapter's model name;
- an embedding model: a ``transformers`` folder saved by sentence-transformers
  (``modules.json`` with a Pooling module) or a BERT-style encoder (a bare ``BertModel``,
  ``XLMRobertaModel``...): served on ``POST /v1/embeddings``;

and ``oip`` for everything else (a transformers *pipeline* saved by MLflow keeps the OIP
server). Standard library only: the deployment service imports it at start-up.
"""

from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import InvalidInput
from ...locale.messages import _t

RUNTIMES = ("auto", "oip", "llm")
MODULE = "cube_lab.serving.llm"
_LM_SUFFIXES = ("ForCausalLM", "LMHeadModel")
# encoders whose bare model (``BertModel``...) embeds text when no sentence-transformers
# configuration says otherwise (mean pooling, normalized)
ENCODER_TYPES = frozenset(
    {"bert", "roberta", "xlm-roberta", "mpnet", "distilbert", "electra", "albert",
     "camembert", "deberta", "deberta-v2", "modernbert", "nomic_bert", "new"}
)  # fmt: skip


@dataclass(frozen=True)
class LLMPlan:
    """What one LLM replica serves: a base folder under ``name``, and adapters on it."""

    model: Path
    name: str
    adapters: dict[str, Path] = field(default_factory=dict)
    embedding: bool = False  # an embedding model: /v1/embeddings, no generation

    def argv(self, ready: Path) -> list[str]:
        argv = [sys.executable, "-m", MODULE, "--model", str(self.model), "--name", self.name]
        if self.embedding:
            argv.append("--embedding")
        for adapter, path in self.adapters.items():
            argv += ["--adapter", f"{adapter}={path}"]
        return [*argv, "--host", "127.0.0.1", "--port", "0", "--ready-file", str(ready)]


def check_runtime(value: object) -> str:
    if value is None or value == "":
        return "auto"
    if value not in RUNTIMES:
        raise InvalidInput(
            _t("unknown runtime {value!r}", value=value),
            _t(
                "Use llm (OpenAI-compatible /v1 API for a causal LM or a peft adapter), "
                "oip (Open Inference Protocol v2), or leave it out to choose by the "
                "model's flavor."
            ),
        )
    return str(value)


def is_causal_lm(path: Path) -> bool:
    """A Hugging Face folder whose config names a causal language model."""
    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, ValueError):
        return False
    names = config.get("architectures") or []
    return any(isinstance(n, str) and n.endswith(_LM_SUFFIXES) for n in names)


def sentence_transformers_modules(path: Path) -> list[dict[str, object]] | None:
    """The modules a sentence-transformers folder lists (``modules.json``), None elsewhere."""
    try:
        modules = json.loads((path / "modules.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
        return None
    return modules


def is_embedding_model(path: Path) -> bool:
    """A sentence-transformers folder with a Pooling module, or a Hugging Face folder of a
    bare BERT-style encoder (``BertModel``, ``XLMRobertaModel``...)."""
    if not path.is_dir():
        return False
    modules = sentence_transformers_modules(path)
    if modules is not None:
        return any(str(m.get("type", "")).endswith(".Pooling") for m in modules)
    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, ValueError):
        return False
    names = config.get("architectures") or []
    bare = any(isinstance(n, str) and n.endswith("Model") for n in names)
    return bare and config.get("model_type") in ENCODER_TYPES


def choose(flavor: str, artifact: Path, asked: str, what: str) -> str:
    """The runtime for a version of ``flavor`` stored at ``artifact``; ``what`` names it in
    errors (``tiny:2``)."""
    llm_able = flavor == "peft" or (
        flavor == "transformers"
        and artifact.is_dir()
        and (is_causal_lm(artifact) or is_embedding_model(artifact))
    )
    if asked == "oip":
        if flavor == "peft":
            raise InvalidInput(
                _t("{what} is a peft adapter: the OIP server cannot serve it", what=what),
                _t("Deploy it with runtime llm (or leave runtime out)."),
            )
        return "oip"
    if asked == "llm" and not llm_able:
        raise InvalidInput(
            _t(
                "runtime llm serves a causal language model (a transformers folder) or a peft "
                "adapter; {what} is a transformers model that is not a causal LM folder",
                what=what,
            )
            if flavor == "transformers"
            else _t(
                "runtime llm serves a causal language model (a transformers folder) or a peft "
                "adapter; {what} is a {flavor} model",
                what=what,
                flavor=flavor,
            ),
            _t("Leave runtime out to serve it with the OIP v2 server."),
        )
    return "llm" if llm_able else "oip"


def adapter_base(adapter: Path) -> tuple[str | None, str | None]:
    """(registered base reference ``name:version``, base folder) an adapter records: its
    ``cube_finetune.json`` (written by cube-lab's fine-tuning), else ``adapter_config.json``'s
    ``base_model_name_or_path``."""
    meta: dict[str, object] = {}
    with contextlib.suppress(OSError, ValueError):
        meta = json.loads((adapter / "cube_finetune.json").read_text())
    ref = meta.get("base_ref")
    folder = meta.get("base_model")
    if not folder:
        try:
            folder = json.loads((adapter / "adapter_config.json").read_text()).get(
                "base_model_name_or_path"
            )
        except (OSError, ValueError):
            folder = None
    return (str(ref) if ref else None), (str(folder) if folder else None)


def base_name(base: str, model: str) -> str:
    """The base's name in ``/v1/models`` beside the adapter served as ``model``."""
    return base if base != model else f"{base}-base"
