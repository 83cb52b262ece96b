"""`cube-lab project ...` under the hub."""

from __future__ import annotations

import argparse

from ...rest_client import ServiceClient, segment
from ..args import print_json, print_table
from ..output import _stamp
from ..projects import member_message, show_projects
from .common import emit


def project_list(client: ServiceClient, a: argparse.Namespace) -> None:
    found = client.get("projects")
    if a.json:
        print_json(found["projects"])
    else:
        show_projects(found["projects"], found.get("invitations") or [])


def project_create(client: ServiceClient, a: argparse.Namespace) -> None:
    p = client.post("projects", {"name": a.name, "description": a.description})
    if a.json:
        print_json(p)
    else:
        print(f"Created project {p['name']}")


def project_member(client: ServiceClient, a: argparse.Namespace) -> None:
    """Invite someone (or change a member's role); --remove removes or withdraws."""
    where = f"projects/{segment(a.project_name)}"
    members = {m["username"] for m in client.get(where)["members"]}
    was_member = a.username in members
    if a.remove:
        view = client.delete(f"{where}/members/{segment(a.username)}")
    else:
        view = client.put(f"{where}/members/{segment(a.username)}", {"role": a.role})
    emit(a, view, lambda _: print(member_message(a, was_member)))


def project_invitations(client: ServiceClient, a: argparse.Namespace) -> None:
    invitations = client.get("invitations")["invitations"]
    if a.json:
        print_json(invitations)
        return
    if not invitations:
        print("No invitations.")
        return
    print_table(
        [[i["project"], i["role"], i["invited_by"], _stamp(i["invited_at"])] for i in invitations],
        ["PROJECT", "ROLE", "INVITED BY", "INVITED AT"],
    )


def project_accept(client: ServiceClient, a: argparse.Namespace) -> None:
    view = client.post(f"invitations/{segment(a.project_name)}/accept")
    if a.json:
        print_json(view)
    else:
        print(f"You are now {view['role']} of {view['name']}")


def project_decline(client: ServiceClient, a: argparse.Namespace) -> None:
    client.post(f"invitations/{segment(a.project_name)}/decline")
    if a.json:
        print_json({"declined": a.project_name})
    else:
        print(f"Declined the invitation to {a.project_name}")
