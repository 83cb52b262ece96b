"""Per-user OS accounts on the local hub shape: who a user's server and jobs run as.

Under the hub, user code is untrusted. On one machine the boundary between users is the
kernel's: each hub user's lab server and every job it starts (pipeline nodes, training
processes, tuning trials) run as that user's own system account, and project groups are
OS groups the members' accounts belong to. The cube-lab service and the hub run as root
and keep the store root-only.

Names: a hub user name is any text (张三, ``Alice``, ``j.smith``); the account is
:data:`USER_PREFIX` and the name's slug (``cube_lab.names``: plain names stay readable,
other names are escaped, names too long are shortened with a hash), so distinct hub names
get distinct accounts, always valid for ``useradd`` (``[a-z][a-z0-9-]*``, at most 32).
Project groups get :data:`GROUP_PREFIX` the same way. The prefixes keep cube-lab's
accounts apart from the machine's own (``root``, ``daemon``, an ``alice`` that was there).

Job folders (:func:`job_folder`) are ``root:<owner's own group>``, mode ``01770``: the
owner's job can create files in them, other users cannot enter them, and the sticky bit
keeps the owner from replacing what root made there (the log root appends to, the values
file root reads back) by a link to a file of someone else's.

Everything here acts only as root (:func:`enabled`); elsewhere it changes nothing.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import stat
import subprocess
import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .errors import CubeError
from .job_credentials import ENV_JOB_DIR, ENV_TOKEN, JobRef, job_vars
from .locale.messages import _t
from .names import ACCOUNT_MAX, slug

ENV_OS_ACCOUNTS = "CUBE_LAB_OS_ACCOUNTS"  # "0": do not use per-user accounts even as root
USER_PREFIX = "cube-u-"
GROUP_PREFIX = "cube-g-"
NO_HOME = "/nonexistent"
JOB_MODE = 0o1770  # root:<owner group>: the owner's job writes, nobody else enters
PASS_MODE = 0o711  # folders on the way to a job folder: pass through, not list
_lock = threading.Lock()  # useradd/groupadd/usermod: one at a time in this process


class AccountError(CubeError):
    status = 500


def enabled() -> bool:
    """Whether users' servers and jobs run as their own accounts: when this process is root
    (the hub, the cube-lab service) and ``$CUBE_LAB_OS_ACCOUNTS`` is not ``0``."""
    return os.geteuid() == 0 and os.environ.get(ENV_OS_ACCOUNTS, "1") != "0"


def user_account(name: str, prefix: str = USER_PREFIX) -> str:
    """The OS account of hub user ``name`` (distinct for distinct names, <= 32 chars)."""
    return prefix + slug(name, ACCOUNT_MAX - len(prefix))


def group_account(name: str, prefix: str = GROUP_PREFIX) -> str:
    """The OS group of project group ``name``."""
    return prefix + slug(name, ACCOUNT_MAX - len(prefix))


@dataclass(frozen=True)
class RunAs:
    """An account to start a process as."""

    uid: int
    gid: int  # the account's own group
    groups: tuple[int, ...]  # its project groups
    home: str
    name: str
    # the job this account runs, when the service started it for its owner: the job then
    # gets a token of its own to reach the service as the owner (``job_credentials``)
    job: JobRef | None = None

    def for_job(
        self, kind: str, job_id: str, owner: str, folder: str | os.PathLike[str] | None = None
    ) -> RunAs:
        """This account, running job ``kind``/``job_id`` of hub user ``owner``."""
        return replace(self, job=JobRef(kind, job_id, owner, str(folder) if folder else None))

    def popen_kwargs(self) -> dict[str, Any]:
        """For ``subprocess.Popen`` / ``asyncio.create_subprocess_exec``: drop to the
        account in the child (after ``cwd``, which root enters), files private (umask)."""
        return {
            "user": self.uid,
            "group": self.gid,
            "extra_groups": list(self.groups),
            "umask": 0o077,
        }

    def env(self) -> dict[str, str]:
        return {"HOME": self.home, "USER": self.name, "LOGNAME": self.name}


def _run(argv: list[str]) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise AccountError(
            _t(
                "{value} failed ({returncode}): {value2}",
                value=argv[0],
                returncode=proc.returncode,
                value2=proc.stderr.strip() or proc.stdout.strip(),
            ),
            _t(
                "cube-lab creates its users' system accounts as root with "
                "useradd/groupadd; check that they are installed and that /etc/passwd is "
                "writable."
            ),
        )


def ensure_group(name: str) -> int:
    """The gid of project group ``name``'s OS group, created when missing (as root)."""
    account = group_account(name)
    with contextlib.suppress(KeyError):
        return grp.getgrnam(account).gr_gid
    if os.geteuid() != 0:
        raise AccountError(
            _t("no OS group {account} for project group {name!r}", account=account, name=name)
        )
    with _lock:
        with contextlib.suppress(KeyError):
            return grp.getgrnam(account).gr_gid
        _run(["groupadd", "--system", account])
    return grp.getgrnam(account).gr_gid


def ensure_user(name: str, home: str | os.PathLike[str] | None = None) -> pwd.struct_passwd:
    """The account of hub user ``name``, created when missing (as root) with its own group
    and ``home`` (no home is made: the hub's users folder holds it). An account that exists
    with another home gets ``home`` when one is given."""
    account = user_account(name)
    home_s = str(home) if home else None
    with _lock:
        try:
            entry = pwd.getpwnam(account)
        except KeyError:
            if os.geteuid() != 0:
                raise AccountError(
                    _t("no OS account {account} for user {name!r}", account=account, name=name),
                    _t("The hub (as root) creates it when the user's server first starts."),
                ) from None
            _run(
                [
                    "useradd",
                    "--system",
                    "--user-group",
                    "--no-create-home",
                    "--home-dir",
                    home_s or NO_HOME,
                    "--shell",
                    "/bin/bash",
                    "--comment",
                    f"cube-lab user {name}"[:200].replace(":", " ").replace("\n", " "),
                    account,
                ]
            )
            entry = pwd.getpwnam(account)
        if home_s and entry.pw_dir != home_s and os.geteuid() == 0:
            _run(["usermod", "--home", home_s, account])
            entry = pwd.getpwnam(account)
    return entry


def set_groups(name: str, groups: Iterable[str]) -> tuple[int, ...]:
    """Make hub user ``name``'s account a member of exactly the OS groups of ``groups``
    (among cube-lab's project groups; other supplementary groups are kept). Returns gids."""
    account = user_account(name)
    wanted = {group_account(g): ensure_group(g) for g in groups}
    current = {g.gr_name for g in grp.getgrall() if account in g.gr_mem}
    with _lock:
        for group in sorted(set(wanted) - current):
            _run(["gpasswd", "--add", account, group])
        for group in sorted(current - set(wanted)):
            if group.startswith(GROUP_PREFIX):
                _run(["gpasswd", "--delete", account, group])
    return tuple(sorted(wanted.values()))


def run_as(
    name: str,
    groups: Iterable[str] = (),
    home: str | os.PathLike[str] | None = None,
    job: tuple[str, str, Path | str | None] | None = None,
) -> RunAs:
    """The account to run hub user ``name``'s processes as (made when missing), in the OS
    groups of its project ``groups``; ``job`` (kind, id, folder): the job it runs for them."""
    entry = ensure_user(name, home)
    gids = tuple(sorted(ensure_group(g) for g in groups))
    who = RunAs(entry.pw_uid, entry.pw_gid, gids, entry.pw_dir, entry.pw_name)
    return who if job is None else who.for_job(job[0], job[1], name, job[2])


def remove_user(name: str) -> None:
    """Delete hub user ``name``'s account (and its own group), if there is one."""
    account = user_account(name)
    with contextlib.suppress(KeyError):
        pwd.getpwnam(account)
        _run(["userdel", account])
    with contextlib.suppress(KeyError):
        grp.getgrnam(account)
        _run(["groupdel", account])


def remove_group(name: str) -> None:
    with contextlib.suppress(KeyError):
        grp.getgrnam(group_account(name))
        _run(["groupdel", group_account(name)])


def closed_folders(path: str | os.PathLike[str]) -> list[Path]:
    """The folders on the way to ``path`` (links resolved) that other accounts cannot pass
    (no ``o+x``), top first: a user's server or job could not reach ``path``."""
    real = Path(os.path.realpath(path))
    closed = []
    for folder in reversed(real.parents):
        with contextlib.suppress(OSError):
            if not folder.stat().st_mode & stat.S_IXOTH:
                closed.append(folder)
    return closed


def runnable_by(path: str | os.PathLike[str], who: RunAs) -> bool:
    """Whether ``who`` can run the program at ``path``: every folder on the way to it (links
    resolved) passable, the file executable, for that uid and its groups."""
    real = Path(os.path.realpath(path))
    gids = {who.gid, *who.groups}

    def allowed(p: Path, bit: int) -> bool:
        try:
            st = p.stat()
        except OSError:
            return False
        if st.st_uid == who.uid:
            return bool(st.st_mode & (bit << 6))
        if st.st_gid in gids:
            return bool(st.st_mode & (bit << 3))
        return bool(st.st_mode & bit)

    return all(allowed(p, 1) for p in real.parents) and allowed(real, 1)


def not_runnable(program: str, who: RunAs) -> AccountError:
    return AccountError(
        _t("the account {name} cannot run {program}", name=who.name, program=program),
        _t(
            (
                "{value} (or a folder above it) is not open to other accounts. Install Python"
                " and cube-lab where every account can run them (e.g. a virtual environment "
                "under /opt), or set CUBE_LAB_OS_ACCOUNTS=0 to run every server and job as "
                "the hub's own user (no isolation between users)."
            ),
            value=os.path.realpath(program),
        ),
    )


# -- the environment and folders of a job ---------------------------------------------------


def job_env(env: dict[str, str], who: RunAs) -> dict[str, str]:
    """``env`` for a job run as ``who``: the store's keys and the service's own hub
    credentials (``JUPYTERHUB_*``, ``JPY_*``, the hub settings file) taken out, the
    account's HOME, USER and LOGNAME in. A job the cube-lab service started for its owner
    (``who.job``, where the service configured an issuer) gets the service's URL and a token
    of its own (``job_credentials``): cube-lab inside the job then reaches the store through
    the service, as the owner, while the job runs. Any other job gets a note that tells
    cube-lab inside it why it has no store (``config.ENV_NO_STORE``: the SDK and CLI then
    fail with that sentence)."""
    from .config import ENV_DATA_DIR, ENV_DB_URL, ENV_NO_STORE, ENV_USER

    out = {
        k: v
        for k, v in env.items()
        if k not in (ENV_DATA_DIR, ENV_DB_URL, "CUBE_HUB_SETTINGS", ENV_TOKEN, ENV_JOB_DIR)
        and not k.startswith(("JUPYTERHUB_", "JPY_"))
    }
    out.update(who.env())
    reach = job_vars(who.job) if who.job is not None else None
    if reach is not None:
        out.pop(ENV_NO_STORE, None)
        out.pop(ENV_USER, None)  # who the job acts as is its token's owner, nothing else
        out.update(reach)
        return out
    out[ENV_NO_STORE] = (
        "this job runs as its owner's own account, without the cube-lab store: "
        "the store belongs to the hub's cube-lab service"
    )
    return out


def pass_through(path: Path, top: Path) -> None:
    """Let every account pass through (not list) the folders from ``top`` down to ``path``'s
    parent, so a job reaches its own folder (their names are ids nobody lists)."""
    path, top = Path(path), Path(top)
    chain = [top, *reversed(path.parents)]
    for folder in dict.fromkeys(p for p in chain if p == top or top in p.parents):
        if folder == path:
            continue
        st = folder.stat()
        # root's own folders only: a job folder (root:<owner group>) keeps its mode
        if st.st_uid == 0 and st.st_gid == 0 and st.st_mode & 0o7777 != PASS_MODE:
            os.chmod(folder, PASS_MODE)


def job_folder(path: Path, who: RunAs, top: Path, files: Iterable[str] = ()) -> Path:
    """Make ``path`` the job folder of ``who``: ``root:<their group>`` ``01770``, reachable
    from ``top``; ``files`` (names inside) are made empty, root's, ``0660`` (the job writes
    them, cannot replace them: the sticky bit). Folders the job made itself stay its own."""
    secure_store(top)
    path.mkdir(parents=True, exist_ok=True)
    pass_through(path, top)
    os.chown(path, 0, who.gid, follow_symlinks=False)
    os.chmod(path, JOB_MODE, follow_symlinks=False)
    for name in files:
        fd = os.open(path / name, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o660)
        try:
            os.fchown(fd, 0, who.gid)
            os.fchmod(fd, 0o660)
        finally:
            os.close(fd)
    return path


def make_dirs(path: Path, who: RunAs) -> None:
    """``mkdir -p path`` as ``who`` (a folder the job writes, wherever it is: made by the
    account itself, root never follows a link of the user's to make it)."""
    if path.is_dir():
        return
    proc = subprocess.run(
        ["mkdir", "-p", "--", str(path)],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        cwd="/",
        **who.popen_kwargs(),
    )
    if proc.returncode != 0:
        raise CubeError(
            _t(
                "cannot make the folder {path} as {name}: {value}",
                path=path,
                name=who.name,
                value=proc.stderr.strip(),
            ),
            _t("The job runs as your own account: give an output folder you can write."),
        )


def share_file(path: Path, who: RunAs) -> None:
    """A file (or fifo) root made in a job folder that ``who``'s job must write: still
    root's (so not the job's to replace), writable by the owner's group."""
    os.chown(path, 0, who.gid, follow_symlinks=False)
    os.chmod(path, 0o660, follow_symlinks=False)


def secure_store(top: Path) -> None:
    """The store's folder ``top`` passable (``0711``, for the job folders under it) and
    nothing in it readable by other accounts: files ``0600``, folders ``0700`` (a folder
    jobs live under is ``0711``: :func:`pass_through`). Run before every job folder is made,
    so a folder the store grew since is closed too; and this process's umask becomes
    ``077``, so what it makes from now on is private unless made shared on purpose."""
    os.umask(0o077)
    root = Path(top)
    root.mkdir(parents=True, exist_ok=True)
    if root.stat().st_uid != 0:
        return
    if root.stat().st_mode & 0o7777 != PASS_MODE:
        os.chmod(root, PASS_MODE)
    with os.scandir(root) as entries:
        for entry in entries:
            st = entry.stat(follow_symlinks=False)
            if st.st_uid != 0 or entry.is_symlink() or not st.st_mode & 0o077:
                continue
            if entry.is_dir(follow_symlinks=False):
                if st.st_mode & 0o7777 != PASS_MODE:
                    os.chmod(entry.path, 0o700)
            else:
                os.chmod(entry.path, 0o600)  # the database and its -wal/-shm among them
