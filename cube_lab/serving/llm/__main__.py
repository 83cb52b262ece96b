"""``python -m cube_lab.serving.llm --model DIR [--adapter NAME=DIR ...] --port N``

Serves one transformers causal LM (and peft adapters of it, each under its own model name)
with the OpenAI-compatible API of ``openai_api.py``. The model loads before the socket
opens; ``--ready-file`` then gets ``{"port", "pid"}`` (written atomically), as the classic
model server's, so a deployment can start it the same way (``--port 0``: any free port).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

from ..backend_auth import take_from_env
from ..http import write_ready_file


def _adapter(text: str) -> tuple[str, Path]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"--adapter takes NAME=DIR, got {text!r}")
    return name, Path(path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m cube_lab.serving.llm")
    p.add_argument("--model", required=True, type=Path, help="a transformers model folder")
    p.add_argument("--name", help="the base model's name in the API (default: the folder's)")
    p.add_argument(
        "--adapter",
        action="append",
        type=_adapter,
        default=[],
        metavar="NAME=DIR",
        help="a peft adapter of the base, served as NAME",
    )
    p.add_argument(
        "--embedding",
        action="store_true",
        help="an embedding model (sentence-transformers folder): serve POST /v1/embeddings",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--ready-file", type=Path)
    p.add_argument("--device", help="cpu, cuda, cuda:1... (default: cuda when there is one)")
    p.add_argument(
        "--dtype", choices=["float32", "float16", "bfloat16"], help="(default: the model's)"
    )
    p.add_argument(
        "--max-batch",
        type=int,
        default=64,
        help="sequences generated at once; more wait for a free row",
    )
    a = p.parse_args(argv)
    if not a.model.is_dir():
        p.error(f"--model {a.model}: no such folder (give a transformers model folder)")
    names = [n for n, _ in a.adapter]
    if len(set(names)) != len(names):
        p.error(f"--adapter names must differ, got {names}")
    if a.max_batch < 1:
        p.error("--max-batch must be at least 1")
    key = take_from_env()
    if a.embedding:
        if a.adapter:
            p.error("--adapter goes with a generative model, not --embedding")
        return _embedding(a.model, a.name, a.device, key, a.host, a.port, a.ready_file)

    from .engine import Engine, EngineError
    from .service import LLMService

    try:
        engine = Engine(
            a.model, dict(a.adapter), device=a.device, dtype=a.dtype, max_batch=a.max_batch
        )
    except EngineError as exc:
        print(f"cube-lab LLM server: {exc}", file=sys.stderr, flush=True)
        return 3
    name = a.name or a.model.resolve().name
    if name in engine.adapters:
        p.error(f"the base's name {name!r} is also an adapter's: give --name")
    engine.start()
    asyncio.run(_serve(LLMService(engine, name), key, a.host, a.port, a.ready_file))
    engine.stop()
    return 0


def _embedding(
    model: Path, name: str | None, device: str | None, key: str, host: str, port: int,
    ready: Path | None,
) -> int:  # fmt: skip
    from .embedding_api import EmbeddingService, make_embedding_app
    from .embeddings import EmbeddingModel
    from .engine import EngineError

    try:
        embedder = EmbeddingModel(model, device=device)
    except EngineError as exc:
        print(f"cube-lab LLM server: {exc}", file=sys.stderr, flush=True)
        return 3
    service = EmbeddingService(embedder, name or model.resolve().name)
    asyncio.run(_serve(service, key, host, port, ready, make_embedding_app))
    return 0


async def _serve(
    service: object, key: str, host: str, port: int, ready: Path | None, make: Any = None
) -> None:
    from tornado.httpserver import HTTPServer
    from tornado.netutil import bind_sockets

    from .openai_api import make_app

    sockets = bind_sockets(port, host)
    bound = sockets[0].getsockname()[1]
    server = HTTPServer((make or make_app)(service, key), idle_connection_timeout=300)
    server.add_sockets(sockets)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if ready is not None:
        write_ready_file(ready, {"port": bound, "pid": os.getpid()})
    print(f"cube-lab LLM server listening on http://{host}:{bound}", flush=True)
    await stop.wait()
    server.stop()


if __name__ == "__main__":
    sys.exit(main())
