"""The deployment's front door: one process on the deployment's port that spreads requests
over the model server processes, splits traffic between versions, mirrors to a shadow and
counts everything for Prometheus.

    python -m cube_lab.serving.router --name iris --port 8500 --config config.json \\
        --ready-file ready.json            (admin token in $CUBE_ROUTER_TOKEN)

The deployment service changes the routing table with ``POST /_cube/admin/config`` (token
in ``X-Cube-Token``); a switch is one assignment, so no request sees half a table. The table
also carries the deployment's access settings (``access``: key hashes, rate limit, client
address lists), which the router enforces before it forwards anything (see ``access.py``). Backends
left out of a new table are *retired*: they get no new requests, the ones in flight finish,
and ``GET /_cube/admin/state`` shows when their count reaches zero (then they may be stopped).
Every forwarded request carries the backend key derived from the token, without which the
model servers answer nothing but their health probes (see ``backend_auth.py``).

An LLM deployment's servers (``cube_lab.serving.llm``) speak OpenAI's API: ``/v1/models``,
``/v1/completions``, ``/v1/chat/completions`` and ``/v1/embeddings`` pass the gate and the
traffic split like ``/v2``. A streamed answer (``Transfer-Encoding: chunked``, server-sent
events) is passed on chunk by chunk as the model server writes it, never gathered first; the
router's own refusals on those paths (no key, a rate limit, no server ready) are in OpenAI's
error shape, ``{"error": {"message", "type", "param", "code"}}``, so OpenAI clients read them.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import json
import os
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..locale import negotiate
from ..locale.messages import _t, localize
from . import backend_auth
from .access import OPEN_PATHS, Gate, Refusal
from .http import (
    SMALL_WRITE,
    Drain,
    Request,
    Response,
    error_response,
    json_response,
    serve,
    write_slices,
)
from .metrics import Metrics

TOKEN_ENV = "CUBE_ROUTER_TOKEN"
DOWN_FOR_S = 1.0  # a backend that refused a connection is skipped this long
SHADOW_BODY_LIMIT = 4096
# the OpenAI routes an LLM deployment answers through the router (its model servers' other
# routes, such as loading an adapter from a path, are the deployment service's, not callers')
OPENAI_PATHS = frozenset(
    {"/v1/models", "/v1/completions", "/v1/chat/completions", "/v1/embeddings"}
)
_OPENAI_TYPES = {
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", "forbidden"),
    429: ("requests", "rate_limit_exceeded"),
}


def merge_engine_metrics(texts: list[tuple[str, str, str]], deployment: str) -> str:
    """The LLM replicas' Prometheus texts ``[(version, replica, text)]`` as one exposition:
    each family's ``# HELP``/``# TYPE`` once, then all its samples, each labelled with the
    deployment, the version and the replica (``host:port``)."""
    families: dict[str, list[str]] = {}
    for version, replica, text in texts:
        family = ""
        labels = f'deployment="{deployment}",version="{version}",replica="{replica}"'
        for line in text.splitlines():
            if not line.strip():
                continue
            if line.startswith("#"):
                parts = line.split(" ", 3)
                if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                    family = parts[2]
                    lines = families.setdefault(family, [])
                    if line not in lines:
                        lines.insert(sum(1 for x in lines if x.startswith("#")), line)
                continue
            sample, _, value = line.rpartition(" ")
            name, brace, rest = sample.partition("{")
            sample = f"{name}{{{labels},{rest}" if brace else f"{name}{{{labels}}}"
            families.setdefault(family or name, []).append(f"{sample} {value}")
    return "".join(line + "\n" for lines in families.values() for line in lines)


class ChunkedBody:
    """A model server's chunked answer as it arrives: ``async for piece in body`` yields each
    piece of data as soon as the socket delivers it. ``aclose()`` before the end (the client
    went away) drops the backend connection, so the model server sees it go and stops."""

    def __init__(self, conn: BackendConnection) -> None:
        self.conn = conn
        self.buf = bytearray()
        self.need = 0  # bytes of the current chunk still to come
        self.state = "size"  # size | data | data-end | trailer | done
        self.queue: asyncio.Queue[bytes | BaseException | None] = asyncio.Queue()
        self.done: bool | None = None  # True: read to the end; False: abandoned or broken
        self.callbacks: list[Callable[[bool], None]] = []

    def when_done(self, callback: Callable[[bool], None]) -> None:
        if self.done is None:
            self.callbacks.append(callback)
        else:
            callback(self.done)

    def _end(self, ok: bool) -> None:
        if self.done is not None:
            return
        self.done = ok
        for callback in self.callbacks:
            callback(ok)
        self.callbacks.clear()

    def feed(self, data: bytes) -> None:
        self.buf += data
        try:
            self._parse()
        except ValueError as exc:
            self.fail(ConnectionResetError(f"a malformed chunked answer: {exc}"))

    def _parse(self) -> None:
        while self.buf and self.state != "done":
            if self.state == "size":
                end = self.buf.find(b"\r\n")
                if end < 0:
                    return
                size = int(bytes(self.buf[:end]).split(b";", 1)[0].strip(), 16)
                del self.buf[: end + 2]
                self.state, self.need = ("trailer", 0) if size == 0 else ("data", size)
            elif self.state == "data":
                n = min(self.need, len(self.buf))
                self.queue.put_nowait(bytes(self.buf[:n]))
                del self.buf[:n]
                self.need -= n
                if not self.need:
                    self.state = "data-end"
            elif self.state == "data-end":
                if len(self.buf) < 2:
                    return
                del self.buf[:2]
                self.state = "size"
            else:  # trailer lines, up to an empty one
                end = self.buf.find(b"\r\n")
                if end < 0:
                    return
                line = bytes(self.buf[:end])
                del self.buf[: end + 2]
                if not line:
                    self.state = "done"
                    self.conn.stream = None  # the connection may take the next request
                    self.queue.put_nowait(None)
                    self._end(True)

    def fail(self, exc: BaseException) -> None:
        if self.state != "done":
            self.state = "done"
            self.queue.put_nowait(exc)
            self.conn.open = False
            if self.conn.transport is not None:
                self.conn.transport.close()
            self._end(False)

    def __aiter__(self) -> ChunkedBody:
        return self

    async def __anext__(self) -> bytes:
        item = await self.queue.get()
        if item is None:
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            raise item
        return item

    async def aclose(self) -> None:
        if self.state != "done":
            self.fail(ConnectionResetError("the client went away"))

    async def read_all(self) -> bytes:
        return b"".join([piece async for piece in self])


# a model server's answer: status, content type, body (a ChunkedBody when streamed), the
# headers that pass to the client
Answer = tuple[int, str, "bytes | ChunkedBody", list[tuple[str, str]]]


class BackendConnection(asyncio.Protocol):
    """One keep-alive connection to a model server; one request at a time. A big request
    body goes out in slices as the socket drains (asyncio's write buffer would otherwise
    copy what the socket does not take at once); the answer's body is read into one buffer
    of its final size."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.head = bytearray()
        self.body: bytearray | None = None
        self.got = 0
        self.status = 0
        self.ctype = "application/json"
        self.passed: list[tuple[str, str]] = []  # answer headers that go back to the client
        self.waiter: asyncio.Future[Answer] | None = None
        self.open = True
        self.got_bytes = False
        self.drain = Drain()
        self.stream: ChunkedBody | None = None  # a chunked answer being read

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.open = False
        self.drain.resume()
        if self.stream is not None:
            self.stream.fail(ConnectionResetError("the model server closed the connection"))
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(
                ConnectionResetError("the model server closed the connection")
            )

    def pause_writing(self) -> None:
        self.drain.pause()

    def resume_writing(self) -> None:
        self.drain.resume()

    def data_received(self, data: bytes) -> None:
        self.got_bytes = True
        if self.stream is not None:
            self.stream.feed(data)
            return
        if self.body is None:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.head[:end]).decode("latin-1").split("\r\n")
            self.status = int(head[0].split(" ", 2)[1])
            length, self.ctype, self.passed = 0, "application/json", []
            chunked = False
            for line in head[1:]:
                name, _, value = line.partition(":")
                key = name.strip().lower()
                if key == "content-length":
                    length = int(value)
                elif key == "content-type":
                    self.ctype = value.strip()
                elif key == "connection" and value.strip().lower() == "close":
                    self.open = False
                elif key == "inference-header-content-length":  # the binary tensor extension
                    self.passed.append(("Inference-Header-Content-Length", value.strip()))
                elif key == "transfer-encoding" and "chunked" in value.lower():
                    chunked = True
                elif key == "cache-control":
                    self.passed.append(("Cache-Control", value.strip()))
            if chunked:  # streamed (server-sent events): handed on as it comes
                rest = bytes(self.head[end + 4 :])
                self.head = bytearray()
                self.stream = stream = ChunkedBody(self)
                if self.waiter is not None and not self.waiter.done():
                    self.waiter.set_result((self.status, self.ctype, stream, self.passed))
                if rest:
                    stream.feed(rest)
                return
            rest = bytes(self.head[end + 4 : end + 4 + length])
            self.head = bytearray()
            self.body = bytearray(length)
            self.body[: len(rest)] = rest
            self.got = len(rest)
        else:
            n = min(len(data), len(self.body) - self.got)
            self.body[self.got : self.got + n] = memoryview(data)[:n]
            self.got += n
        if self.got < len(self.body):
            return
        body, self.body = self.body, None
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result((self.status, self.ctype, body, self.passed))  # type: ignore[arg-type]

    async def request(self, head: bytes, body: bytes) -> Answer:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.got_bytes = False
        try:
            if len(body) <= SMALL_WRITE:
                self.transport.write(head + body)
            else:
                self.transport.write(head)
                await write_slices(lambda: self.transport, self.drain, body)
            return await self.waiter
        finally:
            self.waiter = None


@dataclass(eq=False)
class Backend:
    host: str
    port: int
    version: str
    in_flight: int = 0
    served: int = 0
    down_until: float = 0.0
    retired: bool = False
    idle: list[BackendConnection] = field(default_factory=list)

    async def call(self, head: bytes, body: bytes) -> Answer:
        """Send one request; a stale pooled connection is replaced once, transparently."""
        while self.idle:
            conn = self.idle.pop()
            if not conn.open:
                continue
            try:
                result = await conn.request(head, body)
            except ConnectionError:
                if conn.got_bytes:
                    raise
                continue  # the server had closed it meanwhile: nothing was processed
            self._after(conn, result)
            return result
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(BackendConnection, self.host, self.port)
        result = await conn.request(head, body)
        self._after(conn, result)
        return result

    def _after(self, conn: BackendConnection, result: Answer) -> None:
        """Back to the pool: at once, or a streamed answer's connection once it has ended."""
        answer = result[2]
        if isinstance(answer, ChunkedBody):
            answer.when_done(lambda ok: self._release(conn) if ok else None)
        else:
            self._release(conn)

    def _release(self, conn: BackendConnection) -> None:
        if conn.open and not self.retired:
            self.idle.append(conn)
        elif conn.transport is not None:
            conn.transport.close()

    def close_idle(self) -> None:
        for conn in self.idle:
            if conn.transport is not None:
                conn.transport.close()
        self.idle.clear()


@dataclass
class Group:
    version: str
    weight: float
    backends: list[Backend]
    shadow: bool = False


class Samples:
    """Opt-in request/response samples (they hold users' data): a share of the requests,
    each with its answer, one JSON line each; the file rolls over to ``.1`` at 16 MB."""

    MAX_BYTES = 16 * 1024 * 1024

    def __init__(self) -> None:
        self.percent = 0.0
        self.path: Path | None = None
        self.file: Any = None

    def configure(self, percent: float, path: str | None) -> None:
        self.percent = percent if path else 0.0
        if self.file is not None and (not self.percent or Path(path or "") != self.path):
            self.file.close()
            self.file = None
        self.path = Path(path) if path else None

    def write(self, req: Request, version: str, resp: Response, took: float) -> None:
        assert self.path is not None
        if self.file is None:
            self.file = open(self.path, "a", buffering=1)
        record = {
            "ts": round(time.time(), 3),
            "path": req.path,
            "version": version,
            "status": resp.status,
            "latency_ms": round(took * 1000, 3),
            "request": req.body[:SHADOW_BODY_LIMIT].decode("utf-8", "replace"),
            "response": resp.body[:SHADOW_BODY_LIMIT].decode("utf-8", "replace"),
        }
        self.file.write(json.dumps(record) + "\n")
        if self.file.tell() > self.MAX_BYTES:
            self.file.close()
            self.file = None
            os.replace(self.path, self.path.with_suffix(".jsonl.1"))


class Router:
    def __init__(self, name: str, token: str) -> None:
        self.name = name
        self.token = token
        # one header line in every forwarded request's head: the model servers answer only it
        key = backend_auth.derive(token)
        self.backend_key_line = f"{backend_auth.HEADER}: {key}\r\n" if key else ""
        self.groups: list[Group] = []
        self.primary: list[Group] = []  # groups that take live traffic (weight > 0)
        self.shadows: list[Group] = []
        self.backends: dict[tuple[str, int], Backend] = {}
        self.shadow_log: Path | None = None
        self.samples = Samples()
        self.metrics = Metrics(name)
        self.gate = Gate(name, token)
        self.rr = 0
        self.shadow_tasks: set[asyncio.Task[None]] = set()
        self.runtime = "oip"  # "llm": /metrics adds the engines' own figures

    # -- configuration --------------------------------------------------------------------

    def configure(self, config: dict[str, Any]) -> None:
        if "access" in config:  # checked first: a bad one leaves the whole table as it was
            self.gate.configure(config["access"])
        groups: list[Group] = []
        seen: dict[tuple[str, int], Backend] = {}
        for g in config.get("groups") or []:
            version = str(g["version"])
            members = []
            for b in g.get("backends") or []:
                key = (str(b.get("host", "127.0.0.1")), int(b["port"]))
                backend = self.backends.get(key) or Backend(key[0], key[1], version)
                backend.version, backend.retired = version, False
                seen[key] = backend
                members.append(backend)
            groups.append(Group(version, float(g.get("weight", 0)), members, bool(g.get("shadow"))))
        for key, backend in self.backends.items():
            if key not in seen:
                backend.retired = True
                backend.close_idle()
        self.backends = {**{k: b for k, b in self.backends.items() if b.in_flight}, **seen}
        self.runtime = str(config.get("runtime") or self.runtime)
        log = config.get("shadow_log")
        self.shadow_log = Path(log) if log else None
        samples = config.get("samples") or {}
        self.samples.configure(float(samples.get("percent") or 0), samples.get("log"))
        # one assignment each: a request in progress keeps the table it started with
        self.groups = groups
        self.primary = [g for g in groups if not g.shadow and g.weight > 0 and g.backends]
        self.shadows = [g for g in groups if g.shadow and g.backends]

    def state(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "access": self.gate.state(),
            "groups": [
                {
                    "version": g.version,
                    "weight": g.weight,
                    "shadow": g.shadow,
                    "backends": [f"{b.host}:{b.port}" for b in g.backends],
                }
                for g in self.groups
            ],
            "backends": [
                {
                    "host": b.host,
                    "port": b.port,
                    "version": b.version,
                    "in_flight": b.in_flight,
                    "served": b.served,
                    "retired": b.retired,
                }
                for b in self.backends.values()
            ],
        }

    # -- routing ------------------------------------------------------------------------------

    def __call__(self, req: Request) -> Response | Any:
        path = req.path
        if path.startswith("/_cube/admin/"):
            return self.admin(req)  # the router token guards these
        if path not in OPEN_PATHS:
            refused = self._refuse(req)
            if refused is not None:
                return refused
        if path.startswith("/v2/models/") or path == "/predict" or path in OPENAI_PATHS:
            return self.forward(req)
        if path == "/metrics":
            if self.runtime == "llm":
                return self._with_engine_metrics()
            return Response(200, self.metrics.render().encode(), "text/plain; version=0.0.4")
        if path == "/v2/health/live":
            return json_response(200, {"live": True})
        if path == "/v2/health/ready":
            ready = any(self._usable(g) for g in self.primary)
            return json_response(200 if ready else 503, {"ready": ready})
        if path == "/v2" and self.primary:
            return self.forward(req)
        if path.startswith("/v1/"):
            return self._error(
                req,
                404,
                _t("no route {method} {path}", method=req.method, path=path),
                _t("Routes: {value}.", value=", ".join(OPENAI_PATHS)),
            )
        return self._error(req, 404, _t("no route {method} {path}", method=req.method, path=path))

    @staticmethod
    def _error(req: Request, status: int, error: str, detail: Any = None) -> Response:
        """The router's own refusal: OpenAI's error shape on the OpenAI routes, else cube-lab's
        (``{"error", "detail"}``), its texts in the request's ``Accept-Language`` (English
        without one); the OpenAI shape stays English, as OpenAI's clients expect."""
        if not req.path.startswith("/v1/"):
            locale = negotiate(req.headers.get("accept-language"))
            return error_response(status, localize(error, locale), localize(detail, locale))
        kind, code = _OPENAI_TYPES.get(
            status, ("server_error" if status >= 500 else "invalid_request_error", None)
        )
        message = f"{error}. {detail}" if detail else error
        body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
        return json_response(status, body)

    def _refuse(self, req: Request) -> Response | None:
        """The access gate's answer when the request may not pass (403, 401, 429)."""
        verdict = self.gate.check(req.headers, req.client, time.monotonic(), time.time())
        if not isinstance(verdict, Refusal):
            return None
        self.metrics.observe("none", verdict.status, 0.0)
        resp = self._error(req, verdict.status, verdict.error, verdict.detail)
        resp.headers.extend(verdict.headers)
        return resp

    def admin(self, req: Request) -> Response:
        given = req.headers.get("x-cube-token", "").encode("utf-8", "surrogatepass")
        if not self.token or not hmac.compare_digest(given, self.token.encode()):
            return error_response(403, "the admin routes need the deployment's token")
        if req.path == "/_cube/admin/state":
            return json_response(200, self.state())
        if req.path == "/_cube/admin/config" and req.method == "POST":
            try:
                self.configure(json.loads(req.body))
            except (ValueError, KeyError, TypeError) as exc:
                return error_response(400, f"bad routing table: {exc}")
            return json_response(200, self.state())
        return error_response(404, f"no admin route {req.path}")

    @staticmethod
    def _usable(group: Group) -> bool:
        now = time.monotonic()
        return any(b.down_until <= now for b in group.backends)

    def _pick_group(self, req: Request) -> tuple[Group | None, Response | None]:
        parts = req.path.split("/")
        if len(parts) > 5 and parts[4] == "versions":  # /v2/models/{name}/versions/{v}/...
            wanted = parts[5]
            for g in self.groups:
                if g.version == wanted and g.backends:
                    return g, None
            served = sorted({g.version for g in self.groups})
            return None, self._error(
                req,
                404,
                _t(
                    "version {version!r} of {name!r} is not deployed",
                    version=wanted,
                    name=self.name,
                ),
                _t("Deployed versions: {value}.", value=", ".join(served) or _t("none")),
            )
        primary = self.primary
        if not primary:
            return None, self._error(req, 503, _t("no model version is ready to serve"))
        if len(primary) == 1:
            return primary[0], None
        pick = random.random() * sum(g.weight for g in primary)
        for g in primary:
            pick -= g.weight
            if pick < 0:
                return g, None
        return primary[-1], None

    def _pick_backend(self, group: Group, avoid: set[Backend]) -> Backend | None:
        """The least busy live backend; round robin among equals."""
        now = time.monotonic()
        best: Backend | None = None
        n = len(group.backends)
        self.rr += 1
        for i in range(n):
            b = group.backends[(self.rr + i) % n]
            if b in avoid or b.down_until > now:
                continue
            if best is None or b.in_flight < best.in_flight:
                best = b
        return best

    def _encode(self, req: Request, target: str) -> bytes:
        """The head of the request to a model server, with the backend key; the body goes
        after it as it is (no copy of it is made to join the two). Of the client's headers
        only the content's type and the binary extension's length pass."""
        head = (
            f"{req.method} {target} HTTP/1.1\r\nHost: backend\r\n{self.backend_key_line}"
            f"Content-Type: {req.headers.get('content-type', 'application/json')}\r\n"
            f"Content-Length: {len(req.body)}\r\n"
        )
        extra = req.headers.get("inference-header-content-length")
        if extra is not None:
            head += f"Inference-Header-Content-Length: {extra}\r\n"
        return (head + "\r\n").encode("latin-1")

    async def forward(self, req: Request) -> Response:
        start = time.perf_counter()
        group, refusal = self._pick_group(req)
        if group is None:
            assert refusal is not None
            self.metrics.observe("none", refusal.status, time.perf_counter() - start)
            return refusal
        head = self._encode(req, req.target)
        tried: set[Backend] = set()
        self.metrics.in_flight += 1
        try:
            while True:
                backend = self._pick_backend(group, tried)
                if backend is None:
                    resp = self._error(
                        req,
                        503,
                        _t(
                            "no model server of version {version} is answering",
                            version=group.version,
                        ),
                        _t("See the deployment's log; `cube-lab deployments` shows its status."),
                    )
                    break
                tried.add(backend)
                backend.in_flight += 1
                streamed: ChunkedBody | None = None
                try:
                    status, ctype, body, passed = await backend.call(head, req.body)
                    if isinstance(body, ChunkedBody):
                        streamed = body  # in flight until its last chunk
                except OSError:  # refused or reset before an answer: try another replica
                    backend.down_until = time.monotonic() + DOWN_FOR_S
                    continue
                finally:
                    if streamed is None:
                        self._done_with(backend)
                backend.served += 1
                headers = [("X-Cube-Version", group.version), *passed]
                if streamed is not None:
                    streamed.when_done(lambda _ok, b=backend: self._done_with(b))
                    resp = Response(status, b"", ctype, headers, stream=streamed)
                else:
                    resp = Response(status, body, ctype, headers)  # type: ignore[arg-type]
                break
        finally:
            self.metrics.in_flight -= 1
        took = time.perf_counter() - start
        self.metrics.observe(group.version, resp.status, took)
        sample = self.samples.percent and req.method == "POST"  # requests, not metadata reads
        if sample and random.random() * 100 < self.samples.percent:
            self.samples.write(req, group.version, resp, took)
        if self.shadows and req.method == "POST" and resp.status < 500:
            self._mirror(req, group.version, resp)
        return resp

    async def _with_engine_metrics(self) -> Response:
        """The router's figures, then each live LLM replica's (tokens, time to first token,
        running and waiting sequences, decode batch sizes), fetched now with the backend
        key; a replica that does not answer within 5 s is left out."""
        head = (
            f"GET /metrics HTTP/1.1\r\nHost: backend\r\n{self.backend_key_line}"
            "Content-Length: 0\r\n\r\n"
        ).encode("latin-1")
        texts = []
        for backend in [b for b in self.backends.values() if not b.retired]:
            try:
                status, _, body, _ = await asyncio.wait_for(backend.call(head, b""), 5.0)
            except (OSError, TimeoutError):
                continue
            if status == 200 and isinstance(body, bytes | bytearray):
                replica = f"{backend.host}:{backend.port}"
                texts.append((backend.version, replica, bytes(body).decode("utf-8", "replace")))
        text = self.metrics.render() + merge_engine_metrics(texts, self.name)
        return Response(200, text.encode(), "text/plain; version=0.0.4")

    @staticmethod
    def _done_with(backend: Backend) -> None:
        backend.in_flight -= 1
        if backend.retired and not backend.in_flight:
            backend.close_idle()

    # -- shadow traffic ----------------------------------------------------------------------

    def _mirror(self, req: Request, version: str, primary: Response) -> None:
        for group in self.shadows:
            backend = self._pick_backend(group, set())
            if backend is None:
                continue
            # the body stays counted in the server's budget until the shadow has sent it
            release = req.retain()
            task = asyncio.ensure_future(
                self._shadow_call(req, version, primary, group, backend, release)
            )
            self.shadow_tasks.add(task)
            task.add_done_callback(self.shadow_tasks.discard)

    async def _shadow_call(
        self,
        req: Request,
        version: str,
        primary: Response,
        group: Group,
        backend: Backend,
        release: Callable[[], None],
    ) -> None:
        # the shadow serves the same model name: drop a pinned version from the path
        parts = req.target.split("/")
        if len(parts) > 5 and parts[4] == "versions":
            del parts[4:6]
        start = time.perf_counter()
        backend.in_flight += 1
        try:
            status, _, answer, _ = await backend.call(self._encode(req, "/".join(parts)), req.body)
            body = await answer.read_all() if isinstance(answer, ChunkedBody) else answer
        except OSError as exc:
            status, body = 502, str(exc).encode()
        finally:
            backend.in_flight -= 1
            release()
        took = time.perf_counter() - start
        self.metrics.observe_shadow(group.version, status, took)
        if self.shadow_log is not None:
            record = {
                "ts": time.time(),
                "path": req.path,
                "request": req.body[:SHADOW_BODY_LIMIT].decode("utf-8", "replace"),
                "primary": {
                    "version": version,
                    "status": primary.status,
                    "body": primary.body[:SHADOW_BODY_LIMIT].decode("utf-8", "replace"),
                },
                "shadow": {
                    "version": group.version,
                    "status": status,
                    "body": body[:SHADOW_BODY_LIMIT].decode("utf-8", "replace"),
                    "latency_ms": round(took * 1000, 3),
                },
            }
            with open(self.shadow_log, "a") as fh:
                fh.write(json.dumps(record) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m cube_lab.serving.router")
    p.add_argument("--name", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--config", help="the routing table to start with (JSON)")
    p.add_argument("--ready-file")
    a = p.parse_args(argv)
    router = Router(a.name, os.environ.get(TOKEN_ENV, ""))
    if a.config and Path(a.config).is_file():
        router.configure(json.loads(Path(a.config).read_text()))
    try:
        asyncio.run(
            serve(router, a.host, a.port, Path(a.ready_file) if a.ready_file else None, "router")
        )
    except OSError as exc:  # the port is taken
        print(f"cube-lab router: cannot listen on {a.host}:{a.port}: {exc}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
