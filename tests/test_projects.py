"""Projects from the hub's project groups."""

from __future__ import annotations

from typing import Any

from cube_lab.identity import Caller


def test_hub_groups_become_team_projects_and_nothing_is_removed(ws: Any) -> None:
    assert ws.projects.join_groups("alice", ["vision", "bad name!", "nlp"]) == ["vision", "nlp"]
    assert ws.projects.join_groups("bob", ["vision"]) == ["vision"]
    assert ws.projects.join_groups("alice", ["vision"]) == []  # already a member
    names = {p.name for p in ws.projects.list(Caller("alice"))}
    assert {"vision", "nlp"} <= names
    vision = ws.projects.get(Caller("bob"), "vision")
    assert {m.username for m in vision.members} == {"alice", "bob"}
    ws.projects.join_groups("alice", [])  # left every group on the hub: memberships stay
    assert {"vision", "nlp"} <= {p.name for p in ws.projects.list(Caller("alice"))}
