"""The route table. Every capability adds its module's routes here."""

from __future__ import annotations

from typing import Any

from . import models, openapi, projects

API = "/cube/api/v1"
_SEG = r"([^/]+)"
_MODEL = rf"/projects/{_SEG}/models/{_SEG}"


def routes() -> list[tuple[str, type[Any]]]:
    """(pattern, handler) pairs relative to the server's base URL."""
    table = [
        ("/openapi.json", openapi.OpenAPIHandler),
        ("/whoami", projects.WhoAmIHandler),
        ("/projects", projects.ProjectsHandler),
        (rf"/projects/{_SEG}", projects.ProjectHandler),
        (rf"/projects/{_SEG}/members/{_SEG}", projects.ProjectMemberHandler),
        ("/models", models.ModelsHandler),
        (_MODEL, models.ModelHandler),
        (rf"{_MODEL}/versions", models.VersionsHandler),
        (rf"{_MODEL}/versions/{_SEG}", models.VersionHandler),
        (rf"{_MODEL}/versions/{_SEG}/download", models.DownloadHandler),
        (rf"{_MODEL}/compare", models.CompareHandler),
        (rf"{_MODEL}/aliases/{_SEG}", models.AliasHandler),
    ]
    return [(API + pattern, handler) for pattern, handler in table]
