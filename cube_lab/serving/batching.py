"""Adaptive batching: inference requests that arrive together are stacked into one model call.

The model runs on the event loop's thread, so while it works new requests wait in their
sockets; when it returns they are all read in the same loop iteration, and the flush is
scheduled after them (``call_soon``). Under load the batch grows by itself; a lone request
waits for nothing. ``wait_ms`` adds an optional wait for more requests, ``max_rows`` caps a
batch. Requests stack only with others of the same input name, dtype, row shape and asked
outputs; each gets its own rows back. When a stacked call fails, its requests run one by
one, so one malformed request cannot fail the others.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..locale.messages import _t
from .loaders import Predictor
from .protocol import InferError, Tensor


@dataclass(slots=True)
class _Pending:
    key: tuple[Any, ...]
    inputs: list[Tensor]
    wanted: list[str] | None
    future: asyncio.Future[list[Tensor]]

    @property
    def rows(self) -> int:
        return int(self.inputs[0][1].shape[0])


class Batcher:
    def __init__(self, predictor: Predictor, max_rows: int = 256, wait_ms: float = 0.0) -> None:
        self.predictor = predictor
        self.max_rows = max(1, max_rows)
        self.wait_s = max(0.0, wait_ms) / 1000
        self.queue: list[_Pending] = []
        self.rows = 0
        self.timer: asyncio.Handle | asyncio.TimerHandle | None = None
        self.calls = 0  # model calls made, and requests answered: their ratio is the batch size
        self.requests = 0

    @staticmethod
    def stackable(inputs: list[Tensor]) -> bool:
        return len(inputs) == 1 and inputs[0][1].ndim >= 2 and inputs[0][1].shape[0] > 0

    def submit(
        self, inputs: list[Tensor], wanted: list[str] | None
    ) -> asyncio.Future[list[Tensor]]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Tensor]] = loop.create_future()
        name, array = inputs[0]
        key = (name, array.dtype.str, array.shape[1:], tuple(wanted or ()))
        self.queue.append(_Pending(key, inputs, wanted, future))
        self.rows += array.shape[0]
        if self.rows >= self.max_rows:
            self.flush()
        elif self.timer is None:
            if self.wait_s:
                self.timer = loop.call_later(self.wait_s, self.flush)
            else:
                self.timer = loop.call_soon(self.flush)  # after the reads of this iteration
        return future

    def flush(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        queue, self.queue, self.rows = self.queue, [], 0
        groups: dict[tuple[Any, ...], list[_Pending]] = {}
        for p in queue:
            groups.setdefault(p.key, []).append(p)
        for group in groups.values():
            batch: list[_Pending] = []
            rows = 0
            for p in group:
                if batch and rows + p.rows > self.max_rows:
                    self._run(batch)
                    batch, rows = [], 0
                batch.append(p)
                rows += p.rows
            self._run(batch)

    def _run(self, batch: list[_Pending]) -> None:
        self.requests += len(batch)
        if len(batch) == 1:
            self._one(batch[0])
            return
        name = batch[0].inputs[0][0]
        stacked = np.concatenate([p.inputs[0][1] for p in batch])
        self.calls += 1
        try:
            outputs = self.predictor.infer([(name, stacked)], batch[0].wanted)
            ends = np.cumsum([p.rows for p in batch])[:-1]
            split = [(n, np.split(a, ends)) for n, a in outputs]
            if any(len(parts[-1]) != batch[-1].rows for _, parts in split):
                raise InferError(_t("the model's outputs do not have one row per input row"))
        except Exception:
            self.calls -= 1
            for p in batch:  # find who is at fault: each on its own
                self._one(p)
            return
        for i, p in enumerate(batch):
            if not p.future.done():
                p.future.set_result([(n, parts[i]) for n, parts in split])

    def _one(self, p: _Pending) -> None:
        self.calls += 1
        try:
            result = self.predictor.infer(p.inputs, p.wanted)
        except Exception as exc:
            if not p.future.done():
                p.future.set_exception(exc)
            return
        if not p.future.done():
            p.future.set_result(result)
