"""MLServer's request codecs: what ``parameters.content_type`` asks the model to be given.

On an input (``inputs[i].parameters.content_type``):

- ``np`` (or none): the tensor as a numpy array;
- ``str``: a BYTES input as strings (UTF-8);
- ``base64``: a BYTES input whose elements are base64, as the decoded bytes (an element that
  is not valid base64 is kept as its bytes, as MLServer keeps it).

On the request (``parameters.content_type``):

- ``np`` (or none): the one input tensor (each input's own content type applied);
- ``pd``: a pandas DataFrame with one column per input, named by the input, each input of
  shape ``[n]`` or ``[n, 1]``;
- ``str``: the one input as a list of strings.

Any other content type is refused with the list of these, where MLServer would ignore it.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

import numpy as np

from .protocol import DTYPES, InferError, Tensor

INPUT_TYPES = ("np", "str", "base64")
REQUEST_TYPES = ("np", "pd", "str")


@dataclass(slots=True)
class Native:
    """A request decoded to a Python object for the model (a DataFrame, a list of strings)."""

    content_type: str
    value: Any


def _content_type(item: Any) -> Any:
    params = item.get("parameters") if isinstance(item, dict) else None
    return params.get("content_type") if isinstance(params, dict) else None


def decode(payload: dict[str, Any], tensors: list[Tensor]) -> list[Tensor] | Native:
    """What the model is given for a request whose ``inputs`` decoded to ``tensors``."""
    items = payload["inputs"]
    decoded: list[Tensor] = []
    for item, (name, array) in zip(items, tensors, strict=True):
        kind = _content_type(item)
        if kind is None or kind == "np":
            decoded.append((name, array))
        elif kind in ("str", "base64"):
            decoded.append((name, _decode_bytes(name, kind, array)))
        else:
            raise InferError(
                f"input {name!r}: unknown content_type {kind!r}",
                f"Use one of {', '.join(INPUT_TYPES)} (MLServer's codecs), or none.",
            )
    kind = _content_type(payload)
    if kind is None or kind == "np":
        return decoded
    if kind == "pd":
        return Native("pd", _frame(items, decoded))
    if kind == "str":
        if len(decoded) != 1:
            raise InferError(
                f"content_type 'str' takes one input, got {len(decoded)}",
                "Send the strings as one BYTES input, or use content_type 'pd' for columns.",
            )
        name, array = decoded[0]
        return Native("str", [_text(name, v) for v in array.reshape(-1)])
    raise InferError(
        f"unknown request content_type {kind!r}",
        f"Use one of {', '.join(REQUEST_TYPES)} (MLServer's codecs), or none.",
    )


def _decode_bytes(name: str, kind: str, array: np.ndarray) -> np.ndarray:
    if array.dtype != object:
        raise InferError(
            f"input {name!r}: content_type {kind!r} needs datatype BYTES",
            "Send the values as BYTES, or drop the content_type.",
        )
    flat = array.reshape(-1)
    if kind == "str":
        values: list[Any] = [_text(name, v) for v in flat]
    else:
        values = [_unbase64(v) for v in flat]
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out.reshape(array.shape)


def _text(name: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InferError(f"input {name!r}: a 'str' element is not UTF-8", str(exc)) from None
    return str(value)


def _unbase64(value: Any) -> bytes:
    raw = value.encode("ascii", "surrogateescape") if isinstance(value, str) else bytes(value)
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return raw


def _frame(items: list[Any], tensors: list[Tensor]) -> Any:
    import pandas as pd

    columns: dict[str, Any] = {}
    rows: int | None = None
    for item, (name, array) in zip(items, tensors, strict=True):
        shape = list(array.shape)
        if not (len(shape) == 1 or (len(shape) == 2 and shape[1] == 1)):
            raise InferError(
                f"input {name!r}: a 'pd' column must have shape [n] or [n, 1], got {shape}",
                "Send one input per column (named by the column), each of shape [n_rows].",
            )
        if rows is not None and shape[0] != rows:
            raise InferError(
                f"input {name!r} has {shape[0]} rows, the inputs before it {rows}",
                "Every column of a 'pd' request has the same number of rows.",
            )
        rows = shape[0]
        flat = array.reshape(-1)
        if name in columns:
            raise InferError(f"two inputs are named {name!r}", "Name each column once.")
        datatype = item.get("datatype")
        if flat.dtype == object:
            columns[name] = pd.Series(list(flat))
        else:
            columns[name] = pd.Series(flat, dtype=DTYPES[datatype])
    return pd.DataFrame(columns)
