"""What the commands under the hub share: printing, paths and names, following a log."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...config import ENV_ROOT_DIR
from ...errors import InvalidInput
from ...locale.messages import _t
from ...rest_client import ServiceClient
from ..args import print_json

POLL_S = 0.25
LOG_POLL_S = 0.5
ACTIVE = ("queued", "pending", "running", "starting", "stopping")

Command = Callable[[ServiceClient, argparse.Namespace], None]

# The in-process commands' kubeconfig options. Under the hub the cube-lab service acts on the
# cluster with its own credentials, in its own namespace: a command refuses them there.
KUBE_CLIENT_FLAGS = (
    ("--namespace", "namespace"),
    ("--kubeconfig", "kubeconfig"),
    ("--kube-context", "kube_context"),
)


def given(a: argparse.Namespace, flags: tuple[tuple[str, str], ...]) -> list[str]:
    """Which of ``flags`` (``(flag, dest)`` pairs) the command line gave."""
    return [flag for flag, key in flags if getattr(a, key, None)]


def emit(a: argparse.Namespace, view: Any, show: Callable[[Any], None]) -> None:
    """``--json`` prints the service's JSON as it came; otherwise the local command's text."""
    if a.json:
        print_json(view)
    else:
        show(view)


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


def personal_project(client: ServiceClient) -> str:
    me = client.get("whoami")
    for project in me.get("projects") or []:
        if project.get("kind") == "personal" and project.get("role") == "owner":
            return str(project["name"])
    raise InvalidInput(
        _t("the cube-lab service names no personal project of {value}", value=me.get("user")),
        _t("Pass --project NAME (see cube-lab project list)."),
    )


def project_of(client: ServiceClient, a: argparse.Namespace) -> str:
    return str(a.project) if a.project else personal_project(client)


def _read_log(client: ServiceClient, where: str) -> str:
    text, offset = "", 0
    while True:
        chunk = client.get(f"{where}/log", offset=offset)
        text += chunk["text"]
        if chunk["done"] or chunk["offset"] == offset or chunk["offset"] >= chunk["size"]:
            return text
        offset = chunk["offset"]


def _follow(client: ServiceClient, where: str, follow: bool, out: Any = None) -> None:
    """Print a log from the start: what there is now, or with ``follow`` until its writer is
    done."""
    stream = out or sys.stdout
    offset = 0
    while True:
        chunk = client.get(f"{where}/log", offset=offset)
        stream.write(chunk["text"])
        stream.flush()
        moved = chunk["offset"] != offset
        offset = chunk["offset"]
        if chunk["done"] or (not follow and (not moved or offset >= chunk["size"])):
            return
        if not moved:
            time.sleep(LOG_POLL_S)
