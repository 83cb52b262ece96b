"""A user's courses on the hub (the JupyterLab Course panel): GET /courses/mine,
POST /courses/{course}/handouts/{handout}/submit; thin over ``cube_lab.hub.my_courses``."""

from __future__ import annotations

from tornado import web

from ..hub import my_courses
from .base import CubeHandler


class MyCoursesHandler(CubeHandler):
    @web.authenticated
    async def get(self) -> None:
        self.reply(await self.call(my_courses.mine, self.caller.username))


class SubmitHandoutHandler(CubeHandler):
    @web.authenticated
    async def post(self, course: str, handout: str) -> None:
        entry = await self.call(my_courses.submit, self.caller.username, course, handout)
        self.reply(entry, 201)
