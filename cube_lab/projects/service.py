"""Projects and membership.

Each user gets a personal project on first use (found by kind and creator, so a
team project that happens to share the name never captures it). A caller sees
exactly the projects they are a member of; everything else is "not found".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from ..errors import Conflict, Forbidden, InvalidInput, NotFound
from ..identity import Caller, check_name
from ..store import Store
from ..store.models import Project, ProjectMember

ROLES = ("owner", "member")


@dataclass(frozen=True)
class MemberView:
    username: str
    role: str


@dataclass(frozen=True)
class ProjectView:
    name: str
    kind: str
    description: str
    role: str
    members: list[MemberView]
    created_at: datetime

    @classmethod
    def of(cls, project: Project, username: str) -> ProjectView:
        members = [MemberView(m.username, m.role) for m in project.members]
        role = next((m.role for m in members if m.username == username), "")
        return cls(
            project.name, project.kind, project.description, role, members, project.created_at
        )


def _personal_name(username: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "-", username).lstrip("._-")[:100] or "user"


class ProjectService:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._ensured: set[str] = set()  # users whose personal project exists (never deleted)

    # -- used by every other service -------------------------------------------------

    def personal_project(self, session: Session, caller: Caller) -> Project:
        """The caller's personal project, created on first use inside ``session``."""
        found = session.scalars(
            select(Project).where(Project.kind == "personal", Project.created_by == caller.username)
        ).first()
        if found:
            return found
        base = _personal_name(caller.username)
        name, n = base, 1
        while session.scalar(select(Project.id).where(Project.name == name)) is not None:
            n += 1
            name = f"{base}-{n}"
        project = Project(name=name, kind="personal", description="", created_by=caller.username)
        project.members.append(ProjectMember(username=caller.username, role="owner"))
        session.add(project)
        session.flush()
        return project

    def resolve(
        self, session: Session, caller: Caller, name: str | None, *, owner: bool = False
    ) -> Project:
        """The project ``name`` if the caller is a member (the personal one when None)."""
        if not name:
            return self.personal_project(session, caller)
        project = session.scalars(select(Project).where(Project.name == name)).first()
        member = project and next(
            (m for m in project.members if m.username == caller.username), None
        )
        if not project or not member:
            raise NotFound(
                f"project {name!r} not found",
                "It does not exist or you are not a member; GET /cube/api/v1/projects lists yours.",
            )
        if owner and member.role != "owner":
            raise Forbidden(f"only owners of project {name!r} may do this", "Ask a project owner.")
        return project

    def visible_ids(self, session: Session, caller: Caller) -> list[int]:
        """Ids of the caller's projects; call ``ensure_personal`` first."""
        return list(
            session.scalars(
                select(ProjectMember.project_id).where(ProjectMember.username == caller.username)
            )
        )

    # -- the projects API -------------------------------------------------------------

    def ensure_personal(self, caller: Caller) -> None:
        """Create the personal project once; later calls cost nothing (no write lock taken)."""
        if caller.username in self._ensured:
            return
        with self.store.read() as s:  # usually it exists: don't queue for the write lock
            if s.scalar(
                select(Project.id).where(
                    Project.kind == "personal", Project.created_by == caller.username
                )
            ):
                self._ensured.add(caller.username)
                return
        for _ in range(3):  # two first requests of a new user may race on the insert
            try:
                with self.store.write() as s:
                    self.personal_project(s, caller)
                self._ensured.add(caller.username)
                return
            except IntegrityError:
                continue

    def list(self, caller: Caller) -> list[ProjectView]:
        self.ensure_personal(caller)
        with self.store.read() as s:
            projects = s.scalars(
                select(Project)
                .join(ProjectMember)
                .where(ProjectMember.username == caller.username)
                .options(selectinload(Project.members))
                .order_by(Project.kind.desc(), Project.name)
            ).all()
            return [ProjectView.of(p, caller.username) for p in projects]

    def get(self, caller: Caller, name: str) -> ProjectView:
        self.ensure_personal(caller)
        with self.store.read() as s:
            return ProjectView.of(self.resolve(s, caller, name), caller.username)

    def create(self, caller: Caller, name: object, description: object = "") -> ProjectView:
        check_name(name, "project name")
        assert isinstance(name, str)
        if not isinstance(description, str):
            raise InvalidInput("description must be a string")
        try:
            with self.store.write() as s:
                if s.scalar(select(Project.id).where(Project.name == name)) is not None:
                    raise Conflict(f"project {name!r} already exists", "Choose another name.")
                project = Project(
                    name=name, kind="team", description=description, created_by=caller.username
                )
                project.members.append(ProjectMember(username=caller.username, role="owner"))
                s.add(project)
                s.flush()
                return ProjectView.of(project, caller.username)
        except IntegrityError as exc:
            raise Conflict(f"project {name!r} already exists", "Choose another name.") from exc

    def join_groups(self, username: str, groups: list[str]) -> list[str]:
        """Team projects for a user's hub project groups: created when missing, the user
        added as a member. Never removes anything: leaving a group is an admin's act on the
        hub, and what the project holds stays. Returns the projects newly joined."""
        joined: list[str] = []
        for attempt in range(2):  # another user's server may create the same one at once
            try:
                with self.store.write() as s:
                    for name in groups:
                        try:
                            check_name(name, "project name")
                        except InvalidInput:
                            continue  # a group name no project can have
                        project = s.scalar(select(Project).where(Project.name == name))
                        if project is None:
                            project = Project(
                                name=name,
                                kind="team",
                                description="a project group of the hub",
                                created_by="hub",
                            )
                            s.add(project)
                        elif project.kind != "team":
                            continue
                        if all(m.username != username for m in project.members):
                            project.members.append(ProjectMember(username=username, role="member"))
                            joined.append(name)
                return joined
            except IntegrityError:
                joined = []
                if attempt:
                    raise
        return joined

    def set_member(self, caller: Caller, name: str, username: object, role: object) -> ProjectView:
        if not isinstance(username, str) or not username.strip():
            raise InvalidInput("username is required")
        if role not in ROLES:
            raise InvalidInput(f"invalid role {role!r}", f"Use one of {list(ROLES)}.")
        with self.store.write() as s:
            project = self.resolve(s, caller, name, owner=True)
            if project.kind == "personal":
                raise InvalidInput(
                    "a personal project has no other members",
                    "Create a team project (POST /cube/api/v1/projects) to share.",
                )
            member = next((m for m in project.members if m.username == username), None)
            if member:
                member.role = str(role)
            else:
                project.members.append(ProjectMember(username=username, role=str(role)))
            self._keep_an_owner(project)
            s.flush()
            return ProjectView.of(project, caller.username)

    def remove_member(self, caller: Caller, name: str, username: str) -> ProjectView:
        with self.store.write() as s:
            project = self.resolve(s, caller, name, owner=True)
            member = next((m for m in project.members if m.username == username), None)
            if not member:
                raise NotFound(f"{username!r} is not a member of {name!r}")
            project.members.remove(member)
            self._keep_an_owner(project)
            s.flush()
            return ProjectView.of(project, caller.username)

    @staticmethod
    def _keep_an_owner(project: Project) -> None:
        if not any(m.role == "owner" for m in project.members):
            raise InvalidInput(
                "a project needs at least one owner", "Make someone else an owner first."
            )
