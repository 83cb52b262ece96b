"""One containment rule for every path and every tree a user hands to cube-lab.

**Paths.** :func:`resolve` turns a user-given path (a REST body field, a template or node
parameter after its ``{{ ... }}`` references resolved, a node's declared output, a path to
register) into the real, absolute path it names inside ``root``, or raises
:class:`PathRefused` (an ``InvalidInput``: HTTP 400, a CLI error) saying what is wrong and
how to fix it. Refused are:

- anything that is not a non-empty string;
- a NUL byte, text the file system cannot hold (lone surrogates), or a name longer than
  the file system allows;
- an absolute path, unless the caller accepts absolute paths: then it must lie inside
  ``root`` (``absolute="inside"``), or a leading ``/`` means the root itself, the way the
  file browser writes paths (``absolute="anchor"``);
- ``..`` or a symbolic link anywhere along the way that leads outside ``root``: the check
  is made on the fully resolved path (``os.path.realpath``), so ``a/../../x`` and
  ``link -> /etc`` are the same case;
- the root itself, where the caller needs something *under* it (``allow_root=False``:
  registering ``"/"`` as a model must not copy the whole server root).

**Trees.** :func:`walk` yields the regular files under a folder, :func:`copy_tree` copies a
file or folder, :func:`open_inside` opens one file. They share one rule for symbolic links:

    A link is followed only when what it points to, fully resolved, lies inside the tree
    being read (``boundary``: the folder itself unless the caller names a wider one). A
    link leading outside the tree, and a dangling link, is **skipped**: left out, never
    read, not an error.

Skipped rather than refused because folders people hand in often hold harmless links that
lead elsewhere (a virtualenv's ``bin/python``, an editor's lock file) and a model or a
dataset should not fail for them; what such a link points to is never read or copied. A
link to a folder inside the tree is descended unless it leads back to a folder already on
the way down (no loops). Sockets, FIFOs and devices are skipped too. A copy holds no links:
only plain folders and files.

Every file is opened through :func:`open_inside`, which checks *after* opening (the open
descriptor's real path) that the file lies inside the boundary, so a file swapped for a link
between the walk and the read is refused as well.

Every place that reads or copies a user-given tree goes through here: the model registry's
staging copy (and so REST, ``register()``, training and tuning ``register``), datasets,
downloads as zip, a pipeline node's saved outputs and its results.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, Literal

from .errors import InvalidInput
from .locale.messages import _t

Absolute = Literal["refuse", "inside", "anchor"]
MAX_NAME_BYTES = 255  # one component (NAME_MAX on Linux, macOS, ext4, xfs)
MAX_PATH_BYTES = 4095  # a whole path (PATH_MAX - 1)
_CHUNK = 1 << 20


class PathRefused(InvalidInput):
    """A user-given path that cube-lab will not use. ``reason`` is one of: ``type``,
    ``empty``, ``nul``, ``encoding``, ``length``, ``absolute``, ``outside``, ``root``."""

    def __init__(self, error: str, detail: str, reason: str) -> None:
        super().__init__(error, detail)
        self.reason = reason


def real(path: str | os.PathLike[str]) -> Path:
    """The absolute path with every symbolic link and ``..`` resolved (need not exist)."""
    return Path(os.path.realpath(path))


def is_inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """Whether ``path``, fully resolved, is ``root`` or lies under it (also resolved)."""
    return real(path).is_relative_to(real(root))


def check_text(raw: object, what: str = "path") -> str:
    """``raw`` as a path string the file system can hold, or PathRefused."""
    if isinstance(raw, os.PathLike):
        raw = os.fspath(raw)
    if raw is None:
        raise PathRefused(
            _t("{what} is required", what=what), _t("Give a path (none was given)."), "empty"
        )
    if not isinstance(raw, str):
        raise PathRefused(
            _t("{what} must be a string", what=what),
            _t("got {name__}; give a path as text", name__=type(raw).__name__),
            "type",
        )
    if not raw.strip():
        raise PathRefused(
            _t("{what} is required", what=what), _t("Give a path (it is empty)."), "empty"
        )
    if "\0" in raw:
        raise PathRefused(
            _t("{what} {raw!r} holds a NUL byte", what=what, raw=raw),
            _t("A file name cannot hold the character U+0000; remove it from the path."),
            "nul",
        )
    try:
        encoded = os.fsencode(raw)
    except UnicodeError:
        raise PathRefused(
            _t("{what} {raw!r} is not valid text", what=what, raw=raw),
            _t("It holds characters no file name can (lone UTF-16 surrogates); retype the path."),
            "encoding",
        ) from None
    if len(encoded) > MAX_PATH_BYTES or any(
        len(part) > MAX_NAME_BYTES for part in encoded.split(b"/")
    ):
        raise PathRefused(
            _t("{what} is too long", what=what),
            _t(
                (
                    "A path may have at most {MAX_PATH_BYTES} bytes and each name in it "
                    "{MAX_NAME_BYTES}; shorten it."
                ),
                MAX_PATH_BYTES=MAX_PATH_BYTES,
                MAX_NAME_BYTES=MAX_NAME_BYTES,
            ),
            "length",
        )
    return raw


def resolve(
    root: str | os.PathLike[str],
    raw: object,
    *,
    base: str | os.PathLike[str] | None = None,
    absolute: Absolute = "inside",
    allow_root: bool = True,
    what: str = "path",
    where: str = "the server root",
) -> Path:
    """The real path ``raw`` names inside ``root``, or PathRefused saying why not.

    A relative ``raw`` starts at ``base`` (default: ``root``). ``absolute`` says what an
    absolute ``raw`` means: refused, accepted when inside ``root``, or anchored at ``root``
    (``/models/x`` is ``<root>/models/x``). ``what`` and ``where`` name the field and the
    root in messages (``"input_path"``, ``"the project"``)."""
    text = check_text(raw, what)
    root_real = real(root)
    given = Path(text.strip() if absolute == "anchor" else text)
    start = real(base) if base is not None else root_real
    if given.is_absolute():
        if absolute == "refuse":
            raise PathRefused(
                _t("{what} {text!r} is an absolute path", what=what, text=text),
                _t("Use a path relative to {value}.", value="the pipeline file" if base else where),
                "absolute",
            )
        if absolute == "anchor":  # the file browser's "/models/x" is <root>/models/x
            given, start = Path(text.strip().lstrip("/") or "."), root_real
    resolved = real(start / given)  # an absolute ``given`` ("inside") replaces ``start``
    if not resolved.is_relative_to(root_real):
        raise PathRefused(
            _t("{what} {text!r} is outside {where}", what=what, text=text, where=where),
            _t(
                (
                    "Give a path under {where} ({root_real}); '..' and symbolic links may not"
                    " lead out of it."
                ),
                where=where,
                root_real=root_real,
            ),
            "outside",
        )
    if resolved == root_real and not allow_root:
        raise PathRefused(
            _t("{what} {text!r} is {where} itself", what=what, text=text, where=where),
            _t("Give a file or folder under {where}, not all of it.", where=where),
            "root",
        )
    return resolved


def resolve_in(
    roots: Sequence[str | os.PathLike[str]],
    raw: object,
    *,
    absolute: Absolute = "inside",
    allow_root: bool = True,
    what: str = "path",
) -> tuple[Path, Path]:
    """``resolve`` in the first of ``roots`` (the caller's root: relative paths start there),
    except that the real path may also lie in one of the others (folders shared with the
    caller, which links in the first lead to: a project group's folder under the hub).
    Returns the path and the root it lies in; refused as ``resolve`` refuses it otherwise."""
    first, *shared = roots
    try:
        return resolve(first, raw, absolute=absolute, allow_root=allow_root, what=what), real(first)
    except PathRefused as refused:
        if refused.reason != "outside" or not shared:
            raise
        text = check_text(raw, what)
        given = text.strip().lstrip("/") if absolute == "anchor" else text
        target = real(real(first) / given)
        for root in shared:
            if target.is_relative_to(real(root)):
                return resolve(root, target, allow_root=allow_root, what=what), real(root)
        raise


# -- trees -----------------------------------------------------------------------------------


def walk(
    top: str | os.PathLike[str],
    boundary: str | os.PathLike[str] | None = None,
    *,
    hidden: bool = True,
    skipped: list[str] | None = None,
) -> Iterator[tuple[str, Path]]:
    """``(relative posix name, path)`` of every regular file under ``top``, by the rule in
    the module docstring; a file ``top`` yields itself (when inside ``boundary``).
    ``hidden=False`` leaves out names starting with ``.``. Sorted like
    ``sorted(top.rglob("*"))`` (by the parts of the relative name). The relative names of
    links left out (leading out of the tree, or dangling) are appended to ``skipped``."""
    top = Path(top)
    bound = real(boundary if boundary is not None else top)
    top_real = real(top)
    if not top_real.is_relative_to(bound):
        return
    if not top_real.is_dir():
        if top_real.is_file():
            yield top.name, top
        return
    found: list[tuple[tuple[str, ...], str, Path]] = []
    stack: list[tuple[Path, tuple[str, ...], frozenset[Path]]] = [(top, (), frozenset({top_real}))]
    while stack:
        folder, parts, ancestors = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # unreadable or gone: nothing to read there
        for entry in entries:
            if not hidden and entry.name.startswith("."):
                continue
            path, rel = Path(entry.path), (*parts, entry.name)
            try:
                if entry.is_symlink():
                    target = real(path)
                    if not target.is_relative_to(bound):
                        if skipped is not None:  # the rule: a link leading out is skipped
                            skipped.append("/".join(rel))
                        continue
                    if target.is_dir():
                        if target not in ancestors:  # a link back up would loop
                            stack.append((path, rel, ancestors | {target}))
                    elif target.is_file():
                        found.append((rel, "/".join(rel), path))
                    elif skipped is not None and not target.exists():
                        skipped.append("/".join(rel))  # dangling
                elif entry.is_dir(follow_symlinks=False):
                    stack.append((path, rel, ancestors | {real(path)}))
                elif entry.is_file(follow_symlinks=False):
                    found.append((rel, "/".join(rel), path))
            except OSError:
                continue
    found.sort(key=lambda item: item[0])
    for _, rel_name, path in found:
        yield rel_name, path


def open_inside(path: str | os.PathLike[str], boundary: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for reading, refused (PathRefused) unless the file opened is a
    regular file lying inside ``boundary``; the check is made on the open descriptor."""
    return _open_inside(path, real(boundary))


def _open_inside(path: str | os.PathLike[str], bound: Path) -> BinaryIO:
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)  # O_NONBLOCK: a FIFO swapped in cannot hang the open
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PathRefused(
                _t("{name} is not a regular file", name=Path(path).name),
                _t("Give a file or folder."),
                "type",
            )
        opened = _fd_path(fd) or real(path)
        if not opened.is_relative_to(bound):
            raise PathRefused(
                _t("{name} leads outside {bound}", name=Path(path).name, bound=bound),
                _t("It is (or became) a symbolic link to a file elsewhere; copy the file in."),
                "outside",
            )
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_inside(path: str | os.PathLike[str], boundary: str | os.PathLike[str]) -> bytes:
    """The bytes of a file, by :func:`open_inside`'s check."""
    with open_inside(path, boundary) as fh:
        return fh.read()


def _fd_path(fd: int) -> Path | None:
    """The real path of an open descriptor, where the OS tells it (Linux /proc)."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return None


def copy_file(
    source: str | os.PathLike[str], target: str | os.PathLike[str], boundary: str | os.PathLike[str]
) -> int:
    """Copy one file's bytes (and its mode and times) by the rule; the bytes copied."""
    return _copy_file(source, target, real(boundary))


def _copy_file(source: str | os.PathLike[str], target: str | os.PathLike[str], bound: Path) -> int:
    with _open_inside(source, bound) as src:
        info = os.fstat(src.fileno())
        # O_NOFOLLOW: a link planted where the copy goes is not written through
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        with os.fdopen(os.open(target, flags, 0o600), "wb") as dst:
            _copy_bytes(src, dst)
            os.chmod(dst.fileno(), stat.S_IMODE(info.st_mode) & 0o777)
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns), follow_symlinks=False)
    return info.st_size


def _copy_bytes(src: BinaryIO, dst: BinaryIO) -> None:
    """In the kernel where it can (``sendfile``: models are gigabytes), else by chunks."""
    offset = 0
    try:
        while sent := os.sendfile(dst.fileno(), src.fileno(), offset, 1 << 30):
            offset += sent
        return
    except OSError as exc:
        if offset or exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise
    except AttributeError:  # no os.sendfile on this platform
        pass
    shutil.copyfileobj(src, dst, _CHUNK)


def copy_tree(
    source: str | os.PathLike[str],
    target: str | os.PathLike[str],
    boundary: str | os.PathLike[str] | None = None,
    *,
    skipped: list[str] | None = None,
) -> int:
    """Copy a file or a folder to ``target`` by the rule: links leading out of ``boundary``
    (default: ``source`` itself) are left out (their names appended to ``skipped``); the
    copy is plain files and folders. Returns how many files were copied."""
    source, target = Path(source), Path(target)
    bound = real(boundary if boundary is not None else source)
    source_real = real(source)
    if not source_real.is_relative_to(bound):
        raise PathRefused(
            _t("{name} leads outside {bound}", name=source.name, bound=bound),
            _t("It is a symbolic link to something elsewhere; give the real file or folder."),
            "outside",
        )
    if not source_real.is_dir():
        copy_file(source, target, bound)
        return 1
    if real(target).is_relative_to(source_real):
        raise PathRefused(
            _t("cannot copy {source} into itself", source=source),
            _t(
                (
                    "The copy would land at {target}, inside what is being copied; give a "
                    "folder that does not hold it."
                ),
                target=target,
            ),
            "root",
        )
    target.mkdir(parents=True, exist_ok=True)
    target_real = real(target)
    made: dict[Path, bool] = {target: True}
    count = 0
    for rel, path in walk(source, bound, skipped=skipped):
        out = target / rel
        if out.parent not in made:
            out.parent.mkdir(parents=True, exist_ok=True)
            made[out.parent] = real(out.parent).is_relative_to(target_real)
        if not made[out.parent]:
            continue  # a folder of the copy was replaced by a link meanwhile
        try:
            copy_file(path, out, bound)
        except (PathRefused, FileNotFoundError):
            continue  # swapped for a link, or removed, since the walk: left out as well
        count += 1
    return count


def link_copy(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """A copy of a file or folder that the store wrote and never changes (a model version's
    artifact, a dataset version): hard links where the file system has them, else copies."""

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:  # another file system, or one without hard links
            shutil.copy2(src, dst)

    if Path(source).is_dir():
        shutil.copytree(source, target, symlinks=True, copy_function=link)
    else:
        link(os.fspath(source), os.fspath(target))


def files_of(
    top: str | os.PathLike[str], boundary: str | os.PathLike[str] | None = None
) -> list[Path]:
    """The paths :func:`walk` yields, for callers that only need the files."""
    return [path for _, path in walk(top, boundary)]


def zip_folder(folder: str | os.PathLike[str], name: str) -> BinaryIO:
    """A zip of ``folder`` (by the rule: links leading out of it are left out) with its
    files under ``name/``; spooled to disk past 32 MiB, rewound, for a download."""
    import tempfile
    import zipfile

    folder = Path(folder)
    spool = tempfile.SpooledTemporaryFile(max_size=32 * _CHUNK)
    with zipfile.ZipFile(spool, "w", zipfile.ZIP_DEFLATED) as archive:
        for rel, file in walk(folder):
            try:
                src = open_inside(file, folder)
            except (PathRefused, FileNotFoundError):
                continue  # swapped for a link, or removed, since the walk
            with src:
                entry = zipfile.ZipInfo.from_file(file, f"{name}/{rel}")
                entry.compress_type = zipfile.ZIP_DEFLATED
                with archive.open(entry, "w", force_zip64=True) as dst:
                    shutil.copyfileobj(src, dst, _CHUNK)
    spool.seek(0)
    return spool  # type: ignore[return-value]
