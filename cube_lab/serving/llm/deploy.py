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

An LLM deployment's *engine* (``ENGINES``) is what answers in its replicas:
``transformers`` (cube-lab's own engine, ``python -m cube_lab.serving.llm``), ``vllm``
(vLLM's OpenAI server, when installed), ``llamacpp`` (``llama-cpp-python``'s server, for a
GGUF file) or ``ollama`` (a running Ollama the user names in ``engine_options``). The last
three run under ``python -m cube_lab.serving.llm.external`` (``external.py``): one process a
replica, with the same ready file and backend key as the transformers engine. ``auto`` (the
default) picks ``llamacpp`` for a version whose files are a ``.gguf``, else ``transformers``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import InvalidInput
from ...locale.messages import _t

RUNTIMES = ("auto", "oip", "llm")
MODULE = "cube_lab.serving.llm"
EXTERNAL = "cube_lab.serving.llm.external"
ENGINES = ("auto", "transformers", "vllm", "llamacpp", "ollama")
# what each engine's process needs importable, and the package that brings it
_NEEDS: dict[str, tuple[tuple[str, ...], str]] = {
    "vllm": (("vllm",), "pip install vllm"),
    "llamacpp": (
        ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context",
         "pydantic_settings"),
        "pip install 'llama-cpp-python[server]'",
    ),
}  # fmt: skip
# the options each engine takes (passed on as its own flags), and their types
ENGINE_OPTIONS: dict[str, dict[str, type]] = {
    "transformers": {},
    "vllm": {
        "dtype": str, "max_model_len": int, "gpu_memory_utilization": float,
        "tensor_parallel_size": int, "max_num_seqs": int, "quantization": str,
        "max_lora_rank": int, "max_loras": int, "enforce_eager": bool,
        "enable_prefix_caching": bool, "seed": int,
    },
    "llamacpp": {
        "n_ctx": int, "n_threads": int, "n_gpu_layers": int, "n_batch": int,
        "chat_format": str,
    },
    "ollama": {"url": str, "model": str},
}  # fmt: skip
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
    engine: str = "transformers"  # see ENGINES (never auto here)
    engine_options: Mapping[str, object] = field(default_factory=dict)

    def argv(self, ready: Path) -> list[str]:
        if self.engine != "transformers":
            return self._external(ready)
        argv = [sys.executable, "-m", MODULE, "--model", str(self.model), "--name", self.name]
        if self.embedding:
            argv.append("--embedding")
        for adapter, path in self.adapters.items():
            argv += ["--adapter", f"{adapter}={path}"]
        return [*argv, "--host", "127.0.0.1", "--port", "0", "--ready-file", str(ready)]

    def _external(self, ready: Path) -> list[str]:
        """The supervisor (``external.py``) that starts the engine and stands for it."""
        model = self.model
        if self.engine == "llamacpp":
            model = gguf_file(model) or model
        argv = [sys.executable, "-m", EXTERNAL, "--engine", self.engine, "--model", str(model),
                "--name", self.name]  # fmt: skip
        for adapter, path in self.adapters.items():
            argv += ["--adapter", f"{adapter}={path}"]
        for key, value in sorted(self.engine_options.items()):
            text = json.dumps(value) if isinstance(value, bool) else str(value)
            argv += ["--option", f"{key}={text}"]
        return [*argv, "--host", "127.0.0.1", "--port", "0", "--ready-file", str(ready)]


def gguf_file(path: Path) -> Path | None:
    """The GGUF file a version's files are: the file itself, or a folder's only ``.gguf``."""
    if path.is_file():
        return path if path.suffix.lower() == ".gguf" else None
    if not path.is_dir():
        return None
    found = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() == ".gguf")
    return found[0] if len(found) == 1 else None


def _option(engine: str, key: object, value: object) -> object:
    kinds = ENGINE_OPTIONS[engine]
    if not isinstance(key, str) or key not in kinds:
        raise InvalidInput(
            _t("engine {engine} has no option {key!r}", engine=engine, key=key),
            _t(
                "Options of {engine}: {value}.",
                engine=engine,
                value=", ".join(sorted(kinds)) or "none",
            ),
        )
    kind = kinds[key]
    if kind is bool and isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if kind in (int, float) and isinstance(value, str) and not isinstance(value, bool):
        with contextlib.suppress(ValueError):
            return kind(value)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise InvalidInput(
            _t(
                "engine option {key} takes a {kind}, got {value!r}",
                key=key,
                kind=kind.__name__,
                value=value,
            )
        )
    if kind is str and (not value or any(c in str(value) for c in "\n\r\0")):
        raise InvalidInput(_t("engine option {key} must be a non-empty line", key=key))
    return value


def check_engine(value: object, options: object = None) -> tuple[str, dict[str, object]]:
    """(engine, options) as a deployment stores them, or InvalidInput before anything
    starts: an unknown engine or option, an engine that is not installed (naming the
    package to install), an Ollama URL the outbound policy refuses (``Forbidden``)."""
    engine = "auto" if value is None or value == "" else value
    if engine not in ENGINES:
        raise InvalidInput(
            _t("unknown engine {value!r}", value=value),
            _t(
                "Use transformers (cube-lab's engine), vllm (GPU), llamacpp (a GGUF file), "
                "ollama (a running Ollama: engine_options url and model), or leave it out."
            ),
        )
    if options is None:
        options = {}
    if not isinstance(options, Mapping):
        raise InvalidInput(_t("engine_options must be an object of option names and values"))
    if engine == "auto":
        if options:
            raise InvalidInput(
                _t("engine_options go with a named engine"),
                _t("Give engine (vllm, llamacpp, ollama) with them."),
            )
        return "auto", {}
    checked = {str(k): _option(str(engine), k, v) for k, v in options.items()}
    require_installed(str(engine))
    if engine == "ollama":
        for key in ("url", "model"):
            if key not in checked:
                raise InvalidInput(
                    _t("engine ollama needs engine_options {key}", key=key),
                    _t("url: the Ollama server (http://host:11434); model: its tag (llama3)."),
                )
        url = str(checked["url"]).rstrip("/")
        if url.endswith("/v1"):
            url = url[: -len("/v1")]
        if not url.startswith(("http://", "https://")) or "@" in url:
            raise InvalidInput(
                _t(
                    "engine_options url must be an http(s) URL of an Ollama server, got {value!r}",
                    value=checked["url"],
                )
            )
        from ... import outbound

        outbound.check_url(url, _t("Ollama URL"))
        checked["url"] = url
    return str(engine), checked


def require_installed(engine: str) -> None:
    """InvalidInput naming the package to install when ``engine``'s modules are missing."""
    if engine not in _NEEDS:
        return
    modules, package = _NEEDS[engine]
    missing = [m for m in modules if not _importable(m)]
    if missing:
        raise InvalidInput(
            _t(
                "engine {engine} is not installed on this server (missing {value})",
                engine=engine,
                value=", ".join(missing),
            ),
            _t("Install it in the server's Python environment: {command}", command=package),
        )


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def pick_engine(engine: str, flavor: str, artifact: Path, what: str) -> str:
    """The engine that serves a version (``auto`` resolved), or InvalidInput when the named
    one cannot serve it."""
    gguf = gguf_file(artifact)
    if engine == "auto":
        engine = "llamacpp" if gguf is not None else "transformers"
        require_installed(engine)
        return engine
    if engine == "llamacpp" and gguf is None:
        raise InvalidInput(
            _t(
                "engine llamacpp serves a GGUF file; {what} is not one (a .gguf file or a "
                "folder with one)",
                what=what,
            ),
            _t("Register the .gguf file as the model version, or use another engine."),
        )
    if engine in ("transformers", "vllm") and gguf is not None:
        raise InvalidInput(
            _t("{what} is a GGUF file: engine {engine} cannot load it", what=what, engine=engine),
            _t("Use engine llamacpp (or leave engine out)."),
        )
    if engine == "vllm" and not (flavor == "peft" or is_causal_lm(artifact)):
        raise InvalidInput(
            _t(
                "engine vllm serves a causal language model folder or a peft adapter; {what} "
                "is neither",
                what=what,
            ),
        )
    return engine


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


def choose(flavor: str, artifact: Path, asked: str, what: str, engine: str = "auto") -> str:
    """The runtime for a version of ``flavor`` stored at ``artifact``; ``what`` names it in
    errors (``tiny:2``). An engine other than transformers, a GGUF file, and any version
    with engine ollama (Ollama holds the weights) are served by the llm runtime."""
    if engine in ("vllm", "llamacpp", "ollama"):
        if asked == "oip":
            raise InvalidInput(
                _t("engine {engine} goes with runtime llm, not oip", engine=engine),
                _t("Leave runtime out (or give llm)."),
            )
        return "llm"
    llm_able = flavor == "peft" or (
        flavor == "transformers"
        and artifact.is_dir()
        and (is_causal_lm(artifact) or is_embedding_model(artifact))
    )
    if engine == "auto" and gguf_file(artifact) is not None and asked != "oip":
        return "llm"
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
