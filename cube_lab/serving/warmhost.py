"""A warm process that forks the serving processes, so a deployment does not wait for Python,
NumPy and the model's library to start (``import sklearn`` alone takes ~1.9 s here, most of
a cold deploy).

One host per data dir, listening on ``<data dir>/serving/warmhost.sock``. The deployment
service starts it on its first deploy (that deploy starts its processes the usual way) and
asks it to fork later ones. A forked child gets its own session, working folder, environment,
argv and log file, then runs the module (``cube_lab.serving.server`` or ``.router``) as
``python -m`` would, by calling the ``main()`` the host already imported; it does not depend
on the host afterwards, and the host reaps it when it exits. After each fork the host
imports the flavor's library, so the next deployment of that flavor is warm too. The host
leaves after ``idle`` seconds without requests and without children, or on ``{"op": "quit"}``.

Protocol: one JSON line each way per connection. ``{"op": "hello"}`` -> ``{"fingerprint"}``
(a host started from other code is replaced); ``{"op": "spawn", "module", "argv", "cwd",
"env", "log", "flavor"}`` -> ``{"pid"}``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import json
import os
import runpy
import selectors
import signal
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from ..processes import become_forked_child

SOCKET_NAME = "warmhost.sock"
IDLE_S = 900.0
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes
# what each flavor's loader imports; the host imports it once so its children need not
FLAVOR_MODULES: dict[str, tuple[str, ...]] = {
    "sklearn": (
        "sklearn.base",
        "sklearn.ensemble",
        "sklearn.linear_model",
        "sklearn.pipeline",
        "sklearn.preprocessing",
        "sklearn.tree",
        "joblib",
    ),
    "pytorch": ("torch",),
    "onnx": ("onnxruntime",),
    "transformers": ("transformers",),
    "pyfunc": ("mlflow.pyfunc",),
}
BASE_MODULES = ("numpy", "yaml", "cube_lab.serving.server", "cube_lab.serving.router")


def fingerprint() -> str:
    """Changes when the interpreter or cube-lab's serving code changes."""
    here = Path(__file__).resolve().parent
    stamps = sorted((str(p), p.stat().st_mtime_ns) for p in here.glob("*.py"))
    return hashlib.sha256(repr((sys.executable, stamps)).encode()).hexdigest()[:16]


def _import(names: tuple[str, ...]) -> None:
    for name in names:
        with contextlib.suppress(Exception):  # a missing library fails in the child, visibly
            importlib.import_module(name)


def _child(request: dict[str, Any], close: list[int]) -> None:
    """In the forked child: become ``python -m MODULE ARGV``. Never returns."""
    code = 1
    try:
        for fd in close:
            with contextlib.suppress(OSError):
                os.close(fd)
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        become_forked_child(request["log"], request["cwd"], request["env"])
        sys.argv = [request["module"], *request["argv"]]
        entry = getattr(sys.modules.get(request["module"]), "main", None)
        if callable(entry):
            # The host imported the module already: call its main() as its ``__main__`` block
            # does. runpy would run it a second time and warn "found in sys.modules after
            # import of package ... unpredictable behaviour" into the deployment's log (and
            # into a failed deploy's message).
            result = entry()
            code = result if isinstance(result, int) else 0
        else:
            runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
            code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


class Host:
    def __init__(self, path: Path, idle_s: float) -> None:
        self.path = path
        self.idle_s = idle_s
        self.children: set[int] = set()
        self.last_request = time.monotonic()
        self.print = fingerprint()
        self.inode = 0

    def bind(self) -> socket.socket | None:
        """The listening socket, or None when a live host already owns the path. Only its
        owner may connect (mode 0600 from the start): a request here starts processes as the
        owner, with the environment it names (a deployment's backend key among it)."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            _bind_private(listener, self.path)
        except OSError:
            if ask(self.path, {"op": "hello"}, timeout=10.0) is not None:  # may be importing
                listener.close()
                return None
            self.path.unlink(missing_ok=True)  # a stale socket of a host that died
            _bind_private(listener, self.path)
        listener.listen(64)
        self.inode = self.path.stat().st_ino
        return listener

    def reap(self) -> None:
        for pid in list(self.children):
            with contextlib.suppress(ChildProcessError):
                done, _ = os.waitpid(pid, os.WNOHANG)
                if not done:
                    continue
            self.children.discard(pid)

    def handle(self, conn: socket.socket, close: list[int]) -> bool:
        """Answer one request; False when the host should leave."""
        conn.settimeout(5)
        data = b""
        while not data.endswith(b"\n"):
            chunk = conn.recv(65536)
            if not chunk:
                return True
            data += chunk
        request = json.loads(data)
        self.last_request = time.monotonic()
        op = request.get("op")
        if op == "hello":
            reply = {"fingerprint": self.print, "pid": os.getpid()}
            conn.sendall(json.dumps(reply).encode() + b"\n")
        elif op == "spawn":
            pid = os.fork()
            if pid == 0:
                _child(request, [*close, conn.fileno()])
            self.children.add(pid)
            conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
            conn.close()
            _import(FLAVOR_MODULES.get(request.get("flavor") or "", ()))
        elif op == "quit":
            conn.sendall(b'{"bye": true}\n')
            return False
        return True

    def serve(self) -> None:
        _import(BASE_MODULES + FLAVOR_MODULES["sklearn"])
        listener = self.bind()
        if listener is None:
            return
        wake_r, wake_w = socket.socketpair()
        wake_r.setblocking(False)
        wake_w.setblocking(False)
        signal.set_wakeup_fd(wake_w.fileno())
        signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes select through the wakeup fd
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        sel = selectors.DefaultSelector()
        sel.register(listener, selectors.EVENT_READ, "accept")
        sel.register(wake_r, selectors.EVENT_READ, "wake")
        close = [listener.fileno(), wake_r.fileno(), wake_w.fileno(), sel.fileno()]  # type: ignore[attr-defined]
        try:
            while True:
                for key, _ in sel.select(timeout=5.0):
                    if key.data == "wake":
                        with contextlib.suppress(BlockingIOError):
                            wake_r.recv(4096)
                        continue
                    conn, _ = listener.accept()
                    with conn:
                        try:
                            if not self.handle(conn, close):
                                return
                        except (OSError, ValueError):
                            continue  # a broken client must not take the host down
                self.reap()
                idle = time.monotonic() - self.last_request > self.idle_s
                if idle and not self.children:
                    return
        finally:
            with contextlib.suppress(OSError):
                if self.path.stat().st_ino == self.inode:  # not a successor's socket
                    self.path.unlink()
            listener.close()


def _bind_private(listener: socket.socket, path: Path) -> None:
    old = os.umask(0o177)  # the host is one thread: nothing else creates files meanwhile
    try:
        listener.bind(str(path))
    finally:
        os.umask(old)


def ask(path: Path, request: dict[str, Any], timeout: float = 2.0) -> dict[str, Any] | None:
    """One request to the host at ``path``; None when no host answers."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(str(path))
            conn.sendall(json.dumps(request).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = conn.recv(65536)
                if not chunk:
                    return None
                data += chunk
        return json.loads(data)
    except (OSError, ValueError):
        return None


class WarmHostClient:
    """The deployment service's side: fork through the host when a current one answers,
    start one when there is none; ``spawn`` returning None means "start it yourself"."""

    def __init__(self, folder: Path, enabled: bool = True) -> None:
        """``enabled=False``: never fork nor start a host (under os_accounts every model
        server runs as its own owner's account, which a shared host cannot become)."""
        self.path = folder / SOCKET_NAME
        self.enabled = (
            enabled
            and os.environ.get("CUBE_LAB_SERVING_WARM", "1") != "0"
            and len(str(self.path)) <= MAX_SOCKET_PATH
        )
        self.wanted: tuple[dict[str, str], Path] | None = None  # (env, log) of a host to start

    def start_wanted(self) -> None:
        """Start the host a cold ``spawn`` found missing. Called once the deployment is
        ready: a host importing its libraries beside a cold start would slow that start."""
        if self.wanted is not None:
            env, log = self.wanted
            self.wanted = None
            self.start(env, log)

    def spawn(
        self, module: str, argv: list[str], cwd: Path, env: dict[str, str], log: Path, flavor: str
    ) -> int | None:
        if not self.enabled:
            return None
        hello = ask(self.path, {"op": "hello"}, timeout=0.5)
        if hello is None:
            if not self.path.exists():
                self.wanted = (env, log)
            return None  # none yet, or busy importing a library: this time, start it cold
        if hello.get("fingerprint") != fingerprint():
            ask(self.path, {"op": "quit"})
            self.wanted = (env, log)
            return None
        request = {"op": "spawn", "module": module, "argv": argv, "cwd": str(cwd),
                   "env": env, "log": str(log), "flavor": flavor}  # fmt: skip
        reply = ask(self.path, request, timeout=5.0)
        return int(reply["pid"]) if reply and "pid" in reply else None

    def ensure(self, env: dict[str, str], log: Path) -> bool:
        """Start a host unless a current one answers; True when one was started."""
        if not self.enabled:
            return False
        hello = ask(self.path, {"op": "hello"}, timeout=0.5)
        if hello is not None and hello.get("fingerprint") == fingerprint():
            return False
        if hello is not None:
            ask(self.path, {"op": "quit"})
        self.start(env, log)
        return True

    def start(self, env: dict[str, str], log: Path) -> None:
        import subprocess

        self.path.parent.mkdir(parents=True, exist_ok=True)
        idle = os.environ.get("CUBE_LAB_SERVING_WARM_IDLE_S", str(IDLE_S))
        with open(log, "ab") as out:
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "cube_lab.serving.warmhost",
                    "--socket",
                    str(self.path),
                    "--idle",
                    idle,
                ],
                cwd=self.path.parent,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
            )

    def quit(self) -> bool:
        return ask(self.path, {"op": "quit"}) is not None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m cube_lab.serving.warmhost")
    p.add_argument("--socket", required=True)
    p.add_argument("--idle", type=float, default=IDLE_S)
    a = p.parse_args(argv)
    Host(Path(a.socket), a.idle).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
