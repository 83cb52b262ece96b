"""Adaptive batching in the model server: requests that arrive together share one model call,
each gets exactly its own rows back, and a bad request fails alone."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.ensemble import RandomForestClassifier

from cube_lab.serving.batching import Batcher
from cube_lab.serving.loaders import SklearnPredictor
from cube_lab.serving.protocol import InferError

X, Y = load_iris(return_X_y=True)
MODEL = RandomForestClassifier(n_estimators=10, random_state=0).fit(X, Y)


class Counting(SklearnPredictor):
    def __init__(self) -> None:
        super().__init__(MODEL)
        self.calls: list[int] = []

    def infer(self, inputs: Any, wanted: Any = None) -> Any:
        self.calls.append(int(inputs[0][1].shape[0]))
        return super().infer(inputs, wanted)


def rows(start: int, n: int) -> np.ndarray:
    return X[start : start + n]


async def test_requests_that_arrive_together_share_one_call() -> None:
    model = Counting()
    batcher = Batcher(model, max_rows=256)
    futures = [batcher.submit([("input-0", rows(i * 7, 1 + i % 3))], None) for i in range(20)]
    answers = await asyncio.gather(*futures)
    assert model.calls == [sum(1 + i % 3 for i in range(20))]  # one call for all 20
    for i, answer in enumerate(answers):
        ((name, got),) = answer
        assert name == "predict"
        assert got.tolist() == MODEL.predict(rows(i * 7, 1 + i % 3)).tolist()
    assert (batcher.calls, batcher.requests) == (1, 20)


async def test_a_lone_request_waits_for_nothing_and_max_rows_caps_a_batch() -> None:
    model = Counting()
    batcher = Batcher(model, max_rows=5)
    ((_, got),) = await batcher.submit([("input-0", rows(0, 2))], None)
    assert model.calls == [2] and got.tolist() == MODEL.predict(rows(0, 2)).tolist()
    model.calls.clear()
    answers = await asyncio.gather(*(batcher.submit([("x", rows(i, 2))], None) for i in range(6)))
    assert all(c <= 5 for c in model.calls) and sum(model.calls) == 12
    assert [a[0][1].tolist() for a in answers] == [
        MODEL.predict(rows(i, 2)).tolist() for i in range(6)
    ]


async def test_only_alike_requests_stack() -> None:
    model = Counting()
    batcher = Batcher(model)
    plain = batcher.submit([("x", rows(0, 2))], None)
    proba = batcher.submit([("x", rows(2, 2))], ["predict_proba"])
    plain2 = batcher.submit([("x", rows(4, 3))], None)
    a, b, c = await asyncio.gather(plain, proba, plain2)
    assert a[0][1].tolist() == MODEL.predict(rows(0, 2)).tolist()
    assert sorted(model.calls) == [2, 5]  # the two plain ones together, predict_proba apart
    assert np.allclose(b[0][1], MODEL.predict_proba(rows(2, 2)))
    assert c[0][1].tolist() == MODEL.predict(rows(4, 3)).tolist()


async def test_a_bad_request_fails_alone() -> None:
    model = Counting()
    batcher = Batcher(model)
    good = batcher.submit([("x", rows(0, 2))], None)
    bad = batcher.submit([("x", np.ones((1, 3)))], None)  # 3 features where 4 are needed
    good2 = batcher.submit([("x", rows(5, 1))], None)
    results = await asyncio.gather(good, bad, good2, return_exceptions=True)
    assert isinstance(results[1], InferError) and "expects 4 features" in results[1].error
    assert results[0][0][1].tolist() == MODEL.predict(rows(0, 2)).tolist()
    assert results[2][0][1].tolist() == MODEL.predict(rows(5, 1)).tolist()


async def test_wait_ms_gathers_requests_across_loop_turns() -> None:
    model = Counting()
    batcher = Batcher(model, wait_ms=50)
    first = batcher.submit([("x", rows(0, 1))], None)
    await asyncio.sleep(0.01)
    second = batcher.submit([("x", rows(1, 1))], None)
    await asyncio.gather(first, second)
    assert model.calls == [2]


@pytest.mark.parametrize("value", [-1, 1.5, True, 70000])
def test_bad_batch_sizes_are_refused(ws: Any, value: Any) -> None:
    from cube_lab.errors import InvalidInput
    from cube_lab.identity import Caller

    ws.registry.register(Caller("alice"), name="iris", obj=MODEL)
    with pytest.raises(InvalidInput, match="batch_max_rows"):
        ws.serving.deploy(Caller("alice"), "iris:1", batch_max_rows=value)
    assert ws.serving.list(Caller("alice")) == []  # nothing recorded, nothing started
