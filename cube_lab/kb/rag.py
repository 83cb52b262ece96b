"""Chat with a knowledge base: retrieve, build the prompt, ask a model, cite what it was given.

``answer`` (and ``answer_events``, the same as events for a streamed reply) retrieves the
``k`` best chunks of the question (hybrid by default), keeps those that pass ``threshold``
and fills a prompt template with them (``{knowledge}``: the chunks as numbered blocks
``[1]``, ``[2]``, ...; ``{history}``: the conversation so far; ``{query}``: the question).
The prompt goes to an OpenAI-compatible ``/chat/completions`` endpoint through the official
``openai`` client: an LLM deployment of the project (``{"deployment": NAME}``; the
lab server passes its router with the deployment's own token, as the Chat panel does) or any
``{"base_url", "model", "api_key"}``. The answer comes back with one citation per chunk given
(number, chunk id, source, position, page, heading, text) and ``cited``: the numbers the
model's answer refers to. When no chunk passes the threshold the model is not called and the
answer is "no answer in the documents".

The threshold is on the exact cosine of the chunk with the question (vector and hybrid
modes; every hybrid hit is scored, whichever half found it), or on the BM25 score in keyword
mode (a reranker, ``rerank``, reorders the passages; the threshold stays on the cosine).
The request is checked by the same rules as the Chat panel's (``cube_lab.chat.params``:
the target and the sampling parameters), so a bad value is the same 400 everywhere.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..chat import endpoint
from ..chat.params import check_params, check_target, check_text
from ..chat.upstream import TargetFailed
from ..errors import InvalidInput
from ..identity import Caller
from ..locale.messages import _t
from .rerank import check_rerank
from .service import KnowledgeBaseService, check_filters, check_k, search_mode

DEFAULT_K = 5
DEFAULT_THRESHOLD = 0.25  # cosine (MiniLM): unrelated text scores about -0.1 to 0.2
CONNECT_TIMEOUT_S = 10.0
ANSWER_TIMEOUT_S = 300.0
MAX_TEMPLATE = 20_000
MAX_HISTORY = 100
FIELDS = {
    "query",
    "history",
    "target",
    "params",
    "k",
    "mode",
    "threshold",
    "template",
    "system",
    "filters",
    "rerank",
}
DEFAULT_TEMPLATE = """\
Answer the question with the numbered passages from the knowledge base below. Use only what \
the passages say, and cite each passage you use by its number in square brackets, like [1] \
or [2][3]. If the passages do not answer the question, say that the documents do not say.

Passages:
{knowledge}

Conversation so far:
{history}

Question: {query}
Answer:"""
_PLACEHOLDER = re.compile(r"\{(knowledge|history|query)\}")
_CITED = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")


def check_template(value: object) -> str:
    """A prompt template: text with ``{knowledge}`` and ``{query}`` (``{history}`` optional);
    other braces are left as they are."""
    if value is None:
        return DEFAULT_TEMPLATE
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(
            _t("template must be a non-empty string"),
            _t("e.g. {{knowledge}} ... {{history}} ... Question: {{query}}"),
        )
    if len(value) > MAX_TEMPLATE:
        raise InvalidInput(
            _t("template is too long ({n} characters)", n=len(value)),
            _t("At most {max} characters.", max=MAX_TEMPLATE),
        )
    missing = [p for p in ("knowledge", "query") if "{" + p + "}" not in value]
    if missing:
        raise InvalidInput(
            _t("the template has no {value}", value=", ".join("{" + p + "}" for p in missing)),
            _t(
                "A template holds {{knowledge}} (the numbered passages) and {{query}} (the "
                "question); {{history}} (the conversation so far) is optional."
            ),
        )
    return value


def check_history(value: object) -> list[dict[str, str]]:
    if value is None:
        return []
    example = _t('e.g. [{{"role": "user", "content": "..."}}, {{"role": "assistant", ...}}]')
    if not isinstance(value, list):
        raise InvalidInput(_t("history must be a list of messages"), example)
    if len(value) > MAX_HISTORY:
        raise InvalidInput(
            _t("history has {n} messages; at most {max}", n=len(value), max=MAX_HISTORY),
            _t("Keep the recent turns."),
        )
    out = []
    for n, item in enumerate(value):
        if (
            not isinstance(item, dict)
            or item.get("role") not in ("user", "assistant")
            or not isinstance(item.get("content"), str)
        ):
            raise InvalidInput(
                _t("history[{n}] must be a user or assistant message with a content", n=n),
                example,
            )
        out.append({"role": str(item["role"]), "content": str(item["content"])})
    return out


def check_threshold(value: object, mode: str) -> float:
    if value is None:
        return 0.0 if mode == "keyword" else DEFAULT_THRESHOLD
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(
            _t("threshold must be a number"),
            _t(
                "A cosine from -1 to 1 (vector, hybrid) or a BM25 score (keyword); default "
                "{value}.",
                value=DEFAULT_THRESHOLD,
            ),
        )
    if mode != "keyword" and not -1.0 <= value <= 1.0:
        raise InvalidInput(
            _t("threshold must be a cosine from -1 to 1 in {mode} mode", mode=mode),
            _t("got {value!r}", value=value),
        )
    return float(value)


def _where(hit: dict[str, Any], name_source: Callable[[str], str]) -> str:
    parts = [name_source(hit["source"])]
    page = (hit.get("meta") or {}).get("page")
    if page is not None:
        parts.append(f"page {page}")
    if hit.get("heading"):
        parts.append(str(hit["heading"]))
    return ", ".join(parts)


def knowledge_block(hits: list[dict[str, Any]], name_source: Callable[[str], str]) -> str:
    """The chunks as numbered blocks: ``[n] (source, page, heading)`` then the text."""
    return "\n\n".join(
        f"[{n}] ({_where(h, name_source)})\n{h['text'].strip()}" for n, h in enumerate(hits, 1)
    )


def history_block(history: list[dict[str, str]]) -> str:
    if not history:
        return "(none)"
    return "\n".join(
        f"{'User' if m['role'] == 'user' else 'Assistant'}: {m['content'].strip()}" for m in history
    )


def fill(template: str, knowledge: str, history: str, query: str) -> str:
    """The template with its placeholders replaced in one pass (a passage that holds the
    text ``{query}`` stays as it is)."""
    values = {"knowledge": knowledge, "history": history, "query": query}
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def cited_numbers(answer: str, given: int) -> list[int]:
    """The passage numbers the answer cites (``[2]``, ``[1, 3]``), in order, each once."""
    out: list[int] = []
    for match in _CITED.finditer(answer):
        for raw in re.split(r"\s*[,;]\s*", match.group(1)):
            n = int(raw)
            if 1 <= n <= given and n not in out:
                out.append(n)
    return out


def _client(found: endpoint.Endpoint) -> Any:
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - an install without the kb extra
        raise InvalidInput(
            _t("the openai client is not installed"), _t("pip install 'cube-lab[kb]'")
        ) from exc
    return openai.OpenAI(
        base_url=found.base_url,
        api_key=found.api_key or "none",
        default_headers=found.headers,
        max_retries=0,
        timeout=openai.Timeout(ANSWER_TIMEOUT_S, connect=CONNECT_TIMEOUT_S),
    )


@contextlib.contextmanager
def _model_errors(base_url: str) -> Iterator[None]:
    """A failure of the model server as a ``TargetFailed`` (424) saying what it answered."""
    import openai

    try:
        yield
    except openai.APIStatusError as exc:
        detail = ""
        body = exc.body
        if isinstance(body, dict):
            error = body.get("error", body)
            detail = str(error.get("message") if isinstance(error, dict) else error)
        raise TargetFailed(
            _t("the model server at {url} answered {status}", url=base_url, status=exc.status_code),
            (detail or exc.message)[:2000] or None,
        ) from exc
    except openai.APIConnectionError as exc:
        cause = exc.__cause__
        raise TargetFailed(
            _t("the model server at {url} cannot be reached", url=base_url),
            str(cause or exc) or None,
        ) from exc
    except openai.OpenAIError as exc:  # an answer that is not a chat completion, ...
        raise TargetFailed(
            _t("the model server at {url} gave no usable answer", url=base_url),
            f"{type(exc).__name__}: {exc}"[:2000],
        ) from exc


def _complete(
    found: endpoint.Endpoint,
    messages: list[dict[str, str]],
    params: dict[str, Any],
) -> tuple[str, dict[str, Any] | None]:
    """The answer's text and usage, through the official openai client."""
    client = _client(found)
    with client, _model_errors(found.base_url):
        reply = client.chat.completions.create(
            model=found.model, messages=messages, stream=False, **params
        )
    choices = getattr(reply, "choices", None)
    if not choices or getattr(choices[0], "message", None) is None:
        raise TargetFailed(
            _t("the model server at {url} gave no usable answer", url=found.base_url),
            _t("The reply has no choices[0].message."),
        )
    usage = reply.usage.model_dump() if getattr(reply, "usage", None) else None
    return choices[0].message.content or "", usage


def _stream(
    found: endpoint.Endpoint,
    messages: list[dict[str, str]],
    params: dict[str, Any],
) -> Iterator[tuple[str, dict[str, Any] | None]]:
    """The answer's pieces as the model streams them: (text, usage when a chunk has it)."""
    from openai.types.chat import ChatCompletion

    client = _client(found)
    with client, _model_errors(found.base_url):
        raw = client.chat.completions.with_raw_response.create(
            model=found.model, messages=messages, stream=True, **params
        )
        if "json" in (raw.headers.get("content-type") or ""):
            # a server that ignores "stream" and answers in one piece: that piece
            raw.http_response.read()
            reply = ChatCompletion.model_validate(raw.http_response.json())
            message = reply.choices[0].message if reply.choices else None
            usage = reply.usage.model_dump() if reply.usage else None
            yield (message.content or "") if message else "", usage
            return
        for chunk in raw.parse():
            usage = chunk.usage.model_dump() if getattr(chunk, "usage", None) else None
            choices = getattr(chunk, "choices", None) or []
            delta = getattr(choices[0], "delta", None) if choices else None
            text = (getattr(delta, "content", None) or "") if delta is not None else ""
            if text or usage:
                yield text, usage


@dataclass
class _Asked:
    """A question ready for the model: the answer's header, the passages given, the prompt."""

    header: dict[str, Any]
    given: list[dict[str, Any]]
    found: endpoint.Endpoint
    messages: list[dict[str, str]]
    params: dict[str, Any]
    name_source: Callable[[str], str]

    def citations(self, cited: list[int]) -> list[dict[str, Any]]:
        return [
            {
                "number": n,
                "chunk_id": h["id"],
                "source": self.name_source(h["source"]),
                "name": Path(h["source"]).name,
                "position": h["position"],
                "page": (h.get("meta") or {}).get("page"),
                "heading": h["heading"],
                "text": h["text"],
                "score": h["score"],
                "cosine": h["cosine"],
                "rerank": h.get("rerank"),
                "cited": n in cited,
            }
            for n, h in enumerate(self.given, 1)
        ]

    def answered(self, text: str, usage: dict[str, Any] | None) -> dict[str, Any]:
        cited = cited_numbers(text, len(self.given))
        return {
            **self.header,
            "answered": True,
            "answer": text,
            "citations": self.citations(cited),
            "cited": cited,
            "usage": usage,
        }


def _ask(
    kb: KnowledgeBaseService,
    serving: Any,
    caller: Caller,
    project: str | None,
    name: str,
    body: dict[str, Any],
    name_source: Callable[[str], str],
) -> _Asked | dict[str, Any]:
    """The checked question with its passages and prompt, or the whole answer when no
    passage passes the threshold (the model is not asked)."""
    if not isinstance(body, dict):
        raise InvalidInput(_t("the request body must be a JSON object"))
    unknown = sorted(set(body) - FIELDS)
    if unknown:
        raise InvalidInput(
            _t("unknown fields {unknown}", unknown=unknown),
            _t("Known: {value}", value=", ".join(sorted(FIELDS))),
        )
    query = check_text("query", body.get("query"), required=True).strip()
    history = check_history(body.get("history"))
    mode = search_mode(body.get("mode") or "hybrid")
    k = check_k(DEFAULT_K if body.get("k") is None else body.get("k"))
    threshold = check_threshold(body.get("threshold"), mode)
    template = check_template(body.get("template"))
    system = check_text("system", body.get("system"))
    params = check_params(body.get("params"))
    filters = check_filters(body.get("filters"))
    check_rerank(body.get("rerank"))  # a bad value fails before the model is resolved
    if body.get("target") is None:
        raise InvalidInput(
            _t("target is required: the model that answers"),
            _t(
                'Give {{"deployment": "NAME"}} (an LLM deployment of the project) or '
                '{{"base_url": "https://host/v1", "model": "NAME", "api_key": "..."}}.'
            ),
        )
    target, api_key = check_target(body.get("target"))
    view = kb.get(caller, project, name)  # NotFound for another's or none
    found = endpoint.resolve(serving, caller, view.project, target, api_key)

    hits = kb.retrieve(
        caller,
        view.project,
        name,
        query,
        k=k,
        mode=mode,
        filters=filters,
        name_source=name_source,
        rerank=body.get("rerank"),
    )
    score_of = "score" if mode == "keyword" else "cosine"
    given = [h for h in hits if h[score_of] is not None and h[score_of] >= threshold]
    result: dict[str, Any] = {
        "project": view.project,
        "kb": view.name,
        "query": query,
        "mode": mode,
        "k": k,
        "threshold": threshold,
        "target": found.shown,
        "retrieved": len(hits),
    }
    if not given:
        return {
            **result,
            "answered": False,
            "answer": _t("No answer in the documents."),
            "reason": _t(
                "No passage of {name!r} scored {threshold} or more for this question; the "
                "model was not asked.",
                name=view.name,
                threshold=threshold,
            ),
            "citations": [],
            "cited": [],
            "usage": None,
        }
    knowledge = knowledge_block(given, name_source)
    prompt = fill(template, knowledge, history_block(history), query)
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": prompt}
    ]
    return _Asked(result, given, found, messages, params, name_source)


def answer(
    kb: KnowledgeBaseService,
    serving: Any,
    caller: Caller,
    project: str | None,
    name: str,
    body: dict[str, Any],
    *,
    name_source: Callable[[str], str] = lambda source: source,
) -> dict[str, Any]:
    """Answer ``body["query"]`` from knowledge base ``name`` (see the module's text).
    ``name_source`` names a stored source as the caller sees it (REST: relative to the root).
    """
    asked = _ask(kb, serving, caller, project, name, _without_stream(body), name_source)
    if isinstance(asked, dict):
        return asked
    return asked.answered(*_complete(asked.found, asked.messages, asked.params))


def answer_events(
    kb: KnowledgeBaseService,
    serving: Any,
    caller: Caller,
    project: str | None,
    name: str,
    body: dict[str, Any],
    *,
    name_source: Callable[[str], str] = lambda source: source,
) -> Iterator[dict[str, Any]]:
    """The answer as events, for a streamed reply (``"stream": true``):

    - ``{"event": "citations", ...header, "citations": [...]}``: the passages given, first;
    - ``{"event": "delta", "text": "..."}``: each piece of the answer as the model streams it;
    - ``{"event": "done", ...the whole answer}``: what ``answer`` would have answered;
    - ``{"event": "error", "error", "detail"}``: the model failed after the first event.

    A bad request fails before the first event (the plain 4xx). When no passage passes the
    threshold there is one ``done`` event and the model is not asked."""
    asked = _ask(kb, serving, caller, project, name, _without_stream(body), name_source)
    if isinstance(asked, dict):
        yield {"event": "done", **asked}
        return
    yield {"event": "citations", **asked.header, "citations": asked.citations([])}
    parts: list[str] = []
    usage = None
    try:
        for text, got in _stream(asked.found, asked.messages, asked.params):
            usage = got or usage
            if text:
                parts.append(text)
                yield {"event": "delta", "text": text}
    except TargetFailed as exc:
        yield {"event": "error", **exc.to_json()}
        return
    yield {"event": "done", **asked.answered("".join(parts), usage)}


def _without_stream(body: Any) -> Any:
    if isinstance(body, dict) and "stream" in body:
        if not isinstance(body["stream"], bool):
            raise InvalidInput(
                _t("stream must be true or false"), _t("got {value!r}", value=body["stream"])
            )
        return {k: v for k, v in body.items() if k != "stream"}
    return body
