"""What a client sends, checked before any service sees it: JSON bodies (NUL bytes, nesting,
64-bit integers, NaN), whole numbers from the URL and the query, and the file name of a
download (RFC 6266 / RFC 5987). ``CubeHandler`` applies these to every request."""

from __future__ import annotations

import json
import math
import re
from typing import Any
from urllib.parse import quote

from ..errors import InvalidInput, NotFound
from ..locale.messages import _t

INT64_MAX = 2**63 - 1  # the largest integer SQLite and PostgreSQL (bigint) hold
INT64_MIN = -(2**63)
MAX_JSON_DEPTH = 64  # arrays/objects inside each other; real bodies use fewer than 15


def _field(path: str, key: object) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else str(key))


def check_json_value(value: Any, what: str = "the request body") -> None:
    """Refuse what no service can store: NUL bytes in strings or keys, integers outside the
    64-bit range, NaN and infinities, nesting deeper than ``MAX_JSON_DEPTH``. Iterative, so
    a deep value cannot exhaust the stack here."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, path, depth = stack.pop()
        where = f"field {path!r} of {what}" if path else what
        if isinstance(item, str):
            if "\x00" in item:
                raise InvalidInput(
                    _t("{where} holds a NUL byte (\\u0000)", where=where),
                    _t("Remove the NUL character; no name, path or text may contain one."),
                )
        elif isinstance(item, bool) or item is None:
            pass
        elif isinstance(item, int):
            if not INT64_MIN <= item <= INT64_MAX:
                raise InvalidInput(
                    _t("{where} is out of range: {item}", where=where, item=item),
                    _t(
                        "Integers must lie between {INT64_MIN} and {INT64_MAX}.",
                        INT64_MIN=INT64_MIN,
                        INT64_MAX=INT64_MAX,
                    ),
                )
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise InvalidInput(
                    _t("{where} is not a finite number", where=where), _t("Give a finite number.")
                )
        elif isinstance(item, dict | list):
            if depth >= MAX_JSON_DEPTH:
                raise InvalidInput(
                    _t("{where} is nested too deeply", where=where),
                    _t(
                        "Objects and arrays may nest at most {MAX_JSON_DEPTH} levels.",
                        MAX_JSON_DEPTH=MAX_JSON_DEPTH,
                    ),
                )
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in pairs:
                if isinstance(key, str) and "\x00" in key:
                    raise InvalidInput(
                        _t(
                            "{where} has a key holding a NUL byte (\\u0000): {key!r}",
                            where=where,
                            key=key,
                        ),
                        _t("Remove the NUL character from the key."),
                    )
                stack.append((child, _field(path, key), depth + 1))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON; give a finite number")


def parse_json(raw: bytes | str, what: str = "the request body") -> Any:
    """JSON text from a client, checked with ``check_json_value``; a 400 for anything else."""
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise InvalidInput(_t("{what} is not valid JSON", what=what), str(exc)) from None
    except RecursionError:
        raise InvalidInput(
            _t("{what} is nested too deeply", what=what),
            _t(
                "Objects and arrays may nest at most {MAX_JSON_DEPTH} levels.",
                MAX_JSON_DEPTH=MAX_JSON_DEPTH,
            ),
        ) from None
    check_json_value(value, what)
    return value


def parse_int(raw: object, name: str, *, low: int = 0, high: int = INT64_MAX) -> int:
    """A whole number a client gave (a query argument or a JSON value) within [low, high]."""
    if isinstance(raw, bool):
        value = None
    elif isinstance(raw, int):
        value = raw
    elif isinstance(raw, str) and re.fullmatch(r"[+-]?[0-9]{1,30}", raw.strip()):
        value = int(raw.strip())
    else:
        value = None
    if value is None:
        raise InvalidInput(_t("{name} must be an integer", name=name), _t("got {raw!r}", raw=raw))
    if not low <= value <= high:
        raise InvalidInput(
            _t("{name} must be from {low} to {high}", name=name, low=low, high=high),
            _t("got {value}", value=value),
        )
    return value


def path_id(raw: str, what: str) -> int:
    """A numeric id from a URL path segment. One that cannot name a stored object (not plain
    ASCII digits, or past the 64-bit range ids are stored in) is a 404, like any id that
    names nothing."""
    if raw.isascii() and raw.isdigit() and len(raw) <= 19 and int(raw) <= INT64_MAX:
        return int(raw)
    raise NotFound(
        _t("no {what} {raw!r}", what=what, raw=raw),
        _t("A {what} id is a whole number up to {INT64_MAX}.", what=what, INT64_MAX=INT64_MAX),
    )


_UNSAFE_FALLBACK = re.compile(r"[^A-Za-z0-9._ ()+=@~!#$&^{}\[\]-]")


def content_disposition(filename: str, disposition: str = "attachment") -> str:
    """A Content-Disposition value for any file name (RFC 6266 with RFC 5987 encoding): an
    ASCII ``filename`` with every unsafe character (quotes, backslashes, control characters,
    non-ASCII) replaced by ``_``, and the exact name as ``filename*=UTF-8''...``."""
    fallback = _UNSAFE_FALLBACK.sub("_", filename).strip() or "download"
    exact = quote(filename, safe="")
    return f"{disposition}; filename=\"{fallback}\"; filename*=UTF-8''{exact}"
