"""The access log of the hub's own services (cube-admin, the cube-lab service): one line per
request, with the secrets a URL can carry masked. A browser or a client may put a token in the
query (``?token=...``: the hub's own clients do), an OAuth callback carries ``code`` and
``state``; logged in full they would hand the log's readers a user's identity. The keys masked
are those whose name holds any of ``SECRET_KEYS``, as JupyterHub masks its own log."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit, urlunsplit

SECRET_KEYS = ("token", "auth", "key", "code", "state", "xsrf", "password", "secret")
MASK = "[secret]"
access_log = logging.getLogger("tornado.access")


def scrub(uri: str) -> str:
    """``uri`` with the value of every secret-looking query parameter replaced by ``MASK``; the
    rest of the query as it came (order, spelling, blanks)."""
    parts = urlsplit(uri)
    if not parts.query:
        return uri
    fields = []
    for field in parts.query.split("&"):
        name, eq, _value = field.partition("=")
        secret = eq and any(key in name.lower() for key in SECRET_KEYS)
        fields.append(f"{name}={MASK}" if secret else field)
    return urlunsplit(parts._replace(query="&".join(fields)))


def log_request(handler: Any) -> None:
    """Tornado's ``log_function``: the line it would write, the URI scrubbed; 5xx as errors,
    4xx as warnings, the rest as info."""
    status = handler.get_status()
    if status < 400:
        log = access_log.info
    elif status < 500:
        log = access_log.warning
    else:
        log = access_log.error
    req = handler.request
    took_ms = 1000.0 * req.request_time()
    log("%d %s %s (%s) %.2fms", status, req.method, scrub(req.uri), req.remote_ip, took_ms)
