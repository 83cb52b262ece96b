"""cube-admin's way to the cube-lab service's course-material routes (``course_material_api``):
the hand-out of a teacher's models and dataset versions, and what a student's assignment
folder references at collection. Called with cube-admin's own hub token, which is the only
token those routes take. Blocking (urllib): ``Courses`` runs in a worker thread.
"""

from __future__ import annotations

import contextvars
from typing import Any, Protocol

from ..errors import CubeError
from ..locale.messages import _t
from . import client

# the Accept-Language of the request being served, so the service answers in its language
LANGUAGE: contextvars.ContextVar[str] = contextvars.ContextVar("cube_material_lang", default="")
TIMEOUT_S = 600  # a hand-out copies a dataset's source once; a big one takes a while


class Material(Protocol):
    """What ``Courses`` needs of the store: ``course_material.CourseMaterial`` in process, or
    ``StoreMaterial`` over HTTP."""

    def hand_out(
        self, *, teacher: str, course: str, handout: str, models: Any, datasets: Any
    ) -> dict[str, Any]: ...

    def collect(
        self, *, student: str, teacher: str, course: str, handout: str, folder: str
    ) -> dict[str, Any]: ...


class StoreUnavailable(CubeError):
    status = 503


class StoreMaterial:
    def __init__(self, base: str, token: str) -> None:
        self.base = base
        self.token = token

    def _post(self, what: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            found: dict[str, Any] = client._call(
                "POST", f"course-material/{what}", body, base=self.base, token=self.token,
                timeout=TIMEOUT_S, language=LANGUAGE.get(),
            )  # fmt: skip
        except client.AdmissionUnavailable as exc:
            raise StoreUnavailable(
                _t("the cube-lab service, which keeps models and datasets, did not answer"),
                _t("{base}: {error}", base=self.base, error=exc.error),
            ) from None
        return found

    def hand_out(self, **body: Any) -> dict[str, Any]:
        return self._post("handout", body)

    def collect(self, **body: Any) -> dict[str, Any]:
        return self._post("collect", body)
