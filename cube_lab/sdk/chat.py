"""``cl.chat``: the Chat panel's conversations from a notebook (docs/chat.md).

``cl.chat.conversations(project=None)`` lists yours, ``cl.chat.get(id)`` gives one with its
messages, ``cl.chat.export("chat-prefs")`` writes the feedback given in the panel as a new
dataset version of ``prompt`` / ``chosen`` / ``rejected`` pairs (what a DPO fine-tune reads
with ``data: {dataset: "chat-prefs:N"}``). To ask a deployment from a notebook, use
``cl.deployments.get(NAME).chat(...)`` or ``%cube_chat``.

One implementation, two ways to reach it: in this process ``ChatService`` is called (the
embedded shape), over REST (under the hub, or after ``cl.connect``) the API of
``cube_lab/handlers/chat.py``; both answer the same JSON.
"""

from __future__ import annotations

import builtins
from typing import Any

from . import current

Json = dict[str, Any]


class _Local:
    def __init__(self, transport: Any) -> None:
        self.t = transport

    @staticmethod
    def _json(value: Any) -> Any:
        from ..serialize import to_jsonable

        return to_jsonable(value)

    def list(self, project: str | None) -> builtins.list[Json]:
        return self._json(self.t.ws.chat.list(self.t.caller, project))

    def get(self, conversation_id: int) -> Json:
        return self._json(self.t.ws.chat.get(self.t.caller, conversation_id))

    def export(self, body: Json) -> Json:
        return self._json(self.t.ws.chat.export(self.t.caller, body))


class _Rest:
    def __init__(self, transport: Any) -> None:
        self.client = transport.client

    def list(self, project: str | None) -> builtins.list[Json]:
        return self.client.get("chat/conversations", project=project)["conversations"]

    def get(self, conversation_id: int) -> Json:
        return self.client.get(f"chat/conversations/{int(conversation_id)}")

    def export(self, body: Json) -> Json:
        return self.client.post("chat/exports", body)


def _api() -> _Local | _Rest:
    transport = current()
    return _Local(transport) if transport.kind == "local" else _Rest(transport)


class Chat:
    """``cl.chat.conversations()``, ``cl.chat.get(id)``, ``cl.chat.export(dataset)``."""

    def conversations(self, project: str | None = None) -> builtins.list[Json]:
        """Your conversations in the project (the personal one by default), newest first."""
        return _api().list(project)

    def get(self, conversation_id: int) -> Json:
        """One conversation with its messages (alternatives of regenerated answers included)."""
        return _api().get(conversation_id)

    def export(
        self,
        dataset: str,
        *,
        project: str | None = None,
        conversation_ids: builtins.list[int] | None = None,
    ) -> Json:
        """Feedback as a new version of ``dataset``: ``{"ref": "NAME:V", "pairs", ...}``."""
        body: Json = {"project": project, "dataset": dataset}
        if conversation_ids is not None:
            body["conversation_ids"] = conversation_ids
        return _api().export(body)

    def __repr__(self) -> str:
        return "<cube-lab chat: conversations(), get(id), export(dataset)>"


chat = Chat()
