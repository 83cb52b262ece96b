"""A streamed ``POST /chat/completions`` to an OpenAI-compatible server, read as it arrives.

``open()`` returns once the server answered its status line and headers: an error answer
(4xx / 5xx, in OpenAI's shape or not), a refused connection, a name that does not resolve
or a timeout is raised then as ``TargetFailed`` (a 424 with the server's own words), before
anything was sent to the browser. ``events()`` then yields the parsed ``data:`` events
(``[DONE]`` ends them). ``close()`` before the end drops the connection at once, so the
server sees its client go (cube-lab's LLM engine then cancels the sequence).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.iostream import IOStream
from tornado.simple_httpclient import SimpleAsyncHTTPClient
from tornado.tcpclient import TCPClient

from ..errors import CubeError
from ..locale.messages import _t

CONNECT_TIMEOUT_S = 10.0
HEADERS_TIMEOUT_S = 120.0  # from the request to the answer's headers (a queue, a cold model)
ANSWER_TIMEOUT_S = 900.0


class TargetFailed(CubeError):
    """The model server could not be reached or refused the request (424: a dependency
    failed; the request was fine as far as cube-lab can tell)."""

    status = 424


class _Closed(Exception):
    """Raised inside tornado's streaming callback to drop the connection."""


class _Tracked(TCPClient):
    """A TCP client that keeps the streams it opened, so a stop can close them at once."""

    def __init__(self) -> None:
        super().__init__()
        self.streams: list[IOStream] = []

    async def connect(self, *args: Any, **kwargs: Any) -> IOStream:  # type: ignore[override]
        stream = await super().connect(*args, **kwargs)
        self.streams.append(stream)
        return stream


class Upstream:
    def __init__(self, url: str, headers: dict[str, str], payload: dict[str, Any]) -> None:
        self.url = url
        self.headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        self.headers.update(headers)
        self.payload = payload
        self.status: int | None = None
        self._error_body = bytearray()
        self._buffer = b""
        self._queue: asyncio.Queue[dict[str, Any] | BaseException | None] = asyncio.Queue()
        self._headers_seen: asyncio.Event = asyncio.Event()
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        self._tcp = _Tracked()

    async def open(self) -> None:
        client = SimpleAsyncHTTPClient(force_instance=True)
        client.tcp_client.close()
        client.tcp_client = self._tcp  # its connections are ours to close on a stop
        request = HTTPRequest(
            self.url,
            method="POST",
            body=json.dumps(self.payload),
            headers=self.headers,
            connect_timeout=CONNECT_TIMEOUT_S,
            request_timeout=ANSWER_TIMEOUT_S,
            header_callback=self._on_header,
            streaming_callback=self._on_chunk,
            decompress_response=False,
        )

        async def run() -> None:
            try:
                await client.fetch(request, raise_error=False)
                self._flush_tail()
                self._queue.put_nowait(None)
            except _Closed:
                self._queue.put_nowait(None)
            except (OSError, HTTPClientError, ValueError) as exc:
                self._queue.put_nowait(None if self._closed else exc)
            finally:
                self._drop()
                client.close()
                self._headers_seen.set()

        self._task = asyncio.create_task(run())
        try:
            await asyncio.wait_for(self._headers_seen.wait(), HEADERS_TIMEOUT_S)
        except TimeoutError:
            self._closed = True
            self._drop()
            self._task.cancel()
            where = self.url.rsplit("/chat/completions", 1)[0]
            raise TargetFailed(
                _t(
                    "the model server at {url} did not answer within {seconds:g} s",
                    url=where,
                    seconds=HEADERS_TIMEOUT_S,
                )
            ) from None
        if self.status is None or self.status >= 400:
            await self._task  # an error answer: read it whole (it is small)
            raise self._failure()

    def _failure(self) -> TargetFailed:
        where = self.url.rsplit("/chat/completions", 1)[0]
        if self.status is None:
            reason = ""
            while not self._queue.empty():
                item = self._queue.get_nowait()
                if isinstance(item, BaseException):
                    reason = str(item) or type(item).__name__
            return TargetFailed(
                _t("the model server at {url} cannot be reached", url=where),
                reason or None,
            )
        detail = bytes(self._error_body).decode("utf-8", "replace")[:2000]
        with contextlib.suppress(ValueError, AttributeError, TypeError):
            body = json.loads(detail)
            error = body.get("error", body)
            detail = error.get("message") if isinstance(error, dict) else str(error)
        return TargetFailed(
            _t("the model server at {url} answered {status}", url=where, status=self.status),
            detail or None,
        )

    def _on_header(self, line: str) -> None:
        if line.startswith("HTTP/"):
            parts = line.split(" ", 2)
            with contextlib.suppress(IndexError, ValueError):
                self.status = int(parts[1])
        elif line in ("\r\n", "\n", ""):  # the end of the headers (tornado gives each line)
            if self.status is not None and 100 <= self.status < 200:
                self.status = None  # an interim answer; the real one follows
                return
            self._headers_seen.set()

    def _on_chunk(self, chunk: bytes) -> None:
        if self._closed:
            raise _Closed()
        if self.status is None or self.status >= 400:
            if len(self._error_body) < 65536:
                self._error_body += chunk
            return
        self._buffer += chunk
        while True:
            for sep in (b"\r\n\r\n", b"\n\n"):
                cut = self._buffer.find(sep)
                if cut >= 0:
                    event, self._buffer = self._buffer[:cut], self._buffer[cut + len(sep) :]
                    self._event(event)
                    break
            else:
                return

    def _flush_tail(self) -> None:
        if self._buffer.strip() and (self.status or 0) < 400:
            self._event(self._buffer)
        self._buffer = b""

    def _event(self, raw: bytes) -> None:
        data = [
            line[5:].lstrip()
            for line in raw.decode("utf-8", "replace").splitlines()
            if line.startswith("data:")
        ]
        if not data:
            return
        text = "\n".join(data)
        if text.strip() == "[DONE]":
            self._queue.put_nowait({"done": True})
            return
        try:
            parsed = json.loads(text)
        except ValueError:
            return  # not JSON: nothing a chat client can use
        if isinstance(parsed, dict):
            self._queue.put_nowait(parsed)

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """The server's events as dicts; ``{"done": True}`` for ``[DONE]``. A connection that
        breaks mid-stream raises ``TargetFailed``."""
        while True:
            item = await self._queue.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise TargetFailed(
                    _t("the model server's stream broke off"), str(item) or type(item).__name__
                )
            yield item
            if item.get("done") is True:
                return

    def _drop(self) -> None:
        for stream in self._tcp.streams:
            stream.close()
        self._tcp.streams.clear()

    async def close(self) -> None:
        """Drop the connection now (a stop): the server sees its client gone."""
        self._closed = True
        self._drop()
        if self._task is not None and not self._task.done():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._task), 5)
            if not self._task.done():
                self._task.cancel()
