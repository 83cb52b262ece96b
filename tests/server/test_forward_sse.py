"""An LLM's streamed chat answer (server-sent events) through the hub shape's forward
(cube_lab/handlers/forward.py), event by event, not gathered at the end.

A real tiny random-init Llama (``cube_lab.finetune.tiny``) is deployed locally (its router and
LLM replica are real processes). A real HTTP server on loopback plays the cube-lab service:
on POST it streams the deployment's ``/v1/chat/completions`` (``stream: true``) on as it
comes, as the service's chat route does, but holds each next event until the lab server's
client has received the one before (or gives up after a while and says so in the stream).
A forward that gathered the answer would deliver nothing until the end: every wait would time
out and the client would read the "held back" marks.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tornado import httpclient, httpserver, web

from cube_lab.config import ENV_SERVICE_URL, Settings
from cube_lab.hub import devhub
from cube_lab.identity import Caller

pytest.importorskip("transformers")

from cube_lab.finetune import tiny

USER_TOKEN = "the-users-hub-token"
ALICE = Caller("alice")
HELD = "held back"  # what the fake service writes when the client never got an event
WAIT_S = 10.0
TEXTS = [
    "hello world, the quick brown fox jumps over the lazy dog",
    "numbers one two three four five six seven eight nine ten",
] * 20


class _Stream(web.RequestHandler):
    """The service's side: the deployment's SSE answer, passed on one event at a time."""

    async def post(self) -> None:
        service: SseService = self.settings["service"]
        endpoint, token = service.deployment
        self.set_header("Content-Type", "text/event-stream; charset=utf-8")
        self.set_header("Cache-Control", "no-cache")
        body = json.loads(self.request.body or b"{}")
        events: asyncio.Queue[bytes | None] = asyncio.Queue()
        pending = bytearray()

        def on_chunk(chunk: bytes) -> None:
            pending.extend(chunk)
            while b"\n\n" in pending:
                event, _, rest = bytes(pending).partition(b"\n\n")
                pending[:] = rest
                events.put_nowait(event + b"\n\n")

        async def upstream() -> None:
            try:
                await httpclient.AsyncHTTPClient().fetch(
                    f"{endpoint}/v1/chat/completions",
                    method="POST",
                    body=json.dumps({**body, "stream": True}),
                    headers={"Content-Type": "application/json", "X-Cube-Token": token},
                    streaming_callback=on_chunk,
                    request_timeout=120,
                )
            finally:
                events.put_nowait(None)

        task = asyncio.ensure_future(upstream())
        loop = asyncio.get_running_loop()
        sent = 0
        while (event := await events.get()) is not None:
            if sent:  # the client must have the last event before this one goes
                seen = await loop.run_in_executor(None, service.seen_upto, sent, WAIT_S)
                if not seen:
                    self.write(f"data: {HELD} after {sent}\n\n")
            self.write(event)
            await self.flush()
            sent += 1
            service.sent_at.append(time.monotonic())
        await task
        self.finish()


class SseService:
    """An HTTP server in a thread of its own, playing the cube-lab service."""

    def __init__(self) -> None:
        self.port = devhub.free_port()
        self.deployment: tuple[str, str] = ("", "")
        self.sent_at: list[float] = []
        self._seen = 0
        self._cond = threading.Condition()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: httpserver.HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def saw(self, count: int) -> None:
        with self._cond:
            self._seen = max(self._seen, count)
            self._cond.notify_all()

    def seen_upto(self, count: int, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._seen >= count, timeout)

    def start(self) -> None:
        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop = loop
            app = web.Application(
                [(r"/cube/api/v1/chat/conversations/c1/messages", _Stream)], service=self
            )
            self._server = httpserver.HTTPServer(app)
            self._server.listen(self.port, "127.0.0.1")
            ready.set()
            loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=serve, daemon=True)
        self._thread.start()
        assert ready.wait(10)

    def stop(self) -> None:
        loop, server = self._loop, self._server
        assert loop is not None and server is not None and self._thread is not None

        async def down() -> None:
            server.stop()
            await server.close_all_connections()
            loop.stop()

        loop.call_soon_threadsafe(lambda: loop.create_task(down()))
        self._thread.join(10)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The tiny LLM, registered and deployed on a workspace of its own: (endpoint, token)."""
    from serving_util import stop_serving

    from cube_lab.workspace import Workspace

    root = tmp_path_factory.mktemp("sse")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root))
        mp.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
        ws = Workspace.open(Settings.resolve(root / "cube-data"))
        try:
            tiny.build(root / "tiny", TEXTS)
            ws.registry.register(ALICE, name="tiny", path=root / "tiny")
            dep = ws.serving.deploy(ALICE, "tiny:1")
            assert dep.runtime == "llm" and dep.endpoint
            yield dep.endpoint, ws.serving.router_token(ALICE, "tiny")
        finally:
            stop_serving(ws, ALICE)
            ws.close()


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch, deployment: tuple[str, str]) -> Iterator[SseService]:
    fake = SseService()
    fake.deployment = deployment
    fake.start()
    monkeypatch.setenv(ENV_SERVICE_URL, f"http://127.0.0.1:{fake.port}")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", USER_TOKEN)
    yield fake
    fake.stop()


@pytest.fixture
def jp_server_config(tmp_path: Path, service: SseService) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {"cube_lab": True}},
        "CubeLab": {"data_dir": str(tmp_path / "server-data")},
    }


async def test_a_streamed_chat_answer_passes_the_forward_event_by_event(
    jp_fetch: Any, service: SseService
) -> None:
    received: list[tuple[float, bytes]] = []
    buffer = bytearray()

    def on_chunk(chunk: bytes) -> None:
        buffer.extend(chunk)
        while b"\n\n" in buffer:
            event, _, rest = bytes(buffer).partition(b"\n\n")
            buffer[:] = rest
            received.append((time.monotonic(), event))
        service.saw(len(received))

    body = {
        "model": "tiny",
        "messages": [{"role": "user", "content": "hello world"}],
        "max_tokens": 12,
        "temperature": 0,
    }
    resp = await jp_fetch(
        "cube",
        "api",
        "v1",
        "chat",
        "conversations",
        "c1",
        "messages",
        method="POST",
        body=json.dumps(body),
        headers={"Content-Type": "application/json"},
        streaming_callback=on_chunk,
        request_timeout=300,
        raise_error=False,
    )
    assert resp.code == 200
    assert resp.headers["Content-Type"].startswith("text/event-stream")
    assert resp.headers["Cache-Control"] == "no-cache"
    events = [e.decode() for _, e in received]
    assert not [e for e in events if HELD in e], events  # none waited for the forward
    assert events[-1] == "data: [DONE]"
    chunks = [json.loads(e.removeprefix("data: ")) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"].get("role") == "assistant"
    assert len(chunks) >= 3  # the opening, at least one token, the finish
    assert chunks[-1]["choices"][0]["finish_reason"] in ("length", "stop")
    # each event arrived on its own, soon after the service sent it, not all at the end
    assert len(service.sent_at) == len(events)
    lags = [got - sent for (got, _), sent in zip(received, service.sent_at, strict=True)]
    assert max(lags) < 5.0, lags
