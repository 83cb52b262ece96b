"""A warm process that forks one child per trial, so a trial does not pay Python's and
its libraries' start-up (``import nni`` alone takes about 2 s here: scipy.stats, pandas).

The host imports NNI's third-party dependencies (and the trial script's top-level imports
that come from installed packages), then forgets ``nni`` itself: each trial child imports
``nni`` afresh, so NNI reads that trial's environment (``NNI_TRIAL_JOB_ID``, ...) exactly
as in a freshly started ``python trial.py``. The child gets its own session, working
folder, environment, argv and log file, then runs the script as ``__main__``.

Protocol (JSON lines): requests on stdin ``{"op": "preload", "script": PATH}`` and
``{"op": "run", "id", "argv", "cwd", "env", "log"}``; events on stdout
``{"event": "ready"}``, ``{"event": "started", "id", "pid"}``,
``{"event": "exited", "id", "code"}``. The host is single-threaded (a forking process
must not have other threads) and waits on pidfds. It exits when stdin closes, killing
what is still running.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import json
import logging
import os
import runpy
import selectors
import signal
import sys
import sysconfig
import traceback
from pathlib import Path
from typing import Any

from ..processes import become_forked_child

_SITE = tuple(
    str(Path(p).resolve()) for p in {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
)


def _installed_module(name: str) -> bool:
    """True for a module of an installed package (not the trial's own code)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    origin = getattr(spec, "origin", None) if spec else None
    return bool(origin) and str(Path(origin).resolve()).startswith(_SITE)


def _forget_nni() -> None:
    for name in [m for m in sys.modules if m == "nni" or m.startswith("nni.")]:
        del sys.modules[name]
    logging.getLogger().handlers.clear()  # NNI's import attached a stdout handler


def warm_up() -> None:
    try:
        import nni  # noqa: F401 - imports scipy, pandas, json_tricks, ... once
    except ImportError:
        return
    _forget_nni()


def preload(script: str) -> list[str]:
    """Import the script's top-level imports that come from installed packages."""
    try:
        tree = ast.parse(Path(script).read_text(), script)
    except (OSError, SyntaxError, ValueError):
        return []
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.extend(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module.split(".")[0])
    loaded = []
    for name in dict.fromkeys(names):
        if name == "nni" or name in sys.modules or not _installed_module(name):
            continue
        try:
            importlib.import_module(name)
            loaded.append(name)
        except Exception:  # the trial will meet the same error and report it
            continue
    _forget_nni()
    return loaded


def _child(request: dict[str, Any]) -> None:
    """In the forked child: become the trial. Never returns."""
    code = 1
    try:
        become_forked_child(request["log"], request["cwd"], request["env"])
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        argv = list(request["argv"])
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            sys.path[0] = request["cwd"]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = argv
            sys.path[0] = str(Path(argv[0]).resolve().parent)
            runpy.run_path(argv[0], run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _emit(event: dict[str, Any]) -> None:
    sys.__stdout__.write(json.dumps(event) + "\n")  # type: ignore[union-attr]
    sys.__stdout__.flush()  # type: ignore[union-attr]


def serve() -> None:
    warm_up()
    sel = selectors.DefaultSelector()
    stdin = sys.stdin.buffer
    os.set_blocking(stdin.fileno(), True)
    sel.register(stdin.fileno(), selectors.EVENT_READ, "stdin")
    children: dict[int, tuple[str, int]] = {}  # pidfd -> (trial id, pid)
    buffer = b""
    _emit({"event": "ready"})
    while True:
        for key, _ in sel.select():
            if key.data == "stdin":
                chunk = os.read(stdin.fileno(), 65536)
                if not chunk:  # the engine went away: take the trials with us
                    for _, pid in children.values():
                        with contextlib.suppress(OSError):
                            os.killpg(pid, signal.SIGKILL)
                    return
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    request = json.loads(line)
                    if request["op"] == "preload":
                        _emit({"event": "preloaded", "modules": preload(request["script"])})
                    elif request["op"] == "run":
                        sys.stdout.flush()
                        pid = os.fork()
                        if pid == 0:
                            _child(request)
                        pidfd = os.pidfd_open(pid)
                        children[pidfd] = (request["id"], pid)
                        sel.register(pidfd, selectors.EVENT_READ, "child")
                        _emit({"event": "started", "id": request["id"], "pid": pid})
            else:
                trial_id, pid = children.pop(key.fd)
                sel.unregister(key.fd)
                os.close(key.fd)
                _, status = os.waitpid(pid, 0)
                _emit(
                    {"event": "exited", "id": trial_id, "code": os.waitstatus_to_exitcode(status)}
                )


if __name__ == "__main__":
    serve()
