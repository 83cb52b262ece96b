"""The cube-admin service's course routes: thin handlers over ``cube_lab.hub.course``.

Who may do what: hub admins everything; a course's teachers and assistants (the roster's role
column) their course's routes; its students only ``submit`` (403 elsewhere); anybody else a
404, as if the course did not exist.

- ``GET/POST api/courses``, ``GET api/courses/{name}``: the courses, one with its members
  (display names beside account names, roles), running servers, resources, GPU-hours;
- ``GET/POST api/courses/{name}/handouts``, ``GET .../handouts/{h}``: hand out a folder of the
  teacher's space (again: a sync for students added since);
- ``GET api/my/courses``: the caller's own courses (role, page, a student's hand-outs);
- ``POST .../handouts/{h}/collect``, ``POST .../handouts/{h}/submit`` (as the student),
  ``GET .../handouts/{h}/submissions``;
- the page ``courses/{name}``: for the staff the course's figures and hand-outs; for a
  student their own hand-outs (deadline, last submission) with a Submit button.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from tornado import web

from ..errors import Forbidden, InvalidInput, NotFound
from ..identity import check_name
from ..locale import negotiate
from ..locale.messages import _t, localize
from . import material_client
from .admin import BaseHandler, GroupsHandler, PageHandler, service_prefix, usage_summary
from .course import (
    COURSE_PROPERTY,
    KEEP,
    STAFF,
    Courses,
    is_course,
    members,
    parse_deadline,
    role_of,
    summary,
)
from .quotas import PROPERTY, GroupPolicy
from .settings import ADMIN_GROUP

log = logging.getLogger("cube-admin")


def courses_of(handler: BaseHandler) -> Courses:
    return handler.ctx.courses  # type: ignore[attr-defined, no-any-return]


class CourseMixin(BaseHandler):
    def prepare(self) -> None:
        super().prepare()
        # the cube-lab service (hand-outs of models, collections) answers in the reader's words
        material_client.LANGUAGE.set(self.request.headers.get("Accept-Language", ""))

    def reply_localized(self, value: Any, status: int = 200) -> None:
        self.reply(localize(value, negotiate(self.request.headers.get("Accept-Language"))), status)

    async def course(self, name: str, *, fresh: bool = False) -> dict[str, Any]:
        """The course's hub group, whoever asks (404 when there is none)."""
        if fresh:
            self.ctx.forget_groups()
        for group in await self.ctx.groups():
            if group["name"] == name and is_course(group):
                return group
        raise NotFound(
            _t("course {name!r} not found", name=name),
            _t("See GET api/courses for the courses you teach."),
        )

    async def staff_course(self, name: str) -> dict[str, Any]:
        """The course, for its teachers and assistants and for admins: a student gets 403,
        anybody else 404."""
        group = await self.course(name)
        if self.is_admin:
            return group
        role = role_of(group, self.username)
        if role in STAFF:
            return group
        if role == "student":
            raise Forbidden(
                _t("only the teachers and assistants of {name} may do this", name=name),
                _t("Students submit with POST api/courses/{name}/handouts/HANDOUT/submit.",
                   name=name),
            )  # fmt: skip
        raise NotFound(
            _t("course {name!r} not found", name=name),
            _t("See GET api/courses for the courses you teach."),
        )

    async def collect_due(self, group: dict[str, Any]) -> None:
        done = await asyncio.to_thread(courses_of(self).collect_due, [group])
        for item in done:
            log.info("collected %s/%s at its deadline", item["course"], item["handout"]["name"])

    async def view(self, group: dict[str, Any]) -> dict[str, Any]:
        """The course page's figures: members, their servers, resources and GPU-hours."""
        name = group["name"]
        active = await self.ctx.hub.request("GET", "/users?state=active&limit=10000")
        servers = {u["name"]: u.get("servers") or {} for u in active or ()}
        reservations = await asyncio.to_thread(self.ctx.ledger.reservations)
        mine = [r for r in reservations if r.group == name]
        usage = usage_summary(mine)
        hours = await asyncio.to_thread(gpu_hours, self.ctx.ledger, name)
        try:
            gp = GroupPolicy.from_properties(name, group.get("properties"))
        except InvalidInput:
            gp = GroupPolicy(name)
        people = []
        for m in members(group):
            running = []
            for server_name, server in sorted(servers.get(m["name"], {}).items()):
                options = server.get("user_options") or {}
                running.append(
                    {
                        "name": server_name,
                        "profile": options.get("profile") or "",
                        "project": options.get("project") or "",
                        "ready": bool(server.get("ready")),
                        "pending": server.get("pending"),
                        "started": server.get("started"),
                        "last_activity": server.get("last_activity"),
                    }
                )
            people.append(
                {
                    **m,
                    "servers": running,
                    "usage": usage["users"].get(m["name"], {}),
                    "gpu_hours": None if hours is None else hours.get(m["name"], 0.0),
                }
            )
        return {
            "name": name,
            "profiles": list(gp.profiles),
            "quota": gp.quota.to_json(),
            "per_member": gp.quota.member_amounts(),
            "idle_timeout": gp.idle_timeout,
            "usage": usage["total"],
            "gpu_hours": None if hours is None else sum(hours.values()),
            "members": people,
            "running": sum(1 for p in people if p["servers"]),
            "handouts": await asyncio.to_thread(courses_of(self).handouts, name),
        }


def gpu_hours(ledger: Any, group: str) -> dict[str, float] | None:
    """GPU-hours this month (UTC) per member of ``group`` where the ledger accounts them
    (``Ledger.gpu_hours``); None where it does not."""
    fn = getattr(ledger, "gpu_hours", None)
    found = fn() if callable(fn) else None
    if found is None or not hasattr(found, "members"):
        return None
    return {u: round(float(h), 3) for u, h in found.members(group).items()}


class CoursesHandler(CourseMixin, GroupsHandler):
    @web.authenticated
    async def get(self) -> None:
        out = []
        for group in sorted(await self.ctx.groups(), key=lambda g: g["name"]):
            if not is_course(group):
                continue
            role = role_of(group, self.username)
            if not self.is_admin and role not in STAFF:
                continue
            people = members(group)
            out.append(
                {
                    "name": group["name"],
                    "role": role,
                    "teachers": [m["name"] for m in people if m["role"] == "teacher"],
                    "students": sum(1 for m in people if m["role"] == "student"),
                    "members": len(people),
                    "handouts": len(await asyncio.to_thread(courses_of(self).handouts,
                                                            group["name"])),
                }
            )  # fmt: skip
        self.reply({"courses": out})

    @web.authenticated
    async def post(self) -> None:
        """``{"name", "profiles", "quota"}``: a new course (a project group), or an existing
        group made a course (its quota kept unless given)."""
        self.require_admin()
        body = self.json_body()
        name = check_name(body.get("name"), "course name")
        if name == ADMIN_GROUP:
            raise InvalidInput(
                _t("{ADMIN_GROUP} is reserved", ADMIN_GROUP=ADMIN_GROUP), _t("Choose another name.")
            )
        existing = {g["name"]: g for g in await self.ctx.groups()}
        if name in existing:
            properties = dict(existing[name].get("properties") or {})
            try:
                base = GroupPolicy.from_properties(name, properties)
            except InvalidInput:
                base = GroupPolicy(name)
            properties[PROPERTY] = self.parse_policy(name, body, base).to_properties()
            properties.setdefault(COURSE_PROPERTY, {"since": courses_of(self).clock()})
            await self.ctx.hub.set_properties(name, properties)
            status = 200
        else:
            gp = self.parse_policy(name, body)
            properties = {PROPERTY: gp.to_properties(),
                          COURSE_PROPERTY: {"since": courses_of(self).clock()}}  # fmt: skip
            await self.ctx.hub.create_group(name, properties, [])
            status = 201
        log.info("%s made %s a course", self.username, name)
        self.reply(await self.view(await self.course(name, fresh=True)), status)


class CourseHandler(CourseMixin):
    @web.authenticated
    async def get(self, name: str) -> None:
        group = await self.staff_course(name)
        await self.collect_due(group)
        self.reply(await self.view(group))


class HandoutsHandler(CourseMixin):
    @web.authenticated
    async def get(self, name: str) -> None:
        group = await self.staff_course(name)
        await self.collect_due(group)
        self.reply({"handouts": await asyncio.to_thread(courses_of(self).handouts, name)})

    @web.authenticated
    async def post(self, name: str) -> None:
        """``{"source", "name", "mode", "deadline", "teacher", "models", "datasets"}``: hand out
        ``source`` (a folder in the teacher's space: the caller's; an admin names the teacher)
        and the teacher's models and dataset versions (``[PROJECT/]NAME[:VERSION]`` each)."""
        group = await self.staff_course(
            name,
        )
        body = self.json_body()
        owner = body.get("teacher") or self.username
        if owner != self.username and not self.is_admin:
            raise Forbidden(
                _t("you may hand out only folders of your own space"),
                _t('Leave out "teacher".'),
            )
        if self.is_admin and role_of(group, owner) not in STAFF and not body.get("teacher"):
            teachers = [m["name"] for m in members(group) if m["role"] == "teacher"]
            if len(teachers) != 1:
                raise InvalidInput(
                    _t("whose folder is it?"),
                    _t('Add "teacher": one of the course\'s teachers ({value}).',
                       value=", ".join(teachers) or "none"),
                )  # fmt: skip
            owner = teachers[0]
        report = await asyncio.to_thread(
            courses_of(self).hand_out,
            group,
            name=body.get("name"),
            source=body.get("source"),
            mode=body.get("mode") or None,
            deadline=parse_deadline(body["deadline"]) if "deadline" in body else KEEP,
            owner=str(owner),
            models=body.get("models"),
            datasets=body.get("datasets"),
        )
        log.info("%s handed out %s/%s", self.username, name, report["handout"]["name"])
        self.reply_localized(report, 201)


class HandoutHandler(CourseMixin):
    @web.authenticated
    async def get(self, name: str, handout: str) -> None:
        await self.staff_course(name)
        found = await asyncio.to_thread(courses_of(self).get, name, handout)
        self.reply(summary(found))


class CollectHandler(CourseMixin):
    @web.authenticated
    async def post(self, name: str, handout: str) -> None:
        group = await self.staff_course(name)
        report = await asyncio.to_thread(courses_of(self).collect, group, handout)
        log.info("%s collected %s/%s", self.username, name, handout)
        self.reply_localized(report)


class MyCoursesHandler(CourseMixin):
    """GET ``?user=NAME`` (admins only: the cube-lab service asks for the user a request came
    from): the courses the user is a member of, with their role, the course page and, for a
    student, their own hand-outs (deadline, folder, last submission): the JupyterLab Course
    panel's list."""

    @web.authenticated
    async def get(self) -> None:
        user = self.acting_for(self.get_argument("user", ""))
        page = service_prefix() + "courses/"
        out = []
        for group in sorted(await self.ctx.groups(), key=lambda g: g["name"]):
            role = role_of(group, user) if is_course(group) else None
            if role is None:
                continue
            handouts: list[dict[str, Any]] = []
            if role == "student":
                await self.collect_due(group)
                handouts = await asyncio.to_thread(courses_of(self).mine, group["name"], user)
            out.append({"name": group["name"], "role": role, "page": page + group["name"],
                        "handouts": handouts})  # fmt: skip
        self.reply({"hub": True, "user": user, "courses": out})


class SubmitHandler(CourseMixin):
    """The student's own submission of their folder, now (late after the deadline); an admin
    (the cube-lab service) names the student with ``{"user": NAME}``."""

    @web.authenticated
    async def post(self, name: str, handout: str) -> None:
        student = self.acting_for(self.json_body().get("user"))
        group = await self.course(name)
        role = role_of(group, student)
        if role is None:
            raise NotFound(_t("course {name!r} not found", name=name))
        if role != "student":
            raise Forbidden(
                _t("only students submit"),
                _t("Teachers collect: POST api/courses/{name}/handouts/{handout}/collect.",
                   name=name, handout=handout),
            )  # fmt: skip
        entry = await asyncio.to_thread(courses_of(self).submit, group, handout, student)
        entry = {k: v for k, v in entry.items() if k != "status"}
        self.reply_localized(entry, 201)


class SubmissionsHandler(CourseMixin):
    @web.authenticated
    async def get(self, name: str, handout: str) -> None:
        group = await self.staff_course(name)
        await self.collect_due(group)
        self.reply(await asyncio.to_thread(courses_of(self).submissions, group, handout))


class CoursePageHandler(CourseMixin, PageHandler):
    @web.authenticated
    async def get(self, name: str) -> None:  # type: ignore[override]
        try:
            group = await self.staff_course(name)
        except Forbidden:  # a student: their own hand-outs and submissions, with Submit
            group = await self.course(name)
            await self.collect_due(group)
            mine = await asyncio.to_thread(courses_of(self).mine, name, self.username)
            roster = {m["name"]: m for m in members(group)}
            self.finish(
                self.render_page(
                    "course_student.html",
                    course={"name": name, "handouts": mine},
                    me=roster.get(self.username) or {"name": self.username},
                )
            )
            return
        await self.collect_due(group)
        view = await self.view(group)
        tables = {}
        for h in view["handouts"]:
            if h["mode"] == "copy":
                found = await asyncio.to_thread(courses_of(self).submissions, group, h["name"])
                tables[h["name"]] = found["submissions"]
        self.finish(self.render_page("course.html", course=view, submissions=tables))


def routes(p: str) -> list[tuple[str, type[BaseHandler]]]:
    h = rf"{p}/api/courses/([^/]+)/handouts/([^/]+)"
    return [
        (rf"{p}/api/courses", CoursesHandler),
        (rf"{p}/api/my/courses", MyCoursesHandler),
        (rf"{p}/api/courses/([^/]+)", CourseHandler),
        (rf"{p}/api/courses/([^/]+)/handouts", HandoutsHandler),
        (h, HandoutHandler),
        (rf"{h}/collect", CollectHandler),
        (rf"{h}/submit", SubmitHandler),
        (rf"{h}/submissions", SubmissionsHandler),
        (rf"{p}/courses/([^/]+)", CoursePageHandler),
    ]
