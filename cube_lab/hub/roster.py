"""A course's roster: CSV rows (user name, display name, e-mail, role) made into approved hub
accounts and members of a project group in one call, with a report per row; and adding
several members by name. Plain Python over :class:`~cube_lab.hub.hubapi.HubAPI`; the
cube-admin service's handlers are thin over these.

The display names, e-mails and roles are kept in the group's properties under
``ROSTER_PROPERTY`` (``{user: {"display_name", "email", "role"}}``), beside the quota.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import Conflict, InvalidInput
from ..locale.messages import Text, _t
from .hubapi import HubAPI

ROSTER_PROPERTY = "cube_lab_roster"
ROLES = ("teacher", "assistant", "student")
ROLE_WORDS = {
    "teacher": "teacher", "教师": "teacher", "老师": "teacher", "instructor": "teacher",
    "assistant": "assistant", "ta": "assistant", "助教": "assistant",
    "student": "student", "学生": "student", "": "student",
}  # fmt: skip
HEADER_WORDS = {"username", "user name", "user", "name", "login", "用户名", "账号", "学号"}
# what every shape can run as: a POSIX account, a Kubernetes label, a folder name
USER_RE = re.compile(r"^[a-z][a-z0-9_.-]{0,31}\Z")
USER_RULE = _t(
    "start with a lowercase letter and use only lowercase letters, digits, '.', '_' and '-' "
    "(at most 32)"
)
SPLIT_RE = re.compile(r"[\s,;\uff0c\uff1b\u3001]+")  # also the fullwidth , ; and 、
MAX_ROWS = 2000


@dataclass
class RosterRow:
    line: int
    name: str
    display_name: str = ""
    email: str = ""
    role: str = "student"
    error: Text | None = None


@dataclass
class RowResult:
    line: int
    name: str
    display_name: str = ""
    role: str = ""
    account: str = ""  # created | approved | existed | error
    member: str = ""  # added | existed
    password: str | None = None
    must_change: bool = False  # the password is one-time: changed at first login
    error: Text | None = None
    detail: Text | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "line": self.line, "name": self.name, "display_name": self.display_name,
            "role": self.role, "account": self.account, "member": self.member,
        }  # fmt: skip
        if self.password:
            out["password"] = self.password
            out["must_change"] = self.must_change
        if self.error:
            out["error"] = self.error
            out["detail"] = self.detail
        return out


@dataclass
class Report:
    rows: list[RowResult] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, int] = {"created": 0, "approved": 0, "existed": 0, "added": 0}
        counts["error"] = 0
        for r in self.rows:
            if r.error:
                counts["error"] += 1
                continue
            counts[r.account] = counts.get(r.account, 0) + 1
            if r.member == "added":
                counts["added"] += 1
        return {"summary": counts, "rows": [r.to_json() for r in self.rows]}


def check_user_name(value: str) -> Text | None:
    """None when ``value`` is a safe account name; else why not."""
    if not USER_RE.match(value):
        return _t("invalid user name {value!r}: it must {rule}", value=value, rule=USER_RULE)
    return None


def parse_csv(text: str) -> list[RosterRow]:
    """The roster's rows; a first row naming the columns is skipped. Columns: user name,
    display name, e-mail, role (teacher, assistant or student; Chinese words too)."""
    if text.startswith("\ufeff"):  # a spreadsheet's UTF-8 mark
        text = text[1:]
    rows: list[RosterRow] = []
    seen: dict[str, int] = {}
    for number, cells in enumerate(csv.reader(io.StringIO(text)), start=1):
        cells = [c.strip() for c in cells]
        if not any(cells):
            continue
        if not rows and number == 1 and cells[0].lower() in HEADER_WORDS:
            continue
        cells += [""] * (4 - len(cells))
        name, display, email, role = cells[0].lower(), cells[1], cells[2], cells[3].lower()
        row = RosterRow(number, name, display, email)
        row.error = check_user_name(name)
        if role not in ROLE_WORDS:
            row.error = row.error or _t(
                "unknown role {value!r}: use teacher, assistant or student", value=cells[3]
            )
        else:
            row.role = ROLE_WORDS[role]
        if not row.error and name in seen:
            row.error = _t("{name} is also on line {line}", name=name, line=seen[name])
        seen.setdefault(name, number)
        rows.append(row)
        if len(rows) > MAX_ROWS:
            raise InvalidInput(
                _t("the roster has more than {n} rows", n=MAX_ROWS), _t("Split it in parts.")
            )
    if not rows:
        raise InvalidInput(
            _t("the roster is empty"),
            _t("Send CSV rows: user name, display name, e-mail, role."),
        )
    return rows


def split_names(value: Any) -> list[str]:
    """Names separated by commas, spaces or newlines (or a list of them), once each."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        parts = [p for v in value for p in SPLIT_RE.split(v)]
    elif isinstance(value, str):
        parts = SPLIT_RE.split(value)
    else:
        raise InvalidInput(_t("users must be names separated by commas, spaces or newlines"))
    names = list(dict.fromkeys(p.strip().lower() for p in parts if p.strip()))
    if not names:
        raise InvalidInput(
            _t("no user names given"), _t("Type one or more names, separated by commas.")
        )
    return names


async def ensure_accounts(
    hub: HubAPI, items: list[dict[str, Any]], *, native: bool
) -> dict[str, dict[str, Any]]:
    """The hub's answer per name (see ``auth._accounts_handler``). Under SSO there are no
    passwords to make: the hub's user is made (status ``created``/``existed``) and the
    identity provider signs them in."""
    if native:
        # a class's passwords are hashed there (bcrypt, slow on purpose): minutes, not 30 s
        answer = await hub.request("POST", "/cube/accounts", {"accounts": items}, timeout=600)
        return {a["name"]: a for a in answer["accounts"]}
    out: dict[str, dict[str, Any]] = {}
    known = {u["name"] for u in await hub.users()}
    for item in items:
        name = item["name"]
        if name in known:
            out[name] = {"name": name, "status": "existed"}
            continue
        try:
            await hub.request("POST", f"/users/{name}")
            out[name] = {"name": name, "status": "created"}
        except Conflict:
            out[name] = {"name": name, "status": "existed"}
    return out


async def import_roster(
    hub: HubAPI, group: dict[str, Any], rows: list[RosterRow], *, native: bool
) -> Report:
    """Accounts for the rows (made and approved where missing), members of ``group`` (the
    hub's record of it) with their roles; re-running it changes nothing."""
    name = group["name"]
    report = Report()
    good = [r for r in rows if r.error is None]
    accounts = await ensure_accounts(
        hub, [{"name": r.name, "email": r.email, "create": True} for r in good], native=native
    )
    members = set(group.get("users") or [])
    properties = dict(group.get("properties") or {})
    roster = dict(properties.get(ROSTER_PROPERTY) or {})
    to_add: list[str] = []
    for row in rows:
        result = RowResult(row.line, row.name, row.display_name, row.role)
        report.rows.append(result)
        if row.error is not None:
            result.account = "error"
            result.error = row.error
            result.detail = _t("Fix the row and import again; the other rows are kept.")
            continue
        answer = accounts.get(row.name) or {"status": "missing"}
        result.account = answer["status"]
        result.password = answer.get("password")
        result.must_change = bool(answer.get("must_change"))
        if result.account not in ("created", "approved", "existed"):
            result.account = "error"
            result.error = _t("the hub did not make an account for {name}", name=row.name)
            result.detail = _t("See the hub's log.")
            continue
        result.member = "existed" if row.name in members else "added"
        if row.name not in members:
            to_add.append(row.name)
        roster[row.name] = {"display_name": row.display_name, "email": row.email,
                            "role": row.role}  # fmt: skip
    if to_add:
        await hub.add_members(name, to_add)
    if roster != (properties.get(ROSTER_PROPERTY) or {}):
        properties[ROSTER_PROPERTY] = roster
        await hub.set_properties(name, properties)
    return report


async def add_members(
    hub: HubAPI, group: dict[str, Any], names: list[str], *, native: bool
) -> list[dict[str, Any]]:
    """Add ``names`` to ``group``: a user approved but never logged in gets their hub user
    first. One result per name: ``added``, ``existed`` or ``error`` with why and the fix."""
    members = set(group.get("users") or [])
    results: list[dict[str, Any]] = []
    valid = []
    for n in names:
        problem = check_user_name(n)
        if problem:
            results.append({"name": n, "status": "error", "error": problem,
                            "detail": _t("A user name must {rule}.", rule=USER_RULE)})  # fmt: skip
        else:
            valid.append(n)
    if native:
        items = [{"name": n, "create": False} for n in valid]
        answers = await ensure_accounts(hub, items, native=True) if items else {}
    else:  # SSO: the hub's user is made now; the identity provider signs them in
        answers = await ensure_accounts(hub, [{"name": n} for n in valid], native=False)
    to_add = []
    for n in valid:
        status = (answers.get(n) or {}).get("status", "missing")
        if status == "missing":
            results.append({"name": n, "status": "error",
                            "error": _t("{name} has no account", name=n),
                            "detail": _t(
                                "They sign up at /hub/signup and you approve them at "
                                "/hub/authorize, or import them in a roster.")})  # fmt: skip
        elif status == "unapproved":
            results.append({"name": n, "status": "error",
                            "error": _t("{name} signed up but is not approved yet", name=n),
                            "detail": _t("Approve them at /hub/authorize, or import them "
                                         "in a roster (that approves them).")})  # fmt: skip
        elif n in members:
            results.append({"name": n, "status": "existed"})
        else:
            to_add.append(n)
            results.append({"name": n, "status": "added"})
    if to_add:
        await hub.add_members(group["name"], to_add)
    order = {n: i for i, n in enumerate(names)}
    return sorted(results, key=lambda r: order[r["name"]])


def roster_of(group: dict[str, Any]) -> dict[str, dict[str, str]]:
    raw = (group.get("properties") or {}).get(ROSTER_PROPERTY) or {}
    return raw if isinstance(raw, dict) else {}
