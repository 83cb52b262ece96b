"""The OpenAI-compatible HTTP API over one ``LLMService`` (tornado).

Routes:

- ``GET /v1/models``; ``POST /v1/completions``; ``POST /v1/chat/completions`` (with
  ``"stream": true``, server-sent events ending in ``data: [DONE]``; ``stream_options:
  {"include_usage": true}`` adds a last chunk with the usage);
- ``GET /v1/adapters`` and ``POST /v1/adapters`` ``{"name", "path"}``: load another peft
  adapter of the base while serving (201, the new model; 409 if the name is taken);
- ``GET /stats`` (the engine's batch sizes and counters, JSON) and ``GET /metrics``
  (Prometheus text); ``GET /health``, ``/v2/health/live`` and ``/v2/health/ready``.

Errors are OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``: 400 for a
malformed request, 404 for a model this server does not serve or an unknown route.

With a backend key (``$CUBE_BACKEND_KEY``, as the deployment service gives its model
servers) every route but the health probes needs it in ``X-Cube-Backend-Key``.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import time
import uuid
from typing import Any

import tornado.web
from tornado.iostream import StreamClosedError

from ..backend_auth import HEADER
from .engine import Event
from .protocol import OpenAIError, Parsed, load_body, parse_chat, parse_completion
from .service import LLMService, Prepared

PROBES = frozenset({"/health", "/v2/health/live", "/v2/health/ready"})


class Base(tornado.web.RequestHandler):
    service: LLMService

    def initialize(self, service: LLMService, key: str = "") -> None:
        self.service = service
        self.key = key.encode() if key else None

    def set_default_headers(self) -> None:
        self.set_header("Content-Type", "application/json")

    def prepare(self) -> None:
        if self.key is None or self.request.path in PROBES:
            return
        given = self.request.headers.get(HEADER)
        if given is None or not hmac.compare_digest(given.encode("latin-1"), self.key):
            raise OpenAIError(
                "this model server answers only its deployment's router (it needs the "
                f"router's {HEADER}); send the request to the deployment's endpoint",
                status=401 if given is None else 403,
                type="authentication_error",
                code="invalid_backend_key",
            )

    def send_error_body(self, exc: OpenAIError) -> None:
        self.set_status(exc.status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(exc.body()))

    def _handle_request_exception(self, e: BaseException) -> None:
        if isinstance(e, OpenAIError):
            if not self._finished:
                self.send_error_body(e)
            return
        super()._handle_request_exception(e)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        kind = "server_error" if status_code >= 500 else "invalid_request_error"
        message = self._reason
        exc_info = kwargs.get("exc_info")
        if exc_info is not None and isinstance(exc_info[1], tornado.web.HTTPError):
            message = exc_info[1].log_message or message
        self.finish(json.dumps(OpenAIError(message, status=status_code, type=kind).body()))

    def json(self, status: int, body: Any) -> None:
        self.set_status(status)
        self.finish(json.dumps(body))


class NotFound(Base):
    def prepare(self) -> None:
        super().prepare()
        routes = "GET /v1/models, POST /v1/completions, POST /v1/chat/completions"
        raise OpenAIError(
            f"no route {self.request.method} {self.request.path}; this server has {routes}",
            status=404,
            code="unknown_url",
        )


class Health(Base):
    def get(self) -> None:
        self.json(200, {"live": True, "ready": True})


class Models(Base):
    def get(self) -> None:
        self.json(200, {"object": "list", "data": self.service.models()})


class Adapters(Base):
    def get(self) -> None:
        models = [m for m in self.service.models() if m["parent"] is not None]
        self.json(200, {"object": "list", "data": models})

    async def post(self) -> None:
        body = load_body(self.request.body)
        loop = asyncio.get_running_loop()
        # loading waits for the engine's current step: not on the event loop
        model = await loop.run_in_executor(
            None, self.service.add_adapter, body.get("name"), body.get("path")
        )
        self.json(201, model)


class NoEmbeddings(Base):
    """``POST /v1/embeddings`` on a generative model: refused in OpenAI's shape."""

    def post(self) -> None:
        body = load_body(self.request.body)
        model = body.get("model")
        if isinstance(model, str) and model:
            self.service.adapter_of(model)  # an unknown model is a 404, as elsewhere
        raise OpenAIError(
            f"`{self.service.name}` is a text generation model: it answers "
            "POST /v1/chat/completions and /v1/completions, not /v1/embeddings (deploy an "
            "embedding model for those)",
            "model",
            code="model_not_supported",
        )


class Stats(Base):
    def get(self) -> None:
        stats = self.service.engine.stats.as_dict()
        count = self.service.ttft_count
        stats["time_to_first_token_mean_s"] = self.service.ttft_sum / count if count else None
        self.json(200, stats)


class Metrics(Base):
    def get(self) -> None:
        s = self.service.engine.stats
        lines = [
            "# TYPE cube_llm_decode_steps_total counter",
            *(
                f'cube_llm_decode_steps_total{{batch_size="{k}"}} {v}'
                for k, v in sorted(s.decode_batch_sizes.items())
            ),
            "# TYPE cube_llm_prompt_tokens_total counter",
            f"cube_llm_prompt_tokens_total {s.prompt_tokens}",
            "# TYPE cube_llm_completion_tokens_total counter",
            f"cube_llm_completion_tokens_total {s.completion_tokens}",
            "# TYPE cube_llm_running gauge",
            f"cube_llm_running {s.running}",
            "# TYPE cube_llm_waiting gauge",
            f"cube_llm_waiting {s.waiting}",
            "# TYPE cube_llm_time_to_first_token_seconds summary",
            f"cube_llm_time_to_first_token_seconds_sum {self.service.ttft_sum}",
            f"cube_llm_time_to_first_token_seconds_count {self.service.ttft_count}",
        ]
        self.set_header("Content-Type", "text/plain; version=0.0.4")
        self.finish("\n".join(lines) + "\n")


class Generate(Base):
    """The completions and chat completions routes (they differ in the shapes of choices)."""

    chat = False
    gone = False

    def on_connection_close(self) -> None:
        self.gone = True

    async def post(self) -> None:
        body = load_body(self.request.body)
        parsed = parse_chat(body) if self.chat else parse_completion(body)
        prep = self.service.prepare(parsed)
        rid = ("chatcmpl-" if self.chat else "cmpl-") + uuid.uuid4().hex[:24]
        if parsed.stream:
            await self._stream(prep, rid)
        else:
            await self._whole(prep, rid)

    def _head(self, rid: str, obj: str, parsed: Parsed) -> dict[str, Any]:
        return {"id": rid, "object": obj, "created": int(time.time()), "model": parsed.model}

    def _usage(self, prep: Prepared, completion: int) -> dict[str, int]:
        prompt = prep.prompt_tokens
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    def _echo(self, prep: Prepared, index: int) -> str:
        if self.chat or not prep.parsed.echo:
            return ""
        ids = prep.prompt_ids[index // prep.parsed.n]
        return self.service.engine.tokenizer.decode(ids, skip_special_tokens=True)

    async def _whole(self, prep: Prepared, rid: str) -> None:
        choices = len(prep.prompt_ids) * prep.parsed.n
        texts = [self._echo(prep, i) for i in range(choices)]
        reasons: list[str | None] = [None] * choices
        completion = 0
        async for index, event in self.service.generate(prep):
            texts[index] += event.text
            if event.finish_reason is not None:
                if event.finish_reason == "error":
                    raise OpenAIError(event.text, status=500, type="server_error")
                reasons[index] = event.finish_reason
                completion += event.completion_tokens
        if self.chat:
            out = [
                {
                    "index": i,
                    "message": {"role": "assistant", "content": texts[i]},
                    "logprobs": None,
                    "finish_reason": reasons[i],
                }
                for i in range(choices)
            ]
        else:
            out = [
                {"index": i, "text": texts[i], "logprobs": None, "finish_reason": reasons[i]}
                for i in range(choices)
            ]
        head = self._head(rid, "chat.completion" if self.chat else "text_completion", prep.parsed)
        self.json(200, {**head, "choices": out, "usage": self._usage(prep, completion)})

    async def _stream(self, prep: Prepared, rid: str) -> None:
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        head = self._head(
            rid, "chat.completion.chunk" if self.chat else "text_completion", prep.parsed
        )
        choices = len(prep.prompt_ids) * prep.parsed.n
        completion = 0
        events = self.service.generate(prep)
        try:
            if self.chat:
                opening = [
                    {
                        "index": i,
                        "delta": {"role": "assistant", "content": ""},
                        "logprobs": None,
                        "finish_reason": None,
                    }
                    for i in range(choices)
                ]
                await self._send({**head, "choices": opening})
            elif prep.parsed.echo:
                echoed = [
                    self._choice(i, Event(self._echo(prep, i), None, 0, 0)) for i in range(choices)
                ]
                await self._send({**head, "choices": echoed})
            async for index, event in events:
                if self.gone:
                    break
                if event.finish_reason == "error":
                    error = OpenAIError(event.text, status=500, type="server_error")
                    await self._send(error.body())
                    break
                if event.finish_reason is not None:
                    completion += event.completion_tokens
                await self._send({**head, "choices": [self._choice(index, event)]})
            else:
                if prep.parsed.include_usage:
                    usage = self._usage(prep, completion)
                    await self._send({**head, "choices": [], "usage": usage})
                self.write("data: [DONE]\n\n")
                await self.flush()
        except StreamClosedError:
            pass  # the client went away: closing ``events`` cancels its sequences
        finally:
            await events.aclose()
        if not self._finished:
            self.finish()

    def _choice(self, index: int, event: Event) -> dict[str, Any]:
        if self.chat:
            delta = {"content": event.text} if event.text else {}
            return {
                "index": index,
                "delta": delta,
                "logprobs": None,
                "finish_reason": event.finish_reason,
            }
        return {
            "index": index,
            "text": event.text,
            "logprobs": None,
            "finish_reason": event.finish_reason,
        }

    async def _send(self, chunk: dict[str, Any]) -> None:
        self.write(f"data: {json.dumps(chunk)}\n\n")
        await self.flush()


class Completions(Generate):
    chat = False


class ChatCompletions(Generate):
    chat = True


def make_app(service: LLMService, key: str = "") -> tornado.web.Application:
    args = {"service": service, "key": key}
    routes: list[Any] = [
        (r"/v1/models", Models, args),
        (r"/v1/completions", Completions, args),
        (r"/v1/chat/completions", ChatCompletions, args),
        (r"/v1/adapters", Adapters, args),
        (r"/v1/embeddings", NoEmbeddings, args),
        (r"/stats", Stats, args),
        (r"/metrics", Metrics, args),
        (r"/(?:health|v2/health/live|v2/health/ready)", Health, args),
    ]
    return tornado.web.Application(
        routes, default_handler_class=NotFound, default_handler_args=args
    )
