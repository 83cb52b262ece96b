"""A minimal HTTP/1.1 server on asyncio: keep-alive, Content-Length bodies, pipelining.

Why not tornado or an ASGI stack: a model server answers one tiny JSON request at a time,
and at the speeds asked for (a 2.5 ms ``predict`` being most of a request) every 100 us
of framework per request shows. This layer parses a request with a handful of byte
operations and calls the handler synchronously; a handler that returns an awaitable
(the router's, or a model server's for a big body) is awaited, and later requests on that
connection wait their turn so answers keep their order.

Memory is bounded across connections, not only per request:

- a request body larger than ``UNCOUNTED_BODY`` must first get its bytes from the process's
  ``BodyBudget`` (``$CUBE_SERVING_BODY_BUDGET``, 256 MiB by default). One that does not fit
  *waits*: its connection is not read (``pause_reading``), so its bytes stay in the client
  and the kernel's socket buffers, and it is granted, first come first served, when earlier
  bodies are answered. Waiting rather than refusing with 503: a refusal cannot be made
  reliably while the client is still sending (closing then resets the connection and the
  client may never read the 503), and reading the body only to throw it away costs the
  same transfer; a wait costs the process nothing but the request's head, and the client's
  request still succeeds. Bodies up to ``UNCOUNTED_BODY`` never wait, so small requests
  stay fast while big ones queue. A body the budget could never hold is refused (413).
- a body is read straight into one buffer of its final size (``BufferedProtocol``: the
  kernel copies into it, nothing grows, nothing is joined), and that buffer is what the
  handler gets as ``Request.body``;
- a big response is written in slices, each after the transport has drained the last one,
  so asyncio's write buffer never holds a copy of it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import traceback
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_HEAD = 64 * 1024
MAX_BODY = 64 * 1024 * 1024
BUDGET_ENV = "CUBE_SERVING_BODY_BUDGET"
DEFAULT_BUDGET = 256 * 1024 * 1024
UNCOUNTED_BODY = 64 * 1024  # bodies up to this are read without asking the budget
HEAD_BUFFER = 16 * 1024  # a connection's buffer for heads (and small bodies); grows for a big head
WRITE_SLICE = 1024 * 1024  # a big response goes out in slices of this, each once drained
SMALL_WRITE = 64 * 1024  # up to this, a response is joined to its head and written at once
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
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


class BodyBudget:
    """The bytes of request bodies this process holds at once, over all its connections.

    ``take`` grants at once when the bytes fit and nobody waits before; otherwise the
    request queues and ``wake`` is called when its turn comes (first come, first served, so
    a big body is not starved by smaller ones behind it)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.peak = 0
        self.waited = 0  # requests that had to wait for bytes
        self.waiters: deque[tuple[int, Callable[[], None]]] = deque()

    def take(self, n: int, wake: Callable[[], None]) -> bool:
        if not self.waiters and self.used + n <= self.limit:
            self._grant(n)
            return True
        self.waited += 1
        self.waiters.append((n, wake))
        return False

    def cancel(self, wake: Callable[[], None]) -> None:
        for entry in self.waiters:
            if entry[1] == wake:
                self.waiters.remove(entry)
                break
        self._wake()

    def give(self, n: int) -> None:
        self.used -= n
        self._wake()

    def _grant(self, n: int) -> None:
        self.used += n
        self.peak = max(self.peak, self.used)

    def _wake(self) -> None:
        while self.waiters and self.used + self.waiters[0][0] <= self.limit:
            n, wake = self.waiters.popleft()
            self._grant(n)
            wake()


class BodyHold:
    """One request's bytes from the budget, given back when the last holder lets go: the
    connection once the answer is written, and whoever ``Request.retain``-ed the body."""

    __slots__ = ("budget", "count", "n")

    def __init__(self, budget: BodyBudget, n: int) -> None:
        self.budget = budget
        self.n = n
        self.count = 1

    def release(self) -> None:
        self.count -= 1
        if self.count == 0:
            self.budget.give(self.n)


def parse_size(text: str) -> int:
    """``268435456``, ``256MiB``, ``256M``, ``1GiB``, ``512MB`` -> bytes (K/M/G are binary)."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)(i?[bB])?\s*", text)
    if not m:
        raise ValueError(f"{text!r} is not a size; write bytes or e.g. 256MiB, 1GiB")
    unit = m[2].upper()
    base = 1000 if m[3] in ("B", "b") and unit else 1024
    return int(m[1]) * base ** " KMG".index(unit or " ")


def budget_from_env() -> int:
    raw = os.environ.get(BUDGET_ENV, "").strip()
    if not raw:
        return DEFAULT_BUDGET
    try:
        value = parse_size(raw)
    except ValueError as exc:
        raise ValueError(f"${BUDGET_ENV}: {exc}") from None
    if value < UNCOUNTED_BODY:
        raise ValueError(f"${BUDGET_ENV} must be at least {UNCOUNTED_BODY} bytes, got {raw!r}")
    return value


@dataclass(slots=True)
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes  # a bytearray for a body read into its own buffer: use it as bytes
    keep_alive: bool
    target: str  # the path and query as received, for forwarding
    client: str = ""  # the peer's address (IP), for the router's access lists
    hold: BodyHold | None = None  # the body's bytes from the budget (big bodies only)

    def retain(self) -> Callable[[], None]:
        """Keep the body's bytes counted after the answer (a shadow copy still being sent,
        say); call what this returns when done with the body. Once only."""
        hold = self.hold
        if hold is None:
            return _nothing
        hold.count += 1
        done = False

        def release() -> None:
            nonlocal done
            if not done:
                done = True
                hold.release()

        return release


def _nothing() -> None:
    return None


@dataclass(slots=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: list[tuple[str, str]] = field(default_factory=list)
    # a body of unknown length (server-sent events): each piece goes out as one chunk of a
    # chunked answer as soon as it comes, nothing held back; ``body`` is then unused
    stream: AsyncIterator[bytes] | None = None


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


def encode_head(resp: Response, keep_alive: bool) -> bytes:
    head = [
        f"HTTP/1.1 {resp.status} {REASONS.get(resp.status, 'Unknown')}",
        f"Content-Type: {resp.content_type}",
        "Transfer-Encoding: chunked"
        if resp.stream is not None
        else f"Content-Length: {len(resp.body)}",
    ]
    head.extend(f"{k}: {v}" for k, v in resp.headers)
    if not keep_alive:
        head.append("Connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")


def encode_response(resp: Response, keep_alive: bool) -> bytes:
    return encode_head(resp, keep_alive) + resp.body


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


class Drain:
    """Flow control for a protocol's writes: ``await wait()`` returns once the transport's
    buffer is below its low-water mark again (or the connection is gone)."""

    __slots__ = ("future", "paused")

    def __init__(self) -> None:
        self.paused = False
        self.future: asyncio.Future[None] | None = None

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        if self.future is not None and not self.future.done():
            self.future.set_result(None)
        self.future = None

    async def wait(self) -> None:
        if self.paused:
            if self.future is None:
                self.future = asyncio.get_running_loop().create_future()
            await self.future


async def write_slices(
    transport: Callable[[], asyncio.Transport | None], drain: Drain, data: bytes
) -> bool:
    """Write ``data`` in ``WRITE_SLICE`` pieces, each once the last has drained; False when
    the connection went away meanwhile."""
    view = memoryview(data)
    for i in range(0, len(view), WRITE_SLICE):
        t = transport()
        if t is None or t.is_closing():
            return False
        t.write(view[i : i + WRITE_SLICE])
        await drain.wait()
    return True


_IDLE, _BODY, _WAITING = 0, 1, 2  # reading heads / reading a body / waiting for the budget


class HTTPProtocol(asyncio.BufferedProtocol):
    """One connection. Requests are answered in order; a sync handler answers at once."""

    __slots__ = (
        "body",
        "budget",
        "buf",
        "busy",
        "client",
        "closing",
        "drain",
        "filled",
        "got",
        "handler",
        "hold",
        "on_close",
        "paused",
        "pending",
        "state",
        "task",
        "transport",
    )

    def __init__(
        self,
        handler: Handler,
        on_close: Callable[[], None] | None = None,
        budget: BodyBudget | None = None,
    ) -> None:
        self.handler = handler
        self.budget = budget if budget is not None else BodyBudget(DEFAULT_BUDGET)
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray(HEAD_BUFFER)  # heads, and what follows them, from 0 to filled
        self.filled = 0
        self.state = _IDLE
        self.body: bytearray | None = None  # the body being read, of its final size
        self.got = 0
        self.hold: BodyHold | None = None
        self.pending: tuple[str, str, dict[str, str], bool, int] | None = None
        self.busy = False  # an async handler is running; later requests wait in the buffer
        self.paused = False
        self.drain = Drain()
        self.task: asyncio.Future[None] | None = None
        self.closing = False
        self.on_close = on_close
        self.client = ""

    # -- transport callbacks ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.client = str(peer[0]) if isinstance(peer, tuple) and peer else ""

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        self.transport = None
        if self.state == _WAITING:
            self.budget.cancel(self._granted)
        if self.hold is not None:  # a body half read
            self.hold.release()
            self.hold = None
        self.body = None
        self.state = _IDLE
        self.drain.resume()
        if self.on_close is not None:
            self.on_close()

    def pause_writing(self) -> None:
        self.drain.pause()

    def resume_writing(self) -> None:
        self.drain.resume()

    def get_buffer(self, sizehint: int) -> memoryview:
        if self.body is not None:
            return memoryview(self.body)[self.got :]
        if self.filled == len(self.buf):  # not reached: _process grows or pauses first
            self._grow()
        return memoryview(self.buf)[self.filled :]

    def buffer_updated(self, nbytes: int) -> None:
        if self.body is not None:
            self.got += nbytes
            if self.got == len(self.body):
                self._body_done()
            return
        self.filled += nbytes
        self._process()

    # -- reading ----------------------------------------------------------------------------

    def _pause(self) -> None:
        if not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()

    def _resume(self) -> None:
        if self.paused and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()

    def _grow(self) -> None:
        # a new buffer, not a resize: the transport may still hold a view of the old one
        bigger = bytearray(len(self.buf) * 2)
        bigger[: self.filled] = memoryview(self.buf)[: self.filled]
        self.buf = bigger

    def _consume(self, n: int) -> None:
        rest = self.filled - n
        if rest:
            self.buf[:rest] = bytes(memoryview(self.buf)[n : self.filled])
        self.filled = rest

    def _fail(self, status: int, message: str) -> None:
        if self.transport is not None:
            self.transport.write(encode_response(error_response(status, message), False))
            self.transport.close()
        self.closing = True
        self.filled = 0

    def _process(self) -> None:
        while not self.closing and self.transport is not None:
            if self.busy or self.state != _IDLE:
                if self.busy and self.filled == len(self.buf):
                    self._pause()  # pipelined bytes fill the buffer: let the kernel hold more
                return
            end = self.buf.find(b"\r\n\r\n", 0, self.filled)
            if end < 0:
                if self.filled > MAX_HEAD:
                    self._fail(431, "request head too large")
                elif self.filled == len(self.buf):
                    self._grow()
                return
            try:
                method, target, _, headers, keep_alive = parse_head(bytes(self.buf[:end]))
                if "chunked" in headers.get("transfer-encoding", "").lower():
                    raise BadRequest(411, "chunked request bodies are not supported")
                try:
                    length = int(headers.get("content-length") or 0)
                except ValueError:
                    raise BadRequest(400, "Content-Length is not a number") from None
                if length < 0 or length > MAX_BODY:
                    raise BadRequest(413, f"the body may hold at most {MAX_BODY} bytes")
                if length > self.budget.limit:
                    raise BadRequest(
                        413,
                        f"the body ({length} bytes) is larger than this server's budget for "
                        f"bodies in flight ({self.budget.limit} bytes); raise ${BUDGET_ENV} "
                        "for the deployment or send smaller requests",
                    )
            except BadRequest as exc:
                self._fail(exc.status, str(exc))
                return
            start = end + 4
            if self.filled - start >= length:  # all here already (small bodies)
                body = bytes(self.buf[start : start + length])
                self._consume(start + length)
                self._dispatch(method, target, headers, keep_alive, body, None)
                continue
            self.pending = (method, target, headers, keep_alive, length)
            self._consume(start)  # the body's first bytes now start the buffer
            if length <= UNCOUNTED_BODY:
                self._start_body(None)
            elif self.budget.take(length, self._granted):
                self._start_body(BodyHold(self.budget, length))
            else:
                self.state = _WAITING  # nothing more is read until the bytes are granted
                self._pause()
            return

    def _granted(self) -> None:
        """The budget gave this connection's waiting body its bytes."""
        assert self.pending is not None
        hold = BodyHold(self.budget, self.pending[4])
        if self.transport is None:
            hold.release()
            return
        self._start_body(hold)
        self._resume()

    def _start_body(self, hold: BodyHold | None) -> None:
        assert self.pending is not None
        self.state = _BODY
        self.hold = hold
        body = bytearray(self.pending[4])
        have = self.filled
        body[:have] = memoryview(self.buf)[:have]
        self.filled = 0
        if len(self.buf) > HEAD_BUFFER:
            self.buf = bytearray(HEAD_BUFFER)
        self.body, self.got = body, have

    def _body_done(self) -> None:
        assert self.pending is not None and self.body is not None
        method, target, headers, keep_alive, _ = self.pending
        body, hold = self.body, self.hold
        self.pending, self.body, self.hold, self.state = None, None, None, _IDLE
        self._dispatch(method, target, headers, keep_alive, body, hold)  # type: ignore[arg-type]
        self._process()

    # -- answering --------------------------------------------------------------------------

    def _dispatch(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        keep_alive: bool,
        body: bytes,
        hold: BodyHold | None,
    ) -> None:
        path, _, query = target.partition("?")
        request = Request(method, path, query, headers, body, keep_alive, target, self.client, hold)
        try:
            result = self.handler(request)
        except Exception as exc:  # a handler bug must not kill the server
            result = internal_error(exc)
        if (
            isinstance(result, Response)
            and result.stream is None
            and len(result.body) <= SMALL_WRITE
        ):
            self._send(result, keep_alive)
            if hold is not None:
                hold.release()
            return
        self.busy = True
        self.task = asyncio.ensure_future(self._finish(result, keep_alive, hold))

    async def _finish(
        self, pending: Response | Awaitable[Response], keep_alive: bool, hold: BodyHold | None
    ) -> None:
        try:
            try:
                resp = pending if isinstance(pending, Response) else await pending
            except Exception as exc:
                resp = internal_error(exc)
            if resp.stream is not None:
                await self._send_stream(resp, keep_alive)
            elif len(resp.body) <= SMALL_WRITE:
                self._send(resp, keep_alive)
            elif self.transport is not None:
                self.transport.write(encode_head(resp, keep_alive))
                if await write_slices(lambda: self.transport, self.drain, resp.body):
                    self._sent(keep_alive)
        finally:
            if hold is not None:
                hold.release()
            self.busy = False
        self._resume()
        if self.filled:
            self._process()

    async def _send_stream(self, resp: Response, keep_alive: bool) -> None:
        """A chunked answer: each piece the stream yields is written (and drained) at once.
        A client that went away ends the stream early (``aclose``: whoever feeds it stops);
        a stream that fails midway closes the connection (the client sees a cut answer, not
        a well-formed one)."""
        stream = resp.stream
        assert stream is not None
        complete = False
        try:
            if self.transport is None:
                return
            self.transport.write(encode_head(resp, keep_alive))
            async for piece in stream:
                transport = self.transport
                if transport is None or transport.is_closing():
                    return
                if piece:
                    transport.write(b"%x\r\n%b\r\n" % (len(piece), piece))
                    await self.drain.wait()
            if self.transport is not None:
                self.transport.write(b"0\r\n\r\n")
                complete = True
        except Exception as exc:  # the source broke off (a backend that died)
            print(f"cube-lab: a streamed answer broke off: {exc!r}", file=sys.stderr, flush=True)
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
            if not complete and self.transport is not None:
                self.transport.close()
                self.closing = True
        if complete:
            self._sent(keep_alive)

    def _send(self, resp: Response, keep_alive: bool) -> None:
        if self.transport is None:
            return
        self.transport.write(encode_response(resp, keep_alive))
        self._sent(keep_alive)

    def _sent(self, keep_alive: bool) -> None:
        if not keep_alive and self.transport is not None:
            self.transport.close()
            self.closing = True


class Server:
    """Listens on ``host:port`` (0 picks a free port) and tracks its open connections."""

    def __init__(self, handler: Handler, budget: BodyBudget | None = None) -> None:
        self.handler = handler
        self.budget = budget if budget is not None else BodyBudget(DEFAULT_BUDGET)
        self.server: asyncio.base_events.Server | None = None
        self.connections: set[HTTPProtocol] = set()

    def _protocol(self) -> HTTPProtocol:
        proto: HTTPProtocol

        def closed() -> None:
            self.connections.discard(proto)

        proto = HTTPProtocol(self.handler, closed, self.budget)
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
    app: Any,
    host: str,
    port: int,
    ready_file: Path | None,
    what: str = "model server",
    body_budget: int | None = None,
) -> None:
    """Serve until SIGTERM or SIGINT, then finish the requests in progress. ``body_budget``:
    the bytes of request bodies held at once (None: ``$CUBE_SERVING_BODY_BUDGET`` or 256 MiB)."""
    if body_budget is None:
        try:
            body_budget = budget_from_env()
        except ValueError as exc:
            print(f"cube-lab {what}: {exc}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None
    server = Server(app, BodyBudget(body_budget))
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
