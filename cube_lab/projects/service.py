"""Projects, membership and invitations.

Names
    A user's personal project is named ``personal_name(username)``: their user name escaped
    by ``cube_lab.names`` (plain names as they are, distinct names never the same). That
    name is theirs:

    - Nobody else can create a project with it: a user the store knows (anyone who has a
      personal project, is a member or has an invitation) has their name reserved.
    - A user the store does not know yet gets their name all the same: when their personal
      project is first made (or, after an upgrade, first used), a team project that another
      user created under that name (a squatter) is renamed ``<creator>-<name>`` (``-2``,
      ``-3``... when that is taken too) and the personal project takes the name. If the user
      had been added to the squatting project (before invitations, nobody was asked), that
      membership becomes a pending invitation they may accept or decline.
    - Distinct user names have distinct project names; only two very long names (shortened
      with a hash, ``cube_lab.names``) could meet. Should they, or should an older name
      stand in the way, the user whose name it is exactly has it; the other gets
      ``<name>-2``.
    - A hub project group's project (made by ``join_groups``, ``created_by == "hub"``) keeps
      its name: group names are the hub admin's, and a user named like a group gets
      ``<name>-2`` rather than taking the group's project away. Likewise a team project a user
      made before the admin created the group is not joined by the group's members: it is
      renamed ``<creator>-<name>`` and the group gets its own project.

No existence leak
    Creating a project whose name is taken by a project the caller is not a member of, or is
    reserved for a user, answers one and the same ``Conflict`` (409, "project name 'x' is not
    available", the same detail): the answer does not tell a hidden project from a user's
    name. Only a project the caller is a member of is named as theirs. Every read of a project
    the caller is not a member of is ``NotFound``, word for word as for a missing one.

Membership
    A member sees and uses everything in the project. Members are made only by the invited
    user accepting an owner's invitation (``invite`` through ``set_member``, then ``accept``)
    or by a hub project group (``join_groups``: the hub admin's group is the say). A pending
    invitation is a ``ProjectInvitation`` row, never a ``ProjectMember``: the invited user
    sees nothing of the project until they accept, and the project is not in their list
    (``invitations`` lists it as an invitation).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Select, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from ..errors import Conflict, Forbidden, InvalidInput, NotFound
from ..identity import Caller, check_name
from ..locale.messages import _t
from ..names import project_name
from ..store import Store
from ..store.models import Project, ProjectInvitation, ProjectMember, utcnow

ROLES = ("owner", "member")
PAGE_MAX = 500  # the most rows one listing answers
Row = TypeVar("Row")
HUB = "hub"  # created_by of the projects of hub project groups
NAME_MAX = 128


@dataclass(frozen=True)
class MemberView:
    username: str
    role: str


@dataclass(frozen=True)
class PendingView:
    """Someone invited to a project who has not answered yet."""

    username: str
    role: str
    invited_by: str
    invited_at: datetime


@dataclass(frozen=True)
class ProjectView:
    name: str
    kind: str
    description: str
    role: str
    members: list[MemberView]
    invitations: list[PendingView]
    created_at: datetime

    @classmethod
    def of(cls, project: Project, username: str) -> ProjectView:
        members = [MemberView(m.username, m.role) for m in project.members]
        pending = [
            PendingView(i.username, i.role, i.invited_by, i.invited_at) for i in project.invitations
        ]
        role = next((m.role for m in members if m.username == username), "")
        return cls(
            project.name,
            project.kind,
            project.description,
            role,
            members,
            pending,
            project.created_at,
        )


@dataclass(frozen=True)
class InvitationView:
    """An invitation as the invited user sees it."""

    project: str
    description: str
    role: str
    invited_by: str
    invited_at: datetime

    @classmethod
    def of(cls, row: ProjectInvitation) -> InvitationView:
        return cls(
            row.project.name, row.project.description, row.role, row.invited_by, row.invited_at
        )


def personal_name(username: str) -> str:
    """The name of ``username``'s personal project (theirs alone; see the module docstring):
    ``cube_lab.names.project_name``, the same escaping as the user's home and pods. Plain
    names (``alice``, ``student1``, ``jean-luc``) are themselves; any other is escaped
    (张三 -> ``x---e5-bc-a0-e4-b8-89``, ``Alice`` -> ``x---41lice``), so distinct users never
    share a name. A personal project made under the older naming (张三's ``user``, ``Alice``)
    is renamed to this on the user's next request, as ``personal_project`` does."""
    return project_name(username)


_personal_name = personal_name  # the older private name


def _unavailable(caller: Caller, name: str) -> Conflict:
    """The one answer for a name that is reserved for a user or taken by a project the
    caller cannot see: it depends on nothing but the caller and the name asked for."""
    return Conflict(
        _t("project name {name!r} is not available", name=name),
        _t(
            (
                "Every user's name is kept for their personal project, and a name may be in "
                "use by a project you are not a member of. Choose another name, for example "
                "'{value}-{name}' or '{name}-team'."
            ),
            value=personal_name(caller.username),
            name=name,
        ),
    )


def _not_invited(name: str) -> NotFound:
    return NotFound(
        _t("you have no invitation to project {name!r}", name=name),
        _t("GET /cube/api/v1/invitations (cube-lab project invitations) lists yours."),
    )


class ProjectService:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._ensured: set[str] = set()  # users whose personal project is settled

    # -- used by every other service -------------------------------------------------

    def personal_project(self, session: Session, caller: Caller) -> Project:
        """The caller's personal project, created on first use inside ``session``, under its
        canonical name whenever that name can be theirs (see the module docstring)."""
        username = caller.username
        canonical = personal_name(username)
        found = session.scalars(
            select(Project).where(Project.kind == "personal", Project.created_by == username)
        ).first()
        if found is not None and found.name == canonical:
            return found
        holder = session.scalars(select(Project).where(Project.name == canonical)).first()
        if holder is not None and _yields(holder, username):
            self._displace(session, holder, username)
            holder = None
        if found is not None:
            if holder is None:  # e.g. "user-c-2" from before: now "user-c"
                found.name = canonical
                session.flush()
            return found
        name = canonical if holder is None else self._free_name(session, canonical)
        project = Project(name=name, kind="personal", description="", created_by=username)
        project.members.append(ProjectMember(username=username, role="owner"))
        session.add(project)
        session.flush()
        return project

    def resolve(
        self, session: Session, caller: Caller, name: str | None, *, owner: bool = False
    ) -> Project:
        """The project ``name`` if the caller is a member (the personal one when None).

        A project that does not exist and one the caller is not a member of (an invited user
        who has not accepted included) raise the same ``NotFound``."""
        if not name:
            return self.personal_project(session, caller)
        project = session.scalars(select(Project).where(Project.name == name)).first()
        member = project and next(
            (m for m in project.members if m.username == caller.username), None
        )
        if not project or not member:
            raise NotFound(
                _t("project {name!r} not found", name=name),
                _t(
                    "It does not exist or you are not a member; GET /cube/api/v1/projects"
                    " lists yours."
                ),
            )
        if owner and member.role != "owner":
            raise Forbidden(
                _t("only owners of project {name!r} may do this", name=name),
                _t("Ask a project owner."),
            )
        return project

    def visible_ids(self, session: Session, caller: Caller) -> list[int]:
        """Ids of the caller's projects (members only); call ``ensure_personal`` first."""
        return list(
            session.scalars(
                select(ProjectMember.project_id).where(ProjectMember.username == caller.username)
            )
        )

    def visible(
        self, session: Session, caller: Caller, model: type[Row], project: str | None = None
    ) -> Select[tuple[Row, str]]:
        """``select(model, Project.name)`` over the rows of ``model`` (a table with a
        ``project_id``) the caller may see: those of ``project`` (NotFound unless they are a
        member) or, without one, of every project they are a member of. The one tenancy query
        of the services that list and fetch per project: chain ``where``, ``order_by`` and
        ``limit`` onto it. Call ``ensure_personal`` first."""
        column: Any = model.project_id  # type: ignore[attr-defined]
        return (
            select(model, Project.name)
            .join(Project, Project.id == column)
            .where(column.in_(self.scope_ids(session, caller, project)))
        )

    def scope_ids(self, session: Session, caller: Caller, project: str | None) -> list[int]:
        """The id of ``project`` (NotFound unless the caller is a member) or, without one, the
        ids of every project they are a member of: what a listing covers."""
        if project:
            return [self.resolve(session, caller, project).id]
        return self.visible_ids(session, caller)

    # -- the projects API -------------------------------------------------------------

    def ensure_personal(self, caller: Caller) -> None:
        """Create (or rename into its name) the personal project once; later calls cost
        nothing (no write lock taken)."""
        if caller.username in self._ensured:
            return
        with self.store.read() as s:  # usually it is settled: don't queue for the write lock
            if s.scalar(
                select(Project.id).where(
                    Project.kind == "personal",
                    Project.created_by == caller.username,
                    Project.name == personal_name(caller.username),
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
        """The projects the caller is a member of (not those they are only invited to)."""
        self.ensure_personal(caller)
        with self.store.read() as s:
            projects = s.scalars(
                select(Project)
                .join(ProjectMember)
                .where(ProjectMember.username == caller.username)
                .options(selectinload(Project.members), selectinload(Project.invitations))
                .order_by(Project.kind.desc(), Project.name)
            ).all()
            return [ProjectView.of(p, caller.username) for p in projects]

    def get(self, caller: Caller, name: str) -> ProjectView:
        self.ensure_personal(caller)
        with self.store.read() as s:
            return ProjectView.of(self.resolve(s, caller, name), caller.username)

    def create(self, caller: Caller, name: object, description: object = "") -> ProjectView:
        """A team project with the caller as its owner. A name reserved for a user or taken
        by a project the caller cannot see gets one indistinguishable 409 (module docstring)."""
        check_name(name, "project name")
        assert isinstance(name, str)
        if not isinstance(description, str):
            raise InvalidInput(_t("description must be a string"))
        self.ensure_personal(caller)  # the caller's own name is then their personal project
        try:
            with self.store.write() as s:
                holder = s.scalars(select(Project).where(Project.name == name)).first()
                if holder is not None and any(
                    m.username == caller.username for m in holder.members
                ):
                    raise Conflict(
                        _t("you already have a project named {name!r}", name=name),
                        _t("Choose another name; GET /cube/api/v1/projects lists your projects."),
                    )
                if holder is not None or self._reserved(s, name):
                    raise _unavailable(caller, name)
                project = Project(
                    name=name, kind="team", description=description, created_by=caller.username
                )
                project.members.append(ProjectMember(username=caller.username, role="owner"))
                s.add(project)
                s.flush()
                return ProjectView.of(project, caller.username)
        except IntegrityError as exc:  # created at the same moment by someone else
            raise _unavailable(caller, name) from exc

    def join_groups(self, username: str, groups: list[str]) -> list[str]:
        """Team projects for a user's hub project groups: created when missing, the user
        added as a member without an invitation (the hub admin's group is the say; a pending
        invitation to it is dropped). Never removes anything: leaving a group is an admin's
        act on the hub, and what the project holds stays. Returns the projects newly joined.

        Only a project the hub made is joined: a team project a user made under the group's
        name is renamed out of the way (module docstring), and one that is someone's
        personal project is left alone (the group gets no project)."""
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
                        if project is not None and project.kind != "team":
                            continue
                        if project is not None and project.created_by != HUB:
                            self._displace(s, project, username)
                            project = None
                        if project is None:
                            project = Project(
                                name=name,
                                kind="team",
                                description="a project group of the hub",
                                created_by=HUB,
                            )
                            s.add(project)
                        for inv in [i for i in project.invitations if i.username == username]:
                            project.invitations.remove(inv)
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
        """Owners only. A member's role changes at once; anyone else is invited (pending
        until they accept; inviting again changes the role they are offered)."""
        if not isinstance(username, str) or not username.strip():
            raise InvalidInput(_t("username is required"))
        if len(username) > 255 or any(ord(c) < 32 or ord(c) == 127 for c in username):
            raise InvalidInput(
                _t("invalid username {value!r}", value=username[:80]),
                _t("A user name has at most 255 characters and no control characters."),
            )
        if role not in ROLES:
            raise InvalidInput(
                _t("invalid role {role!r}", role=role), _t("Use one of {value}.", value=list(ROLES))
            )
        with self.store.write() as s:
            project = self.resolve(s, caller, name, owner=True)
            if project.kind == "personal":
                raise InvalidInput(
                    _t("a personal project has no other members"),
                    _t("Create a team project (POST /cube/api/v1/projects) to share."),
                )
            member = next((m for m in project.members if m.username == username), None)
            invitation = next((i for i in project.invitations if i.username == username), None)
            if member:
                member.role = str(role)
            elif invitation:
                invitation.role = str(role)
                invitation.invited_by = caller.username
                invitation.invited_at = utcnow()
            else:
                project.invitations.append(
                    ProjectInvitation(username=username, role=str(role), invited_by=caller.username)
                )
            self._keep_an_owner(project)
            s.flush()
            return ProjectView.of(project, caller.username)

    def remove_member(self, caller: Caller, name: str, username: str) -> ProjectView:
        """Owners remove a member or withdraw an invitation; a member may remove themself
        (leave). A project keeps at least one owner."""
        with self.store.write() as s:
            project = self.resolve(s, caller, name, owner=username != caller.username)
            member = next((m for m in project.members if m.username == username), None)
            invitation = next((i for i in project.invitations if i.username == username), None)
            if member:
                project.members.remove(member)
            elif invitation:
                project.invitations.remove(invitation)
            else:
                raise NotFound(
                    _t(
                        "{username!r} is not a member of {name!r} and has no invitation to it",
                        username=username,
                        name=name,
                    )
                )
            self._keep_an_owner(project)
            s.flush()
            return ProjectView.of(project, caller.username)

    # -- the invited user's side ------------------------------------------------------

    def invitations(self, caller: Caller) -> list[InvitationView]:
        """The caller's pending invitations, oldest first."""
        self.ensure_personal(caller)
        with self.store.read() as s:
            rows = s.scalars(
                select(ProjectInvitation)
                .where(ProjectInvitation.username == caller.username)
                .options(selectinload(ProjectInvitation.project))
                .order_by(ProjectInvitation.invited_at, ProjectInvitation.project_id)
            ).all()
            return [InvitationView.of(r) for r in rows]

    def accept(self, caller: Caller, name: str) -> ProjectView:
        """Accept an invitation: the caller becomes a member with the role offered."""
        self.ensure_personal(caller)
        with self.store.write() as s:
            row = self._invitation(s, caller, name)
            project = row.project
            if all(m.username != caller.username for m in project.members):
                project.members.append(ProjectMember(username=caller.username, role=row.role))
            project.invitations.remove(row)
            s.flush()
            return ProjectView.of(project, caller.username)

    def decline(self, caller: Caller, name: str) -> None:
        """Decline an invitation: it is gone, and the caller never sees the project."""
        self.ensure_personal(caller)
        with self.store.write() as s:
            row = self._invitation(s, caller, name)
            row.project.invitations.remove(row)

    # -- helpers ----------------------------------------------------------------------

    @staticmethod
    def _invitation(s: Session, caller: Caller, name: str) -> ProjectInvitation:
        row = s.scalars(
            select(ProjectInvitation)
            .join(Project)
            .where(Project.name == name, ProjectInvitation.username == caller.username)
        ).first()
        if row is None:  # the same words whether the project exists or not
            raise _not_invited(name)
        return row

    @staticmethod
    def _known_users(s: Session) -> set[str]:
        return (
            set(s.scalars(select(ProjectMember.username).distinct()))
            | set(s.scalars(select(ProjectInvitation.username).distinct()))
            | set(s.scalars(select(Project.created_by).where(Project.kind == "personal")))
        )

    def _reserved(self, s: Session, name: str) -> bool:
        """Whether ``name`` is the personal-project name of a user the store knows."""
        return any(personal_name(u) == name for u in self._known_users(s))

    def _free_name(self, s: Session, base: str) -> str:
        """``base``, else ``base-2``, ``base-3``...: the first no project has and no known
        user's personal project would have."""
        base = base[: NAME_MAX - 8]
        users = {personal_name(u) for u in self._known_users(s)}
        taken = set(s.scalars(select(Project.name).where(Project.name.startswith(base))))
        name, n = base, 1
        while name in taken or name in users:
            n += 1
            name = f"{base}-{n}"
        return name

    def _displace(self, s: Session, holder: Project, rightful: str) -> None:
        """Rename ``holder`` out of a name that belongs to ``rightful`` (a user, or the hub).

        A team project becomes ``<creator>-<name>``; a personal one ``<name>-2``. If
        ``rightful`` had been made a member of a squatting team project, that membership
        turns into a pending invitation with the same role (it was never consented to),
        unless they are its last owner."""
        base = holder.name
        if holder.kind == "team":
            base = f"{personal_name(holder.created_by)}-{holder.name}"
        holder.name = self._free_name(s, base)  # never ``holder.name``: it is reserved
        member = next((m for m in holder.members if m.username == rightful), None)
        others_own = any(m.role == "owner" and m.username != rightful for m in holder.members)
        if holder.kind == "team" and member is not None and others_own:
            holder.members.remove(member)
            if all(i.username != rightful for i in holder.invitations):
                holder.invitations.append(
                    ProjectInvitation(
                        username=rightful, role=member.role, invited_by=holder.created_by
                    )
                )
        s.flush()

    @staticmethod
    def _keep_an_owner(project: Project) -> None:
        if not any(m.role == "owner" for m in project.members):
            raise InvalidInput(
                _t("a project needs at least one owner"), _t("Make someone else an owner first.")
            )


def _yields(holder: Project, username: str) -> bool:
    """Whether ``holder`` must give its name up to ``username``'s personal project."""
    if holder.kind == "team":  # a squatter; not the hub's group, not the user's own
        return holder.created_by not in (HUB, username)
    # another user's personal project under a name that escaped to this one ("a b" -> "a-b"):
    # the user whose name it is exactly wins
    return (
        holder.created_by != username
        and username == holder.name
        and holder.created_by != holder.name
    )


def check_page_limit(limit: int, most: int = PAGE_MAX) -> None:
    """A listing's ``limit`` is 1 to ``most``; anything else is the caller's mistake."""
    if not 1 <= limit <= most:
        raise InvalidInput(
            _t("limit must be between 1 and {MAX_PAGE}", MAX_PAGE=most),
            _t("got {limit}", limit=limit),
        )
