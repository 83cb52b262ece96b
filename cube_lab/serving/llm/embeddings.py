"""Text embeddings for ``POST /v1/embeddings``: a sentence-transformers folder (or a bare
BERT-style encoder) run with transformers, pooled and normalized the way its configuration
says, and the route's request and answer in OpenAI's shape.

The folder's ``modules.json`` names the modules: the Transformer (its folder, ``""`` for the
top), a Pooling module (``1_Pooling/config.json``: ``pooling_mode_cls_token``,
``pooling_mode_mean_tokens``, ``pooling_mode_max_tokens``, ``pooling_mode_mean_sqrt_len_tokens``,
``pooling_mode_lasttoken``; several modes are concatenated in sentence-transformers' order)
and Normalize when the vectors are unit length. ``sentence_bert_config.json`` gives
``max_seq_length`` (longer inputs are cut there, as sentence-transformers does). A folder
without ``modules.json`` gets mean pooling and normalization.
"""

from __future__ import annotations

import base64
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .deploy import sentence_transformers_modules
from .engine import EngineError
from .protocol import OpenAIError

MODES = ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens", "lasttoken")
BATCH = 32
MAX_INPUTS = 2048  # as OpenAI's API


@dataclass(frozen=True)
class Pooling:
    modes: tuple[str, ...]
    normalize: bool
    max_seq_length: int | None


def read_pooling(folder: Path) -> tuple[Path, Pooling]:
    """(the transformer's folder, how its token vectors become one) from the configuration."""
    modules = sentence_transformers_modules(folder)
    if modules is None:
        return folder, Pooling(("mean_tokens",), True, None)
    by_type = {str(m.get("type", "")).rsplit(".", 1)[-1]: m for m in modules}
    transformer = folder / str((by_type.get("Transformer") or {}).get("path") or "")
    pooling = by_type.get("Pooling")
    if pooling is None:
        raise EngineError(f"{folder}: modules.json has no Pooling module")
    try:
        conf = json.loads((folder / str(pooling.get("path") or "") / "config.json").read_text())
    except (OSError, ValueError) as exc:
        raise EngineError(f"{folder}: the Pooling module's config.json: {exc}") from None
    modes = tuple(m for m in MODES if conf.get(f"pooling_mode_{m}"))
    unknown = [
        k for k, v in conf.items()
        if k.startswith("pooling_mode_") and v and k[len("pooling_mode_"):] not in MODES
    ]  # fmt: skip
    if unknown or not modes:
        raise EngineError(
            f"{folder}: pooling {unknown or 'none'} is not supported (cube-lab pools with "
            f"{', '.join(MODES)})"
        )
    max_len = None
    try:
        st = json.loads((transformer / "sentence_bert_config.json").read_text())
        max_len = int(st["max_seq_length"]) if st.get("max_seq_length") else None
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return transformer, Pooling(modes, "Normalize" in by_type, max_len)


class EmbeddingModel:
    """One encoder, its tokenizer and pooling; ``encode`` is thread-safe (one at a time)."""

    def __init__(self, folder: Path, device: str | None = None) -> None:
        try:
            import torch
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:
            raise EngineError(
                f"the embedding server needs torch and transformers ({exc}); "
                "pip install 'cube-lab[llm]'"
            ) from None
        self.torch = torch
        transformer, self.pooling = read_pooling(folder)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(transformer)
            self.model = AutoModel.from_pretrained(transformer).to(self.device).eval()
        except (OSError, ValueError) as exc:
            raise EngineError(f"cannot load the encoder in {transformer}: {exc}") from None
        limits = [
            n
            for n in (
                self.pooling.max_seq_length,
                getattr(self.model.config, "max_position_embeddings", None),
                self.tokenizer.model_max_length
                if self.tokenizer.model_max_length < 1_000_000
                else None,
            )
            if n
        ]
        self.max_length = min(limits) if limits else 512
        hidden = int(self.model.config.hidden_size)
        self.dimensions = hidden * len(self.pooling.modes)
        self.lock = threading.Lock()
        self.requests = 0
        self.tokens = 0

    def encode(self, inputs: list[str] | list[list[int]]) -> tuple[list[list[float]], int]:
        """The vectors of ``inputs`` (texts, or token ids) and the tokens they took."""
        out: list[list[float]] = []
        used = 0
        with self.lock, self.torch.inference_mode():
            for start in range(0, len(inputs), BATCH):
                vectors, n = self._batch(inputs[start : start + BATCH])
                out += vectors
                used += n
            self.requests += 1
            self.tokens += used
        return out, used

    def _batch(self, chunk: list[Any]) -> tuple[list[list[float]], int]:
        torch = self.torch
        if isinstance(chunk[0], str):
            enc = self.tokenizer(
                chunk,
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            )
        else:
            rows = [list(ids)[: self.max_length] for ids in chunk]
            pad = self.tokenizer.pad_token_id or 0
            width = max(len(r) for r in rows)
            enc = {
                "input_ids": torch.tensor([r + [pad] * (width - len(r)) for r in rows]),
                "attention_mask": torch.tensor(
                    [[1] * len(r) + [0] * (width - len(r)) for r in rows]
                ),
            }
        enc = {k: v.to(self.device) for k, v in enc.items()}
        tokens = self.model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(tokens.dtype)
        parts = []
        for mode in self.pooling.modes:
            if mode == "cls_token":
                parts.append(tokens[:, 0])
            elif mode == "max_tokens":
                parts.append(tokens.masked_fill(mask == 0, -1e9).max(dim=1).values)
            elif mode == "lasttoken":
                last = enc["attention_mask"].sum(dim=1) - 1
                parts.append(tokens[torch.arange(tokens.shape[0]), last])
            else:
                summed = (tokens * mask).sum(dim=1)
                count = mask.sum(dim=1).clamp(min=1e-9)
                parts.append(summed / (count if mode == "mean_tokens" else count.sqrt()))
        pooled = torch.cat(parts, dim=1).float()
        if self.pooling.normalize:
            pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
        return pooled.cpu().tolist(), int(enc["attention_mask"].sum())


@dataclass
class EmbeddingRequest:
    model: str
    inputs: list[str] | list[list[int]]
    base64: bool


def parse_embeddings(body: dict[str, Any], dimensions: int) -> EmbeddingRequest:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise OpenAIError(
            "you must provide a model parameter (a name that GET /v1/models lists)", "model"
        )
    raw = body.get("input")
    how = "'input' must be a string, a list of strings, a list of token ids or a list of those"
    if isinstance(raw, str):
        inputs: list[Any] = [raw]
    elif isinstance(raw, list) and raw and all(isinstance(x, str) for x in raw):
        inputs = list(raw)
    elif isinstance(raw, list) and raw and all(_token(x) for x in raw):
        inputs = [list(raw)]
    elif (
        isinstance(raw, list)
        and raw
        and all(isinstance(x, list) and x and all(_token(t) for t in x) for x in raw)
    ):
        inputs = [list(x) for x in raw]
    else:
        raise OpenAIError(how, "input")
    if any(isinstance(x, str) and not x for x in inputs):
        raise OpenAIError("'input' must not contain empty strings", "input")
    if len(inputs) > MAX_INPUTS:
        raise OpenAIError(f"'input' takes at most {MAX_INPUTS} items, got {len(inputs)}", "input")
    fmt = body.get("encoding_format") or "float"
    if fmt not in ("float", "base64"):
        raise OpenAIError("'encoding_format' must be float or base64", "encoding_format")
    wanted = body.get("dimensions")
    if wanted is not None and wanted != dimensions:
        raise OpenAIError(
            f"this model's vectors have {dimensions} dimensions; 'dimensions' must be "
            f"{dimensions} or left out, got {json.dumps(wanted)[:40]}",
            "dimensions",
        )
    return EmbeddingRequest(model, inputs, fmt == "base64")


def _token(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def embedding_body(
    req: EmbeddingRequest, vectors: list[list[float]], tokens: int
) -> dict[str, Any]:
    """OpenAI's answer: base64 is the little-endian float32 bytes of each vector."""
    import numpy as np

    data = []
    for i, vec in enumerate(vectors):
        value: Any = (
            base64.b64encode(np.asarray(vec, dtype="<f4").tobytes()).decode() if req.base64 else vec
        )
        data.append({"object": "embedding", "index": i, "embedding": value})
    return {
        "object": "list",
        "data": data,
        "model": req.model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
