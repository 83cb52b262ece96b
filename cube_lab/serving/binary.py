"""The binary tensor extension of the Open Inference Protocol (Triton's, which tritonclient and
the KServe SDK use by default).

A request with an ``Inference-Header-Content-Length: N`` header is N bytes of JSON followed by
the raw bytes of some inputs: an input whose ``parameters.binary_data_size`` is K has no
``data``; its K bytes come next, in the order of the inputs. Numbers are little-endian, BOOL one
byte each, and a BYTES element is a 4-byte little-endian length followed by that many bytes.

The answer carries an output as raw bytes when the request asks for it: the output's
``parameters.binary_data``, or, for the outputs that do not say, the request's
``parameters.binary_data_output``. Such an answer is its JSON (each binary output with
``parameters.binary_data_size`` instead of ``data``), then the outputs' bytes, with the JSON's
length in ``Inference-Header-Content-Length``.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from .protocol import DTYPES, InferError, Tensor, datatype_of, dumps, loads

HEADER = "Inference-Header-Content-Length"
_LENGTH = struct.Struct("<I")


def read_request(body: bytes | bytearray, header: str) -> Any:
    """The request's JSON with each binary input's values put in its ``data``."""
    try:
        size = int(header.strip())
    except ValueError:
        size = -1
    if not 0 <= size <= len(body):
        raise InferError(
            f"{HEADER} must be the length of the request's JSON part, got {header!r}",
            f"The body has {len(body)} bytes: the JSON first, then the inputs' binary data.",
        )
    view = memoryview(body)
    payload = loads(bytes(view[:size]))
    attach_inputs(payload, view[size:])
    return payload


def attach_inputs(payload: Any, blob: memoryview) -> None:
    inputs = payload.get("inputs") if isinstance(payload, dict) else None
    if not isinstance(inputs, list):
        return  # decode_inputs says what is wrong
    at = 0
    for index, item in enumerate(inputs):
        if not isinstance(item, dict):
            continue
        params = item.get("parameters")
        size = params.get("binary_data_size") if isinstance(params, dict) else None
        if size is None:
            continue
        where = f"input {item.get('name', index)!r}"
        if type(size) is not int or size < 0:
            raise InferError(f"{where}: binary_data_size must be a non-negative integer")
        if "data" in item:
            raise InferError(
                f"{where} has both 'data' and parameters.binary_data_size",
                "Send its values either as JSON 'data' or as binary data, not both.",
            )
        if at + size > len(blob):
            raise InferError(
                f"{where}: binary_data_size {size} goes past the end of the body",
                f"The binary part has {len(blob)} bytes; the sizes of the inputs add up to more.",
            )
        item["data"] = from_bytes(where, item.get("datatype"), blob[at : at + size])
        at += size
    if at != len(blob):
        raise InferError(
            f"the body has {len(blob) - at} bytes after the inputs' binary data",
            f"Set {HEADER} to the JSON part's length and each binary input's "
            "parameters.binary_data_size to its bytes.",
        )


def from_bytes(where: str, datatype: Any, raw: memoryview) -> Any:
    """One input's values from its raw bytes: a flat array, or for BYTES a list (each element
    a string where it is UTF-8, as JSON would give it, else bytes)."""
    if datatype == "BYTES":
        return _unpack_bytes(where, raw)
    if datatype not in DTYPES:
        raise InferError(
            f"{where}: unknown datatype {datatype!r}", f"Use one of {', '.join(DTYPES)}."
        )
    dtype = np.dtype(DTYPES[datatype])
    if len(raw) % dtype.itemsize:
        raise InferError(
            f"{where}: {len(raw)} bytes are not a whole number of {datatype} values",
            f"A {datatype} value takes {dtype.itemsize} bytes.",
        )
    # a copy: aligned, writable and in this machine's byte order, as JSON data would be
    return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype)


def _unpack_bytes(where: str, raw: memoryview) -> list[Any]:
    out: list[Any] = []
    at, n = 0, len(raw)
    while at < n:
        if at + 4 > n:
            raise InferError(
                f"{where}: the BYTES data ends inside an element's 4-byte length",
                "Each BYTES element is a 4-byte little-endian length, then its bytes.",
            )
        (length,) = _LENGTH.unpack_from(raw, at)
        at += 4
        if at + length > n:
            raise InferError(
                f"{where}: a BYTES element of {length} bytes goes past the input's data",
                "Each BYTES element is a 4-byte little-endian length, then its bytes.",
            )
        value = bytes(raw[at : at + length])
        at += length
        try:
            out.append(value.decode("utf-8"))
        except UnicodeDecodeError:
            out.append(value)
    return out


# -- answers -------------------------------------------------------------------------------------


def binary_outputs(payload: Any, names: list[str]) -> set[str]:
    """Which of the answer's outputs the request wants as binary data."""
    params = payload.get("parameters") if isinstance(payload, dict) else None
    default = isinstance(params, dict) and params.get("binary_data_output") is True
    asked: dict[str, bool] = {}
    outputs = payload.get("outputs") if isinstance(payload, dict) else None
    for o in outputs if isinstance(outputs, list) else []:
        p = o.get("parameters") if isinstance(o, dict) else None
        if isinstance(p, dict) and "binary_data" in p:
            asked[str(o.get("name"))] = p["binary_data"] is True
    return {n for n in names if asked.get(n, default)}


def to_bytes(array: np.ndarray) -> tuple[str, bytes]:
    """(datatype, raw bytes) of an output."""
    datatype = datatype_of(array)
    flat = array.reshape(-1)
    if datatype == "BYTES":
        parts: list[bytes] = []
        for v in flat:
            data = v if isinstance(v, bytes) else str(v).encode("utf-8")
            parts += [_LENGTH.pack(len(data)), data]
        return datatype, b"".join(parts)
    dtype = np.dtype(DTYPES[datatype])
    return datatype, np.ascontiguousarray(flat, dtype=dtype.newbyteorder("<")).tobytes()


def encode_answer(
    head: dict[str, Any], results: list[Tensor], binary: set[str], encode: Any
) -> tuple[bytes, int]:
    """(body, length of its JSON part) of an answer with the ``binary`` outputs as raw bytes;
    ``encode(name, array)`` writes the others as JSON."""
    outputs: list[dict[str, Any]] = []
    blobs: list[bytes] = []
    for name, value in results:
        array = np.asarray(value)
        if array.ndim == 0:
            array = array.reshape(1)
        if name not in binary:
            outputs.append(encode(name, array))
            continue
        datatype, raw = to_bytes(array)
        outputs.append(
            {
                "name": name,
                "shape": list(array.shape),
                "datatype": datatype,
                "parameters": {"binary_data_size": len(raw)},
            }
        )
        blobs.append(raw)
    text = dumps({**head, "outputs": outputs})
    return b"".join([text, *blobs]), len(text)
