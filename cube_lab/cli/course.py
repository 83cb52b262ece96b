"""`cube-lab course ...`: courses on the hub, through the cube-admin service's REST API (the
same calls as the admin page and the course page):

- ``create NAME`` / ``list`` / ``show NAME``: courses (``cube_lab.hub.course``);
- ``import GROUP roster.csv``: a roster (``cube_lab.hub.roster``), as the admin page's Import;
- ``handout COURSE [FOLDER] --name lab1 [--mode copy|readonly] [--deadline ISO] [--model REF]
  [--dataset REF]``: a folder of the teacher's space into every student's (again: students
  added since get it too), and the teacher's models and dataset versions (``[PROJECT/]NAME
  [:VERSION]``) into the course's project, read-only;
- ``collect COURSE HANDOUT``, ``submissions COURSE HANDOUT``; ``submit COURSE HANDOUT`` (a
  student's own).

It reaches the service at ``--admin-url`` / ``$CUBE_HUB_ADMIN_URL`` (a lab server has it) with
``--token`` / ``$CUBE_HUB_TOKEN`` / ``$JUPYTERHUB_API_TOKEN``: an admin's token (one made at
/hub/token carries the admin's scopes; a lab server's own token does not).
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..errors import CubeError, Forbidden, InvalidInput, NotFound
from ..locale import html_lang
from ..locale.messages import _t, env_locale
from .args import print_json, print_table


class AdminUnavailable(CubeError):
    status = 503


def _where(a: argparse.Namespace) -> tuple[str, str]:
    base = a.admin_url or os.environ.get("CUBE_HUB_ADMIN_URL")
    token = a.token or os.environ.get("CUBE_HUB_TOKEN") or os.environ.get("JUPYTERHUB_API_TOKEN")
    if not base or not token:
        raise InvalidInput(
            _t("where is the hub's cube-admin service?"),
            _t(
                "Give --admin-url http://HUB/services/cube-admin/ and --token (an admin's "
                "token from /hub/token), or set $CUBE_HUB_ADMIN_URL and $CUBE_HUB_TOKEN."
            ),
        )
    return base.rstrip("/") + "/", token


def admin_call(
    a: argparse.Namespace, method: str, path: str, data: bytes, content_type: str
) -> Any:
    """One request of the cube-admin API; its error body becomes the same CubeError."""
    base, token = _where(a)
    request = urllib.request.Request(
        base + "api/" + path,
        data=data,
        method=method,
        headers={
            "Authorization": f"token {token}",
            "Content-Type": content_type,
            "Accept-Language": html_lang(env_locale()),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=600) as resp:
            return json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        try:
            payload = json.loads(exc.read() or b"{}")
        except ValueError:
            payload = {}
        error = payload.get("error") or f"cube-admin answered {exc.code}"
        cls = {400: InvalidInput, 403: Forbidden, 404: NotFound}.get(exc.code, AdminUnavailable)
        raise cls(error, payload.get("detail")) from None
    except OSError as exc:
        raise AdminUnavailable(
            _t("the hub's cube-admin service cannot be reached"),
            _t("{base}: {exc}", base=base, exc=exc),
        ) from None


def course_import(_ws: Any, _caller: Any, a: argparse.Namespace) -> None:
    path = Path(a.roster)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidInput(_t("cannot read {path}", path=str(path)), str(exc)) from None
    report = admin_call(a, "POST", f"groups/{quote(a.group, safe='')}/roster", data, "text/csv")
    if a.json:
        print_json(report)
        return
    s = report["summary"]
    print_table(
        [
            [
                str(r["line"]),
                r["name"],
                r["display_name"],
                r["role"],
                r["account"],
                r["member"],
                r.get("password", ""),
                (r.get("error") or "") + (" " + r["detail"] if r.get("detail") else ""),
            ]
            for r in report["rows"]
        ],
        ["LINE", "USER", "DISPLAY NAME", "ROLE", "ACCOUNT", "MEMBER", "PASSWORD", "PROBLEM"],
    )
    print(
        _t(
            "\n{created} accounts made, {approved} approved, {existed} already there; "
            "{added} added to {group}; {error} rows with errors.",
            group=a.group,
            **s,
        ).translated(env_locale())
    )
    if not s["created"]:
        return
    if any(r.get("must_change") for r in report["rows"]):
        text = _t(
            "Initial passwords are shown only now: hand them out; at first login the hub asks "
            "each user to change theirs."
        )
    else:
        text = _t(
            "Initial passwords are shown only now: hand them out; each user changes theirs "
            "at /hub/change-password."
        )
    print(text.translated(env_locale()))


def admin_json(a: argparse.Namespace, method: str, path: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else b"{}" if method == "POST" else None
    return admin_call(a, method, path, data, "application/json")  # type: ignore[arg-type]


def _q(name: str) -> str:
    return quote(name, safe="")


def _when(seconds: float | None) -> str:
    if not seconds:
        return ""
    return datetime.fromtimestamp(seconds, UTC).astimezone().strftime("%Y-%m-%d %H:%M %Z")


def _limits(a: argparse.Namespace, prefix: str) -> dict[str, Any]:
    """The quota fields given as --servers ... --gpus (or --student-servers ...)."""
    out: dict[str, Any] = {}
    for key in ("servers", "jobs", "cpu", "memory"):
        if getattr(a, prefix + key) is not None:
            out[key] = getattr(a, prefix + key)
    if getattr(a, prefix + "gpus") is not None:
        out["accelerators"] = {"nvidia.com/gpu": getattr(a, prefix + "gpus")}
    return out


def course_create(_ws: Any, _caller: Any, a: argparse.Namespace) -> None:
    quota = _limits(a, "")
    per_student = _limits(a, "student_")
    if per_student:
        quota["per_member"] = per_student
    for key, value in (("gpu_hours", a.gpu_hours), ("gpu_hours_per_member", a.student_gpu_hours)):
        if value is not None:
            quota[key] = value
    body: dict[str, Any] = {"name": a.name}
    if a.profile:
        body["profiles"] = a.profile
    if quota:
        body["quota"] = quota
    if a.idle_minutes is not None:
        body["idle_timeout"] = round(a.idle_minutes * 60)
    view = admin_json(a, "POST", "courses", body)
    if a.json:
        print_json(view)
        return
    print(
        _t("Course {name}: {n} members.", name=view["name"], n=len(view["members"])).translated(
            env_locale()
        )
    )


def course_list(_ws: Any, _caller: Any, a: argparse.Namespace) -> None:
    found = admin_json(a, "GET", "courses")
    if a.json:
        print_json(found)
        return
    print_table(
        [
            [
                c["name"],
                c["role"] or "",
                ", ".join(c["teachers"]),
                str(c["students"]),
                str(c["handouts"]),
            ]
            for c in found["courses"]
        ],
        ["COURSE", "YOUR ROLE", "TEACHERS", "STUDENTS", "HAND-OUTS"],
    )


def course_show(_ws: Any, _caller: Any, a: argparse.Namespace) -> None:
    view = admin_json(a, "GET", f"courses/{_q(a.name)}")
    if a.json:
        print_json(view)
        return
    rows = []
    for m in view["members"]:
        servers = ", ".join(f"{s['name'] or 'default'} ({s['profile']})" for s in m["servers"])
        usage = "; ".join(f"{k}={v:g}" for k, v in m["usage"].items())
        hours = "" if m["gpu_hours"] is None else f"{m['gpu_hours']:.2f}"
        rows.append([m["name"], m["display_name"], m["role"], servers, usage, hours])
    print_table(rows, ["USER", "DISPLAY NAME", "ROLE", "SERVERS", "RESOURCES", "GPU-HOURS"])
    if view["handouts"]:
        print()
        print_table(
            [
                [
                    h["name"],
                    h["source"] or "-",
                    h["mode"],
                    _when(h["deadline"]),
                    str(h["students"]),
                    str(h["submitted"]),
                    str(h["late"]),
                ]
                for h in view["handouts"]
            ],
            ["HAND-OUT", "SOURCE", "MODE", "DEADLINE", "STUDENTS", "SUBMITTED", "LATE"],
        )


def course_handout(_ws: Any, _caller: Any, a: argparse.Namespace) -> None:
    name = a.name or (a.source.rstrip("/").rsplit("/", 1)[-1] if a.source else None)
    if not name:
        raise InvalidInput(
            _t("name the hand-out"), _t("Add --name, e.g. --name lab1 (a folder names its own).")
        )
    body: dict[str, Any] = {"source": a.source, "name": name, "mode": a.mode,
                            "models": a.model or [], "datasets": a.dataset or []}  # fmt: skip
    if a.deadline is not None:
        body["deadline"] = a.deadline
    if a.teacher:
        body["teacher"] = a.teacher
    out = admin_json(a, "POST", f"courses/{_q(a.course)}/handouts", body)
    if a.json:
        print_json(out)
        return
    if out["students"]:
        print_table(
            [
                [
                    r["student"],
                    r["status"],
                    str(len(r["copied"]) + len(r["updated"])),
                    str(len(r["kept"])),
                    (r.get("error") or "") + (" " + r["detail"] if r.get("detail") else ""),
                ]
                for r in out["students"]
            ],
            ["STUDENT", "STATUS", "COPIED", "KEPT (NOT OVERWRITTEN)", "PROBLEM"],
        )
    material = [("model", r) for r in out.get("models") or ()] + [
        ("dataset", r) for r in out.get("datasets") or ()
    ]
    if material:
        print_table(
            [[kind, r["ref"], _material_ref(r["to"]), r["status"]] for kind, r in material],
            ["KIND", "GIVEN", "IN THE COURSE (READ-ONLY)", "STATUS"],
        )
    if out["skipped"]:
        print(
            _t(
                "Not copied (links or special files): {files}", files=", ".join(out["skipped"])
            ).translated(env_locale())
        )


def _material_ref(ref: dict[str, Any]) -> str:
    version = ref.get("version")
    return f"{ref['project']}/{ref['name']}" + (f":v{version}" if version else "")


def course_collect(_ws: Any, _caller: Any, a: argparse.Namespace) -> None:
    out = admin_json(a, "POST", f"courses/{_q(a.course)}/handouts/{_q(a.handout)}/collect")
    if a.json:
        print_json(out)
        return
    print_table(
        [
            [
                r["student"],
                r["status"],
                _when(r.get("at")),
                "late" if r.get("late") else "",
                r.get("error") or "",
            ]
            for r in out["students"]
        ],
        ["STUDENT", "STATUS", "AT", "LATE", "PROBLEM"],
    )


def course_submissions(_ws: Any, _caller: Any, a: argparse.Namespace) -> None:
    path = f"courses/{_q(a.course)}/handouts/{_q(a.handout)}/submissions"
    out = admin_json(a, "GET", path)
    if a.json:
        print_json(out)
        return
    print_table(
        [
            [
                r["student"],
                r["display_name"],
                r["status"],
                r.get("how", ""),
                _when(r.get("at")),
                str(len(r.get("files") or [])),
                ", ".join(_material_ref(m["to"]) for m in r.get("models") or ()),
                str(len(r.get("runs") or [])),
            ]
            for r in out["submissions"]
        ],
        ["STUDENT", "DISPLAY NAME", "STATUS", "HOW", "AT", "FILES", "MODELS", "RUNS"],
    )


def course_submit(_ws: Any, _caller: Any, a: argparse.Namespace) -> None:
    out = admin_json(a, "POST", f"courses/{_q(a.course)}/handouts/{_q(a.handout)}/submit")
    if a.json:
        print_json(out)
        return
    values = {"n": len(out["files"]), "at": _when(out["at"])}
    if out["late"]:
        text = _t("Submitted {n} files at {at}, after the deadline: marked late.", **values)
    else:
        text = _t("Submitted {n} files at {at}.", **values)
    print(text.translated(env_locale()))
    models, runs = len(out.get("models") or ()), len(out.get("runs") or ())
    if models or runs:
        more = _t("With it: {models} models and {runs} runs of the folder.", models=models,
                  runs=runs)  # fmt: skip
        print(more.translated(env_locale()))


def add_commands(groups: Any, command: Callable[..., Any]) -> None:
    course = groups.add_parser("course", help="courses on the hub: rosters, hand-outs, submissions")
    sub = course.add_subparsers(dest="action", required=True)

    def hub_command(name: str, fn: Callable[..., None], help_: str) -> Any:
        p = command(sub, name, fn, help_)
        p.set_defaults(hub_admin=True)
        p.add_argument("--admin-url", help="the cube-admin service (default: $CUBE_HUB_ADMIN_URL)")
        p.add_argument("--token", help="your hub token (default: $CUBE_HUB_TOKEN)")
        return p

    p = hub_command("create", course_create, "make a course (a project group), an admin's")
    p.add_argument("name", help="the course's name (its project group)")
    p.add_argument("--profile", action="append", help="an allowed profile (repeat it)")
    p.add_argument("--servers", type=int, help="servers at once, in total")
    p.add_argument("--jobs", type=int, help="jobs at once, in total")
    p.add_argument("--cpu", help="CPU cores, in total")
    p.add_argument("--memory", help="memory, in total (e.g. 128G)")
    p.add_argument("--gpus", type=int, help="GPUs (nvidia.com/gpu), in total")
    p.add_argument("--gpu-hours", type=float, help="GPU-hours a month, in total")
    for key, kind, help_ in (
        ("servers", int, "servers at once, each student"),
        ("jobs", int, "jobs at once, each student"),
        ("cpu", str, "CPU cores, each student"),
        ("memory", str, "memory, each student (e.g. 8G)"),
        ("gpus", int, "GPUs (nvidia.com/gpu), each student"),
        ("gpu-hours", float, "GPU-hours a month, each student"),
    ):
        p.add_argument(f"--student-{key}", type=kind, help=help_)
    p.add_argument(
        "--idle-minutes", type=float, help="stop the course's servers idle this long (minutes)"
    )
    hub_command("list", course_list, "the courses you teach (all, for an admin)")
    p = hub_command("show", course_show, "a course: members, servers, resources, hand-outs")
    p.add_argument("name", help="the course")
    p = hub_command("import", course_import, "import a roster CSV into a project group")
    p.add_argument("group", help="the course's project group")
    p.add_argument("roster", help="CSV: user name, display name, e-mail, role")
    p = hub_command(
        "handout", course_handout, "hand out a folder of your space, models and datasets"
    )
    p.add_argument("course", help="the course")
    p.add_argument("source", nargs="?", help="the folder, relative to your home folder")
    p.add_argument("--name", help="the hand-out's name (default: the folder's)")
    p.add_argument(
        "--mode",
        choices=["copy", "readonly"],
        help="copy: a copy each (default with a folder); readonly: shared to read",
    )
    p.add_argument(
        "--model",
        action="append",
        help="a model of yours, [PROJECT/]NAME[:VERSION], read-only in the course (repeat it)",
    )
    p.add_argument(
        "--dataset",
        action="append",
        help="a dataset of yours, [PROJECT/]NAME[:vN], read-only in the course (repeat it)",
    )
    p.add_argument("--deadline", help="ISO 8601 with the zone, e.g. 2026-12-20T23:59+08:00")
    p.add_argument("--teacher", help="whose folder (an admin's choice; default: yours)")
    for name, fn, help_ in (
        ("collect", course_collect, "collect the students' folders now"),
        ("submissions", course_submissions, "who submitted what and when"),
        ("submit", course_submit, "submit your folder of a hand-out (a student's)"),
    ):
        p = hub_command(name, fn, help_)
        p.add_argument("course", help="the course")
        p.add_argument("handout", help="the hand-out's name")
