"""Copying folders between users' spaces without trusting them: every step below a user's
home goes through directory file descriptors opened with ``O_NOFOLLOW``, so a symbolic link a
student (or a teacher) planted, or swapped in while a copy runs, is never followed out of the
space; links and special files in a source are skipped and reported, never copied.

The cube-admin service runs these as the hub's user (root with per-user OS accounts): what it
writes into a space is handed to that space's owner (the home's uid and gid).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InvalidInput
from ..locale.messages import _t

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
SKIPPED_DIRS = {".ipynb_checkpoints", "__pycache__", ".git"}
MAX_FILES = 5000
MAX_BYTES = 512 * 1024 * 1024
CHUNK = 1024 * 1024


class UnsafePath(InvalidInput):
    """A path that leaves its space, passes through a link, or is not a folder."""


@dataclass
class SourceFile:
    path: str  # relative, "/"-separated
    size: int
    mtime: float
    sha256: str
    data: bytes

    @classmethod
    def of(cls, path: str, data: bytes, mtime: float) -> SourceFile:
        """A file of ``data``, with its size and SHA-256."""
        return cls(path, len(data), mtime, hashlib.sha256(data).hexdigest(), data)


@dataclass
class Tree:
    files: list[SourceFile] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # links, sockets, devices: not copied


def check_relative(value: object, what: str) -> list[str]:
    """``value`` as path parts that stay inside their root: no absolute path, no ``..``."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(_t("{what} must be a folder path", what=what))
    text = value.strip().replace("\\", "/")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if text.startswith("/") or any(p == ".." for p in parts) or "\x00" in text:
        raise UnsafePath(
            _t("{what} {value!r} leaves the space", what=what, value=value),
            _t("Give a folder relative to the home folder, without '..'."),
        )
    return parts


@contextlib.contextmanager
def opened(fd: int) -> Iterator[int]:
    try:
        yield fd
    finally:
        os.close(fd)


def open_dir(root: Path, parts: list[str], *, create: bool = False) -> int:
    """A descriptor of ``root/parts...``; each part is opened without following links and
    made (when ``create``) as the root's owner. FileNotFoundError when a part is missing."""
    fd = os.open(root, DIR_FLAGS)
    owner = os.fstat(fd)
    try:
        for part in parts:
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
                    _give(part, fd, owner)
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafePath(
                        _t(
                            "{part} in {root} is a link or a file, not a folder",
                            part=part,
                            root=str(root),
                        ),
                        _t("Remove or rename it, then try again."),
                    ) from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _give(name: str, dir_fd: int, owner: os.stat_result) -> None:
    if os.geteuid() == 0:
        os.chown(name, owner.st_uid, owner.st_gid, dir_fd=dir_fd, follow_symlinks=False)


def read_tree(dir_fd: int, *, max_files: int = MAX_FILES, max_bytes: int = MAX_BYTES) -> Tree:
    """Every regular file below ``dir_fd`` with its hash; links and special files skipped."""
    tree = Tree()
    total = 0

    def walk(fd: int, prefix: str) -> None:
        nonlocal total
        for entry in sorted(os.scandir(fd), key=lambda e: e.name):
            rel = f"{prefix}{entry.name}"
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                if entry.name in SKIPPED_DIRS:
                    continue
                try:
                    child = os.open(entry.name, DIR_FLAGS, dir_fd=fd)
                except OSError:  # swapped for a link meanwhile
                    tree.skipped.append(rel + "/")
                    continue
                with opened(child):
                    walk(child, rel + "/")
            elif stat.S_ISREG(info.st_mode):
                try:
                    file_fd = os.open(entry.name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=fd)
                except OSError:
                    tree.skipped.append(rel)
                    continue
                with open(file_fd, "rb") as f:
                    real = os.fstat(f.fileno())
                    if not stat.S_ISREG(real.st_mode):
                        tree.skipped.append(rel)
                        continue
                    total += real.st_size
                    if len(tree.files) >= max_files or total > max_bytes:
                        raise InvalidInput(
                            _t(
                                "the folder holds more than {files} files or {mib} MiB",
                                files=max_files,
                                mib=max_bytes // (1024 * 1024),
                            ),
                            _t("Move data sets out of it (register them instead) and retry."),
                        )
                    data = f.read()
                tree.files.append(SourceFile.of(rel, data, real.st_mtime))
            else:
                tree.skipped.append(rel)

    walk(dir_fd, "")
    return tree


@dataclass
class CopyResult:
    copied: list[str] = field(default_factory=list)  # new files
    updated: list[str] = field(default_factory=list)  # replaced (read-only hand-outs only)
    kept: list[str] = field(default_factory=list)  # there already: left as they are


def write_tree(
    root: Path,
    parts: list[str],
    files: list[SourceFile],
    *,
    overwrite: bool,
    read_only: bool = False,
    keep_mtime: bool = False,
) -> CopyResult:
    """Write ``files`` under ``root/parts``. Without ``overwrite`` a file already there is kept
    (a student's edits survive a second hand-out); with it a file whose content differs is
    replaced atomically (a link in its place is replaced, never followed). ``read_only``:
    files 0444, and owned by the service (root), not by the space's owner."""
    result = CopyResult()
    base = open_dir(root, parts, create=True)
    with opened(base):
        owner = os.fstat(base)
        if read_only and os.geteuid() == 0:
            os.fchown(base, 0, 0)  # nobody but the service adds or removes files there
        for item in files:
            *folders, name = item.path.split("/")
            fd = open_dir_at(base, folders, owner, read_only)
            with opened(fd):
                try:
                    there = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    there = None
                same = there is not None and (
                    not overwrite or (stat.S_ISREG(there.st_mode) and _same(fd, name, item.sha256))
                )
                if same:
                    result.kept.append(item.path)
                    continue
                temp = f".cube-{secrets.token_hex(6)}.tmp"
                out = os.open(
                    temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=fd
                )
                try:
                    with open(out, "wb") as f:
                        f.write(item.data)
                        if keep_mtime:
                            os.utime(f.fileno(), (item.mtime, item.mtime))
                        if os.geteuid() == 0 and not read_only:
                            os.fchown(f.fileno(), owner.st_uid, owner.st_gid)
                        os.fchmod(f.fileno(), 0o444 if read_only else 0o644)
                    os.replace(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.unlink(temp, dir_fd=fd)
                    raise
                (result.updated if there is not None else result.copied).append(item.path)
    return result


def open_dir_at(base: int, folders: list[str], owner: os.stat_result, read_only: bool) -> int:
    fd = os.dup(base)
    try:
        for part in folders:
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
                    if not read_only:
                        _give(part, fd, owner)
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafePath(
                        _t("{part} is a link or a file, not a folder", part=part),
                        _t("Remove or rename it, then try again."),
                    ) from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _same(fd: int, name: str, sha256: str) -> bool:
    try:
        file_fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=fd)
    except OSError:
        return False
    digest = hashlib.sha256()
    with open(file_fd, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest() == sha256


def replace_tree(root: Path, parts: list[str], files: list[SourceFile]) -> None:
    """``root/parts`` becomes exactly ``files`` (a snapshot): written beside it, then swapped in,
    the old one removed; a reader never sees half of one."""
    *above, name = parts
    parent = open_dir(root, above, create=True)
    with opened(parent):
        temp = f".{name}.{secrets.token_hex(4)}.new"
        write_tree(root, [*above, temp], files, overwrite=True, keep_mtime=True)
        old = None
        try:
            os.stat(name, dir_fd=parent, follow_symlinks=False)
            old = f".{name}.{secrets.token_hex(4)}.old"
            os.rename(name, old, src_dir_fd=parent, dst_dir_fd=parent)
        except FileNotFoundError:
            pass
        os.rename(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
        if old is not None:
            remove_at(parent, old)


def remove_at(parent: int, name: str) -> None:
    """Remove ``name`` below the folder ``parent`` (a link itself, never what it points to)."""
    info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=parent)
        return
    fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    with opened(fd):
        for entry in list(os.scandir(fd)):
            remove_at(fd, entry.name)
    os.rmdir(name, dir_fd=parent)
