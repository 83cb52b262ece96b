"""The base class of every cube-lab REST handler: auth, caller, JSON in and out, errors.

Handlers stay thin: parse, call a service in a worker thread (services do blocking
database and file work), serialize. A ``CubeError`` from a service becomes its
4xx status with ``{"error", "detail"}``; anything else is a 500 with the same shape.

Input every handler gets is checked here once, so no route can pass a service what it cannot
store or open: a NUL byte in a URL path segment, a query argument or any string (or key) of a
JSON body is a 400 naming where it was; a body nested deeper than ``MAX_JSON_DEPTH``, an
integer outside the signed 64-bit range the database holds, or NaN / Infinity is a 400 too.
Integers from the URL go through ``path_id`` (an id that cannot exist is a 404) and
``query_int`` (a 400 outside its range); downloads name their file with
``content_disposition``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import re
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import quote

from jupyter_server.base.handlers import APIHandler
from tornado import web

from ..errors import CubeError, InvalidInput, NotFound
from ..identity import Caller
from ..serialize import to_jsonable
from ..workspace import Workspace

T = TypeVar("T")

WORKSPACE = "cube_lab.workspace"
ROOT_DIR = "cube_lab.root_dir"
LOCAL_USER = "cube_lab.local_user"  # set in the embedded shape; None when the server names users

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
                    f"{where} holds a NUL byte (\\u0000)",
                    "Remove the NUL character; no name, path or text may contain one.",
                )
        elif isinstance(item, bool) or item is None:
            pass
        elif isinstance(item, int):
            if not INT64_MIN <= item <= INT64_MAX:
                raise InvalidInput(
                    f"{where} is out of range: {item}",
                    f"Integers must lie between {INT64_MIN} and {INT64_MAX}.",
                )
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise InvalidInput(f"{where} is not a finite number", "Give a finite number.")
        elif isinstance(item, dict | list):
            if depth >= MAX_JSON_DEPTH:
                raise InvalidInput(
                    f"{where} is nested too deeply",
                    f"Objects and arrays may nest at most {MAX_JSON_DEPTH} levels.",
                )
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in pairs:
                if isinstance(key, str) and "\x00" in key:
                    raise InvalidInput(
                        f"{where} has a key holding a NUL byte (\\u0000): {key!r}",
                        "Remove the NUL character from the key.",
                    )
                stack.append((child, _field(path, key), depth + 1))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON; give a finite number")


def parse_json(raw: bytes | str, what: str = "the request body") -> Any:
    """JSON text from a client, checked with ``check_json_value``; a 400 for anything else."""
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise InvalidInput(f"{what} is not valid JSON", str(exc)) from None
    except RecursionError:
        raise InvalidInput(
            f"{what} is nested too deeply",
            f"Objects and arrays may nest at most {MAX_JSON_DEPTH} levels.",
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
        raise InvalidInput(f"{name} must be an integer", f"got {raw!r}")
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be from {low} to {high}", f"got {value}")
    return value


def path_id(raw: str, what: str) -> int:
    """A numeric id from a URL path segment. One that cannot name a stored object (not plain
    ASCII digits, or past the 64-bit range ids are stored in) is a 404, like any id that
    names nothing."""
    if raw.isascii() and raw.isdigit() and len(raw) <= 19 and int(raw) <= INT64_MAX:
        return int(raw)
    raise NotFound(f"no {what} {raw!r}", f"A {what} id is a whole number up to {INT64_MAX}.")


_UNSAFE_FALLBACK = re.compile(r"[^A-Za-z0-9._ ()+=@~!#$&^{}\[\]-]")


def content_disposition(filename: str, disposition: str = "attachment") -> str:
    """A Content-Disposition value for any file name (RFC 6266 with RFC 5987 encoding): an
    ASCII ``filename`` with every unsafe character (quotes, backslashes, control characters,
    non-ASCII) replaced by ``_``, and the exact name as ``filename*=UTF-8''...``."""
    fallback = _UNSAFE_FALLBACK.sub("_", filename).strip() or "download"
    exact = quote(filename, safe="")
    return f"{disposition}; filename=\"{fallback}\"; filename*=UTF-8''{exact}"


class CubeHandler(APIHandler):
    @property
    def workspace(self) -> Workspace:
        return self.settings[WORKSPACE]

    @property
    def caller(self) -> Caller:
        user = self.current_user
        if user is None:  # every method is @web.authenticated; this is a second guard
            raise web.HTTPError(403)
        local = self.settings.get(LOCAL_USER)
        if local:
            return Caller(local)
        hub_user = getattr(user, "hub_user", None) or {}
        return Caller(
            user.username, tuple(hub_user.get("groups") or ()), bool(hub_user.get("admin"))
        )

    async def prepare(self) -> None:  # type: ignore[override]
        await super().prepare()
        if self.current_user is None:
            return  # @web.authenticated answers first; nothing is said about the input
        for index, segment in enumerate([*self.path_args, *self.path_kwargs.values()]):
            if isinstance(segment, str) and "\x00" in segment:
                raise InvalidInput(
                    f"URL path segment {index + 1} holds a NUL byte (%00): {segment!r}",
                    "Remove the NUL character from the URL.",
                )
        for name, values in self.request.query_arguments.items():
            if "\x00" in name or any(b"\x00" in v for v in values):
                raise InvalidInput(
                    f"query parameter {name!r} holds a NUL byte (%00)",
                    "Remove the NUL character from the query string.",
                )

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking service call off the event loop."""
        return await asyncio.to_thread(functools.partial(fn, *args, **kwargs))

    def json_body(self) -> dict[str, Any]:
        if not self.request.body:
            return {}
        body = parse_json(self.request.body)
        if not isinstance(body, dict):
            raise InvalidInput(
                "the request body must be a JSON object", f"got {type(body).__name__}"
            )
        return body

    def query_bool(self, name: str, default: bool = False) -> bool:
        value = self.get_query_argument(name, None)
        if value is None:
            return default
        if value.lower() in ("1", "true", "yes"):
            return True
        if value.lower() in ("0", "false", "no"):
            return False
        raise InvalidInput(f"query parameter {name!r} must be true or false", f"got {value!r}")

    def query_int(self, name: str, default: int, *, low: int = 0, high: int = INT64_MAX) -> int:
        value = self.get_query_argument(name, None)
        if value is None:
            return default
        return parse_int(value, f"query parameter {name!r}", low=low, high=high)

    def attachment(self, filename: str) -> None:
        """Name the download: one Content-Disposition encoding for every file name."""
        self.set_header("Content-Disposition", content_disposition(filename))

    def reply(self, value: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(to_jsonable(value)))

    # -- errors as JSON {"error", "detail"} ------------------------------------------------

    def send_error(self, status_code: int = 500, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, CubeError):
            status_code = exc.status
        super().send_error(status_code, **kwargs)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, CubeError):
            body = exc.to_json()
        elif isinstance(exc, web.HTTPError):
            body = {"error": exc.log_message or self._reason, "detail": None}
        else:
            body = {
                "error": "internal server error",
                "detail": "See the Jupyter server log for the traceback.",
            }
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(body))

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        if isinstance(value, CubeError):
            self.log.info("cube-lab %s %s: %s", self.request.method, self.request.uri, value.error)
        else:
            super().log_exception(typ, value, tb)
