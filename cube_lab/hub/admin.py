"""The cube-admin service: a JupyterHub-managed tornado app at /services/cube-admin/.

- The page (admins only: the ``custom:cube-admin:write`` scope): project groups with members,
  allowed profiles, quotas and live usage; create and edit groups, members, quotas, profiles.
- The JSON API under ``api/``: the same for admins, plus admission for everyone - a lab
  server asks ``POST api/admission`` before it starts a job (``cube_lab.hub.client``).
- At start and every ``--reconcile-interval`` seconds it releases reservations nothing holds
  any more (servers that are gone, e.g. after a hub crash; jobs whose process died).

Run by the hub (see ``config.py``): ``python -m cube_lab.hub.admin``.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import logging
import os
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from jinja2 import Environment, FileSystemLoader, select_autoescape
from jupyterhub.services.auth import HubOAuth, HubOAuthCallbackHandler, HubOAuthenticated
from tornado import web

from ..errors import Conflict, CubeError, Forbidden, InvalidInput, NotFound
from ..identity import check_name
from ..locale import html_lang, negotiate, translator_for
from ..locale.messages import _t, localize
from . import notices, policy, roster
from .config import ADMIN_SCOPE, secret_file, service_base
from .course import CourseBook, Courses, is_course, members
from .hubapi import HubAPI
from .idle import IdleServer, idle_servers
from .ledger import GpuHours, Ledger, QuotaExceeded, Reservation
from .material_client import StoreMaterial
from .quotas import (
    PROPERTY,
    GroupPolicy,
    Quota,
    demand,
    label,
    parse_idle_timeout,
    show,
    show_hours,
    show_time,
    uses_accelerators,
)
from .request_log import log_request
from .service_main import run_service
from .settings import ADMIN_GROUP, HubSettings, load

log = logging.getLogger("cube-admin")
TEMPLATES = Path(__file__).with_name("templates")
GROUPS_TTL_S = 1.0


def service_prefix() -> str:
    """This service's path on the hub (``/services/cube-admin/``, as the hub sets it)."""
    return os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/services/cube-admin/")


class Context:
    """What every handler shares: settings, the ledger, the hub API, the OAuth helper."""

    def __init__(self, settings: HubSettings, hub: HubAPI, auth: HubOAuth) -> None:
        self.settings = settings
        self.ledger = Ledger(settings.ledger_path)
        self.notices = notices.NoticeBoard(settings.hub_dir / notices.FILE_NAME)
        self.hub = hub
        self.auth = auth
        self.courses = Courses(
            settings.users_dir,
            CourseBook(settings.hub_dir / "courses"),
            material=StoreMaterial(service_base(settings), hub.token),
        )
        self._groups: list[dict[str, Any]] | None = None
        self._groups_at = 0.0
        self._groups_lock = asyncio.Lock()
        self.templates = Environment(
            loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"])
        )

    async def groups(self) -> list[dict[str, Any]]:
        """The hub's groups, fetched at most once a second: a burst of admission requests
        costs the hub one call. A quota read this way is at most that old; the reservation
        itself stays atomic (the ledger's lock)."""
        async with self._groups_lock:
            now = time.monotonic()
            if self._groups is None or now - self._groups_at > GROUPS_TTL_S:
                self._groups, self._groups_at = await self.hub.groups(), now
            return self._groups

    def forget_groups(self) -> None:
        self._groups = None

    def ledger_snapshot(self) -> tuple[list[Reservation], GpuHours]:
        """What the ledger holds now and this month's GPU-hours (one thread hop)."""
        return self.ledger.reservations(), self.ledger.gpu_hours()

    async def policies(self) -> dict[str, GroupPolicy]:
        groups = await self.groups()
        return policy.policies((g["name"], g.get("properties")) for g in groups)

    async def user_hub_groups(self, username: str) -> list[str]:
        """Every hub group ``username`` is in (project groups and the admins' group)."""
        return [g["name"] for g in await self.groups() if username in (g.get("users") or ())]

    async def user_policies(self, username: str) -> dict[str, GroupPolicy]:
        mine = {g["name"] for g in await self.groups() if username in (g.get("users") or ())}
        return {k: v for k, v in (await self.policies()).items() if k in mine}

    async def reconcile(self, grace_s: float = 60) -> list[Reservation]:
        live = await self.hub.live_servers()
        released = await asyncio.to_thread(self.ledger.reconcile, live, grace_s=grace_s)
        for res in released:
            log.info("released %s (%s, %s): nothing holds it", res.holder, res.username, res.group)
        return released

    async def stop_idle(self) -> list[IdleServer]:
        """Stop the servers idle longer than their group's ``idle_timeout`` (``idle.py``); each
        user is told why on the hub's pages."""
        policies = await self.policies()
        if not any(p.idle_timeout for p in policies.values()):
            return []
        users = await self.hub.request("GET", "/users?state=active&limit=10000")
        reservations = await asyncio.to_thread(self.ledger.reservations)
        found = idle_servers(policies, reservations, users or (), time.time())
        for s in found:
            await self.hub.stop_server(s.user, s.server)
            minutes = max(1, round(s.timeout / 60))
            text = _t(
                "idle for more than {minutes} minutes, the limit of project {group}",
                minutes=minutes,
                group=s.group,
            )
            await asyncio.to_thread(self.notices.add, s.user, "idle", text, s.group)
            log.info("stopped %s/%s: idle %.0f s (%s allows %d s)",
                     s.user, s.server, s.idle, s.group, s.timeout)  # fmt: skip
        return found

    async def seed_groups(self) -> None:
        """Create the settings file's groups that do not exist yet (never overwrites)."""
        existing = {g["name"] for g in await self.groups()}
        known = {u["name"] for u in await self.hub.users()}
        for name, group_policy in self.settings.groups.items():
            if name not in existing:
                wanted = self.settings.group_members.get(name, ())
                users = [u for u in wanted if u in known]
                if len(users) < len(wanted):
                    log.warning(
                        "group %s: users %s do not exist yet; add them on the admin page",
                        name,
                        sorted(set(wanted) - known),
                    )
                await self.hub.create_group(name, {PROPERTY: group_policy.to_properties()}, users)
                self.forget_groups()
                log.info("created project group %s from the settings file", name)


def usage_summary(reservations: list[Reservation]) -> dict[str, Any]:
    """Totals and per-user figures of one group's reservations."""
    total: dict[str, float] = {}
    users: dict[str, dict[str, float]] = {}
    for res in reservations:
        mine = users.setdefault(res.username, {})
        for dimension, amount in res.amounts.items():
            total[dimension] = total.get(dimension, 0) + amount
            mine[dimension] = mine.get(dimension, 0) + amount
    return {"total": total, "users": users}


def gpu_hours_view(quota: Quota, hours: GpuHours, group: str) -> dict[str, Any]:
    """A group's GPU-hours this month (UTC): used in total and per member, the limits, the
    reset. ``group`` "" is the personal bucket (see ``personal_view``)."""
    members = {u: round(h, 3) for u, h in hours.members(group).items()}
    return {
        "used": round(sum(members.values()), 3),
        "limit": quota.gpu_hours,
        "per_member_limit": quota.gpu_hours_per_member,
        "users": members,
        "month_start": show_time(hours.start),
        "resets": show_time(hours.resets),
    }


def server_rows(reservations: list[Reservation]) -> list[dict[str, Any]]:
    """Every running (or starting) server the ledger holds: whose, charged to which group
    ("" = the user's personal quota), what it holds, since when."""
    return [
        {
            "user": r.username,
            "server": r.holder.removeprefix("server:").partition("/")[2],
            "group": r.group,
            "amounts": r.amounts,
            "since": r.created,
        }
        for r in reservations
        if r.kind == "server"
    ]


def personal_view(
    settings: HubSettings,
    reservations: list[Reservation],
    hours: GpuHours,
    user_groups: dict[str, list[str]],
) -> dict[str, Any]:
    """What users hold outside every project group, per user, against their personal quota."""
    users: dict[str, dict[str, Any]] = {}
    for res in reservations:
        if res.group:
            continue
        entry = users.setdefault(res.username, {"servers": [], "usage": {}})
        if res.kind == "server":
            entry["servers"].append(res.holder.removeprefix("server:").partition("/")[2])
        for dimension, amount in res.amounts.items():
            entry["usage"][dimension] = entry["usage"].get(dimension, 0) + amount
    for name in hours.members(""):
        users.setdefault(name, {"servers": [], "usage": {}})
    out = []
    for name in sorted(users):
        quota = settings.personal_quota_for(name, user_groups.get(name, ()))
        out.append(
            {
                "user": name,
                "admin": settings.is_admin(name, user_groups.get(name, ())),
                **users[name],
                "quota": quota.to_json(),
                "gpu_hours_used": round(hours.member("", name), 3),
                "gpu_hours_limit": quota.gpu_hours,
            }
        )
    return {
        "quota": settings.personal_quota.to_json(),
        "admin_quota": settings.admin_quota.to_json(),
        "users": out,
    }


class BaseHandler(HubOAuthenticated, web.RequestHandler):
    def initialize(self, ctx: Context) -> None:
        self.ctx = ctx
        self.hub_auth = ctx.auth

    @property
    def username(self) -> str:
        return self.current_user["name"]

    @property
    def is_admin(self) -> bool:
        user = self.current_user or {}
        return ADMIN_SCOPE in (user.get("scopes") or ())

    def require_admin(self) -> None:
        if not self.is_admin:
            raise Forbidden(
                _t("the cube-admin page is for admins"),
                _t(
                    (
                        "It needs the {ADMIN_SCOPE} scope: admin_users in the hub settings, "
                        "or members of the {ADMIN_GROUP} group."
                    ),
                    ADMIN_SCOPE=ADMIN_SCOPE,
                    ADMIN_GROUP=ADMIN_GROUP,
                ),
            )

    def acting_for(self, named: Any) -> str:
        """Whom a request acts for: the caller, or the user it names (``named``) where the
        caller is an admin (the cube-lab service asks for the user a request came from); a
        service must name one."""
        if self.current_user.get("kind") == "service" and not named:
            raise InvalidInput(_t("a service must name the user it asks for"), _t('Add "user".'))
        if named and named != self.username:
            self.require_admin()  # only admins act on someone else's behalf
            return str(named)
        return self.username

    def check_xsrf_cookie(self) -> None:
        if self.request.headers.get("Authorization"):
            return  # token requests carry no cookie to forge
        super().check_xsrf_cookie()

    def json_body(self) -> dict[str, Any]:
        try:
            body = json.loads(self.request.body or b"{}")
        except ValueError as exc:
            raise InvalidInput(_t("the request body is not valid JSON"), str(exc)) from exc
        if not isinstance(body, dict):
            raise InvalidInput(_t("the request body must be a JSON object"))
        return body

    def reply(self, value: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(value, default=str))

    def send_error(self, status_code: int = 500, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, CubeError):
            status_code = exc.status
        super().send_error(status_code, **kwargs)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, CubeError):  # in the page's language, as the page itself
            body = localize(exc.to_json(), negotiate(self.request.headers.get("Accept-Language")))
        elif isinstance(exc, web.HTTPError):
            body = {"error": exc.log_message or self._reason, "detail": None}
        else:
            body = {"error": "internal server error", "detail": "See the cube-admin log."}
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(body))

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        if isinstance(value, CubeError):
            log.info("%s %s: %s", self.request.method, self.request.uri, value.error)
        else:
            super().log_exception(typ, value, tb)

    async def groups_view(self) -> list[dict[str, Any]]:
        return (await self.usage_view())["groups"]

    async def usage_view(self) -> dict[str, Any]:
        """Everything the admin page shows: the project groups with their usage and GPU-hours,
        the personal buckets and every running server; one hub call (cached), one ledger read."""
        groups = await self.ctx.groups()
        reservations, hours = await asyncio.to_thread(self.ctx.ledger_snapshot)
        user_groups: dict[str, list[str]] = {}
        for g in groups:
            for name in g.get("users") or ():
                user_groups.setdefault(name, []).append(g["name"])
        servers = server_rows(reservations)
        return {
            "reservations": [r.to_json() for r in reservations],
            "groups": self._groups_view(groups, reservations, hours),
            "personal": personal_view(self.ctx.settings, reservations, hours, user_groups),
            "servers": servers,
            "totals": {
                "servers": len(servers),
                "personal_servers": sum(1 for s in servers if not s["group"]),
                "gpu_hours": round(sum(hours.by_member.values()), 3),
            },
            "month_start": show_time(hours.start),
            "resets": show_time(hours.resets),
        }

    def _groups_view(
        self, groups: list[dict[str, Any]], reservations: list[Reservation], hours: GpuHours
    ) -> list[dict[str, Any]]:
        out = []
        for g in sorted(groups, key=lambda g: g["name"]):
            if g["name"] == ADMIN_GROUP:
                continue
            try:
                gp = GroupPolicy.from_properties(g["name"], g.get("properties"))
                problem = None
            except InvalidInput as exc:
                gp, problem = GroupPolicy(g["name"]), exc.error
            usage = usage_summary([r for r in reservations if r.group == g["name"]])
            out.append(
                {
                    "name": g["name"],
                    "users": sorted(g.get("users") or []),
                    "roster": roster.roster_of(g),
                    "profiles": list(gp.profiles),
                    "quota": gp.quota.to_json(),
                    "per_member": gp.quota.member_amounts(),
                    "idle_timeout": gp.idle_timeout,
                    "usage": usage,
                    "gpu_hours": gpu_hours_view(gp.quota, hours, g["name"]),
                    "problem": problem,
                }
            )
        return out


# -- the page ------------------------------------------------------------------------------


class PageHandler(BaseHandler):
    @web.authenticated
    async def get(self) -> None:
        if not self.is_admin:
            self.set_status(403)
            self.finish(self.render_page("forbidden.html"))
            return
        view = await self.usage_view()
        self.finish(self.render_page("admin.html", courses=await self.courses_view(), **view))

    async def courses_view(self) -> list[dict[str, Any]]:
        """The courses, each with its teachers and number of students (links to their pages)."""
        out = []
        for group in sorted(await self.ctx.groups(), key=lambda g: g["name"]):
            if is_course(group):
                people = members(group)
                out.append(
                    {
                        "name": group["name"],
                        "teachers": [m["name"] for m in people if m["role"] == "teacher"],
                        "students": sum(1 for m in people if m["role"] == "student"),
                    }
                )
        return out

    def render_page(self, name: str, **values: Any) -> str:
        prefix = service_prefix()
        hub_prefix = os.environ.get("JUPYTERHUB_BASE_URL", "/") + "hub/"
        resources = sorted({*_accelerator_resources(self.ctx.settings)})
        locale = negotiate(self.request.headers.get("Accept-Language"))
        self.set_header("Content-Language", html_lang(locale))
        return self.ctx.templates.get_template(name).render(
            user=self.current_user,
            prefix=prefix,
            hub_prefix=hub_prefix,
            xsrf_token=self.xsrf_token.decode(),
            profiles=list(self.ctx.settings.profiles.values()),
            resources=resources,
            show=show,
            **page_texts(locale),
            **values,
        )

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        message = exc.error if isinstance(exc, CubeError) else self._reason
        self.finish(f"<h1>{status_code}</h1><p>{message}</p>")


def page_texts(locale: str) -> dict[str, Any]:
    """What the page templates need to speak ``locale`` (the browser's Accept-Language):
    ``_`` for HTML text (escaped markup), ``_js`` for the script's strings, the ``lang``
    attribute and ``label`` (a quota dimension's name, as cube_lab.hub.quotas words it)."""
    text = translator_for(locale)

    def page_label(dimension: str) -> str:
        words = label(dimension)
        suffix = f" ({dimension})"
        if words.endswith(suffix) and words != suffix.strip():
            return text("%1 (%2)", text(words[: -len(suffix)]), dimension)
        return text(words)

    def units(dimension: str) -> tuple[str, str]:
        """How an amount of ``dimension`` reads: "%1" one, "%1" several ("1 GiB memory")."""
        if dimension in _UNITS:
            one, many = _UNITS[dimension]
            return text(one), text(many)
        if str(label(dimension)).startswith("GPUs ("):
            return text(_t("%1 GPU (%2)"), "%1", dimension), text(
                _t("%1 GPUs (%2)"), "%1", dimension
            )
        words = "%1 " + page_label(dimension)  # "2 MIG slices (nvidia.com/mig-1g.10gb)"
        return words, words

    def amount(dimension: str, value: float) -> str:
        one, many = units(dimension)
        return _fill_amount(one if value == 1 else many, show(dimension, value))

    return {
        "_": translator_for(locale, html=True),
        "_js": text,
        "lang": html_lang(locale),
        "label": page_label,
        # "1 server, 2 CPU cores, 1 GiB memory, 1 GPU (nvidia.com/gpu)"; the live refresh's
        # patterns of the same
        "usage_text": lambda usage: ", ".join(amount(d, v) for d, v in usage.items()),
        "units_for": lambda dimensions: {d: units(d) for d in dimensions},
        # the live refresh's names of dimensions, as the page renders them
        "labels_for": lambda dimensions: {d: page_label(d) for d in dimensions},
        "show_hours": show_hours,
    }


_UNITS: dict[str, tuple[str, str]] = {
    "servers": (_t("%1 server"), _t("%1 servers")),
    "jobs": (_t("%1 job"), _t("%1 jobs")),
    "cpu": (_t("%1 CPU core"), _t("%1 CPU cores")),
    "memory": (_t("%1 GiB memory"), _t("%1 GiB memory")),
}


def _fill_amount(pattern: str, value: str) -> str:
    return pattern.replace("%1", value, 1)


def _accelerator_resources(settings: HubSettings) -> list[str]:
    found: list[str] = ["nvidia.com/gpu"]
    for profile in settings.profiles.values():
        found.extend(profile.limits())
    return found


# -- the JSON API ----------------------------------------------------------------------------


class GroupsHandler(BaseHandler):
    @web.authenticated
    async def get(self) -> None:
        self.require_admin()
        self.reply({"groups": await self.groups_view()})

    @web.authenticated
    async def post(self) -> None:
        self.require_admin()
        body = self.json_body()
        name = check_name(body.get("name"), "group name")
        if name == ADMIN_GROUP:
            raise InvalidInput(
                _t("{ADMIN_GROUP} is reserved", ADMIN_GROUP=ADMIN_GROUP), _t("Choose another name.")
            )
        gp = self.parse_policy(name, body)
        users = body.get("users") or []
        if not isinstance(users, list) or not all(isinstance(u, str) for u in users):
            raise InvalidInput(_t("users must be a list of user names"))
        await self.ctx.hub.create_group(name, {PROPERTY: gp.to_properties()}, users)
        self.ctx.forget_groups()
        log.info("%s created group %s", self.username, name)
        self.reply(await self.one(name), 201)

    def parse_policy(self, name: str, body: dict[str, Any], base: GroupPolicy | None = None) -> Any:
        profiles = body.get("profiles", list(base.profiles) if base else [])
        if not isinstance(profiles, list):
            raise InvalidInput(_t("profiles must be a list of profile names"))
        for p in profiles:
            self.ctx.settings.profile(p)
        quota = Quota.parse(body["quota"]) if "quota" in body else (base.quota if base else Quota())
        idle = (
            parse_idle_timeout(body["idle_timeout"])
            if "idle_timeout" in body
            else (base.idle_timeout if base else None)
        )
        return GroupPolicy(name, tuple(profiles), quota, idle)

    async def one(self, name: str) -> dict[str, Any]:
        found = [g for g in await self.groups_view() if g["name"] == name]
        if not found:
            raise NotFound(_t("group {name!r} not found", name=name))
        return found[0]


class GroupHandler(GroupsHandler):
    @web.authenticated
    async def get(self, name: str) -> None:
        self.require_admin()
        self.reply(await self.one(name))

    @web.authenticated
    async def patch(self, name: str) -> None:
        self.require_admin()
        group = await self.ctx.hub.group(name)
        properties = dict(group.get("properties") or {})
        try:
            base = GroupPolicy.from_properties(name, properties)
        except InvalidInput:
            base = GroupPolicy(name)
        gp = self.parse_policy(name, self.json_body(), base)
        properties[PROPERTY] = gp.to_properties()
        await self.ctx.hub.set_properties(name, properties)
        self.ctx.forget_groups()
        log.info("%s set group %s to %s", self.username, name, properties[PROPERTY])
        self.reply(await self.one(name))

    @web.authenticated
    async def delete(self, name: str) -> None:
        self.require_admin()
        await self.ctx.hub.delete_group(name)
        self.ctx.forget_groups()
        self.set_status(204)
        self.finish()


class MemberHandler(GroupsHandler):
    @web.authenticated
    async def put(self, name: str, user: str) -> None:
        """Add one member; an approved user who never logged in gets their hub user first."""
        self.require_admin()
        group = await self.ctx.hub.group(name)
        native = not self.ctx.settings.sso
        [result] = await roster.add_members(self.ctx.hub, group, [user.lower()], native=native)
        self.ctx.forget_groups()
        if result["status"] == "error":
            raise InvalidInput(result["error"], result["detail"])
        self.reply(await self.one(name))


class MembersHandler(GroupsHandler):
    """POST ``{"users": "a, b c"}``: add several members, one result per name."""

    @web.authenticated
    async def post(self, name: str) -> None:
        self.require_admin()
        names = roster.split_names(self.json_body().get("users"))
        group = await self.ctx.hub.group(name)
        native = not self.ctx.settings.sso
        results = await roster.add_members(self.ctx.hub, group, names, native=native)
        self.ctx.forget_groups()
        log.info("%s added members to %s: %s", self.username, name, results)
        self.reply_localized({"results": results, "group": await self.one(name)})

    def reply_localized(self, value: Any) -> None:
        self.reply(localize(value, negotiate(self.request.headers.get("Accept-Language"))))


class RosterHandler(MembersHandler):
    """POST a roster (CSV: user name, display name, e-mail, role; as the body, or JSON
    ``{"csv": ...}``): accounts made and approved, members added, a report per row."""

    @web.authenticated
    async def post(self, name: str) -> None:  # type: ignore[override]
        self.require_admin()
        content_type = self.request.headers.get("Content-Type", "")
        if content_type.startswith("application/json"):
            text = self.json_body().get("csv")
            if not isinstance(text, str):
                raise InvalidInput(_t("csv must be the roster's text"))
        else:
            try:
                text = self.request.body.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidInput(
                    _t("the roster is not UTF-8 text"),
                    _t("Save the CSV as UTF-8 (a spreadsheet's CSV UTF-8)."),
                ) from exc
        rows = roster.parse_csv(text)
        group = await self.ctx.hub.group(name)
        native = not self.ctx.settings.sso
        report = await roster.import_roster(self.ctx.hub, group, rows, native=native)
        self.ctx.forget_groups()
        out = report.to_json()
        log.info("%s imported a roster into %s: %s", self.username, name, out["summary"])
        self.reply_localized(out)

    @web.authenticated
    async def delete(self, name: str, user: str) -> None:
        self.require_admin()
        await self.ctx.hub.remove_members(name, [user])
        self.ctx.forget_groups()
        self.reply(await self.one(name))


class UsageHandler(BaseHandler):
    @web.authenticated
    async def get(self) -> None:
        self.require_admin()
        self.reply(await self.usage_view())


class ProfilesHandler(BaseHandler):
    """Every profile for admins; the ones the caller may start otherwise."""

    @web.authenticated
    async def get(self) -> None:
        if self.is_admin:
            profiles = list(self.ctx.settings.profiles.values())
        else:
            groups = await self.ctx.user_policies(self.username)
            profiles = policy.offered(self.ctx.settings, groups)
        self.reply({"profiles": [p.to_json() for p in profiles]})


class MeHandler(BaseHandler):
    """The caller's project groups, their quotas and usage: what a lab server shows."""

    @web.authenticated
    async def get(self) -> None:
        if self.current_user.get("kind") == "service":
            raise InvalidInput(
                _t("a service has no project groups"), _t("Ask with a user's token.")
            )
        groups = await self.ctx.user_policies(self.username)
        hours = await asyncio.to_thread(self.ctx.ledger.gpu_hours)
        out = []
        for name, gp in groups.items():
            usage = await asyncio.to_thread(self.ctx.ledger.usage, name)
            out.append(
                {"name": name, "profiles": list(gp.profiles), "quota": gp.quota.to_json(),
                 "usage": usage,
                 # this calendar month's (UTC) GPU-hours: the group's and the caller's own
                 "gpu_hours_limit": gp.quota.gpu_hours,
                 "gpu_hours_used": round(hours.group(name), 3),
                 "gpu_hours_member_limit": gp.quota.gpu_hours_per_member,
                 "gpu_hours_member_used": round(hours.member(name, self.username), 3)}
            )  # fmt: skip
        offer = policy.offered(self.ctx.settings, groups)
        mine = await self.ctx.user_hub_groups(self.username)
        quota = self.ctx.settings.personal_quota_for(self.username, mine)
        personal = {
            "quota": quota.to_json(),
            "usage": await asyncio.to_thread(self.ctx.ledger.personal_usage, self.username),
            "gpu_hours_limit": quota.gpu_hours,
            "gpu_hours_used": round(hours.member("", self.username), 3),
        }
        self.reply(
            {"user": self.username, "admin": self.is_admin, "groups": out,
             "personal": personal, "profiles": [p.name for p in offer],
             "gpu_hours_resets": show_time(hours.resets)}
        )  # fmt: skip


class AdmissionHandler(BaseHandler):
    """POST: reserve quota for a job before it starts; 201 with the reservation or 403 with
    the reason ("project vision uses 4 of 4 GPUs (nvidia.com/gpu)")."""

    @web.authenticated
    async def post(self) -> None:
        body = self.json_body()
        user = self.acting_for(body.get("user"))
        kind = body.get("kind", "job")
        if kind not in ("job", "server"):
            raise InvalidInput(_t("kind must be 'job' or 'server'"))
        if kind == "server":
            self.require_admin()  # servers are reserved by the spawner itself
        accelerators = body.get("accelerators") or {}
        if not isinstance(accelerators, dict):
            raise InvalidInput(_t("accelerators must map resource names to amounts"))
        amounts = demand(
            jobs=1 if kind == "job" else 0,
            servers=1 if kind == "server" else 0,
            cpu=body.get("cpu"),
            memory=body.get("memory"),
            limits=accelerators,
        )
        project = body.get("project") or ""
        groups = await self.ctx.user_policies(user)
        all_groups = await self.ctx.groups()
        group = groups.get(project)
        if project and group is None and any(g["name"] == project for g in all_groups):
            raise Forbidden(
                _t(
                    "{user} is not a member of project group {project!r}",
                    user=user,
                    project=project,
                ),
                _t("Ask an admin to add you on the cube-admin page."),
            )
        personal = None
        if group is None:  # charged to the user's personal bucket
            mine = await self.ctx.user_hub_groups(user)
            personal = self.ctx.settings.personal_quota_for(user, mine)
        if personal is not None and uses_accelerators(amounts) and not personal.accelerators:
            raise QuotaExceeded(
                _t("project {value} has no accelerator quota", value=project or "(personal)"),
                _t(
                    (
                        "Accelerators are granted to project groups; run it in a project "
                        "group you belong to ({value})."
                    ),
                    value=", ".join(groups) or "none",
                ),
            )
        # a pid is only meaningful on this machine (the local shape)
        pid = body.get("pid") if self.ctx.settings.shape == "local" else None
        # holders are namespaced by user: nobody can replace someone else's reservation
        holder = f"{kind}:{user}/{body.get('holder') or uuid.uuid4().hex}"
        res = await asyncio.to_thread(
            self.ctx.ledger.reserve,
            holder=holder,
            kind=kind,
            username=user,
            group=group.name if group else "",
            quota=group.quota if group else personal,
            amounts=amounts,
            server=str(body.get("server") or ""),
            pid=int(pid) if pid is not None else None,
        )
        self.reply(res.to_json(), 201)


class ReservationHandler(BaseHandler):
    @web.authenticated
    async def get(self, id: str) -> None:
        res = await self.mine(id)
        self.reply(res.to_json())

    @web.authenticated
    async def delete(self, id: str) -> None:
        res = await self.mine(id)
        await asyncio.to_thread(self.ctx.ledger.release, id=res.id)
        self.set_status(204)
        self.finish()

    async def mine(self, id: str) -> Reservation:
        res = await asyncio.to_thread(self.ctx.ledger.get, id)
        if res is None or (res.username != self.username and not self.is_admin):
            raise NotFound(_t("reservation {id!r} not found", id=id))
        return res


class ReconcileHandler(BaseHandler):
    @web.authenticated
    async def post(self) -> None:
        self.require_admin()
        grace = float(self.get_argument("grace", "60"))
        released = await self.ctx.reconcile(grace_s=grace)
        idle = await self.ctx.stop_idle()
        self.reply({"released": [r.to_json() for r in released],
                    "stopped_idle": [vars(s) for s in idle]})  # fmt: skip


# -- telling a student why: stop with a reason, a message, their notices -------------------


class NoticeBase(BaseHandler):
    async def require_may_tell(self, user: str) -> None:
        """Who may stop a student's server or message them: admins, and the teachers and
        assistants of a course the user is a student of."""
        if self.is_admin:
            return
        from .course import STAFF, is_course, role_of

        for g in await self.ctx.groups():
            student = is_course(g) and role_of(g, user) == "student"
            if student and role_of(g, self.username) in STAFF:
                return
        self.require_admin()

    async def hub_user(self, user: str) -> dict[str, Any]:
        try:
            return await self.ctx.hub.user(user)
        except NotFound:
            raise NotFound(
                _t("user {user!r} not found", user=user),
                _t("Check the name on the hub's Admin page."),
            ) from None

    def reply_localized(self, value: Any, status: int = 200) -> None:
        locale = negotiate(self.request.headers.get("Accept-Language"))
        self.reply(localize(value, locale), status)


class StopServerHandler(NoticeBase):
    """POST ``{"reason": "..."}``: stop the user's servers through the hub and keep the reason,
    which the user sees on the hub's pages until they start a server again."""

    @web.authenticated
    async def post(self, user: str) -> None:
        await self.require_may_tell(user)
        reason = notices.check_text(self.json_body().get("reason"), "reason")
        info = await self.hub_user(user)
        servers = sorted(info.get("servers") or {})
        if not servers:
            raise Conflict(
                _t("{user} has no server running", user=user),
                _t("Nothing to stop; to tell them something, send a message instead."),
            )
        for name in servers:
            await self.ctx.hub.stop_server(user, name)
        notice = await asyncio.to_thread(self.ctx.notices.add, user, "stop", reason, self.username)
        log.info("%s stopped %s's servers %s: %s", self.username, user, servers, reason)
        self.reply({"user": user, "stopped": servers, "notice": notice.to_json()})


class MessageHandler(NoticeBase):
    """POST ``{"message": "..."}``: a note the user sees on their hub home page."""

    @web.authenticated
    async def post(self, user: str) -> None:
        await self.require_may_tell(user)
        text = notices.check_text(self.json_body().get("message"), "message")
        await self.hub_user(user)
        notice = await asyncio.to_thread(self.ctx.notices.add, user, "message", text, self.username)
        log.info("%s sent %s a message", self.username, user)
        self.reply({"user": user, "notice": notice.to_json()}, 201)


class NoticesHandler(NoticeBase):
    """GET: the caller's open notices (why their server was stopped, messages)."""

    @web.authenticated
    async def get(self) -> None:
        if self.current_user.get("kind") == "service":
            raise InvalidInput(_t("a service has no notices"), _t("Ask with a user's token."))
        found = await asyncio.to_thread(self.ctx.notices.open, self.username)
        self.reply({"user": self.username, "notices": [n.to_json() for n in found]})


class NoticeHandler(NoticeBase):
    """DELETE: the caller dismisses one of their own notices."""

    @web.authenticated
    async def delete(self, notice_id: str) -> None:
        if not await asyncio.to_thread(self.ctx.notices.dismiss, self.username, int(notice_id)):
            raise NotFound(_t("notice {id} not found", id=notice_id))
        self.set_status(204)
        self.finish()


def make_app(ctx: Context, prefix: str, cookie_secret: bytes) -> web.Application:
    p = prefix.rstrip("/")
    routes: list[Any] = [
        (rf"{p}/?", PageHandler),
        (rf"{p}/api/groups", GroupsHandler),
        (rf"{p}/api/groups/([^/]+)", GroupHandler),
        (rf"{p}/api/groups/([^/]+)/members", MembersHandler),
        (rf"{p}/api/groups/([^/]+)/members/([^/]+)", MemberHandler),
        (rf"{p}/api/groups/([^/]+)/roster", RosterHandler),
        (rf"{p}/api/usage", UsageHandler),
        (rf"{p}/api/profiles", ProfilesHandler),
        (rf"{p}/api/me", MeHandler),
        (rf"{p}/api/admission", AdmissionHandler),
        (rf"{p}/api/admission/([^/]+)", ReservationHandler),
        (rf"{p}/api/reconcile", ReconcileHandler),
        (rf"{p}/api/servers/([^/]+)/stop", StopServerHandler),
        (rf"{p}/api/users/([^/]+)/message", MessageHandler),
        (rf"{p}/api/notices", NoticesHandler),
        (rf"{p}/api/notices/(\d+)", NoticeHandler),
    ]
    from .course_api import routes as course_routes  # its handlers build on this module's

    routes += course_routes(p)
    handlers: list[Any] = [(path, cls, {"ctx": ctx}) for path, cls in routes]
    handlers.append((rf"{p}/oauth_callback", HubOAuthCallbackHandler))
    return web.Application(
        handlers,
        cookie_secret=cookie_secret,
        log_function=log_request,  # ?token=... never reaches the log
        xsrf_cookies=True,
        xsrf_cookie_kwargs={"path": f"{p}/"},
        hub_auth=ctx.auth,  # HubOAuthCallbackHandler finds it here
    )


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost"
    return True


async def _serve(args: argparse.Namespace) -> None:
    settings = load()
    prefix = service_prefix()
    # the singleton: HubOAuthCallbackHandler uses HubOAuth.instance(), which keeps the PKCE state
    auth = HubOAuth.instance(api_token=os.environ["JUPYTERHUB_API_TOKEN"], cache_max_age=5)
    ctx = Context(settings, HubAPI(), auth)
    app = make_app(ctx, prefix, secret_file(settings.hub_dir / "cube-admin-cookie-secret"))
    url = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", settings.admin_url))
    host = url.hostname or "127.0.0.1"
    # a name such as http://hub:8010 (the hub pod's Service, under the chart) is reached from
    # the proxy pod: listen on every interface there; an address is listened on as it is
    app.listen(url.port or 8010, host if _is_address(host) else "0.0.0.0")
    log.info("cube-admin listening on %s%s", url.geturl().rstrip("/"), prefix)
    try:
        await ctx.seed_groups()
    except CubeError as exc:
        log.warning("could not create the settings file's groups: %s", exc.error)

    async def reconcile_forever() -> None:
        while True:
            try:
                await ctx.reconcile()
                await ctx.stop_idle()
            except Exception:
                log.exception("reconcile failed; trying again later")
            await asyncio.sleep(args.reconcile_interval)

    async def collect_forever() -> None:
        """Hand-outs whose deadline passed are collected (also on each read of the course)."""
        while True:
            await asyncio.sleep(args.collect_interval)
            try:
                await asyncio.to_thread(ctx.courses.collect_due, await ctx.groups())
            except Exception:
                log.exception("collecting at the deadline failed; trying again later")

    task = asyncio.get_running_loop().create_task(reconcile_forever())
    collector = asyncio.get_running_loop().create_task(collect_forever())
    try:
        await asyncio.Event().wait()
    finally:
        task.cancel()
        collector.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reconcile-interval", type=float, default=30)
    parser.add_argument("--collect-interval", type=float, default=30)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="[cube-admin %(levelname)s] %(message)s")
    run_service(_serve(args), log)


if __name__ == "__main__":
    main()
