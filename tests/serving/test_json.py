"""The model server's fast JSON paths (orjson per piece of a big body, orjson for big answers)
accept, refuse and produce exactly what ``json`` does, and are faster than ``json``."""

from __future__ import annotations

import json
import random
import struct
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from cube_lab.serving import protocol

N = 10_000  # values around the odd one (pieces made small below: the body is in several)

# spellings of one value: JSON accepts the first group, refuses the second (``json`` accepts
# NaN and the infinities, and numbers too big for a double, orjson does not: they must still
# be accepted as before)
ACCEPTED = [
    "0",
    "-0",
    "-0.0",
    "1e5",
    "1E+5",
    "-1.5e-3",
    "2.2250738585072011e-308",
    "4.9e-324",
    "1e-400",
    "1e400",
    "-1e400",
    "NaN",
    "Infinity",
    "-Infinity",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "-9223372036854775809",
    "123456789012345678901234567890",
    "1" + "0" * 400,
    "0.1000000000000000055511151231257827021181583404541015625",
    "true",
    "false",
    "null",
]
REFUSED = [".5", "+1", "01", "-01", "1.", "-", "0x1", "1_0", "1e", "1e+", "--1", "Inf", "nan", ""]
DATATYPES = ["FP64", "FP32", "FP16", "INT64", "INT8", "UINT64", "BOOL"]
FILLER = {"BOOL": "true", "INT64": "7", "INT8": "7", "UINT64": "7"}


@pytest.fixture(params=["orjson", "json only"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(protocol, "PIECE", 8192)
    monkeypatch.setattr(protocol, "PIECEWISE_MIN", 4096)
    if request.param == "json only":  # the pieces without orjson: the same answers
        monkeypatch.setattr(protocol, "_orjson", None)
    return str(request.param)


def _body(datatype: str, token: str, at: int) -> bytes:
    values = [FILLER.get(datatype, "1.5")] * N
    values.insert(at, token)
    data = ",".join(values)
    return b'{"inputs":[{"name":"x","shape":[%d],"datatype":"%s","data":[%s]}]}' % (
        N + 1,
        datatype.encode(),
        data.encode(),
    )


def _outcome(parse: Any, raw: bytes) -> Any:
    """The tensors (as dtype, shape, bytes: -0.0 and NaN compare exactly) or the 400."""
    try:
        tensors = protocol.decode_inputs(parse(raw))
    except protocol.InferError as exc:
        return ("400", exc.error)
    return [
        (n, a.dtype.str, a.shape, a.tolist() if a.dtype == object else a.tobytes())
        for n, a in tensors
    ]


def _reference(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise protocol.InferError("the request body is not valid JSON") from exc


@pytest.mark.parametrize("datatype", DATATYPES)
def test_big_bodies_accept_and_refuse_numbers_as_json_loads_does(
    parser: str, datatype: str
) -> None:
    assert len(_body(datatype, "1", 0)) >= 2 * protocol.PIECE
    with np.errstate(all="ignore"):
        for token in ACCEPTED + REFUSED:
            for at in (0, N // 2, N):
                raw = _body(datatype, token, at)
                want = _outcome(_reference, raw)
                assert _outcome(protocol.loads, raw) == want, (datatype, token, at)
                if token in REFUSED:
                    assert want == ("400", "the request body is not valid JSON"), token
                elif want[0] != "400":
                    assert protocol._piecewise(raw, "data") is not None  # not the fallback


def _spellings(rng: random.Random) -> Iterator[str]:
    """Doubles from random bits in several spellings, and random decimal strings."""
    while True:
        f = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if np.isfinite(f):
            yield from (repr(f), f"{f:.17g}", f"{f:.25e}")
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 25)))
        s = rng.choice(["", "-"]) + rng.choice("123456789") + digits
        if rng.random() < 0.7:
            s += "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 30)))
        if rng.random() < 0.5:
            s += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randint(0, 330))
        yield s


@pytest.mark.parametrize("datatype", ["FP64", "FP32"])
def test_big_bodies_read_every_float_as_json_loads_does(datatype: str) -> None:
    gen = _spellings(random.Random(15))
    values = [next(gen) for _ in range(100_000)]
    raw = b'{"inputs":[{"name":"x","shape":[%d],"datatype":"%s","data":[%s]}]}' % (
        len(values),
        datatype.encode(),
        ",".join(values).encode(),
    )
    with np.errstate(all="ignore"):  # FP32: some of the doubles overflow it, in both
        assert protocol._piecewise(raw, "data") is not None
        assert _outcome(protocol.loads, raw) == _outcome(json.loads, raw)


def test_predict_rows_and_strings_come_back_as_json_loads_makes_them(parser: str) -> None:
    rows: list[Any] = [[1.5, 2.5, 3.5]] * 40_000
    for odd in (
        [1, 123456789012345678901234567890, -9223372036854775809],
        [float("nan"), float("inf"), 0.1],
        [18446744073709551615, -9223372036854775808, 0],
    ):
        raw = json.dumps({"instances": [*rows, odd, *rows]}).encode()
        got = protocol.loads(raw, "instances")
        assert protocol._piecewise(raw, "instances") is not None
        assert json.dumps(got) == json.dumps(json.loads(raw))  # exact ints stay exact
        assert [type(v) for v in got["instances"][40_000]] == [type(v) for v in odd]
    texts = ["abc", "\u00e9t\u00e9", "\ud800", "\\u0000", "x\ny", '"q"', "123456789012345678901"]
    item = {"name": "s", "shape": [70_000], "datatype": "BYTES", "data": texts * 10_000}
    raw = json.dumps({"inputs": [item]}).encode()
    assert protocol._piecewise(raw, "data") is not None
    assert _outcome(protocol.loads, raw) == _outcome(json.loads, raw)


def test_big_answers_are_the_json_dumps_of_their_values(parser: str) -> None:
    rng = np.random.default_rng(3)
    arrays = [
        rng.normal(size=100_000) * 10.0 ** rng.integers(-30, 30, size=100_000),
        rng.normal(size=100_000).astype(np.float32),
        rng.normal(size=100_000).astype(np.float16),
        rng.integers(-(2**63), 2**63 - 1, size=100_000, dtype=np.int64),
        rng.integers(0, 2**64 - 1, size=100_000, dtype=np.uint64),
        rng.integers(0, 2, size=100_000).astype(bool),
        np.arange(100_000, dtype=np.int8),
    ]
    for array in arrays:
        text = protocol.dumps({"outputs": [protocol.encode_output_array("p", array)]})
        want = json.dumps({"outputs": [protocol.encode_output("p", array)]})
        assert json.loads(text) == json.loads(want), array.dtype  # equal values, not spelling
    # NaN and the infinities are written as json writes them (not as orjson's null), and so
    # are integers past 64 bits and lone surrogates
    odd = np.array([1.5] * 70_000 + [np.nan, np.inf, -np.inf])
    text = protocol.dumps({"data": odd})
    assert text.endswith(b",NaN,Infinity,-Infinity]}") and b"null" not in text
    values: list[Any] = [1] * 70_000 + [2**70, None, "\ud800", float("nan")]
    want = json.dumps({"p": values}, separators=(",", ":")).encode()
    assert protocol.dumps({"p": values}) == want


def _best(f: Any, n: int = 3) -> float:
    best = float("inf")
    for _ in range(n):
        start = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - start)
    return best


def test_big_bodies_and_answers_are_several_times_faster_than_json() -> None:
    """A 10 MB FP64 body of 17-digit floats is parsed in pieces at least twice as fast as one
    ``json.loads`` (orjson: about 6x on an idle machine; with ``json`` per piece: about 1x),
    and a 1M-value FP64 answer is written at least 3x as fast as ``json.dumps`` (about 20x)."""
    x = np.random.default_rng(0).uniform(0.1, 7.9, size=(125_000, 4))
    item = {"name": "x", "shape": [125_000, 4], "datatype": "FP64", "data": x.ravel().tolist()}
    raw = json.dumps({"inputs": [item]}).encode()
    assert len(raw) > 9_000_000
    pieces, whole = _best(lambda: protocol.loads(raw)), _best(lambda: json.loads(raw))
    assert pieces * 2 < whole, (pieces, whole)
    answer = {"outputs": [protocol.encode_output_array("p", x)]}
    fast = _best(lambda: protocol.dumps(answer))
    slow = _best(lambda: json.dumps({"outputs": [protocol.encode_output("p", x)]}))
    assert fast * 3 < slow, (fast, slow)
