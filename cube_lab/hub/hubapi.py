"""A small async client of JupyterHub's REST API, as the cube-admin service uses it."""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import quote

from tornado.httpclient import AsyncHTTPClient, HTTPClientError

from ..errors import Conflict, CubeError, InvalidInput, NotFound
from ..locale.messages import _t


class HubError(CubeError):
    status = 502


class HubAPI:
    def __init__(self, api_url: str | None = None, token: str | None = None) -> None:
        self.api_url = (api_url or os.environ["JUPYTERHUB_API_URL"]).rstrip("/")
        self.token = token or os.environ["JUPYTERHUB_API_TOKEN"]
        self.http = AsyncHTTPClient()

    async def request(
        self, method: str, path: str, body: Any = None, *, timeout: float = 30
    ) -> Any:
        kwargs: dict[str, Any] = {
            "method": method,
            "headers": {"Authorization": f"token {self.token}"},
            "request_timeout": timeout,
        }
        if body is not None:
            kwargs["body"] = json.dumps(body)
            kwargs["headers"]["Content-Type"] = "application/json"
        elif method in ("POST", "PUT", "PATCH"):
            kwargs["body"] = "{}"
        if method == "DELETE" and body is not None:
            kwargs["allow_nonstandard_methods"] = True  # tornado refuses a DELETE body otherwise
        try:
            resp = await self.http.fetch(f"{self.api_url}{path}", **kwargs)
        except HTTPClientError as exc:
            message = ""
            if exc.response is not None and exc.response.body:
                try:
                    message = json.loads(exc.response.body).get("message", "")
                except (ValueError, AttributeError):
                    message = exc.response.body.decode(errors="replace")[:200]
            if exc.code == 404:
                raise NotFound(message or _t("{path} not found", path=path)) from None
            if exc.code == 409:
                raise Conflict(message or _t("{path} already exists", path=path)) from None
            if exc.code == 400:
                raise InvalidInput(message or _t("the hub refused the request")) from None
            raise HubError(
                _t(
                    "the hub answered {code} to {method} {path}",
                    code=exc.code,
                    method=method,
                    path=path,
                ),
                message,
            ) from None
        return json.loads(resp.body) if resp.body else None

    # -- groups ----------------------------------------------------------------------

    async def groups(self) -> list[dict[str, Any]]:
        return await self.request("GET", "/groups?limit=10000")

    async def group(self, name: str) -> dict[str, Any]:
        return await self.request("GET", f"/groups/{quote(name, safe='')}")

    async def create_group(self, name: str, properties: dict[str, Any], users: list[str]) -> None:
        await self.request("POST", f"/groups/{quote(name, safe='')}", {"users": users})
        await self.set_properties(name, properties)

    async def set_properties(self, name: str, properties: dict[str, Any]) -> None:
        await self.request("PUT", f"/groups/{quote(name, safe='')}/properties", properties)

    async def delete_group(self, name: str) -> None:
        await self.request("DELETE", f"/groups/{quote(name, safe='')}")

    async def add_members(self, name: str, users: list[str]) -> None:
        await self.request("POST", f"/groups/{quote(name, safe='')}/users", {"users": users})

    async def remove_members(self, name: str, users: list[str]) -> None:
        await self.request("DELETE", f"/groups/{quote(name, safe='')}/users", {"users": users})

    # -- users -----------------------------------------------------------------------

    async def user(self, name: str) -> dict[str, Any]:
        return await self.request("GET", f"/users/{quote(name, safe='')}")

    async def stop_server(self, user: str, server: str = "") -> None:
        """Stop ``user``'s server (``""``: the default one) through the hub."""
        path = f"/users/{quote(user, safe='')}/server"
        if server:
            path = f"/users/{quote(user, safe='')}/servers/{quote(server, safe='')}"
        await self.request("DELETE", path)

    async def users(self) -> list[dict[str, Any]]:
        return await self.request("GET", "/users?limit=10000")

    async def live_servers(self) -> set[str]:
        """ "user/servername" of every server running or starting."""
        live: set[str] = set()
        for user in await self.request("GET", "/users?state=active&limit=10000"):
            for name in user.get("servers") or {}:
                live.add(f"{user['name']}/{name}")
        return live
