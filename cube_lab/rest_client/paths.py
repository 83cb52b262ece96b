"""Paths sent to the cube-lab service: relative to the folder it resolves them in, this lab
server's root (``$CUBE_LAB_ROOT_DIR``); nothing outside it is sent."""

from __future__ import annotations

import os
from pathlib import Path

from ..config import ENV_ROOT_DIR
from ..errors import InvalidInput
from ..locale.messages import _t


def home() -> Path:
    """The folder the service resolves paths in: this lab server's root."""
    raw = os.environ.get(ENV_ROOT_DIR)
    if not raw:
        raise InvalidInput(
            _t(
                "${ENV_ROOT_DIR} is not set, so paths cannot be sent to the cube-lab service",
                ENV_ROOT_DIR=ENV_ROOT_DIR,
            ),
            _t(
                (
                    "Run cube-lab in a terminal or notebook of your JupyterHub server, or set"
                    " {ENV_ROOT_DIR} to your home folder there."
                ),
                ENV_ROOT_DIR=ENV_ROOT_DIR,
            ),
        )
    return Path(os.path.abspath(Path(raw).expanduser()))


def relative(raw: str | os.PathLike[str], what: str = "path") -> str:
    """``raw`` (from the current folder) relative to the home; outside it is an error."""
    root = home()
    given = Path(raw).expanduser()
    absolute = Path(os.path.abspath(Path.cwd() / given))
    for base, path in ((root, absolute), (root.resolve(), absolute.resolve())):
        if path.is_relative_to(base):
            return path.relative_to(base).as_posix() or "."
    raise InvalidInput(
        _t("{what} {value!r} is outside your home {root}", what=what, value=str(raw), root=root),
        _t(
            (
                "Under the hub cube-lab reaches only files in your home (the lab server's "
                "root, ${ENV_ROOT_DIR}); copy or move it there first."
            ),
            ENV_ROOT_DIR=ENV_ROOT_DIR,
        ),
    )
