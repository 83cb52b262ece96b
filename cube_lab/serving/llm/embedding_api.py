"""The OpenAI-compatible HTTP API of an embedding model (tornado): ``GET /v1/models``,
``POST /v1/embeddings``, ``GET /metrics``, ``GET /stats`` and the health probes.

``/v1/chat/completions`` and ``/v1/completions`` answer 400 in OpenAI's error shape
(``model_not_supported``: an embedding model generates no text); an unknown model is a 404
(``model_not_found``), as on the chat server. The backend key works as there.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import tornado.web

from .embeddings import EmbeddingModel, embedding_body, parse_embeddings
from .openai_api import Base, Health
from .protocol import OpenAIError, load_body


class EmbeddingService:
    def __init__(self, model: EmbeddingModel, name: str) -> None:
        self.model = model
        self.name = name
        self.created = int(time.time())

    def models(self) -> list[dict[str, Any]]:
        return [
            {
                "id": self.name,
                "object": "model",
                "created": self.created,
                "owned_by": "cube-lab",
                "root": self.name,
                "parent": None,
            }
        ]

    def check_model(self, model: str) -> None:
        if model != self.name:
            raise OpenAIError(
                f"The model `{model}` does not exist. This server serves: {self.name}.",
                "model",
                status=404,
                code="model_not_found",
            )

    async def embed(self, body: dict[str, Any]) -> dict[str, Any]:
        req = parse_embeddings(body, self.model.dimensions)
        self.check_model(req.model)
        loop = asyncio.get_running_loop()
        vectors, tokens = await loop.run_in_executor(None, self.model.encode, req.inputs)
        return embedding_body(req, vectors, tokens)


class EmbedBase(Base):
    def initialize(self, service: Any, key: str = "") -> None:  # type: ignore[override]
        super().initialize(service, key)
        self.embedder: EmbeddingService = service


class Models(EmbedBase):
    def get(self) -> None:
        self.json(200, {"object": "list", "data": self.embedder.models()})


class Embeddings(EmbedBase):
    async def post(self) -> None:
        self.json(200, await self.embedder.embed(load_body(self.request.body)))


class NoGeneration(EmbedBase):
    def post(self) -> None:
        body = load_body(self.request.body)
        model = body.get("model")
        if isinstance(model, str) and model:
            self.embedder.check_model(model)
        raise OpenAIError(
            f"`{self.embedder.name}` is an embedding model: it answers POST /v1/embeddings, "
            f"not {self.request.path}",
            "model",
            code="model_not_supported",
        )


class NotFound(EmbedBase):
    def prepare(self) -> None:
        super().prepare()
        raise OpenAIError(
            f"no route {self.request.method} {self.request.path}; this server has "
            "GET /v1/models, POST /v1/embeddings",
            status=404,
            code="unknown_url",
        )


class Stats(EmbedBase):
    def get(self) -> None:
        m = self.embedder.model
        self.json(200, {"requests": m.requests, "prompt_tokens": m.tokens})


class Metrics(EmbedBase):
    def get(self) -> None:
        m = self.embedder.model
        lines = [
            "# TYPE cube_llm_prompt_tokens_total counter",
            f"cube_llm_prompt_tokens_total {m.tokens}",
            "# TYPE cube_llm_embedding_requests_total counter",
            f"cube_llm_embedding_requests_total {m.requests}",
        ]
        self.set_header("Content-Type", "text/plain; version=0.0.4")
        self.finish("\n".join(lines) + "\n")


def make_embedding_app(service: EmbeddingService, key: str = "") -> tornado.web.Application:
    args = {"service": service, "key": key}
    routes: list[Any] = [
        (r"/v1/models", Models, args),
        (r"/v1/embeddings", Embeddings, args),
        (r"/v1/(?:chat/)?completions", NoGeneration, args),
        (r"/stats", Stats, args),
        (r"/metrics", Metrics, args),
        (r"/(?:health|v2/health/live|v2/health/ready)", Health, args),
    ]
    return tornado.web.Application(
        routes, default_handler_class=NotFound, default_handler_args=args
    )
