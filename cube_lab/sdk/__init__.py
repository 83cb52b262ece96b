"""The Python SDK: ``import cube_lab as cl``, then ``cl.models`` and ``cl.pipelines``.

One transport per kernel, chosen on first use: under the hub (``$CUBE_LAB_SERVICE_URL`` and
``$JUPYTERHUB_API_TOKEN``) the cube-lab service over REST as this user; after
``cl.connect(url, token=...)`` that server over REST; else this process opens the store
(the embedded shape). Every call answers the same, and fails with the same
``cube_lab.errors.CubeError`` text, in each.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from .transport import LocalTransport, RestTransport, Transport

__all__ = ["Transport", "connect", "current", "disconnect"]

_lock = threading.Lock()
_transport: Transport | None = None


def current() -> Transport:
    """This kernel's transport (chosen once, on first use)."""
    global _transport
    with _lock:
        if _transport is None:
            from ..rest_client import ServiceClient

            client = ServiceClient.from_env()
            if client is None:
                _transport = LocalTransport()
            else:
                from ..config import ENV_ROOT_DIR

                raw = os.environ.get(ENV_ROOT_DIR)
                _transport = RestTransport(client, Path(raw).expanduser() if raw else None)
        return _transport


def connect(
    url: str, token: str | None = None, *, root: str | os.PathLike[str] | None = None
) -> RestTransport:
    """Use the cube-lab server (or service) at ``url`` over REST from now on.

    ``url`` is a lab server's base URL (``http://host:8888/``) or the cube-lab service's;
    ``token`` a token of yours it accepts (default ``$JUPYTERHUB_API_TOKEN``). ``root`` is
    the server's root folder as this machine sees it, when it shares the files: paths
    (pipelines, model files) are then sent relative to it."""
    global _transport
    from ..errors import InvalidInput
    from ..locale.messages import _t
    from ..rest_client import ENV_TOKEN, ServiceClient

    token = token or os.environ.get(ENV_TOKEN)
    if not token:
        raise InvalidInput(
            _t("no token to connect to {url} with", url=url),
            _t(
                "cl.connect(url, token=...) with a token the server accepts, or set ${env}.",
                env=ENV_TOKEN,
            ),
        )
    transport = RestTransport(ServiceClient(url, token), Path(root) if root is not None else None)
    transport.client.get("whoami")  # a wrong URL or token fails here, not at the first call
    with _lock:
        _transport = transport
    return transport


def disconnect() -> None:
    """Forget the transport: the next call chooses again (hub, else this process)."""
    global _transport
    with _lock:
        _transport = None
