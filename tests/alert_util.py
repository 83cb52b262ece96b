"""A local webhook receiver for the alert tests: records every request it gets."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


class Hooks:
    """A local webhook receiver: records every request; ``fail[path]`` answers that many
    requests to ``path`` with 500 before it answers 200."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail: dict[str, int] = {}
        self.lock = threading.Lock()
        hooks = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                parts = urlsplit(self.path)
                with hooks.lock:
                    hooks.requests.append(
                        {
                            "path": parts.path,
                            "query": parse_qs(parts.query),
                            "headers": dict(self.headers),
                            "body": json.loads(body or b"{}"),
                        }
                    )
                    left = hooks.fail.get(parts.path, 0)
                    if left:
                        hooks.fail[parts.path] = left - 1
                self.send_response(500 if left else 200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"ok": true}')

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def at(self, path: str) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.requests if r["path"] == path]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def webhook(url: str) -> dict[str, Any]:
    return {"type": "webhook", "url": url}
