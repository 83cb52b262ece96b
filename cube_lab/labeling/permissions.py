"""Who may do what in a labeling project, beyond being a member of its cube-lab project."""

from __future__ import annotations

from typing import Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..errors import Forbidden, InvalidInput
from ..identity import Caller
from ..locale.messages import _t
from ..store.models import ProjectMember


class Managed(Protocol):
    """What the checks read of a labeling project (the service's Context has it)."""

    @property
    def name(self) -> str: ...
    @property
    def owner(self) -> str: ...
    @property
    def project_id(self) -> int: ...
    @property
    def reviewers(self) -> tuple[str, ...]: ...


def is_project_owner(s: Session, project_id: int, caller: Caller) -> bool:
    role = s.scalar(
        select(ProjectMember.role).where(
            ProjectMember.project_id == project_id, ProjectMember.username == caller.username
        )
    )
    return role == "owner"


def members(s: Session, project_id: int) -> set[str]:
    return set(
        s.scalars(select(ProjectMember.username).where(ProjectMember.project_id == project_id))
    )


def may_manage(s: Session, labeling: Managed, caller: Caller) -> bool:
    """The labeling project's creator and the cube-lab project's owners."""
    return labeling.owner == caller.username or is_project_owner(s, labeling.project_id, caller)


def check_manage(s: Session, labeling: Managed, caller: Caller, what: str) -> None:
    if not may_manage(s, labeling, caller):
        raise Forbidden(
            _t(
                "only {owner} or an owner of the project may {what}",
                owner=labeling.owner,
                what=what,
            ),
            _t("Ask them, or ask a project owner."),
        )


def check_reviewer(s: Session, labeling: Managed, caller: Caller) -> None:
    if caller.username in (labeling.reviewers or []) or may_manage(s, labeling, caller):
        return
    raise Forbidden(
        _t("you are not a reviewer of labeling project {name!r}", name=labeling.name),
        _t("Reviewers are the project owners, its creator and the users listed in reviewers."),
    )


def check_users(s: Session, project_id: int, users: object, what: str) -> list[str]:
    """A list of distinct usernames, each a member of the project."""
    if not isinstance(users, list) or not all(isinstance(u, str) and u for u in users):
        raise InvalidInput(
            _t("{what} must be a list of usernames", what=what), _t('e.g. ["alice", "bob"]')
        )
    seen: list[str] = []
    for user in users:
        if user not in seen:
            seen.append(user)
    outsiders = sorted(set(seen) - members(s, project_id))
    if outsiders:
        raise InvalidInput(
            _t(
                "{value} {value2} not a member of the project",
                value=", ".join(outsiders),
                value2="is" if len(outsiders) == 1 else "are",
            ),
            _t(
                "Add them first: cube-lab project member PROJECT USER (personal projects "
                "have one member; share work through a team project)."
            ),
        )
    return seen
