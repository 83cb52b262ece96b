"""Kernels and terminals started by the server find this Python's ``cube-lab`` and ``python``.

A JupyterLab terminal runs a *login* shell when the server has no terminal of its own (under
``make lab`` in the background, under a spawner), and a login shell reads ``/etc/profile``,
which on Debian sets ``PATH`` from scratch: the venv's ``bin`` drops off and ``cube-lab`` is
"command not found". The fix keeps the login shell (profile and rc files still run) and puts
the server's ``bin`` folder back in front once they have run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

ENV_BIN = "CUBE_LAB_BIN"

# Run by the login shell after its profile: put our bin first again, then become the
# interactive shell the user expects ("$0" is the shell itself, passed as the next argv).
_RESTORE_PATH = 'PATH="$CUBE_LAB_BIN:$PATH"; export PATH; exec "$0" -i'


def server_bin() -> Path:
    """The folder that holds this interpreter, and so the ``cube-lab`` script beside it."""
    return Path(sys.executable).parent


def put_bin_on_path(environ: dict[str, str] | os._Environ[str] = os.environ) -> None:
    """Put the server's ``bin`` first on ``PATH`` (kernels inherit it) and name it for shells."""
    folder = str(server_bin())
    environ[ENV_BIN] = folder
    parts = [p for p in environ.get("PATH", "").split(os.pathsep) if p]
    if not parts or parts[0] != folder:
        environ["PATH"] = os.pathsep.join([folder, *(p for p in parts if p != folder)])


def login_shell_keeping_bin(shell_command: list[str]) -> list[str]:
    """``bash -l`` -> ``bash -l -c '<put our bin first>; exec bash -i' bash``.

    Anything other than a plain ``SHELL [-l]`` (a command the admin configured) is left alone.
    """
    if not shell_command or len(shell_command) > 2:
        return shell_command
    shell, *flags = shell_command
    if flags not in ([], ["-l"]) or Path(shell).name not in {"bash", "zsh", "sh", "dash", "ksh"}:
        return shell_command
    return [shell, "-l", "-c", _RESTORE_PATH, shell]


def adopt_terminal_manager(
    web_app_settings: dict[str, Any], terminado_settings: dict, root_dir: str | None = None
) -> bool:
    """A terminal opened with no folder opens in the lab's root (``root_dir``; terminado's
    default is the server process's folder, a checkout for ``make lab``); rewrite the terminal
    manager's default shell command. False when there is no shell command to rewrite."""
    manager = web_app_settings.get("terminal_manager")
    if manager is not None and root_dir and "cwd" not in terminado_settings:
        manager.term_settings.setdefault("cwd", root_dir)
    if manager is None or terminado_settings.get("shell_command") is not None:
        return False  # no terminals, or the admin chose the shell: theirs to set up
    manager.shell_command = login_shell_keeping_bin(list(manager.shell_command))
    return True
