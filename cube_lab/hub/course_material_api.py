"""The cube-lab service's routes for the hub's cube-admin service, and for it alone: course
material (``course_material``). cube-admin decides who teaches and who studies a course;
these routes do what it decided in the store, which this service owns.

- ``POST course-material/handout`` ``{"teacher", "course", "handout", "models", "datasets"}``
- ``POST course-material/collect`` ``{"student", "teacher", "course", "handout", "folder"}``

A request must carry cube-admin's own hub token (``Authorization: token ...``): the hub says
whose it is. Any other token, a user's or an admin's included, gets 403. They are not part of
the REST API that users call, and the lab extension does not serve them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jupyter_server.auth.decorator import allow_unauthenticated

from ..errors import Forbidden, InvalidInput
from ..handlers.base import ROOT_DIR, CubeHandler
from ..identity import Caller, check_name
from ..locale.messages import _t
from .config import ADMIN_SERVICE
from .course_files import check_relative
from .course_material import CourseMaterial


class MaterialHandler(CubeHandler):
    """No hub *user* calls these routes, so their methods are ``allow_unauthenticated`` for
    jupyter-server; ``prepare`` lets only cube-admin's own token through."""

    async def prepare(self) -> None:  # type: ignore[override]
        await super().prepare()
        hub_auth = self.identity_provider.hub_auth  # type: ignore[attr-defined]
        token = hub_auth.get_token(self, in_cookie=False)
        model = await hub_auth.user_for_token(token, sync=False) if token else None
        if not model or (model.get("kind"), model.get("name")) != ("service", ADMIN_SERVICE):
            raise Forbidden(
                _t("only the hub's cube-admin service may call this"),
                _t("Teachers hand out through the course page or `cube-lab course handout`."),
            )

    def check_xsrf_cookie(self) -> None:
        """A token request (the only kind taken here) needs no XSRF token."""

    def material(self) -> CourseMaterial:
        root = self.settings[ROOT_DIR]
        return CourseMaterial(self.workspace, lambda user: Path(root(Caller(user))))

    def fields(self, *names: str) -> dict[str, Any]:
        body = self.json_body()
        out = {}
        for name in names:
            value = body.get(name)
            if name in ("models", "datasets"):
                out[name] = value
                continue
            if not isinstance(value, str) or not value:
                raise InvalidInput(_t("{name} is required", name=name))
            out[name] = value
        if "course" in out:
            check_name(out["course"], "course name")
        if "folder" in out:  # compared with recorded paths only; still, never above the home
            check_relative(out["folder"], _t("folder"))
        return out


class HandOutHandler(MaterialHandler):
    @allow_unauthenticated
    async def post(self) -> None:
        body = self.fields("teacher", "course", "handout", "models", "datasets")
        self.reply(await self.call(self.material().hand_out, **body))


class CollectHandler(MaterialHandler):
    @allow_unauthenticated
    async def post(self) -> None:
        body = self.fields("student", "teacher", "course", "handout", "folder")
        self.reply(await self.call(self.material().collect, **body))


def routes(base: str) -> list[tuple[str, type[MaterialHandler]]]:
    return [
        (f"{base}/course-material/handout", HandOutHandler),
        (f"{base}/course-material/collect", CollectHandler),
    ]
