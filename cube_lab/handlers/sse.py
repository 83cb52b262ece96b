"""Answers as server-sent events: one ``data: {json}`` line per event, flushed as it comes,
and a client that leaves noticed (``ClientGone``) so the work behind it can stop."""

from __future__ import annotations

import json
from typing import Any

from tornado import iostream

from ..chat.relay import ClientGone
from .base import CubeHandler


class EventStreamHandler(CubeHandler):
    _gone = False
    _streaming = False

    def on_connection_close(self) -> None:
        self._gone = True
        super().on_connection_close()

    def start_events(self) -> None:
        """From here on the reply is a stream (status and headers go with the first event)."""
        if not self._streaming:
            self._streaming = True
            self.set_status(200)
            self.set_header("Content-Type", "text/event-stream; charset=utf-8")
            self.set_header("Cache-Control", "no-cache")
            self.set_header("X-Accel-Buffering", "no")

    async def emit(self, event: dict[str, Any]) -> None:
        self.start_events()
        if self._gone:
            raise ClientGone()
        self.write(f"data: {json.dumps(event, ensure_ascii=False)}\n\n")
        try:
            await self.flush()
        except iostream.StreamClosedError:
            raise ClientGone() from None
