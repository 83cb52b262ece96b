"""The hub's own pages (JupyterHub's templates) as cube-lab shapes them, in the reader's language.

- ``templates/jupyterhub/`` comes first in ``c.JupyterHub.template_paths``: ``page.html``
  (the nav: Change password for accounts with a password, Projects & quotas for admins),
  ``home.html`` (an admin's messages), ``not_running.html`` and ``spawn.html`` (why the
  server was stopped). Each extends JupyterHub's own (``templates/<name>``).
- :class:`PageText` gives those templates ``_("...", arg, ...)``: cube-lab's catalog in the
  browser's ``Accept-Language``, as the cube-admin page (``%1``, ``%2`` placeholders).
- :func:`page_vars` is the ``cube`` template variable: what the pages show for the user.
- :class:`DismissHandler` (``POST /hub/cube/notices/<id>/dismiss``): the user hides a message.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from jinja2 import pass_context
from jinja2.ext import Extension
from jinja2.runtime import Context

from ..locale import negotiate, translator_for
from .notices import Notice, NoticeBoard

TEMPLATES = Path(__file__).with_name("templates") / "jupyterhub"

_negotiate = functools.lru_cache(maxsize=128)(negotiate)


def page_locale(context: Context) -> str:
    """The locale of the request a JupyterHub template is rendered for: every JupyterHub page
    gets the handler's bound ``static_url``, and so the request's Accept-Language."""
    handler = getattr(context.get("static_url"), "__self__", None)
    request = getattr(handler, "request", None)
    headers = getattr(request, "headers", None)
    return _negotiate(headers.get("Accept-Language") if headers is not None else None)


@pass_context
def page_gettext(context: Context, msgid: str, *args: object) -> Any:
    return translator_for(page_locale(context), html=True)(msgid, *args)


class PageText(Extension):
    """``_`` in JupyterHub's templates (``c.JupyterHub.jinja_environment_options``)."""

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        environment.globals["_"] = page_gettext


def page_vars(board_path: Path, *, native: bool) -> Any:
    """The ``cube`` template variable (``c.JupyterHub.template_vars``; JupyterHub calls it
    with the page's user): the stop notice while no server runs, the open messages, and
    whether the user has a password to change (NativeAuthenticator's accounts, not SSO), and
    the courses they are in."""
    board = NoticeBoard(board_path)

    def of(user: Any) -> dict[str, Any]:
        if user is None:
            return {}
        name = user.name
        stop: Notice | None = None if user.active else board.latest_stop(name)
        return {
            "stop": stop,
            "messages": board.messages(name),
            "has_password": native and _has_password(user),
            "courses": _courses_of(user),
        }

    return of


def _courses_of(user: Any) -> list[str]:
    """The courses (hub groups made courses, cube_lab.hub.course) ``user`` is in: the home
    page links their course pages."""
    from .course import COURSE_PROPERTY

    found = []
    for group in getattr(user, "groups", None) or ():
        if COURSE_PROPERTY in (getattr(group, "properties", None) or {}):
            found.append(group.name)
    return sorted(found)


def _has_password(user: Any) -> bool:
    from nativeauthenticator.orm import UserInfo

    db = getattr(user, "db", None)
    return db is not None and UserInfo.find(db, user.name) is not None


def clear_stop_on_spawn(board_path: Path) -> Any:
    """``c.Spawner.pre_spawn_hook``: a user who starts a server again has read the reason."""
    board = NoticeBoard(board_path)

    def hook(spawner: Any) -> None:
        board.clear_stops(spawner.user.name)

    return hook


def dismiss_handler() -> type:
    """The hub's ``POST /hub/cube/notices/(\\d+)/dismiss`` (a form on the home page, the hub's
    cookie and XSRF token): the user hides one of their own messages; back to home."""
    from jupyterhub.handlers.base import BaseHandler
    from jupyterhub.utils import url_path_join
    from tornado import web

    class DismissHandler(BaseHandler):
        def initialize(self, board_path: str) -> None:
            self.board = NoticeBoard(Path(board_path))

        @web.authenticated
        async def post(self, notice_id: str) -> None:
            if not self.board.dismiss(self.current_user.name, int(notice_id)):
                raise web.HTTPError(404, "no such notice")
            self.redirect(url_path_join(self.hub.base_url, "home"))

    return DismissHandler
