"""What the OpenAI routes do, without HTTP: models, adapters, and one request's generation.

``LLMService.generate`` turns a parsed request into engine sequences (one per prompt and
choice) and yields ``(choice index, Event)`` as the engine produces them, on the caller's
asyncio loop; closing the iterator early (a client that went away) cancels the sequences.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .engine import BASE, Engine, EngineError, Event, Sequence
from .prompts import chat_ids, text_ids
from .protocol import OpenAIError, Parsed


@dataclass
class Prepared:
    """A request ready to run: its prompts' token ids and its choices' sampling."""

    parsed: Parsed
    adapter: str
    prompt_ids: list[list[int]]

    @property
    def prompt_tokens(self) -> int:
        return sum(len(p) for p in self.prompt_ids)


class LLMService:
    def __init__(self, engine: Engine, name: str) -> None:
        self.engine = engine
        self.name = name
        self.created = int(time.time())
        self.ttft_sum = 0.0
        self.ttft_count = 0

    # -- models ------------------------------------------------------------------------------

    def models(self) -> list[dict[str, Any]]:
        out = [self._model(self.name, None)]
        out += [self._model(a, self.name) for a in self.engine.adapters]
        return out

    def _model(self, model_id: str, parent: str | None) -> dict[str, Any]:
        return {
            "id": model_id,
            "object": "model",
            "created": self.created,
            "owned_by": "cube-lab",
            "root": model_id if parent is None else parent,
            "parent": parent,
        }

    def adapter_of(self, model: str) -> str:
        if model == self.name:
            return BASE
        if model in self.engine.adapters:
            return model
        served = [m["id"] for m in self.models()]
        raise OpenAIError(
            f"The model `{model}` does not exist. This server serves: {', '.join(served)}.",
            "model",
            status=404,
            code="model_not_found",
        )

    def add_adapter(self, name: Any, path: Any) -> dict[str, Any]:
        if not isinstance(name, str) or not name or name == self.name:
            raise OpenAIError("'name' must be a non-empty string other than the base's", "name")
        if not isinstance(path, str) or not path:
            raise OpenAIError("'path' must be the folder of a peft adapter", "path")
        if name in self.engine.adapters:
            raise OpenAIError(
                f"an adapter named {name!r} is already served",
                "name",
                status=409,
                code="adapter_exists",
            )
        try:
            self.engine.add_adapter(name, Path(path))
        except EngineError as exc:
            raise OpenAIError(str(exc), "path") from None
        return self._model(name, self.name)

    # -- requests ----------------------------------------------------------------------------

    def prepare(self, parsed: Parsed) -> Prepared:
        adapter = self.adapter_of(parsed.model)
        tok = self.engine.tokenizer
        if parsed.messages:
            prompts = [chat_ids(tok, parsed.messages)]
        else:
            prompts = [text_ids(tok, p) for p in parsed.prompts]
        context = self.engine.context
        longest = max(len(p) for p in prompts)
        room = context - longest
        if room <= 0 or (parsed.max_tokens_given and parsed.params.max_tokens > room):
            raise OpenAIError(
                f"This model's maximum context length is {context} tokens. The prompt has "
                f"{longest} tokens and {parsed.params.max_tokens} were asked for: shorten the "
                "prompt or lower max_tokens.",
                "max_tokens" if room > 0 else "messages" if parsed.messages else "prompt",
                code="context_length_exceeded",
            )
        if not parsed.max_tokens_given:
            parsed.params.max_tokens = min(parsed.params.max_tokens, room)
        return Prepared(parsed, adapter, prompts)

    async def generate(self, prep: Prepared) -> AsyncIterator[tuple[int, Event]]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[int, Event]] = asyncio.Queue()
        seqs: list[Sequence] = []
        n = prep.parsed.n
        start = time.perf_counter()
        for p, ids in enumerate(prep.prompt_ids):
            for j in range(n):
                index = p * n + j
                params = prep.parsed.params
                if params.seed is not None and j:
                    params = replace(params, seed=params.seed + j)  # the choices differ

                def emit(event: Event, index: int = index) -> None:
                    loop.call_soon_threadsafe(queue.put_nowait, (index, event))

                seqs.append(self.engine.submit(ids, params, prep.adapter, emit))
        left = len(seqs)
        first = True
        try:
            while left:
                index, event = await queue.get()
                if first:
                    first = False
                    self.ttft_sum += time.perf_counter() - start
                    self.ttft_count += 1
                if event.finish_reason is not None:
                    left -= 1
                yield index, event
        finally:
            for seq in seqs:
                if seq.finished is None:
                    self.engine.cancel(seq)
