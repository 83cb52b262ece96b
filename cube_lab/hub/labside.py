"""The lab server's side of the hub: which project groups its user belongs to.

A server the hub spawned has ``$JUPYTERHUB_API_URL``, ``$JUPYTERHUB_USER`` and a token that
may read its own user; the user's groups (less the admins' group) become team projects the
user is a member of, so every panel's project picker shows them.
"""

from __future__ import annotations

import json
import os
import urllib.request
from urllib.parse import quote

from .settings import ADMIN_GROUP


def hub_user() -> str | None:
    """The user this server runs for, when the hub spawned it."""
    if os.environ.get("JUPYTERHUB_API_URL") and os.environ.get("JUPYTERHUB_API_TOKEN"):
        return os.environ.get("JUPYTERHUB_USER") or None
    return None


def project_groups(user: str) -> list[str]:
    """The user's hub groups that are project groups (OSError/ValueError when unreachable)."""
    url = os.environ["JUPYTERHUB_API_URL"].rstrip("/") + f"/users/{quote(user)}"
    token = os.environ["JUPYTERHUB_API_TOKEN"]
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=15) as resp:
        groups = json.loads(resp.read()).get("groups") or []
    return [g for g in groups if isinstance(g, str) and g != ADMIN_GROUP]
