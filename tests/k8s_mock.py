"""A Kubernetes API server for tests: kmock's emulator (a real HTTP server), answering the
way a real API server does where kmock 0.8 differs from one, for the real client.

- ``POST`` (create) answers ``201 Created``, as the API server does (kmock: 200, which
  kubernetes_asyncio's generated client then reads as no body at all);
- ``?watch=True`` (how kubernetes_asyncio spells it; the API server parses it with Go's
  ``strconv.ParseBool``) is a watch (kmock only knows ``watch=true``);
- lists honour ``labelSelector`` (``a=b`` and ``a!=b`` terms), as the API server does;
- leaving it closes what is still open (a job's watch, a followed log) at once: aiohttp's
  test server would wait 60 s for each such request to end by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import aiohttp.test_utils
import aiohttp.web
import kmock

T = TypeVar("T")

RESOURCES = (
    "kubeflow.org/v1/pytorchjobs",
    "kubeflow.org/v1/tfjobs",
    "kubeflow.org/v2beta1/mpijobs",
    "trainer.kubeflow.org/v1alpha1/trainjobs",
    "scheduling.volcano.sh/v1beta1/podgroups",
    "kubeflow.org/v1beta1/experiments",
    "kubeflow.org/v1beta1/trials",
    "serving.kserve.io/v1beta1/inferenceservices",
    "v1/pods",
    "v1/secrets",
)


def selected(obj: dict[str, Any], selector: str) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in filter(None, selector.split(",")):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        else:
            key, value = term.split("=", 1)
            if labels.get(key) != value.lstrip("="):
                return False
    return True


class ApiServer(kmock.KubernetesEmulator):
    async def __call__(self, raw: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        if raw.query.get("watch") in ("True", "1"):
            raw = raw.clone(rel_url=raw.rel_url.update_query(watch="true"))
        response = await super().__call__(raw)
        if raw.method == "POST" and response.status == 200 and not response.prepared:
            response.set_status(201)
        return response

    async def _serve_list(self, request: kmock.Request) -> Any:
        found = await super()._serve_list(request)
        selector = (request.params or {}).get("labelSelector")
        if selector:
            found["items"] = [o for o in found["items"] if selected(o, selector)]
        return found


class _PromptServer(aiohttp.test_utils.RawTestServer):
    """kmock's HTTP server, which ends open requests 0.5 s after it is asked to stop."""

    async def _make_runner(self, debug: bool = True, **kwargs: Any) -> Any:
        runner = await super()._make_runner(debug=debug, **kwargs)
        runner._shutdown_timeout = 0.5  # aiohttp's BaseRunner keeps it here (default 60 s)
        return runner


@contextlib.asynccontextmanager
async def api_server() -> AsyncIterator[ApiServer]:
    async with ApiServer() as server, kmock.Server(server, server_cls=_PromptServer):
        for resource in RESOURCES:
            server.resources[resource] = {}
        yield server


class InThread:
    """``api_server()`` on an event loop of its own thread, for tests whose code blocks (a
    CLI in a subprocess waits for the cluster): ``with InThread() as cluster:`` then
    ``cluster.url`` and ``cluster.run(lambda km: coroutine)``."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.server: ApiServer | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), daemon=True)

    async def _serve(self) -> None:
        self.loop, stop = asyncio.get_running_loop(), asyncio.Event()
        self._stop = stop
        async with api_server() as server:
            self.server = server
            self._ready.set()
            await stop.wait()

    @property
    def url(self) -> str:
        assert self.server is not None
        return str(self.server.url)

    def run(self, call: Callable[[ApiServer], Awaitable[T]], timeout: float = 30) -> T:
        assert self.loop is not None and self.server is not None
        return asyncio.run_coroutine_threadsafe(call(self.server), self.loop).result(timeout)

    def __enter__(self) -> InThread:
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("kmock did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.loop is not None
        self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)
