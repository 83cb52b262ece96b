"""Under the hub: a lab server holds no store, so every cube-lab API request it gets is sent on
to the cube-lab service (``cube_lab/hub/store_service.py``) with this server's hub token.

The token identifies the server's user and nothing else: whatever code runs in this server can
act as that user, as it could through the browser, and never as anyone else. The service
answers with the same routes and bodies as the in-process API, so the panels do not know the
difference. Answers (downloads, logs) are streamed through as they arrive.

The requests go over keep-alive HTTP/1.1 connections that this server keeps open to the
service (``ServiceConnections``): tornado's ``AsyncHTTPClient`` opens a new TCP connection per
request (and resolves the host in a thread first), which was most of what the hop cost
(benchmarks/hub_service.py, benchmarks/RESULTS.md). It also queues the 11th concurrent request
behind 10 followed logs; here every request gets a connection of its own.
"""

from __future__ import annotations

import asyncio
import json
import select
import socket
import ssl
import time
from typing import Any
from urllib.parse import quote, urlsplit

from jupyter_server.base.handlers import APIHandler
from tornado import httputil, iostream, web
from tornado.http1connection import (
    HTTP1Connection,
    HTTP1ConnectionParameters,
    is_transfer_encoding_chunked,
)
from tornado.tcpclient import TCPClient

from ..errors import CubeError
from ..locale.messages import _t
from . import API

SERVICE = "cube_lab.service"  # settings key: (service base URL, token)
CONNECTIONS = "cube_lab.service_connections"  # settings key: the ServiceConnections to it
PASSED_REQUEST_HEADERS = ("Content-Type", "Accept", "Accept-Language", "Range", "If-None-Match")
PASSED_RESPONSE_HEADERS = (
    "Content-Type",
    "Content-Disposition",
    "Content-Range",
    "Accept-Ranges",
    "ETag",
    "Cache-Control",
    "Retry-After",
)
BODY_LIMIT = 512 * 1024 * 1024  # what the service itself accepts, with room for JSON framing
FLUSH_AT = 1024 * 1024  # a JSON answer bigger than this is passed on in pieces
CONNECT_TIMEOUT_S = 10
ANSWER_TIMEOUT_S = 3600  # a followed log may stream for long
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
# no per-read timeouts (each costs a timer and a future per read): one deadline per request
_PARAMS = HTTP1ConnectionParameters(no_keep_alive=False, max_body_size=BODY_LIMIT)


class ServiceUnavailable(CubeError):
    status = 503


class ServiceTimeout(CubeError):
    status = 504


def _dropped(sock: socket.socket | None) -> bool:
    """An idle connection that has something to read was closed by the service (or is out of
    step with it): it cannot carry another request."""
    if sock is None:
        return True
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        readable, _, _ = select.select([sock], [], [], 0)  # Windows
        return bool(readable)
    except (OSError, ValueError):
        return True


class ServiceConnections:
    """Keep-alive HTTP/1.1 connections from this server to the service, reused across requests.

    A connection is lent to one request at a time; when its answer has been read whole and the
    service keeps it open, it goes back for the next request (at most ``max_idle`` wait, each
    for at most ``idle_s``). Concurrent requests (followed logs) each open their own.
    """

    def __init__(self, base: str, *, max_idle: int = 16, idle_s: float = 30.0) -> None:
        parts = urlsplit(base)
        self.tls = parts.scheme == "https"
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or (443 if self.tls else 80)
        self.netloc = parts.netloc
        self.path = parts.path.rstrip("/")
        self.max_idle = max_idle
        self.idle_s = idle_s
        self.opened = 0  # connections made so far (tests and benchmarks read it)
        self._idle: list[tuple[iostream.IOStream, float]] = []

    async def take(self) -> tuple[iostream.IOStream, bool]:
        """A connection to send one request on, and whether it carried one before."""
        now = time.monotonic()
        while self._idle:
            stream, since = self._idle.pop()  # the most recently used: the least likely stale
            if now - since < self.idle_s and not stream.closed() and not _dropped(stream.socket):
                stream.set_nodelay(True)  # tornado turns Nagle back on after each request
                return stream, True
            stream.close()
        stream = await TCPClient().connect(
            self.host,
            self.port,
            ssl_options=ssl.create_default_context() if self.tls else None,
            timeout=CONNECT_TIMEOUT_S,
        )
        stream.set_nodelay(True)
        self.opened += 1
        return stream, False

    def give_back(self, stream: iostream.IOStream) -> None:
        if stream.closed() or len(self._idle) >= self.max_idle:
            stream.close()
            return
        self._idle.append((stream, time.monotonic()))

    def close(self) -> None:
        while self._idle:
            self._idle.pop()[0].close()


def _expire(stream: iostream.IOStream, expired: list[bool]) -> None:
    expired.append(True)
    stream.close()


def connections(settings: dict[str, Any]) -> ServiceConnections:
    """This server's connections to the service, made on first use."""
    pool = settings.get(CONNECTIONS)
    if pool is None:
        pool = settings[CONNECTIONS] = ServiceConnections(settings[SERVICE][0])
    return pool


def _framed(code: int, method: str, headers: httputil.HTTPHeaders) -> bool:
    """The answer's end is known without closing the connection."""
    return (
        method == "HEAD"
        or code in (204, 304)
        or 100 <= code < 200
        or "Content-Length" in headers
        or is_transfer_encoding_chunked(headers)
    )


class _Relay(httputil.HTTPMessageDelegate):
    """The service's answer, passed to the browser's request as it arrives."""

    def __init__(self, handler: ForwardHandler) -> None:
        self.handler = handler
        self.started = False  # the service's answer has begun
        self.finished = False  # ... and has been read whole
        self.reusable = False
        self.json_answer = False
        self.pending = 0  # bytes written since the last flush

    def headers_received(
        self,
        start_line: httputil.RequestStartLine | httputil.ResponseStartLine,
        headers: httputil.HTTPHeaders,
    ) -> None:
        assert isinstance(start_line, httputil.ResponseStartLine)
        if 100 <= start_line.code < 200:
            return  # an interim answer; the real one follows
        self.started = True
        handler = self.handler
        handler.set_status(start_line.code, start_line.reason or None)
        handler.clear_header("Content-Type")
        for name in PASSED_RESPONSE_HEADERS:
            value = headers.get(name)
            if value is not None:
                handler.set_header(name, value)
        self.json_answer = headers.get("Content-Type", "").startswith("application/json")
        self.reusable = (
            start_line.version == "HTTP/1.1"
            and headers.get("Connection", "").lower() != "close"
            and _framed(start_line.code, handler.request.method or "GET", headers)
        )

    def data_received(self, chunk: bytes) -> Any:
        # JSON answers are written in one go at the end (small, and useless half-read);
        # anything else (logs followed, downloads) goes out as it arrives, no faster than
        # the browser takes it
        self.handler.write(chunk)
        self.pending += len(chunk)
        if not self.json_answer or self.pending >= FLUSH_AT:
            self.pending = 0
            return self._flush()
        return None

    async def _flush(self) -> None:
        try:
            await self.handler.flush()
        except iostream.StreamClosedError:
            self.handler.on_connection_close()  # the browser left: stop reading the service

    def finish(self) -> None:
        self.finished = True

    def on_connection_close(self) -> None:
        self.reusable = False


class ForwardHandler(APIHandler):
    """Any method on ``/cube/api/v1/<rest>``: the same request, to the service, as this user."""

    _upstream: iostream.IOStream | None = None
    _gone = False  # the browser closed its connection

    def _target(self, pool: ServiceConnections, rest: str) -> str:
        path = pool.path + API + "/" + quote(rest, safe="/%:@!$&'()*+,;=-._~")
        query = self.request.query
        return f"{path}?{query}" if query else path

    async def _forward(self, rest: str) -> None:
        base, token = self.settings[SERVICE]
        pool = connections(self.settings)
        headers = httputil.HTTPHeaders({"Host": pool.netloc, "Authorization": f"token {token}"})
        for name in PASSED_REQUEST_HEADERS:
            value = self.request.headers.get(name)
            if value is not None:
                headers[name] = value
        method = self.request.method or "GET"
        body = self.request.body
        if body or method in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = str(len(body))
        start_line = httputil.RequestStartLine(method, self._target(pool, rest), "HTTP/1.1")
        relay = _Relay(self)
        loop = asyncio.get_running_loop()
        for attempt in (1, 2):
            try:
                stream, reused = await pool.take()
            except (OSError, iostream.StreamClosedError, TimeoutError) as exc:
                raise ServiceUnavailable(
                    _t("the cube-lab service cannot be reached"),
                    _t(
                        "{base}: {exc}. It runs beside the hub; ask the hub's admin to check it.",
                        base=base,
                        exc=exc,
                    ),
                ) from None
            expired: list[bool] = []
            deadline = loop.call_later(ANSWER_TIMEOUT_S, _expire, stream, expired)
            self._upstream = stream
            try:
                conn = HTTP1Connection(stream, True, _PARAMS)
                await conn.write_headers(start_line, headers, body or None)
                conn.finish()
                await conn.read_response(relay)
            except iostream.StreamClosedError:
                pass  # told apart below
            finally:
                deadline.cancel()
                self._upstream = None
            if relay.finished:
                break
            stream.close()
            if self._gone:
                return  # the browser left: nobody to answer
            if relay.started:
                # cut off halfway: the browser must not take a truncated answer for a whole one
                self.log.warning("cube-lab service: answer to %s %s cut off", method, rest)
                self.request.connection.close()  # type: ignore[union-attr]
                return
            if expired:
                raise ServiceTimeout(
                    _t("the cube-lab service did not answer in time"),
                    _t(
                        "{base}: nothing within {ANSWER_TIMEOUT_S} s; ask the hub's admin.",
                        base=base,
                        ANSWER_TIMEOUT_S=ANSWER_TIMEOUT_S,
                    ),
                )
            if reused and attempt == 1 and method in IDEMPOTENT:
                continue  # the service closed it while it lay idle: once more, on a new one
            raise ServiceUnavailable(
                _t("the cube-lab service closed the connection before it answered"),
                _t(
                    "{base}: it may have restarted; try again, or ask the hub's admin to check it.",
                    base=base,
                ),
            )
        if relay.reusable and not stream.closed():
            pool.give_back(stream)
        else:
            stream.close()
        self.finish()

    def on_connection_close(self) -> None:
        # the browser went away (a followed log closed): stop reading the service's answer
        self._gone = True
        if self._upstream is not None:
            self._upstream.close()
        super().on_connection_close()

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, CubeError):
            self.set_status(exc.status)
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps(exc.to_json()))
            return
        super().write_error(status_code, **kwargs)

    @web.authenticated
    async def get(self, rest: str) -> None:
        await self._forward(rest)

    @web.authenticated
    async def post(self, rest: str) -> None:
        await self._forward(rest)

    @web.authenticated
    async def put(self, rest: str) -> None:
        await self._forward(rest)

    @web.authenticated
    async def patch(self, rest: str) -> None:
        await self._forward(rest)

    @web.authenticated
    async def delete(self, rest: str) -> None:
        await self._forward(rest)


def routes() -> list[tuple[str, type[Any]]]:
    return [(API + "/(.*)", ForwardHandler)]
