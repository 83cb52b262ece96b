"""Errors that services raise and every interface (REST, CLI, magics) translates.

A service never knows about HTTP; it raises one of these and the handler maps
``status`` to the response code, the CLI to a message and a non-zero exit.
"""

from __future__ import annotations

from typing import Any


class CubeError(Exception):
    """Base class: ``error`` says what is wrong, ``detail`` how to fix it."""

    status = 400

    def __init__(self, error: str, detail: Any = None) -> None:
        super().__init__(error)
        self.error = error
        self.detail = detail

    def to_json(self) -> dict[str, Any]:
        return {"error": self.error, "detail": self.detail}


class InvalidInput(CubeError):
    status = 400


class NotFound(CubeError):
    status = 404


class Forbidden(CubeError):
    status = 403


class Conflict(CubeError):
    status = 409


class StoreIsRemote(CubeError):
    """Under the hub a lab server, its kernels and terminals have no store: it is the cube-lab
    service's, reached only through the REST API as the server's user."""

    status = 409


class StoreUnavailable(CubeError):
    """The database cannot be opened (a bad URL, a server down, a folder not writable)."""

    status = 503
