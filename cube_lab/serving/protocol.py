"""Open Inference Protocol v2 tensors: JSON request inputs to numpy arrays and back.

A request that does not follow the protocol raises ``InferError``, which the server turns
into a 400 whose body says which input is wrong and how.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

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
    if not isinstance(data, list):
        return [data]
    out: list[Any] = []
    for item in data:
        out.extend(_flatten(item) if isinstance(item, list) else [item])
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
