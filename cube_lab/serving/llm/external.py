"""``python -m cube_lab.serving.llm.external --engine vllm|llamacpp|ollama --model PATH ...``

One replica of an LLM deployment served by an engine other than cube-lab's own: a
supervisor that keeps the deployment service's contract for a replica (``__main__.py``'s):
it is one process, writes ``--ready-file`` (``{"port", "pid"}``, atomically) once the engine
answers, demands the router's backend key (``$CUBE_BACKEND_KEY``) of every request but the
health probes, and ends when killed, its engine with it.

- ``vllm``: ``python -m vllm.entrypoints.openai.api_server --model PATH
  --served-model-name NAME`` (adapters: ``--enable-lora --lora-modules NAME=PATH ...``);
- ``llamacpp``: ``python -m llama_cpp.server --model FILE.gguf --model_alias NAME``;
- ``ollama``: no child; requests go to the Ollama server of ``--option url=...``, the
  deployment's model name replaced by ``--option model=TAG``.

The engine child listens on a free port of 127.0.0.1 with a fresh API key (given in its
environment, never in argv); the supervisor listens on ``--port`` and forwards each request
(streams chunk by chunk) with that key, so the engine's own port is no way around the router.
The child gets SIGTERM when the supervisor dies (``PR_SET_PDEATHSIG``), SIGTERM or not.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import hmac
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tornado.web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from ..backend_auth import HEADER, take_from_env
from ..http import write_ready_file

ENGINES = ("vllm", "llamacpp", "ollama")
PROBES = frozenset({"/health", "/v2/health/live", "/v2/health/ready"})
READY_POLL_S = 0.5
OLLAMA_WAIT_S = 60.0  # an Ollama that does not answer by then is reported, not awaited
_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding",
     "server", "date", "proxy-authenticate", "upgrade", "trailer", "te"}
)  # fmt: skip


class EngineFailed(Exception):
    pass


def _pair(flag: str) -> Callable[[str], tuple[str, str]]:
    def parse(text: str) -> tuple[str, str]:
        key, sep, value = text.partition("=")
        if not sep or not key or not value:
            raise argparse.ArgumentTypeError(f"{flag} takes NAME=VALUE, got {text!r}")
        return key, value

    return parse


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _flag(engine: str, key: str, value: str) -> list[str]:
    """An engine option as the engine's own flag: vLLM's are dashed (``--max-model-len``,
    booleans bare), llama.cpp's server keeps the field names (``--n_ctx``)."""
    if engine == "vllm":
        flag = "--" + key.replace("_", "-")
        if value in ("true", "false"):
            return [flag] if value == "true" else []
        return [flag, value]
    return [f"--{key}", value]


def engine_argv(
    engine: str,
    model: str,
    name: str,
    adapters: list[tuple[str, str]],
    options: dict[str, str],
    port: int,
) -> list[str]:
    """The engine's command line (its API key goes in its environment)."""
    if engine == "vllm":
        server = "vllm.entrypoints.openai.api_server"
        argv = [sys.executable, "-m", server, "--model", model, "--served-model-name", name,
                "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
        if adapters:
            argv += ["--enable-lora", "--lora-modules", *(f"{n}={p}" for n, p in adapters)]
    elif engine == "llamacpp":
        argv = [sys.executable, "-m", "llama_cpp.server", "--model", model, "--model_alias",
                name, "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    else:
        raise ValueError(engine)
    for key, value in sorted(options.items()):
        argv += _flag(engine, key, value)
    return argv


def engine_env(engine: str, api_key: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CUBE_BACKEND_KEY"}
    if engine == "vllm":
        env["VLLM_API_KEY"] = api_key
    elif engine == "llamacpp":
        env["API_KEY"] = api_key  # llama_cpp.server's settings read their fields from env
    return env


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the supervisor dies (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class Upstream:
    """Where requests go: base URL, the key to send, and (ollama) the model name map."""

    def __init__(self, base: str, api_key: str, name: str, tag: str | None = None) -> None:
        self.base, self.api_key, self.name, self.tag = base.rstrip("/"), api_key, name, tag

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}


class Proxy(tornado.web.RequestHandler):
    SUPPORTED_METHODS = ("GET", "POST", "PUT", "DELETE")

    def initialize(self, upstream: Upstream, key: str) -> None:
        self.upstream = upstream
        self.key = key.encode() if key else None

    def _refuse(self, status: int, message: str, kind: str, code: str) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
        self.finish(json.dumps(body))

    async def get(self) -> None:
        await self._forward()

    async def post(self) -> None:
        await self._forward()

    async def put(self) -> None:
        await self._forward()

    async def delete(self) -> None:
        await self._forward()

    async def _forward(self) -> None:
        path = self.request.path
        if path in PROBES:
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps({"status": "ok", "live": True, "ready": True}))
            return
        if self.key is not None:
            given = self.request.headers.get(HEADER)
            if given is None or not hmac.compare_digest(given.encode("latin-1"), self.key):
                self._refuse(
                    401 if given is None else 403,
                    "this model server answers only its deployment's router (it needs the "
                    f"router's {HEADER}); send the request to the deployment's endpoint",
                    "authentication_error",
                    "invalid_backend_key",
                )
                return
        up = self.upstream
        body: bytes | None = self.request.body if self.request.method in ("POST", "PUT") else None
        if up.tag is not None:  # ollama: the deployment's name stands for Ollama's tag
            if path == "/v1/models" and self.request.method == "GET":
                self.set_header("Content-Type", "application/json")
                model = {"id": up.name, "object": "model", "created": 0, "owned_by": "ollama"}
                self.finish(json.dumps({"object": "list", "data": [model]}))
                return
            body = _rename(body, up.name, up.tag)
        headers = {**up.headers()}
        for h in ("Content-Type", "Accept"):
            if h in self.request.headers:
                headers[h] = self.request.headers[h]
        status: list[int] = []

        def on_header(line: str) -> None:
            if line.startswith("HTTP/"):
                status[:] = [int(line.split(" ", 2)[1])]
                self.set_status(status[0])
                return
            key, sep, value = line.partition(":")
            if sep and key.strip().lower() not in _HOP:
                self.set_header(key.strip(), value.strip())

        def on_chunk(chunk: bytes) -> None:
            self.write(chunk)
            self.flush()

        url = up.base + self.request.uri
        request = HTTPRequest(
            url,
            method=self.request.method or "GET",
            headers=headers,
            body=body,
            header_callback=on_header,
            streaming_callback=on_chunk,
            request_timeout=3600.0,
            connect_timeout=10.0,
            decompress_response=False,
            allow_nonstandard_methods=True,
        )
        try:
            await AsyncHTTPClient().fetch(request, raise_error=False)
        except (OSError, HTTPClientError) as exc:
            if not status:
                self._refuse(502, f"the engine did not answer: {exc}", "server_error", "engine")
                return
        self.finish()


def _rename(body: bytes | None, name: str, tag: str) -> bytes | None:
    if not body:
        return body
    try:
        data = json.loads(body)
    except ValueError:
        return body
    if isinstance(data, dict) and data.get("model") == name:
        data["model"] = tag
        return json.dumps(data).encode()
    return body


async def _get_json(url: str, api_key: str) -> tuple[int, Any]:
    req = HTTPRequest(
        url,
        headers={"Authorization": f"Bearer {api_key}"} if api_key else {},
        request_timeout=10.0,
        connect_timeout=5.0,
    )
    resp = await AsyncHTTPClient().fetch(req, raise_error=False)
    try:
        return resp.code, json.loads(resp.body or b"null")
    except ValueError:
        return resp.code, None


async def wait_engine(child: subprocess.Popen[bytes], up: Upstream, stop: asyncio.Event) -> None:
    """Until the engine answers ``/v1/models`` (EngineFailed when it exits first)."""
    while not stop.is_set():
        if child.poll() is not None:
            raise EngineFailed(
                f"the engine exited with status {child.returncode} before it answered"
            )
        try:
            code, _ = await _get_json(up.base + "/v1/models", up.api_key)
            if code == 200:
                return
        except (OSError, HTTPClientError):
            pass
        await asyncio.sleep(READY_POLL_S)


async def wait_ollama(up: Upstream, stop: asyncio.Event) -> None:
    """Until the Ollama server answers and has the model (EngineFailed when it has not)."""
    deadline = time.monotonic() + OLLAMA_WAIT_S
    last = ""
    while not stop.is_set():
        try:
            code, body = await _get_json(up.base + "/v1/models", up.api_key)
            if code == 200 and isinstance(body, dict):
                ids = {m.get("id") for m in body.get("data") or [] if isinstance(m, dict)}
                if up.tag in ids or f"{up.tag}:latest" in ids:
                    return
                raise EngineFailed(
                    f"the Ollama server at {up.base} has no model {up.tag!r} (it has "
                    f"{sorted(str(i) for i in ids)}); run `ollama pull {up.tag}` there"
                )
            last = f"HTTP {code}"
        except (OSError, HTTPClientError) as exc:
            last = str(exc)
        if time.monotonic() > deadline:
            raise EngineFailed(f"the Ollama server at {up.base} did not answer: {last}")
        await asyncio.sleep(READY_POLL_S)


async def run(a: argparse.Namespace, key: str) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    options = dict(a.option)
    child: subprocess.Popen[bytes] | None = None
    if a.engine == "ollama":
        up = Upstream(options["url"].removesuffix("/v1"), "", a.name, options["model"])
        waiting = asyncio.ensure_future(wait_ollama(up, stop))
    else:
        port, api_key = free_port(), secrets.token_urlsafe(24)
        argv = engine_argv(a.engine, a.model, a.name, a.adapter, options, port)
        print("cube-lab engine supervisor: starting " + " ".join(argv), flush=True)
        child = subprocess.Popen(
            argv, env=engine_env(a.engine, api_key), preexec_fn=_die_with_parent
        )
        up = Upstream(f"http://127.0.0.1:{port}", api_key, a.name)
        waiting = asyncio.ensure_future(wait_engine(child, up, stop))
    try:
        await waiting
        if stop.is_set():
            return 0
        from tornado.httpserver import HTTPServer
        from tornado.netutil import bind_sockets

        sockets = bind_sockets(a.port, a.host)
        bound = sockets[0].getsockname()[1]
        app = tornado.web.Application([(r"/.*", Proxy, {"upstream": up, "key": key})])
        server = HTTPServer(app, idle_connection_timeout=300)
        server.add_sockets(sockets)
        if a.ready_file is not None:
            write_ready_file(a.ready_file, {"port": bound, "pid": os.getpid()})
        print(
            f"cube-lab engine supervisor ({a.engine}) listening on http://{a.host}:{bound}",
            flush=True,
        )
        while not stop.is_set():
            if child is not None and child.poll() is not None:
                print(f"cube-lab engine supervisor: the engine exited ({child.returncode})",
                      file=sys.stderr, flush=True)  # fmt: skip
                return 3
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)
        server.stop()
        return 0
    except EngineFailed as exc:
        print(f"cube-lab engine supervisor: {exc}", file=sys.stderr, flush=True)
        return 3
    finally:
        if child is not None and child.poll() is None:
            child.terminate()
            try:
                child.wait(20)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m cube_lab.serving.llm.external")
    p.add_argument("--engine", required=True, choices=ENGINES)
    p.add_argument("--model", required=True, help="the model folder or GGUF file")
    p.add_argument("--name", required=True, help="the model's name in the API")
    p.add_argument("--adapter", action="append", type=_pair("--adapter"), default=[],
                   metavar="NAME=DIR", help="a LoRA adapter, served as NAME (vllm)")  # fmt: skip
    p.add_argument("--option", action="append", type=_pair("--option"), default=[],
                   metavar="KEY=VALUE", help="an engine option")  # fmt: skip
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--ready-file", type=Path)
    a = p.parse_args(argv)
    if a.adapter and a.engine != "vllm":
        p.error(f"--adapter goes with engine vllm, not {a.engine}")
    if a.engine == "ollama" and not {"url", "model"} <= {k for k, _ in a.option}:
        p.error("engine ollama needs --option url=http://host:11434 --option model=TAG")
    key = take_from_env()
    return asyncio.run(run(a, key))


if __name__ == "__main__":
    sys.exit(main())
