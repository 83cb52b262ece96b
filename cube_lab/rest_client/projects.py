"""The caller's personal project, as the cube-lab service names it (``whoami``)."""

from __future__ import annotations

from ..errors import InvalidInput
from ..locale.messages import _t
from .client import ServiceClient


def personal_project(client: ServiceClient) -> str:
    me = client.get("whoami")
    for project in me.get("projects") or []:
        if project.get("kind") == "personal" and project.get("role") == "owner":
            return str(project["name"])
    raise InvalidInput(
        _t("the cube-lab service names no personal project of {value}", value=me.get("user")),
        _t("Pass --project NAME (see cube-lab project list)."),
    )
