"""Chat over REST (cube_lab/chat/; the contract is docs/chat.md):

- ``GET /chat/targets?project=P``: the project's running LLM deployments.
- ``GET /chat/conversations?project=P``, ``POST /chat/conversations``.
- ``GET / PATCH / DELETE /chat/conversations/{id}``.
- ``POST /chat/conversations/{id}/messages``: the answer as server-sent events.
- ``PUT /chat/conversations/{id}/messages/{mid}/feedback``,
  ``POST /chat/conversations/{id}/messages/{mid}/activate``.
- ``POST /chat/exports``: feedback as a dataset version of preference pairs.

A conversation is its owner's (in a project they are a member of); anyone else gets 404.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tornado import web

from ..chat.relay import list_models, relay
from .base import CubeHandler
from .sse import EventStreamHandler


class ChatTargetsHandler(CubeHandler):
    @web.authenticated
    async def get(self) -> None:
        project = self.get_query_argument("project", None)
        chat = self.workspace.chat
        targets = await self.call(chat.targets, self.caller, project)

        async def models(target: dict[str, Any]) -> None:
            token = await self.call(
                chat.router_token, self.caller, target["deployment"], target["project"]
            )
            found = await list_models(target["endpoint"], token)
            if found:
                target["models"] = found

        await asyncio.gather(*(models(t) for t in targets))
        self.reply({"targets": targets})


class ConversationsHandler(CubeHandler):
    @web.authenticated
    async def get(self) -> None:
        project = self.get_query_argument("project", None)
        found = await self.call(self.workspace.chat.list, self.caller, project)
        self.reply({"conversations": found})

    @web.authenticated
    async def post(self) -> None:
        body = self.json_body()
        self.reply(await self.call(self.workspace.chat.create, self.caller, body), 201)


class ConversationHandler(CubeHandler):
    @web.authenticated
    async def get(self, conversation_id: str) -> None:
        self.reply(await self.call(self.workspace.chat.get, self.caller, conversation_id))

    @web.authenticated
    async def patch(self, conversation_id: str) -> None:
        body = self.json_body()
        self.reply(await self.call(self.workspace.chat.update, self.caller, conversation_id, body))

    @web.authenticated
    async def delete(self, conversation_id: str) -> None:
        await self.call(self.workspace.chat.delete, self.caller, conversation_id)
        self.set_status(204)
        self.finish()


class MessagesHandler(EventStreamHandler):
    """Send a message (or regenerate an answer); the answer streams as server-sent events."""

    @web.authenticated
    async def post(self, conversation_id: str) -> None:
        body = self.json_body()
        chat = self.workspace.chat
        plan = await self.call(chat.plan_send, self.caller, conversation_id, body)
        # the stream starts with the first event: until the target takes the request, an
        # error is a plain JSON reply
        await relay(chat, self.caller, plan, self.emit, lambda: self._gone)
        if not self._finished and not self._gone:
            self.finish()


class FeedbackHandler(CubeHandler):
    @web.authenticated
    async def put(self, conversation_id: str, message_id: str) -> None:
        body = self.json_body()
        self.reply(
            await self.call(
                self.workspace.chat.feedback, self.caller, conversation_id, message_id, body
            )
        )


class ActivateHandler(CubeHandler):
    @web.authenticated
    async def post(self, conversation_id: str, message_id: str) -> None:
        self.reply(
            await self.call(self.workspace.chat.activate, self.caller, conversation_id, message_id)
        )


class ExportsHandler(CubeHandler):
    @web.authenticated
    async def post(self) -> None:
        body = self.json_body()
        self.reply(await self.call(self.workspace.chat.export, self.caller, body), 201)
