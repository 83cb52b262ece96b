"""The base class of every cube-lab REST handler: auth, caller, JSON in and out, errors.

Handlers stay thin: parse, call a service in a worker thread (services do blocking
database and file work), serialize. A ``CubeError`` from a service becomes its
4xx status with ``{"error", "detail"}``; anything else is a 500 with the same shape.

Input every handler gets is checked here once (the rules are in ``inputs.py``), so no route
can pass a service what it cannot store or open: a NUL byte in a URL path segment, a query
argument or any string (or key) of a JSON body is a 400 naming where it was; a body nested
deeper than ``MAX_JSON_DEPTH``, an integer outside the signed 64-bit range the database
holds, or NaN / Infinity is a 400 too. Integers from the URL go through ``path_id`` (an id
that cannot exist is a 404) and ``query_int`` (a 400 outside its range); downloads name
their file with ``content_disposition``.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from jupyter_server.base.handlers import APIHandler
from tornado import web

from .. import containment
from ..errors import CubeError, InvalidInput
from ..identity import Caller
from ..locale import negotiate
from ..locale.messages import _t, localize
from ..serialize import to_jsonable
from ..workspace import Workspace
from .inputs import INT64_MAX, content_disposition, parse_int, parse_json

T = TypeVar("T")

WORKSPACE = "cube_lab.workspace"
ROOT_DIR = "cube_lab.root_dir"  # the server root; in the cube-lab service, a function of the caller
LOCAL_USER = "cube_lab.local_user"  # set in the embedded shape; None when the server names users
# in the cube-lab service: a function of the caller giving the project groups' folders they
# share (links in their home lead there); paths may lie there too (``CubeHandler.resolve``)
SHARED_ROOTS = "cube_lab.shared_roots"


class CubeHandler(APIHandler):
    @property
    def workspace(self) -> Workspace:
        return self.settings[WORKSPACE]

    @property
    def root_dir(self) -> Path:
        """The folder user-given paths resolve in and may not leave: the server root, or (in
        the cube-lab service under the hub) the calling user's home."""
        root = self.settings[ROOT_DIR]
        return Path(root(self.caller) if callable(root) else root)

    @property
    def roots(self) -> list[Path]:
        """The root dir, then the folders shared with the caller (none outside the hub)."""
        shared = self.settings.get(SHARED_ROOTS)
        return [self.root_dir, *(shared(self.caller) if shared else ())]

    def resolve(self, raw: object, **kw: Any) -> tuple[Path, Path]:
        """A user-given path in the root dir or a folder shared with the caller, with the
        root it lies in (the boundary of what is done with it): ``containment.resolve_in``."""
        return containment.resolve_in(self.roots, raw, **kw)

    def client_path(self, path: str) -> str:
        """An absolute path as the client names it: relative to the root dir; in a shared
        folder, through the link in the root dir's ``projects/`` that leads there; else as
        it is."""
        target, root = Path(path), containment.real(self.root_dir)
        if target.is_relative_to(root):
            return target.relative_to(root).as_posix()
        links = root / "projects"
        for shared in self.roots[1:]:
            if target.is_relative_to(shared) and links.is_dir():
                for link in links.iterdir():
                    if link.is_symlink() and containment.real(link) == containment.real(shared):
                        return (link.relative_to(root) / target.relative_to(shared)).as_posix()
        return path

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
                    _t(
                        "URL path segment {value} holds a NUL byte (%00): {segment!r}",
                        value=index + 1,
                        segment=segment,
                    ),
                    _t("Remove the NUL character from the URL."),
                )
        for name, values in self.request.query_arguments.items():
            if "\x00" in name or any(b"\x00" in v for v in values):
                raise InvalidInput(
                    _t("query parameter {name!r} holds a NUL byte (%00)", name=name),
                    _t("Remove the NUL character from the query string."),
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
                _t("the request body must be a JSON object"),
                _t("got {name__}", name__=type(body).__name__),
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
        raise InvalidInput(
            _t("query parameter {name!r} must be true or false", name=name),
            _t("got {value!r}", value=value),
        )

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
            # the reader's language (the lab front end sends JupyterLab's as Accept-Language)
            body = localize(exc.to_json(), negotiate(self.request.headers.get("Accept-Language")))
        elif isinstance(exc, web.HTTPError):
            body = {"error": exc.log_message or self._reason, "detail": None}
        else:
            body = {
                "error": "internal server error",
                "detail": "See the Jupyter server log for the traceback.",
            }
        if status_code in (401, 403) and getattr(self, "_jupyter_current_user", None) is None:
            # nobody signed in (or an XSRF token missing): a browser calling the cube-lab
            # service straight takes this as "session gone" (src/api/request.ts), not as a refusal
            self.set_header("WWW-Authenticate", 'token realm="cube-lab"')
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(body))

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        if isinstance(value, CubeError):
            self.log.info("cube-lab %s %s: %s", self.request.method, self.request.uri, value.error)
        else:
            super().log_exception(typ, value, tb)
