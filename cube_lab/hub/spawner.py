"""The spawners: profile choice and quota admission shared by both shapes, and the local one.

Admission happens in ``run_pre_spawn_hook``, before the server process or pod exists: the
chosen profile's demand is reserved in the ledger (atomically, see ``ledger``) against the
project group's quota, or the spawn fails with the sentence the user reads. The reservation
is released in ``run_post_stop_hook``, which JupyterHub runs whenever a server stops or a
spawn fails; the cube-admin service reconciles what a crashed hub could not release.
"""

from __future__ import annotations

import asyncio
import functools
import html
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from jupyterhub.spawner import SimpleLocalProcessSpawner
from tornado import web
from traitlets import default

from .. import accounts
from ..config import ENV_SERVICE_URL
from ..errors import CubeError, Forbidden
from ..locale import negotiate, translator_for
from ..locale.messages import _t, localize
from ..names import folder_name, legacy_folder_is_own, legacy_folder_name
from . import policy
from .client import ENV_ADMIN_URL
from .config import service_base
from .ledger import Ledger, server_holder
from .quotas import GroupPolicy
from .settings import ENV_SETTINGS, HubSettings, Profile, load

ENV_PROFILE = "CUBE_LAB_PROFILE"
ENV_PROJECT = "CUBE_LAB_PROJECT"


@functools.cache
def _settings(path: str) -> HubSettings:
    return load(path or None)


@functools.cache
def _ledger(path: str) -> Ledger:
    return Ledger(path)


OWNERS = ".owners"  # <users_dir>/.owners/<folder>: whose home each folder is


def safe_dirname(name: str) -> str:
    """The folder of a hub user (``users/<this>``) or project group (``projects/<this>``):
    ``cube_lab.names.folder_name``, distinct for distinct names (张三 and 李四 no longer
    share ``__``); plain names (``alice``, ``student1``, ``ml-course``) are themselves."""
    return folder_name(name)


def settle_home(users_dir: Path, username: str) -> Path:
    """The user's home, made (or moved over from the old naming) and recorded as theirs.

    The home is ``users/<folder_name>``; ``users/.owners/<folder>`` holds the user name it
    was made for, and a home recorded for someone else is never handed out. A home from
    before this naming is moved over only when its old folder was named exactly after the
    user (``Alice``, ``j.smith``): an old folder that several names shared (``__`` for 张三 and
    李四) stays where it is, for an admin to sort out."""
    home = users_dir / folder_name(username)
    owners = users_dir / OWNERS
    record = owners / home.name
    owner = record.read_text(encoding="utf-8") if record.is_file() else None
    if owner is not None and owner != username:
        raise Forbidden(
            _t("the home folder {name} is recorded for another user", name=home.name),
            _t("An admin should check {record} and the folder it names.", record=record),
        )
    if owner is None and home.exists() and home.name != username:
        # an old folder another user had under this very name: not this user's to take
        raise Forbidden(
            _t(
                (
                    "the home folder {name} holds another account's files from before user "
                    "names were escaped"
                ),
                name=home.name,
            ),
            _t(
                "An admin should move {home} (its owner's home is now recorded in {owners}).",
                home=home,
                owners=owners,
            ),
        )
    if not home.exists():
        legacy = users_dir / legacy_folder_name(username)
        if (
            legacy_folder_is_own(username)
            and legacy != home
            and legacy.is_dir()
            and not legacy.is_symlink()
            and not (owners / legacy.name).exists()
        ):
            legacy.rename(home)
    home.mkdir(parents=True, exist_ok=True)
    if owner is None:
        owners.mkdir(parents=True, exist_ok=True)
        record.write_text(username, encoding="utf-8")
    return home


def settle_project_folder(projects_dir: Path, group: str) -> Path:
    """A project group's shared folder ``projects/<folder_name>``, made, or moved over from
    the old naming when that was named exactly after the group (``ML_Course``)."""
    target = projects_dir / folder_name(group)
    if not target.exists():
        legacy = projects_dir / legacy_folder_name(group)
        if (
            legacy_folder_is_own(group)
            and legacy != target
            and legacy.is_dir()
            and not legacy.is_symlink()
        ):
            legacy.rename(target)
    target.mkdir(parents=True, exist_ok=True)
    return target


def refused(exc: CubeError, locale: str = "en") -> web.HTTPError:
    """A spawn refusal whose message the hub shows the user as it is, in ``locale``."""
    err = web.HTTPError(403, str(exc.error))  # the log's line stays English
    if exc.detail:
        message = _t("{error}. {detail}", error=exc.error, detail=exc.detail)
    else:
        message = _t("{error}.", error=exc.error)
    err.jupyterhub_message = localize(message, locale)  # type: ignore[attr-defined]
    return err


def spawn_locale(spawner: Any) -> str:
    """The language of the browser that asked for the spawn (the hub sets ``.handler``)."""
    request = getattr(getattr(spawner, "handler", None), "request", None)
    return negotiate(request.headers.get("Accept-Language") if request else None)


class CubeSpawnerMixin:
    """Profiles, project groups and admission; mixed into a JupyterHub Spawner."""

    @property
    def settings_file(self) -> str:
        """The hub settings file: $CUBE_HUB_SETTINGS (``config.configure`` sets it in the hub's
        process), else hub/cube_hub.yaml."""
        return os.environ.get(ENV_SETTINGS, "")

    # set by run_pre_spawn_hook for the server being started
    cube_profile: Profile | None = None
    cube_group: GroupPolicy | None = None

    @property
    def cube(self) -> HubSettings:
        return _settings(self.settings_file)

    @property
    def ledger(self) -> Ledger:
        return _ledger(str(self.cube.ledger_path))

    @property
    def holder(self) -> str:
        return server_holder(self.user.name, self.name)  # type: ignore[attr-defined]

    def group_policies(self) -> dict[str, GroupPolicy]:
        return policy.policies((g.name, g.properties) for g in self.user.groups)  # type: ignore[attr-defined]

    # -- the form ----------------------------------------------------------------------

    def cube_options_form(self, spawner: Any = None) -> str:
        groups = self.group_policies()
        offer = policy.offered(self.cube, groups)
        if not offer:
            return ""
        # the hub's spawn page sets .handler before it asks for the form: the browser's language
        request = getattr(getattr(self, "handler", None), "request", None)
        _ = translator_for(negotiate(request.headers.get("Accept-Language") if request else None))
        options = "".join(
            f'<option value="{html.escape(p.name)}"{" selected" if p.default else ""}>'
            f"{html.escape(p.display_name)}</option>"
            for p in offer
        )
        form = (
            '<label for="cube-profile" class="form-label">'
            f"{html.escape(_('Resource profile'))}</label>"
            f'<select id="cube-profile" name="profile" class="form-select mb-3">{options}</select>'
        )
        if groups:
            projects = "".join(
                f'<option value="{html.escape(name)}">{html.escape(name)}</option>'
                for name in groups
            )
            form += (
                '<label for="cube-project" class="form-label">'
                f"{html.escape(_('Project (its quota is used)'))}</label>"
                f'<select id="cube-project" name="project" class="form-select">{projects}</select>'
            )
        return form

    def cube_options_from_form(self, formdata: dict[str, list[str]]) -> dict[str, str]:
        return {
            key: formdata[key][0] for key in ("profile", "project") if formdata.get(key, [""])[0]
        }

    # -- admission ---------------------------------------------------------------------

    async def run_pre_spawn_hook(self) -> None:
        await _maybe_await(super().run_pre_spawn_hook())  # type: ignore[misc]
        options = self.user_options or {}  # type: ignore[attr-defined]
        try:
            profile, group = policy.choose(
                self.cube, self.group_policies(), options.get("profile"), options.get("project")
            )
            await asyncio.to_thread(
                self.ledger.reserve,
                holder=self.holder,
                kind="server",
                username=self.user.name,  # type: ignore[attr-defined]
                group=group.name if group else "",
                quota=group.quota if group else self.personal_quota(),
                amounts=profile.demand(),
            )
        except CubeError as exc:
            self.log.info("cube-lab: refused %s: %s", self.holder, exc.error)  # type: ignore[attr-defined]
            raise refused(exc, spawn_locale(self)) from exc
        self.cube_profile, self.cube_group = profile, group
        self.apply_profile(profile, group)

    def personal_quota(self) -> Any:
        """Outside every project group the server is charged to the user's personal bucket:
        the settings' ``admin_quota`` for admins, ``personal_quota`` for everyone else."""
        user = self.user  # type: ignore[attr-defined]
        groups = [g.name for g in user.groups]
        if getattr(user, "admin", False):
            return self.cube.admin_quota
        return self.cube.personal_quota_for(user.name, groups)

    async def run_post_stop_hook(self) -> None:
        try:
            await asyncio.to_thread(self.ledger.release, holder=self.holder)
        finally:
            await _maybe_await(super().run_post_stop_hook())  # type: ignore[misc]

    def apply_profile(self, profile: Profile, group: GroupPolicy | None) -> None:
        """Shape-specific: turn the chosen profile into this spawner's settings."""

    def cube_env(self) -> dict[str, str]:
        env: dict[str, str] = {}
        if self.cube_profile:
            env[ENV_PROFILE] = self.cube_profile.name
        if self.cube_group:
            env[ENV_PROJECT] = self.cube_group.name
        if self.cube.admin_url:
            env[ENV_ADMIN_URL] = self.cube.admin_url.rstrip("/") + "/services/cube-admin/"
        # the store is the cube-lab service's: a user's server gets its address, never the
        # database URL or the data dir, and reaches it with its own (the user's) hub token
        env[ENV_SERVICE_URL] = service_base(self.cube)
        return env


def _make_links(links: Path, targets: dict[str, Path]) -> None:
    """``links/<name>`` -> each target; links of groups the user left are removed."""
    links.mkdir(parents=True, exist_ok=True)
    for name, target in targets.items():
        link = links / name
        if not link.is_symlink():
            link.symlink_to(target, target_is_directory=True)
    for link in links.iterdir():
        if link.is_symlink() and link.name not in targets:
            link.unlink()


def _interpreter(script: str) -> str | None:
    """The program a ``#!`` script runs (``jupyterhub-singleuser``'s Python)."""
    try:
        with open(script, "rb") as f:
            first = f.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    parts = first[2:].decode(errors="replace").split()
    return parts[0] if parts else None


def _chown_tree(top: Path, uid: int, gid: int) -> None:
    """``chown -R`` without following links (files made when servers ran as root)."""
    os.chown(top, uid, gid, follow_symlinks=False)
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            os.chown(os.path.join(folder, name), uid, gid, follow_symlinks=False)


async def _maybe_await(value: Any) -> Any:
    if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
        return await value
    return value


class CubeLocalSpawner(CubeSpawnerMixin, SimpleLocalProcessSpawner):
    """One local ``jupyterhub-singleuser`` process (JupyterLab + cube-lab) per user, each
    rooted in ``<data_dir>/users/<folder>`` with a ``projects/<folder>`` link to every shared
    project folder of the user's groups (the folder names are ``safe_dirname``: the name
    itself when plain, else escaped).

    When the hub runs as root (``accounts.enabled()``), each user's server runs as that
    user's own system account (``accounts.user_account``, made on first start): the home is
    the account's, ``0700``; a project folder is ``root:<project OS group>`` ``2770`` and the
    group's members are in that OS group; the store (``<data_dir>/cube-lab``) and the hub's
    files (``<data_dir>/hub``) stay root's. Not as root, every server runs as the hub's OS
    user and code a user runs can read other users' folders: for untrusted users run the
    hub as root, or the cluster shape (see docs/security.md)."""

    run_as: accounts.RunAs | None = None  # the account of the server being started
    project_links: dict[str, Path] | None = None  # made as that account when it starts

    @default("cmd")
    def _default_cmd(self) -> list[str]:
        return [str(Path(sys.executable).with_name("jupyterhub-singleuser"))]

    @default("default_url")
    def _default_url(self) -> str:
        return "/lab"

    @default("options_form")
    def _default_options_form(self) -> Any:
        return self.cube_options_form

    def options_from_form(self, formdata: dict[str, list[str]]) -> dict[str, str]:
        return self.cube_options_from_form(formdata)

    @default("home_dir")
    def _default_home_dir(self) -> str:
        return str(self.cube.users_dir / safe_dirname(self.user.name))

    @default("notebook_dir")
    def _default_notebook_dir(self) -> str:
        return self.home_dir

    def apply_profile(self, profile: Profile, group: GroupPolicy | None) -> None:
        # Local processes are not limited; the limits are exported (MEM_LIMIT, CPU_LIMIT) for
        # resource displays, and counted against the project's quota.
        self.mem_limit = profile.memory
        self.cpu_limit = profile.cpu
        try:
            if Path(self.home_dir).parent == self.cube.users_dir:  # not a configured one
                settle_home(self.cube.users_dir, self.user.name)
            if accounts.enabled():
                self.settle_account()
        except CubeError as exc:
            self.log.warning("cube-lab: refused %s: %s", self.holder, exc.error)
            raise refused(exc, spawn_locale(self)) from exc
        self.link_projects()

    def settle_account(self) -> None:
        """As root: the user's account and project OS groups made, the home the account's
        (``0700``), the shared folders passable but not listable, the store and the hub's
        files root's alone."""
        data = self.cube.data_dir
        data.mkdir(parents=True, exist_ok=True)
        for folder in (self.cube.users_dir, self.cube.projects_dir):
            folder.mkdir(parents=True, exist_ok=True)
        for folder, mode in (
            (data, accounts.PASS_MODE),
            (self.cube.users_dir, accounts.PASS_MODE),
            (self.cube.projects_dir, accounts.PASS_MODE),
            (self.cube.users_dir / OWNERS, 0o700),
            (self.cube.hub_dir, 0o700),
        ):
            if folder.is_dir() and not folder.is_symlink():
                os.chmod(folder, mode)
        accounts.secure_store(self.cube.cube_data_dir)
        home = Path(self.home_dir)
        home.mkdir(parents=True, exist_ok=True)
        entry = accounts.ensure_user(self.user.name, home)
        gids = accounts.set_groups(self.user.name, self.group_policies())
        if home.stat().st_uid != entry.pw_uid:  # first start as the account: hand it over
            _chown_tree(home, entry.pw_uid, entry.pw_gid)
        os.chmod(home, 0o700)
        who = accounts.RunAs(entry.pw_uid, entry.pw_gid, gids, str(home), entry.pw_name)
        script = (shutil.which(self.cmd[0]) or self.cmd[0]) if self.cmd else sys.executable
        for program in dict.fromkeys(p for p in (script, _interpreter(script)) if p):
            if not accounts.runnable_by(program, who):  # else the spawn fails after 30 s
                raise accounts.not_runnable(program, who)
        self.run_as = who

    def link_projects(self) -> None:
        """``<home>/projects/<group>`` -> ``<data_dir>/projects/<group>`` for the user's groups;
        links of groups the user left are removed."""
        wanted = {safe_dirname(name): name for name in self.group_policies()}
        targets = {}
        for name, group in wanted.items():
            target = settle_project_folder(self.cube.projects_dir, group)
            if self.run_as is not None:  # shared by the project's OS group, nobody else
                os.chown(target, 0, accounts.ensure_group(group), follow_symlinks=False)
                os.chmod(target, 0o2770, follow_symlinks=False)
            targets[name] = target
        if self.run_as is not None:
            # the home is the user's: its links are made by the account itself as the server
            # starts (``make_preexec_fn``), never by root in a folder the user controls
            self.project_links = targets
            return
        _make_links(Path(self.home_dir) / "projects", targets)

    def get_args(self) -> list[str]:
        args = super().get_args()
        if os.geteuid() == 0 and not accounts.enabled():
            args.append("--allow-root")  # the servers run as the hub's user, root in CI
        return args

    def make_preexec_fn(self, name: str) -> Any:
        """As root: enter the home, then become the user's account (its own and its project
        groups), files private by default. Otherwise the plain local spawner's."""
        if not accounts.enabled():
            return super().make_preexec_fn(name)
        who = self.run_as or accounts.run_as(self.user.name, self.group_policies())
        self.run_as = who
        home = self.home_dir
        links = dict(self.project_links or {})

        def preexec() -> None:
            os.chdir(home)
            os.setgroups(list(who.groups))
            os.setgid(who.gid)
            os.setuid(who.uid)
            os.umask(0o077)
            try:
                _make_links(Path(home) / "projects", links)
            except OSError as exc:  # a server without its links still starts
                print(f"cube-lab: cannot link project folders: {exc}", file=sys.stderr)

        return preexec

    def user_env(self, env: dict[str, str]) -> dict[str, str]:
        env = super().user_env(env)
        if accounts.enabled():
            account = accounts.user_account(self.user.name)
            env.update({"USER": account, "LOGNAME": account, "HOME": self.home_dir})
        return env

    def get_env(self) -> dict[str, str]:
        env = super().get_env()
        env.update(self.cube_env())
        env.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
        if self.cube_profile is not None and not self.cube_profile.count:
            # a CPU-only profile sees no GPU, as the cluster shape's pods request none
            env["CUDA_VISIBLE_DEVICES"] = ""
            env["NVIDIA_VISIBLE_DEVICES"] = "void"
        return env
