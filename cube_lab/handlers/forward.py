"""Under the hub: a lab server holds no store, so every cube-lab API request it gets is sent on
to the cube-lab service (``cube_lab/hub/store_service.py``) with this server's hub token.

The token identifies the server's user and nothing else: whatever code runs in this server can
act as that user, as it could through the browser, and never as anyone else. The service
answers with the same routes and bodies as the in-process API, so the panels do not know the
difference. Answers (downloads, logs) are streamed through as they arrive.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from jupyter_server.base.handlers import APIHandler
from tornado import httpclient, web

from ..errors import CubeError
from . import API

SERVICE = "cube_lab.service"  # settings key: (service base URL, token)
PASSED_REQUEST_HEADERS = ("Content-Type", "Accept", "Range", "If-None-Match")
PASSED_RESPONSE_HEADERS = (
    "Content-Type",
    "Content-Disposition",
    "Content-Range",
    "Accept-Ranges",
    "ETag",
    "Cache-Control",
    "Retry-After",
)
BODY_LIMIT = 512 * 1024 * 1024  # what the service itself accepts, with room for JSON framing
FLUSH_AT = 1024 * 1024  # a JSON answer bigger than this is passed on in pieces


class ServiceUnavailable(CubeError):
    status = 503


class ForwardHandler(APIHandler):
    """Any method on ``/cube/api/v1/<rest>``: the same request, to the service, as this user."""

    def _target(self, rest: str) -> str:
        base, _ = self.settings[SERVICE]
        url = base.rstrip("/") + API + "/" + quote(rest, safe="/%:@!$&'()*+,;=-._~")
        query = self.request.query
        return f"{url}?{query}" if query else url

    async def _forward(self, rest: str) -> None:
        base, token = self.settings[SERVICE]
        headers = {"Authorization": f"token {token}"}
        for name in PASSED_REQUEST_HEADERS:
            if name in self.request.headers:
                headers[name] = self.request.headers[name]
        method = self.request.method or "GET"
        has_body = method in ("POST", "PUT", "PATCH") or bool(self.request.body)
        body = self.request.body if has_body else None  # tornado wants b"" for an empty POST
        started = False  # the service's answer has begun
        json_answer = False
        pending = 0  # bytes written since the last flush

        def on_header(line: str) -> None:
            nonlocal started, json_answer
            line = line.rstrip("\r\n")
            if line.startswith("HTTP/"):
                parts = line.split(" ", 2)
                self.set_status(int(parts[1]), parts[2] if len(parts) > 2 else None)
                self.clear_header("Content-Type")
            elif ":" in line:
                name, value = line.split(":", 1)
                if name.strip().title() in PASSED_RESPONSE_HEADERS:
                    self.set_header(name.strip(), value.strip())
                if name.strip().lower() == "content-type":
                    json_answer = value.strip().startswith("application/json")
            started = True

        def on_chunk(chunk: bytes) -> None:
            # JSON answers are written in one go at the end (small, and useless half-read);
            # anything else (logs followed, downloads) goes out as it arrives
            nonlocal pending
            self.write(chunk)
            pending += len(chunk)
            if not json_answer or pending >= FLUSH_AT:
                self.flush()
                pending = 0

        request = httpclient.HTTPRequest(
            self._target(rest),
            method=method,
            headers=headers,
            body=body,
            allow_nonstandard_methods=True,  # a DELETE with a body
            header_callback=on_header,
            streaming_callback=on_chunk,
            request_timeout=3600,  # a followed log may stream for long
            connect_timeout=10,
            follow_redirects=False,
        )
        try:
            await httpclient.AsyncHTTPClient(max_body_size=BODY_LIMIT).fetch(
                request, raise_error=False
            )
        except OSError as exc:
            if started:
                raise  # cut off halfway: nothing better to say than closing the stream
            raise ServiceUnavailable(
                "the cube-lab service cannot be reached",
                f"{base}: {exc}. It runs beside the hub; ask the hub's admin to check it.",
            ) from None
        self.finish()

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, CubeError):
            self.set_status(exc.status)
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps(exc.to_json()))
            return
        super().write_error(status_code, **kwargs)

    @web.authenticated
    async def get(self, rest: str) -> None:
        await self._forward(rest)

    @web.authenticated
    async def post(self, rest: str) -> None:
        await self._forward(rest)

    @web.authenticated
    async def put(self, rest: str) -> None:
        await self._forward(rest)

    @web.authenticated
    async def patch(self, rest: str) -> None:
        await self._forward(rest)

    @web.authenticated
    async def delete(self, rest: str) -> None:
        await self._forward(rest)


def routes() -> list[tuple[str, type[Any]]]:
    return [(API + "/(.*)", ForwardHandler)]
