"""Shared by the CLI modules and the magics: ``k=v`` pairs, ``NAME[:VERSION]``, printing JSON
and tables, the ``--json`` contract (one document on stdout, nothing else) and the ``-o`` rule
(a file, a folder or a .zip, as the name says)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tempfile
import warnings
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

from ..errors import InvalidInput
from ..locale.messages import _t


def parse_pairs(pairs: list[str] | None, what: str, numeric: bool = False) -> dict[str, Any]:
    """``["lr=0.1", "opt=adam"]`` -> ``{"lr": 0.1, "opt": "adam"}`` (numbers and booleans typed)."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise InvalidInput(
                _t("invalid {what} {pair!r}", what=what, pair=pair),
                _t("Write {what}s as KEY=VALUE.", what=what),
            )
        if numeric:
            try:
                out[key] = float(raw)
            except ValueError:
                raise InvalidInput(
                    _t("{what} {key!r} must be a number, got {raw!r}", what=what, key=key, raw=raw)
                ) from None
            continue
        try:
            value = json.loads(raw)
            out[key] = value if isinstance(value, int | float | bool) else raw
        except json.JSONDecodeError:
            out[key] = raw
    return out


def split_ref(text: str) -> tuple[str, str]:
    """``iris:3`` -> ("iris", "3"); ``iris`` -> ("iris", "latest")."""
    name, _, ref = text.partition(":")
    return name, ref or "latest"


# -- --json: exactly one document on stdout ---------------------------------------------------


class _Document:
    """Where a ``--json`` command's document goes while :func:`json_stdout` holds stdout."""

    stream: TextIO | None = None
    printed = 0


def print_json(value: Any) -> None:
    """Print ``value`` as JSON: the command's one document when it runs with ``--json``."""
    from ..serialize import to_jsonable

    text = json.dumps(to_jsonable(value), indent=2)
    if _Document.stream is None:
        print(text)
        return
    if _Document.printed:
        raise RuntimeError("a --json command printed a second JSON document")
    _Document.stream.write(text + "\n")
    _Document.stream.flush()
    _Document.printed += 1


def json_printed() -> bool:
    """Whether the running ``--json`` command has printed its document."""
    return _Document.printed > 0


def _stream_handlers(stream: Any) -> list[logging.StreamHandler[Any]]:
    loggers: list[Any] = [logging.getLogger()]
    loggers += [
        lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)
    ]
    return [
        h
        for lg in loggers
        for h in lg.handlers
        if isinstance(h, logging.StreamHandler) and h.stream in (stream, sys.__stdout__)
    ]


@contextmanager
def json_stdout(enabled: bool = True) -> Iterator[None]:
    """While a ``--json`` command runs, stdout carries its document and nothing else.

    Everything else that would reach stdout goes to stderr: ``print`` and ``sys.stdout``
    writes (``sys.stdout`` is stderr meanwhile), logging handlers bound to stdout (NNI's
    tuners log "Using random seed ..." through one, created when NNI is imported, which is
    then, too), and when stdout is the process's own, whatever writes to file descriptor 1
    (C libraries, child processes that inherit it). :func:`print_json` writes the document to
    the real stdout.
    """
    if not enabled:
        yield
        return
    real = sys.stdout
    real.flush()
    saved_fd: int | None = None
    document: TextIO = real
    if real is sys.__stdout__ and sys.stderr is not None:
        try:
            fd, err_fd = real.fileno(), sys.stderr.fileno()
        except (AttributeError, OSError, ValueError):
            fd = err_fd = -1
        if fd >= 0 and err_fd >= 0:
            saved_fd = os.dup(fd)
            os.dup2(err_fd, fd)
            document = open(saved_fd, "w", encoding="utf-8", closefd=False)
    moved = _stream_handlers(real)
    for handler in moved:
        handler.setStream(sys.stderr)
    sys.stdout = sys.stderr
    _Document.stream, _Document.printed = document, 0
    try:
        yield
    finally:
        _Document.stream, _Document.printed = None, 0
        for handler in moved:
            handler.setStream(real)
        sys.stdout = real
        if saved_fd is not None:
            document.flush()
            document.close()
            if sys.__stdout__ is not None:
                sys.__stdout__.flush()  # what went to fd 1 meanwhile belongs to stderr
            os.dup2(saved_fd, real.fileno())
            os.close(saved_fd)


@contextmanager
def quiet_libraries(verbose: bool = False) -> Iterator[None]:
    """A command's output is what it prints: libraries' INFO logs (NNI's "Using random seed")
    and their warnings are noise a user would have to read past. ``--verbose`` keeps them."""
    if verbose:
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.filterwarnings("default", module=r"cube_lab(\..*)?$")
        before = logging.root.manager.disable
        logging.disable(max(before, logging.INFO))
        try:
            yield
        finally:
            logging.disable(before)


# -- -o: a file, a folder or a .zip, as the name says -------------------------------------------

FILE_SUFFIXES = (".json", ".jsonl", ".csv", ".yaml", ".yml")
OutputKind = Literal["file", "folder", "zip"]


def _same_kind(a: str, b: str) -> bool:
    yaml = (".yaml", ".yml")
    return a == b or (a in yaml and b in yaml)


@dataclass(frozen=True)
class Output:
    """Where ``-o`` puts what a command made (see :func:`output_target`)."""

    path: Path
    kind: OutputKind
    name: str | None  # the one file's name inside a folder or a .zip; None: several files

    def deliver(self, source: Path) -> Path:
        """Copy ``source`` (the file or folder made) here; returns the path written."""
        if self.kind == "zip":
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
            os.close(fd)
            try:
                with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
                    if source.is_file():
                        zf.write(source, self.name or source.name)
                    else:
                        for item in sorted(source.rglob("*")):
                            if item.is_file():
                                zf.write(item, item.relative_to(source).as_posix())
                os.replace(tmp, self.path)
            finally:
                Path(tmp).unlink(missing_ok=True)
            return self.path
        if self.kind == "folder" and source.is_dir():
            shutil.copytree(source, self.path, dirs_exist_ok=True)
            return self.path
        target = self.path / (self.name or source.name) if self.kind == "folder" else self.path
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        os.close(fd)
        try:
            shutil.copyfile(source, tmp)
            os.replace(tmp, target)
        finally:
            Path(tmp).unlink(missing_ok=True)
        return target


def output_target(raw: str, *, what: str, single: str | None, replace: bool = False) -> Output:
    """The one ``-o`` rule of every command.

    ``single`` is the name of the one file the command makes (``tasks.json``, ``flow.yaml``,
    ``model.onnx``), or None when it makes several (a folder such as a YOLO export). Then
    ``raw`` is:

    - a folder when it ends in ``/``, is an existing folder, or has no suffix (a single file
      goes inside it, under its own name);
    - a .zip archive when it ends in ``.zip``;
    - a file when it ends in .json/.jsonl/.csv/.yaml/.yml, or in any other suffix when the
      command makes one file (``-o copy.onnx``). Asking for one file of something made of
      several, or a .csv of a .json, is an error that says what to pass instead.

    Nothing is written here: a command checks its ``-o`` before it does its work, so a bad
    one leaves nothing behind. ``replace`` lets a file (or .zip) that exists be replaced.
    """
    text = raw.strip()
    if not text:
        raise InvalidInput(_t("-o needs a path"), _t("Pass a file name, a folder or a .zip."))
    path = Path(text).expanduser()
    suffix = path.suffix.lower()
    kind: OutputKind
    if text.endswith(("/", os.sep)) or path.is_dir():
        kind = "folder"
    elif suffix == ".zip":
        kind = "zip"
    elif suffix in FILE_SUFFIXES or (suffix and single is not None):
        kind = "file"
    else:
        kind = "folder"
    stem = path.with_suffix("") if suffix else path
    if kind == "file" and single is None:
        raise InvalidInput(
            _t("{what} is several files, and -o {text} names one file", what=what, text=text),
            _t("Pass a folder (-o {stem}) or a .zip (-o {stem}.zip).", stem=stem),
        )
    if kind == "file" and single is not None:
        made = Path(single).suffix.lower()
        if made in FILE_SUFFIXES and suffix in FILE_SUFFIXES and not _same_kind(made, suffix):
            raise InvalidInput(
                _t(
                    "{what} is a {made} file, and -o {text} names a {suffix} file",
                    what=what,
                    made=made,
                    text=text,
                    suffix=suffix,
                ),
                _t("Name it {stem}{made}, or pass a folder or a .zip.", stem=stem, made=made),
            )
    if kind == "folder" and single is None:
        if path.is_dir() and any(path.iterdir()):
            raise InvalidInput(
                _t("{path} already exists and is not empty", path=path),
                _t("Choose another -o folder, or remove it."),
            )
        if path.exists() and not path.is_dir():
            raise InvalidInput(
                _t("{path} already exists", path=path), _t("Choose another -o path or remove it.")
            )
        return Output(path, kind, None)
    target = path / str(single) if kind == "folder" else path
    if target.is_dir() or (target.exists() and not replace):
        raise InvalidInput(
            _t("{target} already exists", target=target), _t("Choose another -o path or remove it.")
        )
    return Output(path, kind, single)


def print_table(rows: list[list[str]], header: list[str]) -> None:
    """Left-aligned columns, two spaces apart, the header first."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
