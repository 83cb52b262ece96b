"""One send, streamed: the target's answer relayed piece by piece, saved when it ends.

``relay(service, caller, plan, emit, gone)`` opens the target's stream (a failure there is
raised as ``TargetFailed`` before anything was emitted), saves the user's message, then
emits ``{"type": "user"}``, ``{"type": "delta"}``... and ``{"type": "done"}`` (or
``{"type": "error"}``) events, the shapes of docs/chat.md. ``emit`` raising (the browser
went away) or ``gone()`` turning true is a stop: the target's stream is closed and what
came so far is saved with status ``stopped``.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any

from tornado.httpclient import AsyncHTTPClient, HTTPClientError

from ..errors import CubeError
from ..identity import Caller
from ..serialize import to_jsonable
from .service import ChatService, SendPlan
from .upstream import TargetFailed, Upstream

Emit = Callable[[dict[str, Any]], Awaitable[None]]


class ClientGone(Exception):
    """The browser closed the request (Stop)."""


async def _thread(fn: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.to_thread(functools.partial(fn, *args))


def _piece(event: dict[str, Any]) -> str:
    text = []
    for choice in event.get("choices") or []:
        if isinstance(choice, dict) and choice.get("index", 0) == 0:
            delta = choice.get("delta") or {}
            if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                text.append(delta["content"])
    return "".join(text)


async def relay(
    service: ChatService,
    caller: Caller,
    plan: SendPlan,
    emit: Emit,
    gone: Callable[[], bool],
) -> dict[str, Any]:
    """Run the send; returns the saved answer (as JSON). Releases the conversation."""
    try:
        upstream = Upstream(plan.url, plan.headers, plan.payload)
        await upstream.open()  # TargetFailed: nothing saved, nothing emitted
        user = await _thread(service.save_user, caller, plan)
        text: list[str] = []
        usage: dict[str, Any] | None = None
        status, error = "complete", None
        cancelled = False
        try:
            if user is not None:
                await emit({"type": "user", "message": to_jsonable(user)})
            async for event in upstream.events():
                if gone():
                    raise ClientGone()
                if event.get("done") is True:
                    break
                if "error" in event and not event.get("choices"):
                    failure = event["error"]
                    status = "error"
                    error = (
                        str(failure.get("message")) if isinstance(failure, dict) else str(failure)
                    )
                    break
                if isinstance(event.get("usage"), dict):
                    usage = event["usage"]
                piece = _piece(event)
                if piece:
                    text.append(piece)
                    await emit({"type": "delta", "delta": piece})
        except TargetFailed as exc:
            status, error = "error", f"{exc.error}: {exc.detail}" if exc.detail else exc.error
        except (ClientGone, OSError, CubeError):
            status = "stopped"
        except asyncio.CancelledError:  # the server is going away: keep what came, then go
            status, cancelled = "stopped", True
        finally:
            await upstream.close()
        saved = to_jsonable(
            await _thread(service.save_answer, caller, plan, "".join(text), status, usage, error)
        )
        if cancelled:
            raise asyncio.CancelledError()
        if status == "stopped":
            return saved
        try:
            if status == "error":
                await emit(
                    {
                        "type": "error",
                        "error": error or "",
                        "detail": None,
                        "message": saved,
                    }
                )
            else:
                await emit({"type": "done", "done": True, "message": saved, "usage": usage})
        except (ClientGone, OSError, CubeError):
            pass
        return saved
    finally:
        service.release(plan)


async def list_models(endpoint: str, token: str) -> list[str] | None:
    """What a deployment's ``/v1/models`` lists (adapters included); None when it does not
    answer within a few seconds."""
    try:
        resp = await AsyncHTTPClient().fetch(
            f"{endpoint}/v1/models",
            headers={"X-Cube-Token": token},
            connect_timeout=3,
            request_timeout=5,
            raise_error=False,
        )
    except (OSError, HTTPClientError):
        return None
    if resp.code != 200:
        return None
    try:
        data = json.loads(resp.body or b"{}").get("data") or []
        return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]
    except (ValueError, AttributeError, KeyError, TypeError):
        return None


__all__ = ["ClientGone", "TargetFailed", "list_models", "relay"]
