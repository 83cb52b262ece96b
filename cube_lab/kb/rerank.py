"""An optional cross-encoder reranker: a registered model scores (query, chunk) pairs.

A retrieval (search, evaluation, chat) may carry ``rerank: {"model": "NAME[/VERSION]",
"top_n": N}`` (or the knowledge base's default, ``kb.json``'s ``rerank``). The model is a
version in the model registry of the knowledge base's project: a sentence-transformers
``CrossEncoder`` folder or any Hugging Face sequence-classification folder with one label
(``num_labels=1``). The first ``top_n`` fused hits (default ``3 * k``, at most ``MAX_TOP_N``)
are scored in batches, reordered by that score (ties keep the first-stage order) and each
carries ``rerank``: the model's relevance logit (higher is more relevant), beside its keyword,
vector and fused scores. Hits past ``top_n`` keep their order after the reranked ones, with
``rerank`` None.

A model is loaded once per process and kept per (project, model, version, artifact checksum),
thread-safe (one scoring at a time per model); it runs on the CPU with torch, imported only
when a reranker is first used.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidInput, NotFound
from ..identity import Caller
from ..locale.messages import _t

MAX_TOP_N = 200
TOP_N_FACTOR = 3  # default top_n: this many times k
BATCH = 16
MAX_LENGTH = 512  # tokens of one (query, chunk) pair
FIELDS = ("model", "top_n")
_EXAMPLE = '{"model": "my-reranker/2", "top_n": 20}'


@dataclass(frozen=True)
class RerankSpec:
    """A checked ``rerank`` option: the registered model, its version, how many hits."""

    model: str
    version: str = "latest"
    top_n: int | None = None

    @property
    def ref(self) -> str:
        return self.model if self.version == "latest" else f"{self.model}/{self.version}"

    def depth(self, k: int) -> int:
        """How many first-stage hits the model scores."""
        return self.top_n if self.top_n is not None else min(TOP_N_FACTOR * k, MAX_TOP_N)

    def to_json(self) -> dict[str, Any]:
        return {"model": self.ref, "top_n": self.top_n}


def check_rerank(raw: object) -> RerankSpec | None:
    """``{"model": "NAME[/VERSION]", "top_n": N}`` (or just ``"NAME[/VERSION]"``) as a spec;
    None or false: no reranker. Raises InvalidInput for anything else."""
    if raw is None or raw is False:
        return None
    if isinstance(raw, str):
        raw = {"model": raw}
    if not isinstance(raw, dict):
        raise InvalidInput(
            _t("rerank must be an object with a model"), _t("e.g. {value}", value=_EXAMPLE)
        )
    unknown = sorted(set(raw) - set(FIELDS))
    if unknown:
        raise InvalidInput(
            _t("unknown rerank fields {unknown}", unknown=unknown),
            _t("Known: {value}", value=", ".join(FIELDS)),
        )
    model = raw.get("model")
    if not isinstance(model, str) or not model.strip():
        raise InvalidInput(
            _t("rerank.model must name a registered model"), _t("e.g. {value}", value=_EXAMPLE)
        )
    name, _, version = model.strip().partition("/")
    if not name or "/" in version or (_ and not version):
        raise InvalidInput(
            _t("rerank.model {model!r} is not NAME or NAME/VERSION", model=model),
            _t("e.g. my-reranker, my-reranker/2 or my-reranker/production (an alias)"),
        )
    top_n = raw.get("top_n")
    if top_n is not None and (
        not isinstance(top_n, int) or isinstance(top_n, bool) or not 1 <= top_n <= MAX_TOP_N
    ):
        raise InvalidInput(
            _t(
                "rerank.top_n must be an integer from 1 to {max}, not {top_n!r}",
                max=MAX_TOP_N,
                top_n=top_n,
            ),
            _t("The first top_n hits are rescored; default {n} times k.", n=TOP_N_FACTOR),
        )
    return RerankSpec(name, version or "latest", top_n)


class CrossEncoder:
    """A one-label sequence-classification model and its tokenizer, on the CPU."""

    def __init__(self, folder: Path, shown: str) -> None:
        from transformers import AutoConfig

        try:
            config = AutoConfig.from_pretrained(folder, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise not_a_cross_encoder(shown, str(exc)) from exc
        architectures = getattr(config, "architectures", None) or []
        classifier = any(a.endswith("ForSequenceClassification") for a in architectures)
        if config.num_labels != 1 or (architectures and not classifier):
            raise not_a_cross_encoder(
                shown,
                _t(
                    "its config has num_labels={n} and architectures {value}",
                    n=config.num_labels,
                    value=architectures,
                ),
            )
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
            self.model = AutoModelForSequenceClassification.from_pretrained(
                folder, local_files_only=True
            )
        except (OSError, ValueError) as exc:
            raise not_a_cross_encoder(shown, str(exc)) from exc
        self.model.eval()
        self._torch = torch
        # a fast tokenizer's padding/truncation state is not safe to share between threads
        self._lock = threading.Lock()
        self.max_length = min(int(getattr(self.tokenizer, "model_max_length", 0) or 0), MAX_LENGTH)
        self.max_length = self.max_length or MAX_LENGTH

    def score(self, query: str, texts: Sequence[str], batch: int = BATCH) -> list[float]:
        """One relevance logit per text, for (query, text) pairs in batches."""
        out: list[float] = []
        with self._lock, self._torch.inference_mode():
            for start in range(0, len(texts), batch):
                part = list(texts[start : start + batch])
                encoded = self.tokenizer(
                    [query] * len(part),
                    part,
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                )
                logits = self.model(**encoded).logits
                out.extend(float(v) for v in logits.reshape(-1).tolist())
        return out


def not_a_cross_encoder(shown: str, why: str) -> InvalidInput:
    return InvalidInput(
        _t("model {model} is not a cross-encoder reranker", model=shown),
        _t(
            "{why}. A reranker is a sentence-transformers CrossEncoder folder or a Hugging Face "
            "sequence-classification model with num_labels=1.",
            why=why,
        ),
    )


Key = tuple[str, str, int, str]  # project, model, version, the artifact's checksum
_models: dict[Key, CrossEncoder] = {}
_loading: dict[Key, threading.Lock] = {}
_guard = threading.Lock()


def _cached(key: Key, folder: Path, shown: str) -> CrossEncoder:
    """The process's one loaded model for ``key``; concurrent first uses load it once."""
    with _guard:
        found = _models.get(key)
        if found is not None:
            return found
        lock = _loading.setdefault(key, threading.Lock())
    with lock:
        with _guard:
            found = _models.get(key)
        if found is None:
            found = CrossEncoder(folder, shown)
            with _guard:
                _models[key] = found
        return found


def loaded() -> list[tuple[str, str, int]]:
    """The (project, model, version) of each model loaded in this process."""
    with _guard:
        return sorted(key[:3] for key in _models)


def clear() -> None:
    with _guard:
        _models.clear()
        _loading.clear()


def resolve(registry: Any, caller: Caller, project: str, spec: RerankSpec) -> CrossEncoder:
    """The loaded model of ``spec`` from ``project``'s registry. A model the caller cannot see
    (another project's) reads as unknown: InvalidInput saying how to register one."""
    try:
        version = registry.get_version(caller, project, spec.model, spec.version)
        folder = registry.download(caller, project, spec.model, version.version).path
    except NotFound as exc:
        raise InvalidInput(
            _t(
                "unknown reranker model {model!r} in project {project!r}",
                model=spec.ref,
                project=project,
            ),
            _t(
                "{why}. Register a cross-encoder there first, e.g. cube-lab model register "
                "FOLDER --name {name} --project {project} (a sentence-transformers CrossEncoder "
                "folder or a Hugging Face sequence-classification model with num_labels=1).",
                why=exc.error,
                name=spec.model,
                project=project,
            ),
        ) from exc
    shown = f"{spec.model}/{version.version}"
    if not Path(folder).is_dir() or not (Path(folder) / "config.json").is_file():
        raise not_a_cross_encoder(shown, _t("its files are not a Hugging Face folder"))
    key = (project, spec.model, int(version.version), str(version.checksum))
    return _cached(key, Path(folder), shown)


def rerank(
    hits: list[dict[str, Any]],
    query: str,
    score: Callable[[str, Sequence[str]], list[float]],
    top_n: int,
) -> list[dict[str, Any]]:
    """``hits`` with the first ``top_n`` scored by ``score`` and ordered by it (best first,
    ties in their first-stage order), each with ``rerank``; the rest after them unscored."""
    head, tail = hits[:top_n], hits[top_n:]
    scores = score(query, [h["text"] for h in head]) if head else []
    order = sorted(range(len(head)), key=lambda n: (-scores[n], n))
    ranked = [{**head[n], "rerank": scores[n], "first_rank": n + 1} for n in order]
    rest = [{**h, "rerank": None, "first_rank": len(head) + n + 1} for n, h in enumerate(tail)]
    return ranked + rest
