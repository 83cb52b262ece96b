"""The hub shape's forward (cube_lab/handlers/forward.py): a lab server with no store sends every
cube-lab API request on to the cube-lab service, over connections it keeps open.

A real HTTP server on loopback plays the service (in its own thread and event loop): it counts
the TCP connections it accepts and answers with what it was sent. The end-to-end path (a real
hub, the real service, tenancy) is tests/hub/test_boundary.py's.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tornado import httpserver, web
from tornado.httpclient import HTTPClientError

from cube_lab.config import ENV_SERVICE_URL
from cube_lab.hub import devhub

USER_TOKEN = "the-users-hub-token"
DOWNLOAD = bytes(range(256)) * 8192  # 2 MiB, not JSON


class _Echo(web.RequestHandler):
    def _answer(self, rest: str) -> None:
        self.set_status(int(self.get_query_argument("status", "200")))
        self.set_header("Content-Type", "application/json")
        self.set_header("X-Not-Passed", "1")
        self.finish(
            {
                "method": self.request.method,
                "path": rest,
                "query": self.request.query,
                "body": self.request.body.decode(),
                "headers": {
                    name: self.request.headers.get(name)
                    for name in ("Authorization", "Content-Type", "Accept", "Range", "Cookie")
                },
            }
        )

    def get(self, rest: str) -> None:
        self._answer(rest)

    def post(self, rest: str) -> None:
        self._answer(rest)

    def put(self, rest: str) -> None:
        self._answer(rest)

    def patch(self, rest: str) -> None:
        self._answer(rest)

    def delete(self, rest: str) -> None:
        self._answer(rest)


class _Download(web.RequestHandler):
    def get(self) -> None:
        self.set_header("Content-Type", "application/octet-stream")
        self.set_header("Content-Disposition", 'attachment; filename="model.bin"')
        self.finish(DOWNLOAD)


class _Follow(web.RequestHandler):
    """A followed log: the first line, then the last one only once the client has the first."""

    async def get(self) -> None:
        service: FakeService = self.settings["service"]
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.write("first line\n")
        await self.flush()
        seen = await asyncio.get_running_loop().run_in_executor(None, service.first_seen.wait, 5)
        self.finish("last line\n" if seen else "the first line never reached the client\n")


class _CutOff(web.RequestHandler):
    """Part of an answer, then the connection drops (the service died halfway)."""

    async def get(self) -> None:
        self.set_header("Content-Type", "application/octet-stream")
        self.write(b"x" * 1000)
        await self.flush()
        self.request.connection.stream.close()  # type: ignore[attr-defined]


class _Closing(web.RequestHandler):
    def get(self) -> None:
        self.set_header("Connection", "close")
        self.finish({"closing": True})


class FakeService:
    """An HTTP server in a thread of its own, counting the connections it accepts."""

    def __init__(self) -> None:
        self.port = devhub.free_port()
        self.connections = 0
        self.first_seen = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: httpserver.HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        ready = threading.Event()
        service = self

        class Counting(httpserver.HTTPServer):
            def handle_stream(self, stream: Any, address: Any) -> None:
                service.connections += 1
                super().handle_stream(stream, address)

        def serve() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop = loop
            app = web.Application(
                [
                    (r"/cube/api/v1/echo/(.*)", _Echo),
                    (r"/cube/api/v1/download", _Download),
                    (r"/cube/api/v1/follow", _Follow),
                    (r"/cube/api/v1/cut-off", _CutOff),
                    (r"/cube/api/v1/closing", _Closing),
                ],
                service=self,
            )
            self._server = Counting(app)
            self._server.listen(self.port, "127.0.0.1")
            ready.set()
            loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=serve, daemon=True)
        self._thread.start()
        assert ready.wait(10)

    def stop(self) -> None:
        """Down: the port refuses, and every open connection is closed."""
        loop, server = self._loop, self._server
        assert loop is not None and server is not None and self._thread is not None

        async def down() -> None:
            server.stop()
            await server.close_all_connections()
            loop.stop()

        loop.call_soon_threadsafe(lambda: loop.create_task(down()))
        self._thread.join(10)


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeService]:
    fake = FakeService()
    fake.start()
    monkeypatch.setenv(ENV_SERVICE_URL, f"http://127.0.0.1:{fake.port}")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", USER_TOKEN)
    yield fake
    if fake._thread is not None and fake._thread.is_alive():
        fake.stop()


@pytest.fixture
def jp_server_config(tmp_path: Path, service: FakeService) -> dict[str, Any]:
    # the service's address is in the environment before the server reads it
    return {
        "ServerApp": {"jpserver_extensions": {"cube_lab": True}},
        "CubeLab": {"data_dir": str(tmp_path / "server-data")},
    }


async def fetch(jp_fetch: Any, method: str, *path: str, **kwargs: Any) -> Any:
    if method in ("POST", "PUT", "PATCH") and "body" not in kwargs:
        kwargs["body"] = b""
    return await jp_fetch("cube", "api", "v1", *path, method=method, raise_error=False, **kwargs)


async def test_requests_share_one_kept_open_connection(jp_fetch: Any, service: FakeService) -> None:
    for i in range(20):
        resp = await fetch(jp_fetch, "GET", "echo", f"models-{i}")
        assert resp.code == 200
        assert json.loads(resp.body)["path"] == f"models-{i}"
    # tornado's AsyncHTTPClient, used before, opened one connection per request (20 here)
    assert service.connections == 1


async def test_every_method_body_query_and_header_goes_through(
    jp_fetch: Any, service: FakeService
) -> None:
    body = json.dumps({"name": "模型", "n": 1}).encode()
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        resp = await fetch(
            jp_fetch,
            method,
            "echo",
            "pipelines",
            "runs",
            body=body,
            params={"a": "1 2", "b": "ü"},
            headers={"Content-Type": "application/json", "Accept": "application/json"},
            allow_nonstandard_methods=True,
        )
        assert resp.code == 200, resp.body
        seen = json.loads(resp.body)
        assert seen["method"] == method
        assert seen["path"] == "pipelines/runs"
        assert seen["query"] == "a=1+2&b=%C3%BC"
        assert seen["body"] == body.decode()
        # the service sees this server's user's hub token, never the browser's credentials
        assert seen["headers"]["Authorization"] == f"token {USER_TOKEN}"
        assert seen["headers"]["Content-Type"] == "application/json"
        assert seen["headers"]["Accept"] == "application/json"
        assert seen["headers"]["Cookie"] is None
        assert "X-Not-Passed" not in resp.headers
    resp = await fetch(jp_fetch, "POST", "echo", "empty")  # an empty POST body
    assert resp.code == 200 and json.loads(resp.body)["body"] == ""
    # the service's own error status and body come back as they are
    resp = await fetch(jp_fetch, "GET", "echo", "missing", params={"status": "404"})
    assert resp.code == 404 and json.loads(resp.body)["path"] == "missing"
    assert service.connections == 1


async def test_downloads_and_followed_logs_stream_through(
    jp_fetch: Any, service: FakeService
) -> None:
    resp = await fetch(jp_fetch, "GET", "download")
    assert resp.code == 200
    assert resp.body == DOWNLOAD
    assert resp.headers["Content-Type"] == "application/octet-stream"
    assert resp.headers["Content-Disposition"] == 'attachment; filename="model.bin"'

    chunks: list[bytes] = []

    def on_chunk(chunk: bytes) -> None:
        chunks.append(chunk)
        if b"first line" in b"".join(chunks):
            service.first_seen.set()

    resp = await fetch(jp_fetch, "GET", "follow", streaming_callback=on_chunk)
    assert resp.code == 200
    assert b"".join(chunks) == b"first line\nlast line\n"
    # the same connection carried the download and the followed log
    assert service.connections == 1


async def test_service_down_is_a_503_json_and_the_forward_recovers(
    jp_fetch: Any, service: FakeService
) -> None:
    assert (await fetch(jp_fetch, "GET", "echo", "before")).code == 200
    service.stop()  # closes the connection the forward keeps open, too
    resp = await fetch(jp_fetch, "GET", "echo", "while-down")
    assert resp.code == 503
    answer = json.loads(resp.body)
    assert answer["error"] == "the cube-lab service cannot be reached"
    assert f"127.0.0.1:{service.port}" in answer["detail"]

    service.start()  # back, on the same port
    resp = await fetch(jp_fetch, "POST", "echo", "after", body=b"{}")
    assert resp.code == 200 and json.loads(resp.body)["path"] == "after"
    resp = await fetch(jp_fetch, "GET", "echo", "again")
    assert resp.code == 200
    assert service.connections == 2  # one before it went down, one after


async def test_an_answer_cut_off_halfway_is_not_passed_on_as_whole(
    jp_fetch: Any, service: FakeService
) -> None:
    # the browser's connection is closed too: before, it got a "complete" 200 of 1000 bytes
    with pytest.raises(HTTPClientError) as cut:  # "Stream closed" or "Connection closed"
        await fetch(jp_fetch, "GET", "cut-off")
    assert cut.value.code == 599
    # and the forward goes on working, on a new connection
    assert (await fetch(jp_fetch, "GET", "echo", "next")).code == 200
    assert service.connections == 2


async def test_a_connection_the_service_closes_is_not_reused(
    jp_fetch: Any, service: FakeService
) -> None:
    for _ in range(3):
        resp = await fetch(jp_fetch, "GET", "closing")
        assert resp.code == 200 and json.loads(resp.body) == {"closing": True}
    assert service.connections == 3
