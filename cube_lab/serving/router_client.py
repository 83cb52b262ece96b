"""A deployment's router's admin routes over loopback (stdlib only: the CLI pays no import)."""

from __future__ import annotations

import http.client
import json
from typing import Any


class RouterClient:
    """The router's admin routes over loopback (stdlib only: the CLI pays no import)."""

    def __init__(self, host: str, port: int, token: str) -> None:
        self.host, self.port, self.token = host, port, token

    def call(self, method: str, path: str, body: Any = None, timeout: float = 5.0) -> Any:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            data = json.dumps(body).encode() if body is not None else None
            conn.request(method, path, data, {"X-Cube-Token": self.token})
            resp = conn.getresponse()
            payload = resp.read()
            if resp.status >= 400:
                raise OSError(f"router answered {resp.status}: {payload[:200]!r}")
            ctype = resp.getheader("Content-Type", "")
            return json.loads(payload) if ctype.startswith("application/json") else payload
        finally:
            conn.close()

    def state(self) -> dict[str, Any]:
        return self.call("GET", "/_cube/admin/state")

    def configure(self, table: dict[str, Any]) -> dict[str, Any]:
        return self.call("POST", "/_cube/admin/config", table)

    def metrics(self) -> str:
        return self.call("GET", "/metrics").decode()


def loopback(host: str) -> str:
    """The address to reach a router bound to ``host`` from this machine."""
    return "127.0.0.1" if host in ("0.0.0.0", "", "::") else host
