"""Open Inference Protocol v2 tensors: JSON request inputs to numpy arrays and back.

A request that does not follow the protocol raises ``InferError``, which the server turns
into a 400 whose body says which input is wrong and how.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

try:  # a strict JSON parser several times faster than ``json`` on numbers (see _parse_piece)
    import orjson as _orjson
except ImportError:  # pragma: no cover - a dependency; without it the pieces use json
    _orjson = None

# OIP datatype -> numpy dtype (BYTES are Python strings in an object array)
DTYPES: dict[str, Any] = {
    "BOOL": np.bool_,
    "UINT8": np.uint8,
    "UINT16": np.uint16,
    "UINT32": np.uint32,
    "UINT64": np.uint64,
    "INT8": np.int8,
    "INT16": np.int16,
    "INT32": np.int32,
    "INT64": np.int64,
    "FP16": np.float16,
    "FP32": np.float32,
    "FP64": np.float64,
    "BYTES": object,
}
_FLOAT_TYPES = frozenset({"FP16", "FP32", "FP64"})
_NAMES = {np.dtype(v).name: k for k, v in DTYPES.items() if v is not object}


class InferError(Exception):
    """A malformed inference request: ``error`` says what, ``detail`` how to fix it."""

    def __init__(self, error: str, detail: str | None = None) -> None:
        super().__init__(error)
        self.error = error
        self.detail = detail


Tensor = tuple[str, np.ndarray]


def datatype_of(array: np.ndarray) -> str:
    if array.dtype.kind in ("U", "S", "O"):
        return "BYTES"
    return _NAMES.get(array.dtype.name, "FP64")


def decode_inputs(payload: Any) -> list[Tensor]:
    """The ``inputs`` of an inference request as (name, array) pairs, checked."""
    if not isinstance(payload, dict):
        raise InferError(
            "the request body must be a JSON object",
            'Send {"inputs": [{"name": ..., "shape": [...], "datatype": "FP64", "data": [...]}]}.',
        )
    inputs = payload.get("inputs")
    if not isinstance(inputs, list) or not inputs:
        raise InferError(
            "'inputs' must be a non-empty list of tensors",
            'e.g. {"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP64", '
            '"data": [5.1, 3.5, 1.4, 0.2]}]}',
        )
    return [_decode_one(i, item) for i, item in enumerate(inputs)]


def _decode_one(index: int, item: Any) -> Tensor:
    where = f"inputs[{index}]"
    if not isinstance(item, dict):
        raise InferError(f"{where} must be an object with name, shape, datatype and data")
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise InferError(f"{where}.name must be a non-empty string")
    where = f"input {name!r}"
    shape = item.get("shape")
    if (
        not isinstance(shape, list)
        or not shape
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
    ):
        raise InferError(
            f"{where}: shape must be a list of non-negative integers", f"got {shape!r}"
        )
    datatype = item.get("datatype")
    if datatype not in DTYPES:
        raise InferError(
            f"{where}: unknown datatype {datatype!r}", f"Use one of {', '.join(DTYPES)}."
        )
    if "data" not in item:
        raise InferError(
            f"{where} has no data",
            "Put the values in 'data' (the binary tensor extension is not supported).",
        )
    expected = math.prod(shape)
    try:
        if datatype == "BYTES":
            flat = np.array(_flatten(item["data"]), dtype=object)
        else:
            flat = np.asarray(item["data"], dtype=DTYPES[datatype]).reshape(-1)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InferError(
            f"{where}: data cannot be read as {datatype}", f"{type(exc).__name__}: {exc}"
        ) from None
    if flat.size != expected:
        raise InferError(
            f"{where}: shape {shape} holds {expected} values but data has {flat.size}",
            "Make the product of shape equal the number of values in data.",
        )
    return name, flat.reshape(shape)


def _flatten(data: Any) -> list[Any]:
    """Nested lists to one flat list, without recursion (JSON nests up to ~1000 levels)."""
    if not isinstance(data, list):
        return [data]
    out: list[Any] = []
    stack = [iter(data)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, list):
                stack.append(iter(item))
                break
            out.append(item)
        else:
            stack.pop()
    return out


def encode_output(name: str, value: Any) -> dict[str, Any]:
    array = np.asarray(value)
    if array.ndim == 0:
        array = array.reshape(1)
    datatype = datatype_of(array)
    flat = array.reshape(-1)
    if datatype == "BYTES":
        data: list[Any] = [v.decode() if isinstance(v, bytes) else str(v) for v in flat]
    else:
        data = flat.tolist()
    return {"name": name, "shape": list(array.shape), "datatype": datatype, "data": data}


def tensor_meta(name: str, datatype: str, shape: list[int]) -> dict[str, Any]:
    return {"name": name, "datatype": datatype, "shape": shape}


# -- JSON in and out, in pieces ---------------------------------------------------------------
#
# The model server parses a big request on a worker thread so its event loop keeps answering
# small ones. A thread alone does not do it: ``json.loads`` and ``np.asarray`` are single C
# calls that hold the GIL from start to end (a 50 MB body: about a second), and the loop
# cannot run until they return. So a big body is parsed in pieces of about ``PIECE`` bytes:
# the tensors' ``data`` arrays (nearly all of such a body) are cut at commas, each piece is
# parsed and converted to its input's dtype, and the rest of the request (small once the
# arrays are cut out) is parsed on its own. Between pieces the loop gets the GIL. Only the
# pieces' arrays and one piece's Python objects are alive at a time, not the whole body as
# Python floats. Anything the pieces cannot be sure of (a "data" that is not where OIP puts
# it, a string holding brackets, odd spacing) falls back to one ``json.loads`` of the whole
# body, which decides the answer as it always did. Each piece is parsed with orjson where it
# gives what ``json.loads`` gives (``_parse_piece``): about 6x faster on numbers, so a 50 MB
# body takes about 0.4 s of the worker thread's time rather than 2 s, and each piece holds
# the GIL for a few milliseconds. Big answers are written with orjson too (``_dump_chunk``).

PIECE = 1 << 20
PIECEWISE_MIN = 256 * 1024  # an array at least this long is parsed in pieces
DEPTH_ERROR = (
    "the request body is nested too deeply",
    "JSON nested deeper than about {limit} levels is refused; send a tensor as a flat 'data' "
    "list with its 'shape'.",
)
_DATA_KEY = re.compile(rb'"data"\s*:\s*\[')
_INSTANCES_KEY = re.compile(rb'"instances"\s*:\s*\[')
# the end of an array that is an object's value: "]" before "}" or before ', "next key"'
_VALUE_END = re.compile(rb'\](?=\s*(?:\}|,\s*"))')


def loads(body: bytes | bytearray, key: str = "data") -> Any:
    """A request body's JSON. Bad JSON, and JSON nested too deeply for the parser, raise
    ``InferError`` (a 400), never ``RecursionError``. A big body is parsed in pieces (above);
    its numeric tensors come back as numpy arrays in ``data`` (``key="instances"``: the rows
    of a ``/predict`` body, as lists)."""
    try:
        if len(body) >= PIECEWISE_MIN:
            found = _piecewise(body, key)
            if found is not None:
                return found
        return json.loads(body)
    except RecursionError:
        error, detail = DEPTH_ERROR
        raise InferError(error, detail.format(limit=sys.getrecursionlimit())) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InferError("the request body is not valid JSON", str(exc)) from None


def _regions(body: memoryview, raw: bytes | bytearray, key: str) -> list[tuple[int, int]]:
    """(start, end) of each long array that follows ``"key":``: raw[start] is its "[" and
    raw[end] its "]". Searched window by window so no single call holds the GIL long."""
    pattern = _DATA_KEY if key == "data" else _INSTANCES_KEY
    found: list[tuple[int, int]] = []
    n, pos = len(raw), 0
    while pos < n:
        m = pattern.search(raw, pos, min(n, pos + PIECE + 64))
        if m is None:
            pos += PIECE
            continue
        start = m.end() - 1
        end = raw.find(b"]", start)  # a flat array ends at its first "]"
        if end < 0:
            return []
        if raw.find(b"[", start + 1, end) >= 0:  # nested: find the "]" that ends the value
            end, at = -1, start
            while at < n and end < 0:
                hit = _VALUE_END.search(raw, at, min(n, at + PIECE + 64))
                if hit is not None:
                    end = hit.start()
                at += PIECE
            if end < 0:
                return []
        if end - start >= PIECEWISE_MIN:
            found.append((start, end))
        pos = end + 1
    return found


def _pieces(
    body: memoryview, raw: bytes | bytearray, start: int, end: int, floats: bool = False
) -> Iterator[Any]:
    """The JSON arrays of ``raw[start:end+1]`` cut at top-level commas, each parsed alone (one
    at a time: only one piece is ever Python objects); they join into that array. Raises
    ValueError when a cut was not at the top level. ``floats``: the values become a float
    tensor (see ``_parse_piece``)."""
    nested = raw.find(b"[", start + 1, end) >= 0
    sep = b"]," if nested else b","
    a = start + 1
    while a < end:
        cut = raw.find(sep, min(a + PIECE, end), end) if a + PIECE < end else -1
        b = end if cut < 0 else cut + (1 if nested else 0)
        piece = _parse_piece(b"".join((b"[", body[a:b], b"]")), floats)
        if not piece:  # "[1,,2]" would parse piece by piece: it is not JSON
            raise ValueError("empty piece")
        yield piece
        a = b + 1


def _parse_piece(text: bytes, floats: bool) -> Any:
    """``json.loads(text)``, the same values and the same refusals, with orjson where that is
    sure to be so (about 6x faster on a piece of numbers).

    orjson refuses everything ``json`` refuses (both follow RFC 8259 for numbers: no ``.5``,
    ``+1``, ``01``, ``1.``, trailing commas), and more: ``NaN``, ``Infinity``, numbers that
    overflow a double, lone surrogates. Whatever orjson refuses goes to ``json``, which accepts
    or refuses it as it always did. Where both accept, the values are equal (floats are
    correctly rounded by both: tests/serving/test_limits.py compares them) except for integers
    outside [-2**63, 2**64): ``json`` keeps them exact, orjson makes them floats. For a float
    tensor that is the same value (numpy turns the exact integer into the nearest double, which
    is orjson's float); otherwise a piece with a run of 19 or more digits goes to ``json``."""
    if _orjson is not None and (floats or not _long_digit_run(text)):
        try:
            return _orjson.loads(text)
        except _orjson.JSONDecodeError:
            pass
    return json.loads(text)


def _long_digit_run(text: bytes, run: int = 19) -> bool:
    """Whether ``text`` holds ``run`` ASCII digits in a row (an integer orjson could not keep:
    the shortest out of its range, -9223372036854775809, has 19)."""
    if len(text) < run:
        return False
    codes = np.frombuffer(text, dtype=np.uint8)
    digits = np.cumsum((codes - 48) < 10, dtype=np.int32)  # uint8 wraps: only 0-9 are < 10
    return bool((digits[run:] - digits[:-run] == run).any()) or bool(digits[run - 1] == run)


def _piecewise(raw: bytes | bytearray, key: str) -> Any:
    body = memoryview(raw)
    try:
        regions = _regions(body, raw, key)
        if not regions:
            return None
        nonce = os.urandom(8).hex()
        tokens = [f"\0cube:{i}:{nonce}" for i in range(len(regions))]
        parts: list[bytes | memoryview] = []
        last = 0
        for (start, end), token in zip(regions, tokens, strict=True):
            parts += [body[last:start], json.dumps(token).encode()]
            last = end + 1
        parts.append(body[last:])
        payload = json.loads(b"".join(parts))  # the request without its big arrays
        slots = _slots(payload, key, set(tokens))
        if slots is None or len(slots) != len(tokens):
            return None
        for (start, end), token in zip(regions, tokens, strict=True):
            holder, field = slots[token]
            item = holder if field == "data" else {}
            floats = item.get("datatype") in _FLOAT_TYPES
            joined = _join(_pieces(body, raw, start, end, floats), item, end - start)
            if joined is None:  # the shape does not match: one list, and decode says so
                joined = [v for piece in _pieces(body, raw, start, end) for v in piece]
            holder[field] = joined
        return payload
    except (ValueError, TypeError, OverflowError, RecursionError):
        return None  # one json.loads of the whole body decides


def _slots(payload: Any, key: str, tokens: set[str]) -> dict[str, tuple[Any, str]] | None:
    """Where each token landed: it must be an input's ``data`` (or the body's ``instances``)."""
    if not isinstance(payload, dict):
        return None
    found: dict[str, tuple[Any, str]] = {}
    if key == "instances":
        value = payload.get("instances")
        if isinstance(value, str) and value in tokens:
            found[value] = (payload, "instances")
        return found
    inputs = payload.get("inputs")
    if not isinstance(inputs, list):
        return None
    for item in inputs:
        if isinstance(item, dict):
            value = item.get("data")
            if isinstance(value, str) and value in tokens and value not in found:
                found[value] = (item, "data")
    return found


def _join(pieces: Iterator[Any], item: dict[str, Any], text_bytes: int) -> Any:
    """Numeric tensors: one flat numpy array of the input's dtype, filled piece by piece
    (each converted as ``np.asarray`` of the whole would) into an array allocated once from
    the input's shape; anything else: the one list the pieces make."""
    datatype = item.get("datatype")
    dtype = DTYPES.get(datatype) if isinstance(datatype, str) else None
    if dtype is None or dtype is object:
        joined: list[Any] = []
        for piece in pieces:
            joined.extend(piece)
        return joined
    arrays = (np.asarray(piece, dtype=dtype) for piece in pieces)
    shape = item.get("shape")
    count = -1
    if isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape):
        count = math.prod(shape)
    if not 0 <= count <= text_bytes // 2 + 1:  # a value takes 2 bytes or more ("1,")
        return np.concatenate([a.reshape(-1) for a in arrays])  # decode says what is wrong
    out = np.empty(count, dtype=dtype)
    done, inner = 0, None
    for a in arrays:
        if inner is None:
            inner = a.shape[1:]
        elif a.shape[1:] != inner:
            raise ValueError("ragged rows")  # np.asarray of the whole refuses these
        if done + a.size > count:
            return None  # more values than the shape holds: decode says so
        out[done : done + a.size] = a.reshape(-1)
        done += a.size
    return out if done == count else None


def dumps(value: Any) -> bytes:
    """Compact JSON of an answer; a long list or array is written in pieces of about
    ``PIECE_ITEMS`` values, so no single call holds the GIL for long."""
    out: list[bytes] = []
    _dump(value, out)
    return b"".join(out)


PIECE_ITEMS = 65536


def _dump(value: Any, out: list[bytes]) -> None:
    if isinstance(value, dict):
        out.append(b"{")
        for i, (k, v) in enumerate(value.items()):
            out.append((b"," if i else b"") + json.dumps(str(k)).encode() + b":")
            _dump(v, out)
        out.append(b"}")
    elif isinstance(value, list) and value and isinstance(value[0], dict | np.ndarray):
        out.append(b"[")
        for i, item in enumerate(value):
            if i:
                out.append(b",")
            _dump(item, out)
        out.append(b"]")
    elif isinstance(value, np.ndarray) or (isinstance(value, list) and len(value) > PIECE_ITEMS):
        out.append(b"[")
        for i in range(0, len(value), PIECE_ITEMS):
            text = _dump_chunk(value[i : i + PIECE_ITEMS])
            out.append((b"," if i else b"") + text[1:-1])
        out.append(b"]")
    else:
        out.append(json.dumps(value, separators=(",", ":")).encode())


def _dump_chunk(chunk: list[Any] | np.ndarray) -> bytes:
    """A list, or a flat array (as its ``tolist()``), as ``json.dumps`` writes it compactly,
    with orjson (about 20x faster) where the values come out the same: numbers may be spelled
    differently (``1e-05`` / ``0.00001``) but are equal, strings are UTF-8 rather than
    ``\\u`` escapes. orjson writes NaN and infinities as ``null`` where ``json`` writes
    ``NaN``, and refuses what it cannot write exactly (integers past 64 bits, lone surrogates,
    numpy scalars in a list): those chunks go to ``json``."""
    if _orjson is not None:
        option = 0
        if isinstance(chunk, np.ndarray):
            if chunk.dtype.kind == "f" and chunk.dtype != np.float64:
                chunk = chunk.astype(np.float64)  # tolist()'s values: FP32 0.1 is 0.100000001...
            if chunk.dtype.kind in "biuf":
                option = _orjson.OPT_SERIALIZE_NUMPY
                chunk = np.ascontiguousarray(chunk)
        if option or isinstance(chunk, list):
            try:
                text = _orjson.dumps(chunk, option=option)
            except TypeError:  # orjson.JSONEncodeError
                pass
            else:
                if b"null" not in text:  # no NaN or infinity (nor None) that json spells apart
                    return text
    if isinstance(chunk, np.ndarray):
        chunk = chunk.tolist()
    return json.dumps(chunk, separators=(",", ":")).encode()


def encode_output_array(name: str, value: Any) -> dict[str, Any]:
    """``encode_output`` with ``data`` left as a flat numpy array (for ``dumps``)."""
    array = np.asarray(value)
    if array.ndim == 0:
        array = array.reshape(1)
    datatype = datatype_of(array)
    flat = array.reshape(-1)
    data: Any
    if datatype == "BYTES":
        data = [v.decode() if isinstance(v, bytes) else str(v) for v in flat]
    else:
        data = flat
    return {"name": name, "shape": list(array.shape), "datatype": datatype, "data": data}
