"""`cube-lab project list|create|member|invitations|accept|decline`: projects and members."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..identity import Caller
from ..serialize import to_jsonable
from .args import print_json, print_table

if TYPE_CHECKING:
    from ..workspace import Workspace


def show_projects(projects: list[dict[str, Any]], invitations: list[dict[str, Any]]) -> None:
    print_table(
        [
            [p["name"], p["kind"], p["role"], str(len(p["members"])), p["description"]]
            for p in projects
        ],
        ["NAME", "KIND", "ROLE", "MEMBERS", "DESCRIPTION"],
    )
    if invitations:
        names = ", ".join(f"{i['project']} (from {i['invited_by']})" for i in invitations)
        print(f"\nInvited to: {names}; answer with `cube-lab project accept|decline NAME`.")


def project_list(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    projects = ws.projects.list(caller)
    if a.json:
        print_json(projects)
        return
    show_projects(to_jsonable(projects), to_jsonable(ws.projects.invitations(caller)))


def project_create(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    p = ws.projects.create(caller, a.name, a.description)
    if a.json:
        print_json(p)
    else:
        print(f"Created project {p.name}")


def project_member(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    """Invite someone (or change a member's role); --remove removes or withdraws."""
    was_member = a.username in {m.username for m in ws.projects.get(caller, a.project_name).members}
    if a.remove:
        view = ws.projects.remove_member(caller, a.project_name, a.username)
    else:
        view = ws.projects.set_member(caller, a.project_name, a.username, a.role)
    if a.json:
        print_json(view)
    else:
        print(member_message(a, was_member))


def member_message(a: argparse.Namespace, was_member: bool) -> str:
    """What ``project member`` did, in words (the local and the hub command alike)."""
    if a.remove:
        done = "Removed" if was_member else "Withdrew the invitation of"
        return f"{done} {a.username} from {a.project_name}"
    if was_member:
        return f"{a.username} is now {a.role} of {a.project_name}"
    return (
        f"Invited {a.username} to {a.project_name} as {a.role}: they become a member "
        f"when they accept (cube-lab project accept {a.project_name})"
    )


def project_invitations(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    invitations = ws.projects.invitations(caller)
    if a.json:
        print_json(invitations)
        return
    if not invitations:
        print("No invitations.")
        return
    print_table(
        [[i.project, i.role, i.invited_by, f"{i.invited_at:%Y-%m-%d %H:%M}"] for i in invitations],
        ["PROJECT", "ROLE", "INVITED BY", "INVITED AT"],
    )


def project_accept(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    view = ws.projects.accept(caller, a.project_name)
    if a.json:
        print_json(view)
    else:
        print(f"You are now {view.role} of {view.name}")


def project_decline(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    ws.projects.decline(caller, a.project_name)
    if a.json:
        print_json({"declined": a.project_name})
    else:
        print(f"Declined the invitation to {a.project_name}")


def add_commands(groups: Any, command: Callable[..., Any]) -> None:
    projects = groups.add_parser("project", help="projects and members").add_subparsers(
        dest="command", required=True
    )
    command(projects, "list", project_list, "list your projects")
    p = command(projects, "create", project_create, "create a team project")
    p.add_argument("name")
    p.add_argument("--description", default="")
    p = command(
        projects,
        "member",
        project_member,
        "invite someone (a member once they accept), change a member's role, or remove one",
    )
    p.add_argument("project_name")
    p.add_argument("username")
    p.add_argument("--role", default="member", choices=["owner", "member"])
    p.add_argument(
        "--remove", action="store_true", help="remove the member or withdraw the invitation"
    )
    command(projects, "invitations", project_invitations, "list your pending invitations")
    for action, fn, help_ in [
        ("accept", project_accept, "accept an invitation: become a member of the project"),
        ("decline", project_decline, "decline an invitation"),
    ]:
        p = command(projects, action, fn, help_)
        p.add_argument("project_name")
