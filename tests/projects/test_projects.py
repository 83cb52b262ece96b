"""Projects: names that belong to users and hub groups, invitations, no existence leak."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from cube_lab.errors import CubeError, Forbidden, NotFound
from cube_lab.identity import Caller
from cube_lab.projects import ProjectService
from cube_lab.store.models import Project, ProjectMember
from cube_lab.workspace import Workspace

ALICE, BOB, CAROL = Caller("alice"), Caller("bob"), Caller("carol")


def names(ws: Any, caller: Caller) -> set[str]:
    return {p.name for p in ws.projects.list(caller)}


def personal(ws: Any, username: str) -> str:
    with ws.store.read() as s:
        return s.scalar(
            select(Project.name).where(Project.kind == "personal", Project.created_by == username)
        )


def refusal(fn: Any, *args: Any) -> tuple[int, str, Any]:
    with pytest.raises(CubeError) as info:
        fn(*args)
    return info.value.status, info.value.error, info.value.detail


def weights(tmp_path: Path) -> Path:
    path = tmp_path / "w.bin"
    path.write_bytes(b"\x00\x01" * 50)
    return path


# -- hub project groups -----------------------------------------------------------------------


def test_hub_groups_become_team_projects_and_nothing_is_removed(ws: Any) -> None:
    assert ws.projects.join_groups("alice", ["vision", "bad name!", "nlp"]) == ["vision", "nlp"]
    assert ws.projects.join_groups("bob", ["vision"]) == ["vision"]
    assert ws.projects.join_groups("alice", ["vision"]) == []  # already a member
    assert {"vision", "nlp"} <= names(ws, ALICE)
    vision = ws.projects.get(BOB, "vision")
    assert {m.username for m in vision.members} == {"alice", "bob"}
    ws.projects.join_groups("alice", [])  # left every group on the hub: memberships stay
    assert {"vision", "nlp"} <= names(ws, ALICE)


def test_hub_group_members_join_without_an_invitation_and_a_pending_one_is_dropped(
    ws: Any,
) -> None:
    ws.projects.join_groups("alice", ["crew"])
    with ws.store.write() as s:  # an owner of the hub's project (an admin made one) invites carol
        crew = s.scalar(select(Project).where(Project.name == "crew"))
        crew.members[0].role = "owner"
    ws.projects.set_member(ALICE, "crew", "carol", "member")
    assert [i.project for i in ws.projects.invitations(CAROL)] == ["crew"]
    assert ws.projects.join_groups("carol", ["crew"]) == ["crew"]  # the group is the say
    assert "crew" in names(ws, CAROL) and ws.projects.invitations(CAROL) == []
    assert ws.projects.get(ALICE, "crew").invitations == []


def test_a_project_a_user_made_under_a_groups_name_is_not_joined_by_the_group(
    ws: Any, tmp_path: Path
) -> None:
    ws.projects.create(BOB, "research", "bob's trap")
    ws.registry.register(BOB, name="bait", path=weights(tmp_path), project="research")
    assert ws.projects.join_groups("alice", ["research"]) == ["research"]
    alice_sees = ws.projects.get(ALICE, "research")
    assert {m.username for m in alice_sees.members} == {"alice"}  # the hub's, not bob's
    assert ws.registry.list_models(ALICE, project="research").total == 0
    assert "bob-research" in names(ws, BOB)  # bob keeps his project and its model
    assert ws.registry.get_model(BOB, "bob-research", "bait").name == "bait"


# -- names that belong to users ---------------------------------------------------------------


def test_a_known_users_name_cannot_be_taken_by_anyone_else(ws: Any) -> None:
    ws.projects.list(CAROL)  # carol has used cube-lab
    status, error, detail = refusal(ws.projects.create, BOB, "carol")
    assert status == 409 and error == "project name 'carol' is not available"
    assert "personal project" in detail and "'bob-carol'" in detail  # why, and what instead
    ws.projects.create(ALICE, "t1")
    ws.projects.set_member(ALICE, "t1", "dave", "member")  # an invited user is known too
    assert refusal(ws.projects.create, BOB, "dave")[0] == 409
    assert names(ws, CAROL) == {"carol"} and personal(ws, "carol") == "carol"
    status, error, _ = refusal(ws.projects.create, CAROL, "carol")  # her own: not a leak
    assert status == 409 and "you already have" in error


def test_a_user_who_arrives_later_still_gets_their_name_and_the_squatter_moves(
    ws: Any, tmp_path: Path
) -> None:
    ws.projects.create(BOB, "user-c", "squatted before user-c ever logged in")
    ws.registry.register(BOB, name="m", path=weights(tmp_path), project="user-c")
    ws.projects.set_member(BOB, "user-c", "user-c", "member")  # now only an invitation
    user_c = Caller("user-c")
    assert names(ws, user_c) == {"user-c"} and personal(ws, "user-c") == "user-c"
    assert ws.projects.get(user_c, "user-c").kind == "personal"
    assert ws.registry.list_models(user_c).total == 0  # nothing of bob's in her project
    assert names(ws, BOB) == {"bob", "bob-user-c"}
    assert ws.registry.get_model(BOB, "bob-user-c", "m").name == "m"
    # the invitation follows bob's project under its new name
    assert [i.project for i in ws.projects.invitations(user_c)] == ["bob-user-c"]


def test_upgrade_from_a_squatted_store_gives_the_rightful_user_their_name(
    ws: Any, tmp_path: Path
) -> None:
    """The store as the old rules left it: user-b made "user-c" and added user-c without
    asking, so user-c's personal project became "user-c-2"."""
    user_c, user_b = Caller("user-c"), Caller("user-b")
    ws.registry.register(user_c, name="hers", path=weights(tmp_path))
    ws.projects.list(user_b)
    with ws.store.write() as s:
        s.scalar(select(Project).where(Project.name == "user-c")).name = "user-c-2"
        s.flush()
        squat = Project(name="user-c", kind="team", description="", created_by="user-b")
        squat.members += [
            ProjectMember(username="user-b", role="owner"),
            ProjectMember(username="user-c", role="member"),
        ]
        s.add(squat)
    upgraded = Workspace.open(ws.settings)  # a server started on the upgraded store
    try:
        assert names(upgraded, user_c) == {"user-c"}
        assert upgraded.projects.get(user_c, "user-c").kind == "personal"
        # the same project under its own name: what she had is there
        assert upgraded.registry.get_model(user_c, "user-c", "hers").name == "hers"
        # the membership she never agreed to is an invitation she may accept or decline
        assert [(i.project, i.invited_by) for i in upgraded.projects.invitations(user_c)] == [
            ("user-b-user-c", "user-b")
        ]
        squatter = upgraded.projects.get(user_b, "user-b-user-c")
        assert [m.username for m in squatter.members] == ["user-b"]
        upgraded.projects.decline(user_c, "user-b-user-c")
        assert upgraded.projects.invitations(user_c) == []
    finally:
        upgraded.close()


def test_names_that_used_to_escape_alike_are_separated_on_arrival(ws: Any) -> None:
    """Under the older naming "a b" became "a-b" too; a store from then is put right: the
    user whose name "a-b" exactly is takes it, "a b" gets its own escaped name."""
    with ws.store.write() as s:  # "a b" arrived first under the old rules
        old = Project(name="a-b", kind="personal", description="", created_by="a b")
        old.members.append(ProjectMember(username="a b", role="owner"))
        s.add(old)
    ws.projects.list(Caller("a-b"))  # the user whose name it exactly is
    assert (personal(ws, "a-b"), personal(ws, "a b")) == ("a-b", "a-b-2")
    ws.projects.list(Caller("a b"))  # and "a b" arrives: renamed to its own name
    assert personal(ws, "a b") == "x--a-20b"
    fresh = ProjectService(ws.store)  # and it stays settled
    assert {p.name for p in fresh.list(Caller("a b"))} == {"x--a-20b"}
    assert {p.name for p in fresh.list(Caller("a-b"))} == {"a-b"}


def test_a_user_named_like_a_hub_group_does_not_take_the_groups_project(ws: Any) -> None:
    ws.projects.join_groups("alice", ["vision"])
    assert {p.name for p in ws.projects.list(Caller("vision"))} == {"vision-2"}
    assert "vision" in names(ws, ALICE)


# -- invitations ----------------------------------------------------------------------------


def test_an_invitation_is_pending_until_accepted(ws: Any, tmp_path: Path) -> None:
    ws.projects.create(ALICE, "vision", "shared work")
    ws.registry.register(ALICE, name="det", path=weights(tmp_path), project="vision")
    view = ws.projects.set_member(ALICE, "vision", "bob", "owner")
    assert [m.username for m in view.members] == ["alice"]
    assert [(i.username, i.role, i.invited_by) for i in view.invitations] == [
        ("bob", "owner", "alice")
    ]
    # bob: an invitation, nothing else
    assert names(ws, BOB) == {"bob"}
    assert [(i.project, i.role, i.description) for i in ws.projects.invitations(BOB)] == [
        ("vision", "owner", "shared work")
    ]
    assert ws.registry.list_models(BOB).total == 0
    with pytest.raises(NotFound):
        ws.projects.get(BOB, "vision")
    with pytest.raises(NotFound):
        ws.registry.get_model(BOB, "vision", "det")
    with pytest.raises(NotFound):
        ws.registry.list_models(BOB, project="vision")
    with pytest.raises(NotFound):
        ws.registry.register(BOB, name="x", path=weights(tmp_path), project="vision")
    with pytest.raises(NotFound):  # a pending owner cannot invite anyone either
        ws.projects.set_member(BOB, "vision", "carol", "member")
    # accepted: a member with the role offered
    accepted = ws.projects.accept(BOB, "vision")
    assert accepted.role == "owner" and accepted.invitations == []
    assert names(ws, BOB) == {"bob", "vision"} and ws.projects.invitations(BOB) == []
    assert [m.name for m in ws.registry.list_models(BOB).models] == ["det"]
    with pytest.raises(NotFound, match="no invitation"):
        ws.projects.accept(BOB, "vision")


def test_decline_withdraw_reinvite_and_leave(ws: Any) -> None:
    ws.projects.create(ALICE, "vision")
    ws.projects.set_member(ALICE, "vision", "bob", "member")
    ws.projects.decline(BOB, "vision")
    assert ws.projects.invitations(BOB) == [] and names(ws, BOB) == {"bob"}
    assert ws.projects.get(ALICE, "vision").invitations == []
    with pytest.raises(NotFound, match="no invitation"):
        ws.projects.accept(BOB, "vision")
    # invited again, the role changed, then withdrawn by the owner
    ws.projects.set_member(ALICE, "vision", "carol", "member")
    view = ws.projects.set_member(ALICE, "vision", "carol", "owner")
    assert [(i.username, i.role) for i in view.invitations] == [("carol", "owner")]
    view = ws.projects.remove_member(ALICE, "vision", "carol")
    assert view.invitations == [] and ws.projects.invitations(CAROL) == []
    # a member may leave; a non-owner may not remove others; the last owner stays
    ws.projects.set_member(ALICE, "vision", "bob", "member")
    ws.projects.accept(BOB, "vision")
    with pytest.raises(Forbidden):
        ws.projects.remove_member(BOB, "vision", "alice")
    ws.projects.remove_member(BOB, "vision", "bob")
    assert names(ws, BOB) == {"bob"}
    assert refusal(ws.projects.remove_member, ALICE, "vision", "alice")[0] == 400
    with pytest.raises(NotFound):  # no invitation to a project that does not exist either
        ws.projects.decline(BOB, "nowhere")


# -- no existence leak ----------------------------------------------------------------------


def test_a_hidden_project_and_a_reserved_name_answer_alike(ws: Any) -> None:
    ws.projects.create(CAROL, "team-a")  # bob cannot see it
    ws.projects.list(Caller("team-b"))  # a user whose name is "team-b"
    hidden = refusal(ws.projects.create, BOB, "team-a")
    reserved = refusal(ws.projects.create, BOB, "team-b")
    assert hidden[0] == reserved[0] == 409
    assert [str(x).replace("team-a", "N") for x in hidden] == [
        str(x).replace("team-b", "N") for x in reserved
    ]
    assert "exists" not in hidden[1]
    # reading it: word for word the answer for a project that does not exist
    missing = refusal(ws.projects.get, BOB, "team-z")
    seen = refusal(ws.projects.get, BOB, "team-a")
    assert [str(x).replace("team-a", "N") for x in seen] == [
        str(x).replace("team-z", "N") for x in missing
    ]
    assert seen[0] == 404
    with pytest.raises(NotFound, match="project 'team-a' not found"):
        ws.registry.list_models(BOB, project="team-a")


# -- the same through the REST API of a real server -------------------------------------------


def _masked(body: Any, name: str) -> str:
    return str(body).replace(name, "NAME")


async def test_rest_invitations_and_no_existence_leak(api: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "w.bin").write_bytes(b"\x00\x01" * 50)
    assert (await api("bob", "GET", "projects"))[0] == 200  # bob has used cube-lab
    # squatting bob's name is refused with a 409 that says why and what instead
    reserved = await api("alice", "POST", "projects", {"name": "bob"})
    status, err = reserved
    assert status == 409 and set(err) == {"error", "detail"}
    assert "not available" in err["error"] and "'alice-bob'" in err["detail"]
    status, body = await api("bob", "GET", "projects")
    assert [p["name"] for p in body["projects"]] == ["bob"] and body["invitations"] == []
    # carol's hidden project answers exactly like a reserved name, and reads like a missing one
    assert (await api("carol", "POST", "projects", {"name": "crew"}))[0] == 201
    hidden = await api("alice", "POST", "projects", {"name": "crew"})
    assert hidden[0] == 409 and _masked(hidden, "crew") == _masked(reserved, "bob")
    for route, params in [("projects/{}", None), ("models", {"project": "{}"})]:
        answers = []
        for name in ("crew", "nothing-here"):
            path = route.format(name)
            query = {k: v.format(name) for k, v in (params or {}).items()}
            answers.append(_masked(await api("alice", "GET", path, params=query), name))
        assert answers[0] == answers[1] and "404" in answers[0], route
    # an invitation: pending (nothing visible) until accepted
    assert (await api("alice", "POST", "projects", {"name": "vision"}))[0] == 201
    body = {"name": "det", "path": "w.bin", "project": "vision"}
    assert (await api("alice", "POST", "models", body))[0] == 201
    status, project = await api("alice", "PUT", "projects/vision/members/bob", {"role": "member"})
    assert status == 200 and [m["username"] for m in project["members"]] == ["alice"]
    assert [(i["username"], i["invited_by"]) for i in project["invitations"]] == [("bob", "alice")]
    status, body = await api("bob", "GET", "projects")
    assert "vision" not in [p["name"] for p in body["projects"]]
    assert [(i["project"], i["role"]) for i in body["invitations"]] == [("vision", "member")]
    assert (await api("bob", "GET", "projects/vision"))[0] == 404
    assert (await api("bob", "GET", "projects/vision/models/det"))[0] == 404
    assert (await api("bob", "GET", "models"))[1]["total"] == 0
    status, listed = await api("bob", "GET", "invitations")
    assert status == 200 and [i["project"] for i in listed["invitations"]] == ["vision"]
    status, project = await api("bob", "POST", "invitations/vision/accept")
    assert status == 200 and project["role"] == "member" and project["invitations"] == []
    assert (await api("bob", "GET", "projects/vision/models/det"))[0] == 200
    assert (await api("bob", "GET", "invitations"))[1]["invitations"] == []
    # declined: gone, and the project stays invisible
    assert (await api("alice", "PUT", "projects/vision/members/carol", {}))[0] == 200
    status, _ = await api("carol", "POST", "invitations/vision/decline")
    assert status == 204
    assert (await api("carol", "GET", "projects/vision"))[0] == 404
    status, err = await api("carol", "POST", "invitations/vision/accept")
    assert status == 404 and "no invitation" in err["error"]
    assert (await api("alice", "GET", "projects/vision"))[1]["invitations"] == []


@pytest.mark.parametrize("username", ["", "  ", "x" * 256, "bo\x00b", "bo\nb"])
def test_an_invitation_to_a_username_no_user_can_have_is_refused(ws: Any, username: str) -> None:
    ws.projects.create(ALICE, "vision")
    status, error, _ = refusal(ws.projects.set_member, ALICE, "vision", username, "member")
    assert status == 400 and "username" in error
    assert ws.projects.get(ALICE, "vision").invitations == []
