"""Chat with language models: conversations per user and project, answers streamed from a
deployment (or any OpenAI-compatible server), feedback, and preference export for DPO.
The REST contract is docs/chat.md.

From a notebook (``cl.chat``, the SDK's ``cube_lab.sdk.chat``): ``cl.chat.conversations()``,
``cl.chat.get(id)``, ``cl.chat.export("chat-prefs")``.
"""

from __future__ import annotations

from typing import Any


def conversations(project: str | None = None) -> list[dict[str, Any]]:
    """Your conversations in the project (the personal one by default), newest first."""
    from ..sdk.chat import chat

    return chat.conversations(project)


def get(conversation_id: int) -> dict[str, Any]:
    """One conversation with its messages."""
    from ..sdk.chat import chat

    return chat.get(conversation_id)


def export(
    dataset: str, *, project: str | None = None, conversation_ids: list[int] | None = None
) -> dict[str, Any]:
    """The feedback as a new version of ``dataset`` (prompt / chosen / rejected pairs)."""
    from ..sdk.chat import chat

    return chat.export(dataset, project=project, conversation_ids=conversation_ids)
