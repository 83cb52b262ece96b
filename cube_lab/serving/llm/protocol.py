"""OpenAI's request bodies, checked and turned into what the engine needs, and its errors.

A malformed request raises ``OpenAIError``, which the HTTP layer answers in OpenAI's
error shape (``{"error": {"message", "type", "param", "code"}}``, 400 unless said
otherwise); the message says what was wrong and how to fix it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .engine import SamplingParams

MAX_N = 16
MAX_STOPS = 4  # as OpenAI's API
CHAT_DEFAULT_MAX_TOKENS = 512  # chat without max_tokens: this, or what the context has left
COMPLETIONS_DEFAULT_MAX_TOKENS = 16  # OpenAI's default for /v1/completions


class OpenAIError(Exception):
    def __init__(
        self,
        message: str,
        param: str | None = None,
        *,
        status: int = 400,
        type: str = "invalid_request_error",
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status
        self.type = type
        self.code = code

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


@dataclass
class Parsed:
    model: str
    stream: bool
    include_usage: bool
    n: int
    params: SamplingParams
    max_tokens_given: bool
    prompts: list[str | list[int]] = field(default_factory=list)  # completions
    messages: list[dict[str, str]] = field(default_factory=list)  # chat
    echo: bool = False


def load_body(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError) as exc:
        raise OpenAIError(
            f"the request body is not valid JSON ({exc}); send a JSON object such as "
            '{"model": "...", "messages": [{"role": "user", "content": "Hi"}]}'
        ) from None
    if not isinstance(body, dict):
        raise OpenAIError("the request body must be a JSON object")
    return body


def _number(body: dict[str, Any], key: str, default: float, lo: float, hi: float) -> float:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise OpenAIError(f"'{key}' must be a number, got {json.dumps(value)[:40]}", key)
    if not lo <= value <= hi:
        raise OpenAIError(f"'{key}' must be between {lo} and {hi}, got {value}", key)
    return float(value)


def _integer(body: dict[str, Any], key: str, lo: int, hi: int | None = None) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise OpenAIError(f"'{key}' must be an integer, got {json.dumps(value)[:40]}", key)
    if value < lo or (hi is not None and value > hi):
        bound = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
        raise OpenAIError(f"'{key}' must be {bound}, got {value}", key)
    return value


def _stops(value: Any) -> list[str]:
    if value is None:
        return []
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
        raise OpenAIError("'stop' must be a non-empty string or a list of them", "stop")
    if len(stops) > MAX_STOPS:
        raise OpenAIError(f"'stop' takes at most {MAX_STOPS} sequences", "stop")
    return stops


def _common(body: dict[str, Any], default_max_tokens: int) -> Parsed:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise OpenAIError(
            "you must provide a model parameter (a name that GET /v1/models lists)", "model"
        )
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise OpenAIError("'stream' must be true or false", "stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise OpenAIError("'stream_options' must be an object", "stream_options")
    key = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    max_tokens = _integer(body, key, 1)
    ignore_eos = body.get("ignore_eos", False)
    if not isinstance(ignore_eos, bool):
        raise OpenAIError("'ignore_eos' must be true or false", "ignore_eos")
    params = SamplingParams(
        max_tokens=max_tokens or default_max_tokens,
        temperature=_number(body, "temperature", 1.0, 0.0, 2.0),
        top_p=_number(body, "top_p", 1.0, 0.0, 1.0),
        stop=_stops(body.get("stop")),
        seed=_integer(body, "seed", -(2**63), 2**63 - 1),
        ignore_eos=ignore_eos,
    )
    if params.top_p == 0.0:
        params.temperature = 0.0  # only the most likely token is left
    return Parsed(
        model=model,
        stream=stream,
        include_usage=bool(options.get("include_usage")),
        n=_integer(body, "n", 1, MAX_N) or 1,
        params=params,
        max_tokens_given=max_tokens is not None,
    )


def parse_completion(body: dict[str, Any]) -> Parsed:
    parsed = _common(body, COMPLETIONS_DEFAULT_MAX_TOKENS)
    prompt = body.get("prompt")
    how = "'prompt' must be a string, a list of strings, a list of token ids or a list of those"
    if isinstance(prompt, str):
        prompts: list[str | list[int]] = [prompt]
    elif isinstance(prompt, list) and prompt and all(_is_ids(p) for p in prompt):
        prompts = [list(prompt)] if all(isinstance(p, int) for p in prompt) else list(prompt)
    elif isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt):
        prompts = list(prompt)
    else:
        raise OpenAIError(how, "prompt")
    if any(p == [] for p in prompts):
        raise OpenAIError("a prompt given as token ids must not be empty", "prompt")
    echo = body.get("echo", False)
    if not isinstance(echo, bool):
        raise OpenAIError("'echo' must be true or false", "echo")
    parsed.prompts, parsed.echo = prompts, echo
    return parsed


def _is_ids(p: Any) -> bool:
    if isinstance(p, int) and not isinstance(p, bool):
        return p >= 0
    return isinstance(p, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in p)


def parse_chat(body: dict[str, Any]) -> Parsed:
    parsed = _common(body, CHAT_DEFAULT_MAX_TOKENS)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise OpenAIError(
            '\'messages\' must be a non-empty list of {"role", "content"} objects', "messages"
        )
    out: list[dict[str, str]] = []
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise OpenAIError(f"{where} must be an object with a string 'role'", where)
        out.append({"role": m["role"], "content": _content(m.get("content"), where)})
    parsed.messages = out
    return parsed


def _content(content: Any, where: str) -> str:
    """A message's text: a string, or OpenAI's list of parts of which the text ones count."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text":
                raise OpenAIError(
                    f'{where}.content: only text parts ({{"type": "text", "text": ...}}) '
                    "are supported by this model",
                    f"{where}.content",
                )
            if not isinstance(part.get("text"), str):
                raise OpenAIError(f"{where}.content: a text part needs a string 'text'", where)
            texts.append(part["text"])
        return "".join(texts)
    raise OpenAIError(f"{where}.content must be a string or a list of text parts", where)
