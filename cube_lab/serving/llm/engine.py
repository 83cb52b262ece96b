"""The transformers engine: continuous batching of token generation in one loop thread.

Every request is one or more *sequences* (``n`` choices, several prompts). One thread runs
the loop; each turn it

1. admits the sequences that arrived since the last turn (up to ``max_batch`` running):
   their prompts are prefilled together (left-padded) with a KV cache of their own, each
   samples its first token, and that cache is joined to the running batch's (both padded
   on the left to one length, then concatenated on the batch axis);
2. runs one decode step for every running sequence at once (one forward of shape
   ``[batch, 1]``), samples one token per sequence with its own temperature, top-p and
   random generator (``seed``), and streams the new text to the sequence's callback;
3. drops finished and cancelled sequences from the batch (and the cache columns that only
   padding uses).

So a request that arrives while others are generating joins them at the next step instead
of waiting for them to finish, and 16 concurrent streams are 16 rows of one forward, not
16 forwards. The decode and prefill batch sizes the loop ran are counted in ``stats``.

Multi-LoRA: peft adapters on the one base, each under a name; the rows of one forward may
use different adapters (peft's mixed-adapter batches, ``adapter_names=[...]`` per row;
``"__base__"`` is the base model). ``add_adapter`` loads another without a restart.

Attention caches: the engine works with the standard ``DynamicCache`` (full attention);
models whose cache has sliding-window layers are refused at load.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BASE = "__base__"  # peft's name for "no adapter" in a mixed-adapter batch


class EngineError(Exception):
    """The engine cannot do what was asked (a bad adapter folder, a model it cannot load)."""


@dataclass
class SamplingParams:
    max_tokens: int = 16
    temperature: float = 1.0  # 0: greedy
    top_p: float = 1.0
    stop: list[str] = field(default_factory=list)
    seed: int | None = None
    ignore_eos: bool = False  # keep going past the end-of-sequence token (benchmarks)


@dataclass
class Event:
    """What a sequence produced since its last event: new text, and once, why it ended."""

    text: str
    finish_reason: str | None  # "stop" | "length" | None (more to come)
    prompt_tokens: int
    completion_tokens: int


@dataclass
class Sequence:
    prompt_ids: list[int]
    params: SamplingParams
    adapter: str  # BASE or an adapter's name
    emit: Callable[[Event], None]
    generator: Any = None
    generated: list[int] = field(default_factory=list)
    emitted: int = 0  # characters of the decoded text already sent
    position: int = 0  # the position id of the next token fed to the model
    finished: str | None = None
    cancelled: bool = False
    arrived: float = field(default_factory=time.perf_counter)


@dataclass
class EngineStats:
    decode_batch_sizes: Counter[int] = field(default_factory=Counter)
    prefill_batch_sizes: Counter[int] = field(default_factory=Counter)
    requests: int = 0  # sequences submitted
    completion_tokens: int = 0
    prompt_tokens: int = 0
    running: int = 0
    waiting: int = 0

    def as_dict(self) -> dict[str, Any]:
        decode = dict(sorted(self.decode_batch_sizes.items()))
        return {
            "decode_batch_sizes": {str(k): v for k, v in decode.items()},
            "prefill_batch_sizes": {str(k): v for k, v in sorted(self.prefill_batch_sizes.items())},
            "max_decode_batch": max(decode, default=0),
            "decode_steps": sum(decode.values()),
            "sequences": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "running": self.running,
            "waiting": self.waiting,
        }


class Engine:
    """One base model (and its adapters) generating for many sequences at once.

    ``submit`` may be called from any thread; the callbacks are called on the loop's thread
    (the HTTP layer hands them over to its event loop)."""

    def __init__(
        self,
        model_dir: Path,
        adapters: dict[str, Path] | None = None,
        *,
        device: str | None = None,
        dtype: str | None = None,
        max_batch: int = 64,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        torch_dtype = getattr(torch, dtype) if dtype else None
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
            base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch_dtype)
        except (OSError, ValueError) as exc:
            raise EngineError(f"cannot load a causal LM from {model_dir}: {exc}") from exc
        self.base = base.to(self.device).eval()
        self.model: Any = self.base
        self.adapters: dict[str, Path] = {}
        self.max_batch = max_batch
        self.context = int(getattr(base.config, "max_position_embeddings", 0) or 0) or 4096
        eos = base.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.eos_token_id
        self.eos: set[int] = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        self.pad_id = self.tokenizer.pad_token_id
        if self.pad_id is None:
            self.pad_id = next(iter(self.eos), 0)
        self.stats = EngineStats()
        self._pending: list[Sequence] = []
        self._running: list[Sequence] = []
        self._cache: Any = None
        self._mask: Any = None  # [batch, cache length] 1 = a real token
        self._cv = threading.Condition()
        self._model_lock = threading.Lock()  # held during a step; adapters load between steps
        self._stopping = False
        self._thread: threading.Thread | None = None
        for name, path in (adapters or {}).items():
            self.add_adapter(name, path)

    # -- adapters ----------------------------------------------------------------------------

    def add_adapter(self, name: str, path: Path) -> None:
        """Load a peft adapter of this base under ``name`` (between two steps of the loop)."""
        from peft import PeftModel

        if name in self.adapters or name == BASE:
            raise EngineError(f"an adapter named {name!r} is already loaded")
        if not (Path(path) / "adapter_config.json").is_file():
            raise EngineError(f"{path} is not a peft adapter folder (no adapter_config.json)")
        with self._model_lock:
            try:
                if self.model is self.base:
                    self.model = PeftModel.from_pretrained(self.base, str(path), adapter_name=name)
                    self.model.to(self.device).eval()
                else:
                    self.model.load_adapter(str(path), adapter_name=name)
                    self.model.to(self.device).eval()
            except (OSError, ValueError, KeyError, RuntimeError) as exc:
                raise EngineError(f"cannot load the adapter in {path}: {exc}") from exc
            self.adapters[name] = Path(path)

    # -- requests ----------------------------------------------------------------------------

    def submit(
        self,
        prompt_ids: list[int],
        params: SamplingParams,
        adapter: str | None,
        emit: Callable[[Event], None],
    ) -> Sequence:
        torch = self.torch
        seq = Sequence(list(prompt_ids), params, adapter or BASE, emit)
        if params.temperature > 0:
            seed = params.seed if params.seed is not None else int.from_bytes(os.urandom(7))
            seq.generator = torch.Generator(device=self.device).manual_seed(seed)
        with self._cv:
            self.stats.requests += 1
            self.stats.prompt_tokens += len(prompt_ids)
            self._pending.append(seq)
            self.stats.waiting = len(self._pending)
            self._cv.notify()
        return seq

    def cancel(self, seq: Sequence) -> None:
        seq.cancelled = True  # the loop drops it at its next turn

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="cube-llm-engine", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._cv:
            self._stopping = True
            self._cv.notify()
        if self._thread is not None:
            self._thread.join(timeout=10)

    # -- the loop ----------------------------------------------------------------------------

    def _loop(self) -> None:
        torch = self.torch
        while True:
            with self._cv:
                while not self._stopping and not self._pending and not self._running:
                    self._cv.wait()
                if self._stopping:
                    return
                room = max(0, self.max_batch - len(self._running))
                new = [s for s in self._pending[:room] if not s.cancelled]
                del self._pending[:room]
                self.stats.waiting = len(self._pending)
            try:
                with self._model_lock, torch.inference_mode():
                    if new:
                        self._prefill(new)
                    if self._running:
                        self._decode()
            except Exception as exc:
                self._fail([*new, *self._running], exc)

    def _fail(self, seqs: list[Sequence], exc: Exception) -> None:
        for seq in seqs:
            if seq.finished is None:
                seq.finished = "error"
                seq.emit(Event(f"[engine error: {exc}]", "error", len(seq.prompt_ids), 0))
        self._running = []
        self._cache = self._mask = None

    def _forward(self, ids: Any, mask: Any, positions: Any, cache: Any, adapters: list[str]) -> Any:
        kwargs: dict[str, Any] = {}
        if self.model is not self.base:
            kwargs["adapter_names"] = adapters
        out = self.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
            **kwargs,
        )
        return out.logits[:, -1, :]

    def _prefill(self, seqs: list[Sequence]) -> None:
        from transformers import DynamicCache

        torch = self.torch
        longest = max(len(s.prompt_ids) for s in seqs)
        ids = torch.full((len(seqs), longest), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), longest), dtype=torch.long)
        for row, s in enumerate(seqs):
            n = len(s.prompt_ids)
            ids[row, longest - n :] = torch.tensor(s.prompt_ids, dtype=torch.long)
            mask[row, longest - n :] = 1
            s.position = n
        ids, mask = ids.to(self.device), mask.to(self.device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        cache = DynamicCache(config=self.base.config)
        logits = self._forward(ids, mask, positions, cache, [s.adapter for s in seqs])
        self.stats.prefill_batch_sizes[len(seqs)] += 1
        for layer in cache.layers:
            if getattr(layer, "is_sliding", False):
                raise EngineError("sliding-window attention caches are not supported")
            # padded query rows attend to nothing: keep their (unused) states finite
            torch.nan_to_num_(layer.keys, 0.0, 0.0, 0.0)
            torch.nan_to_num_(layer.values, 0.0, 0.0, 0.0)
        self._join(cache, mask)
        self._running.extend(seqs)
        self._sample(logits, seqs)
        self._drop_finished()

    def _join(self, cache: Any, mask: Any) -> None:
        """Append a freshly prefilled cache (and its mask) to the running batch's."""
        torch = self.torch
        if self._cache is None or not self._running:
            self._cache, self._mask = cache, mask
            return
        old_len, new_len = self._mask.shape[1], mask.shape[1]
        width = max(old_len, new_len)

        def pad(t: Any, length: int) -> Any:  # left-pad the sequence axis (-2) to ``width``
            if length == width:
                return t
            shape = list(t.shape)
            shape[-2] = width - length
            return torch.cat([t.new_zeros(shape), t], dim=-2)

        for mine, theirs in zip(self._cache.layers, cache.layers, strict=True):
            mine.keys = torch.cat([pad(mine.keys, old_len), pad(theirs.keys, new_len)], dim=0)
            mine.values = torch.cat([pad(mine.values, old_len), pad(theirs.values, new_len)], dim=0)
        self._mask = torch.cat(
            [
                torch.nn.functional.pad(self._mask, (width - old_len, 0)),
                torch.nn.functional.pad(mask, (width - new_len, 0)),
            ],
            dim=0,
        )

    def _decode(self) -> None:
        torch = self.torch
        seqs = self._running
        ids = torch.tensor([[s.generated[-1]] for s in seqs], dtype=torch.long, device=self.device)
        positions = torch.tensor([[s.position] for s in seqs], dtype=torch.long, device=self.device)
        self._mask = torch.cat([self._mask, self._mask.new_ones((len(seqs), 1))], dim=1)
        logits = self._forward(ids, self._mask, positions, self._cache, [s.adapter for s in seqs])
        self.stats.decode_batch_sizes[len(seqs)] += 1
        self._sample(logits, seqs)
        self._drop_finished()

    def _sample(self, logits: Any, seqs: list[Sequence]) -> None:
        torch = self.torch
        logits = logits.float()
        greedy = logits.argmax(dim=-1).tolist()
        for row, s in enumerate(seqs):
            if s.cancelled:
                s.finished = s.finished or "cancelled"
                continue
            p = s.params
            if p.temperature <= 0:
                token = greedy[row]
            else:
                probs = torch.softmax(logits[row] / p.temperature, dim=-1)
                if p.top_p < 1.0:
                    sorted_p, order = probs.sort(descending=True)
                    cut = sorted_p.cumsum(-1) - sorted_p > p.top_p  # keep the smallest head
                    sorted_p[cut] = 0.0
                    probs = torch.zeros_like(probs).scatter_(0, order, sorted_p)
                token = int(torch.multinomial(probs, 1, generator=s.generator).item())
            self._accept(s, token)

    def _accept(self, s: Sequence, token: int) -> None:
        s.generated.append(token)
        s.position += 1
        self.stats.completion_tokens += 1
        p = s.params
        eos = token in self.eos and not p.ignore_eos
        text = self.tokenizer.decode(
            s.generated[:-1] if eos else s.generated, skip_special_tokens=True
        )
        finish: str | None = "stop" if eos else None
        end = len(text)
        if p.stop:
            hits = [
                i
                for i in (text.find(stop, max(0, s.emitted - len(stop))) for stop in p.stop)
                if i >= 0
            ]
            if hits:
                end, finish = min(hits), "stop"
        if finish is None and len(s.generated) >= p.max_tokens:
            finish = "length"
        if finish is None:
            end = len(text) - _held_back(text, p.stop)
        if finish is not None:
            s.finished = finish
        delta = text[s.emitted : end] if end > s.emitted else ""
        if delta or finish is not None:
            s.emitted = max(s.emitted, end)
            s.emit(Event(delta, finish, len(s.prompt_ids), len(s.generated)))

    def _drop_finished(self) -> None:
        torch = self.torch
        keep = [i for i, s in enumerate(self._running) if s.finished is None and not s.cancelled]
        self.stats.running = len(keep)
        if len(keep) == len(self._running):
            return
        self._running = [self._running[i] for i in keep]
        if not keep:
            self._cache = self._mask = None
            return
        index = torch.tensor(keep, dtype=torch.long, device=self.device)
        mask = self._mask[index]
        start = int((mask.sum(0) > 0).nonzero()[0].item())  # columns only padding uses go
        self._mask = mask[:, start:]
        for layer in self._cache.layers:
            layer.keys = layer.keys[index, :, start:, :]
            layer.values = layer.values[index, :, start:, :]


def _held_back(text: str, stops: list[str]) -> int:
    """How many trailing characters must wait: an unfinished UTF-8 character (decoded as
    U+FFFD) or the start of a stop sequence (sent only once it is sure not to be one)."""
    held = len(text) - len(text.rstrip("\ufffd"))
    for stop in stops:
        for k in range(min(len(stop) - 1, len(text)), 0, -1):
            if text.endswith(stop[:k]):
                held = max(held, k)
                break
    return held
