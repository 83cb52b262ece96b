"""Run code in a user's kernel on their hub-spawned lab server, as the user's notebook does: the
kernels REST API and the kernel's websocket, through the hub's proxy, with the user's token."""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass
from typing import Any

from tornado import httpclient, websocket


@dataclass
class Outcome:
    stdout: str
    error: str | None  # "EName: value" of an exception the cell raised


class Kernel:
    def __init__(self, hub_url: str, user: str, token: str) -> None:
        self.base = f"{hub_url.rstrip('/')}/user/{user}/api/kernels"
        self.headers = {"Authorization": f"token {token}"}
        self.kernel_id: str | None = None

    async def _start(self) -> None:
        client = httpclient.AsyncHTTPClient()
        resp = await client.fetch(
            self.base, method="POST", body=json.dumps({"name": "python3"}), headers=self.headers
        )
        self.kernel_id = json.loads(resp.body)["id"]

    async def _run(self, code: str, timeout: float) -> Outcome:
        if self.kernel_id is None:
            await self._start()
        url = self.base.replace("http", "ws", 1) + f"/{self.kernel_id}/channels"
        conn = await websocket.websocket_connect(
            httpclient.HTTPRequest(url, headers=self.headers, connect_timeout=30)
        )
        msg_id = uuid.uuid4().hex
        conn.write_message(
            json.dumps(
                {
                    "header": {
                        "msg_id": msg_id,
                        "msg_type": "execute_request",
                        "username": "test",
                        "session": uuid.uuid4().hex,
                        "version": "5.3",
                    },
                    "parent_header": {},
                    "metadata": {},
                    "content": {"code": code, "silent": False, "allow_stdin": False},
                    "channel": "shell",
                    "buffers": [],
                }
            )
        )
        out: list[str] = []
        error = None
        try:
            while True:
                raw = await asyncio.wait_for(conn.read_message(), timeout)
                if raw is None:
                    raise ConnectionError("the kernel's websocket closed")
                msg: dict[str, Any] = json.loads(raw)
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind, content = msg["header"]["msg_type"], msg["content"]
                if kind == "stream":
                    out.append(content["text"])
                elif kind in ("execute_result", "display_data"):
                    out.append(content["data"].get("text/plain", "") + "\n")
                elif kind == "error":
                    error = f"{content['ename']}: {content['evalue']}"
                elif kind == "status" and content["execution_state"] == "idle":
                    break
        finally:
            conn.close()
        return Outcome("".join(out), error)

    def run(self, code: str, timeout: float = 120) -> Outcome:
        return asyncio.run(self._run(code, timeout))

    def shutdown(self) -> None:
        if self.kernel_id is None:
            return

        async def stop() -> None:
            await httpclient.AsyncHTTPClient().fetch(
                f"{self.base}/{self.kernel_id}", method="DELETE", headers=self.headers,
                raise_error=False,
            )  # fmt: skip

        asyncio.run(stop())
