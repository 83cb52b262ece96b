"""`cube-lab course import GROUP roster.csv`: a course's roster into the hub, through the
cube-admin service (``cube_lab.hub.roster``), the same call as the admin page's Import roster.

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
    if s["created"]:
        print(
            _t(
                "Initial passwords are shown only now: hand them out; each user changes theirs "
                "at /hub/change-password."
            ).translated(env_locale())
        )


def add_commands(groups: Any, command: Callable[..., Any]) -> None:
    course = groups.add_parser("course", help="courses on the hub: rosters (an admin's)")
    sub = course.add_subparsers(dest="action", required=True)
    p = command(sub, "import", course_import, "import a roster CSV into a project group")
    p.set_defaults(hub_admin=True)
    p.add_argument("group", help="the course's project group")
    p.add_argument("roster", help="CSV: user name, display name, e-mail, role")
    p.add_argument("--admin-url", help="the cube-admin service (default: $CUBE_HUB_ADMIN_URL)")
    p.add_argument("--token", help="an admin's hub token (default: $CUBE_HUB_TOKEN)")
