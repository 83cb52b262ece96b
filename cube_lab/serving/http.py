"""A minimal HTTP/1.1 server on asyncio: keep-alive, Content-Length bodies, pipelining.

Why not tornado or an ASGI stack: a model server answers one tiny JSON request at a time,
and at the speeds asked for (a 2.5 ms ``predict`` being most of a request) every 100 us
of framework per request shows. This layer parses a request with a handful of byte
operations and calls the handler synchronously; a handler that returns an awaitable
(the router's) is awaited, and later requests on that connection wait their turn so
answers keep their order.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_HEAD = 64 * 1024
MAX_BODY = 64 * 1024 * 1024
REASONS = {
    200: "OK",
    201: "Created",
    204: "No Content",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    411: "Length Required",
    413: "Payload Too Large",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


@dataclass(slots=True)
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool
    target: str  # the path and query as received, for forwarding
    client: str = ""  # the peer's address (the router's allow/deny lists and rate limits)


@dataclass(slots=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: list[tuple[str, str]] = field(default_factory=list)


def json_response(
    status: int, value: Any, headers: list[tuple[str, str]] | None = None
) -> Response:
    return Response(
        status, json.dumps(value, separators=(",", ":")).encode(), headers=headers or []
    )


def error_response(status: int, error: str, detail: Any = None) -> Response:
    """The OIP error shape (``{"error": ...}``) plus cube-lab's ``detail`` saying how to fix it."""
    return json_response(status, {"error": error, "detail": detail})


def internal_error(exc: BaseException) -> Response:
    """A handler failed (a model's own predict code, say): the answer names the error, and the
    traceback goes to the process's log, which is the deployment's log."""
    traceback.print_exception(exc, file=sys.stderr)
    sys.stderr.flush()
    return error_response(
        500,
        f"the server failed on this request: {type(exc).__name__}: {exc}",
        "The traceback is in the deployment's log (`cube-lab deployment logs NAME`).",
    )


def encode_response(resp: Response, keep_alive: bool) -> bytes:
    head = [
        f"HTTP/1.1 {resp.status} {REASONS.get(resp.status, 'Unknown')}",
        f"Content-Type: {resp.content_type}",
        f"Content-Length: {len(resp.body)}",
    ]
    head.extend(f"{k}: {v}" for k, v in resp.headers)
    if not keep_alive:
        head.append("Connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + resp.body


Handler = Callable[[Request], "Response | Awaitable[Response]"]


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def parse_head(head: bytes) -> tuple[str, str, str, dict[str, str], bool]:
    """(method, target, version, headers, keep_alive) of a request head without its CRLFCRLF."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(400, f"malformed request line {lines[0][:80]!r}")
    method, target, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            raise BadRequest(400, f"malformed header line {line[:80]!r}")
        headers[name.strip().lower()] = value.strip()
    connection = headers.get("connection", "").lower()
    keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    return method, target, version, headers, keep_alive


class HTTPProtocol(asyncio.Protocol):
    """One connection. Requests are answered in order; a sync handler answers at once."""

    __slots__ = (
        "buffer",
        "busy",
        "client",
        "closing",
        "handler",
        "on_close",
        "task",
        "transport",
    )

    def __init__(self, handler: Handler, on_close: Callable[[], None] | None = None) -> None:
        self.handler = handler
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.busy = False  # an async handler is running; later requests wait in the buffer
        self.task: asyncio.Future[None] | None = None
        self.closing = False
        self.on_close = on_close
        self.client = ""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.client = str(peer[0]) if isinstance(peer, tuple) and peer else ""

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        self.transport = None
        if self.on_close is not None:
            self.on_close()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self._process()

    def _fail(self, status: int, message: str) -> None:
        if self.transport is not None:
            self.transport.write(encode_response(error_response(status, message), False))
            self.transport.close()
        self.closing = True
        self.buffer.clear()

    def _process(self) -> None:
        while not self.closing and self.transport is not None:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > MAX_HEAD:
                    self._fail(431, "request head too large")
                return
            try:
                method, target, _, headers, keep_alive = parse_head(bytes(self.buffer[:end]))
                if "chunked" in headers.get("transfer-encoding", "").lower():
                    raise BadRequest(411, "chunked request bodies are not supported")
                try:
                    length = int(headers.get("content-length") or 0)
                except ValueError:
                    raise BadRequest(400, "Content-Length is not a number") from None
                if length < 0 or length > MAX_BODY:
                    raise BadRequest(413, f"the body may hold at most {MAX_BODY} bytes")
            except BadRequest as exc:
                self._fail(exc.status, str(exc))
                return
            start = end + 4
            if len(self.buffer) < start + length:
                return  # wait for the rest of the body
            body = bytes(self.buffer[start : start + length])
            del self.buffer[: start + length]
            path, _, query = target.partition("?")
            request = Request(method, path, query, headers, body, keep_alive, target, self.client)
            try:
                result = self.handler(request)
            except Exception as exc:  # a handler bug must not kill the server
                result = internal_error(exc)
            if isinstance(result, Response):
                self._send(result, keep_alive)
                continue
            self.busy = True
            self.task = asyncio.ensure_future(self._finish(result, keep_alive))
            return

    async def _finish(self, pending: Awaitable[Response], keep_alive: bool) -> None:
        try:
            resp = await pending
        except Exception as exc:
            resp = internal_error(exc)
        self.busy = False
        self._send(resp, keep_alive)
        if self.buffer:
            self._process()

    def _send(self, resp: Response, keep_alive: bool) -> None:
        if self.transport is None:
            return
        self.transport.write(encode_response(resp, keep_alive))
        if not keep_alive:
            self.transport.close()
            self.closing = True


class Server:
    """Listens on ``host:port`` (0 picks a free port) and tracks its open connections."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.server: asyncio.base_events.Server | None = None
        self.connections: set[HTTPProtocol] = set()

    def _protocol(self) -> HTTPProtocol:
        proto: HTTPProtocol

        def closed() -> None:
            self.connections.discard(proto)

        proto = HTTPProtocol(self.handler, closed)
        self.connections.add(proto)
        return proto

    async def start(self, host: str, port: int) -> int:
        loop = asyncio.get_running_loop()
        self.server = await loop.create_server(
            self._protocol, host, port, reuse_address=True, backlog=1024
        )
        return int(self.server.sockets[0].getsockname()[1])

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop accepting, let requests in progress finish, then close idle connections."""
        if self.server is not None:
            self.server.close()
        deadline = asyncio.get_running_loop().time() + grace_s
        while any(c.busy for c in self.connections):
            if asyncio.get_running_loop().time() > deadline:
                break
            await asyncio.sleep(0.01)
        for conn in list(self.connections):
            if conn.transport is not None:
                conn.transport.close()


def write_ready_file(path: Path, info: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(info))
    os.replace(tmp, path)  # readers never see half a file


async def serve(
    app: Any, host: str, port: int, ready_file: Path | None, what: str = "model server"
) -> None:
    """Serve until SIGTERM or SIGINT, then finish the requests in progress."""
    server = Server(app)
    bound = await server.start(host, port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if ready_file is not None:
        write_ready_file(ready_file, {"port": bound, "pid": os.getpid()})
    print(f"cube-lab {what} listening on http://{host}:{bound}", flush=True)
    await stop.wait()
    await server.stop()
