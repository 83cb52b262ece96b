"""The secret that makes a deployment's model servers answer only its router.

A model server listens on 127.0.0.1 on a port of its own, which anyone on the machine can find
(``ss -ltnp``, the deployment's ready files); without this, a request straight to that port
would pass by the router's API keys, rate limit and address lists. So every request the router
forwards carries ``X-Cube-Backend-Key``, and a model server started by the deployment service
refuses any request without the right one (the health probes excepted: they carry no data).

The key is derived from the deployment's router token (``$CUBE_ROUTER_TOKEN``), so the router
needs nothing more than it has, and a model server (which may run a user's own predict code)
gets the key but not the token that reconfigures the router. The model server gets the key in
``$CUBE_BACKEND_KEY`` (the environment, not argv: argv is world-readable in /proc) and takes it
out of its environment at start, so the model's code and its subprocesses do not inherit it.
"""

from __future__ import annotations

import hashlib
import hmac
import os

KEY_ENV = "CUBE_BACKEND_KEY"
HEADER = "X-Cube-Backend-Key"
_LABEL = b"cube-lab model server key v1"


def derive(token: str) -> str:
    """The backend key of the deployment whose router token is ``token`` ("" for none)."""
    if not token:
        return ""
    return hmac.new(token.encode("utf-8"), _LABEL, hashlib.sha256).hexdigest()


def take_from_env() -> str:
    """This process's backend key, removed from its environment ("" when none was given)."""
    return os.environ.pop(KEY_ENV, "")
