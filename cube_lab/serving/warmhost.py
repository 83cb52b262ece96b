"""A warm process that forks the serving processes, so a deployment does not wait for Python,
NumPy and the model's library to start (``import sklearn`` alone takes ~1.9 s here, most of
a cold deploy).

One host per data dir, listening on ``<data dir>/serving/warmhost.sock``; under per-user OS
accounts (``Settings.os_accounts``) one per deployment owner's account, run as that account,
at ``<data dir>/serving/warm/<account>/warmhost.sock``, so a model server (which loads the
user's pickle) is forked as its owner and never as anyone else. The deployment service starts
a host on its first deploy (that deploy starts its processes the usual way) and asks it to
fork later ones. A forked child gets its own session, working folder, environment, argv and
log (a descriptor the service opened and passes over the socket: the host need not be able
to open the deployment's log itself), then runs the module (``cube_lab.serving.server`` or
``.router``) as ``python -m`` would, by calling the ``main()`` the host already imported; it
does not depend on the host afterwards, and the host reaps it when it exits. After each fork
the host imports the flavor's library, so the next deployment of that flavor is warm too. The
host leaves after ``idle`` seconds without requests and without children, or on
``{"op": "quit"}``.

Protocol: one JSON line each way per connection. ``{"op": "hello"}`` -> ``{"fingerprint"}``
(a host started from other code is replaced); ``{"op": "spawn", "module", "argv", "cwd",
"env", "flavor"}`` with the log's descriptor attached (``SCM_RIGHTS``) -> ``{"pid"}``.
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
import struct
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..processes import become_forked_child, start

if TYPE_CHECKING:
    from ..accounts import RunAs

SOCKET_NAME = "warmhost.sock"
LOG_NAME = "warmhost.log"
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


def _child(request: dict[str, Any], log: int, close: list[int]) -> None:
    """In the forked child: become ``python -m MODULE ARGV``. Never returns."""
    code = 1
    try:
        for fd in close:
            with contextlib.suppress(OSError):
                os.close(fd)
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        become_forked_child(log, request["cwd"], request["env"])
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
        data, fds = b"", []
        try:
            while not data.endswith(b"\n"):
                chunk, got, _, _ = socket.recv_fds(conn, 65536, 1)
                fds += got
                if not chunk:
                    return True
                data += chunk
            return self._answer(conn, json.loads(data), fds, close)
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _answer(
        self, conn: socket.socket, request: dict[str, Any], fds: list[int], close: list[int]
    ) -> bool:
        self.last_request = time.monotonic()
        op = request.get("op")
        if op == "hello":
            reply = {"fingerprint": self.print, "pid": os.getpid()}
            conn.sendall(json.dumps(reply).encode() + b"\n")
        elif op == "spawn":
            if not fds:
                conn.sendall(b'{"error": "no log descriptor"}\n')
                return True
            pid = os.fork()
            if pid == 0:
                _child(request, fds[0], [*close, *fds[1:], conn.fileno()])
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


def ask(
    path: Path,
    request: dict[str, Any],
    timeout: float = 2.0,
    fds: tuple[int, ...] = (),
    peer_uid: int | None = None,
) -> dict[str, Any] | None:
    """One request to the host at ``path`` (``fds``: descriptors sent with it); None when no
    host answers, or (with ``peer_uid``) when the process that answers runs as anyone else:
    a socket in a folder its account writes may have been swapped for a link to another
    account's host."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(str(path))
            if peer_uid is not None and _peer_uid(conn) != peer_uid:
                return None
            payload = json.dumps(request).encode() + b"\n"
            sent = socket.send_fds(conn, [payload], list(fds)) if fds else 0
            conn.sendall(payload[sent:])
            data = b""
            while not data.endswith(b"\n"):
                chunk = conn.recv(65536)
                if not chunk:
                    return None
                data += chunk
        return json.loads(data)
    except (OSError, ValueError):
        return None


def _peer_uid(conn: socket.socket) -> int:
    """The uid of the process at the other end of a connected Unix socket."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


class WarmHostClient:
    """The deployment service's side of one host: fork through it when a current one answers,
    start one when there is none; ``spawn`` returning None means "start it yourself".

    ``env``: the host's own environment (no deployment's key in it). ``who``: the account the
    host runs as (``Settings.os_accounts``); a pid it answers is used only when that process
    is that account's, so a host its owner replaced by their own program cannot make the
    service watch, or later kill, anyone else's process."""

    def __init__(
        self,
        folder: Path,
        env: dict[str, str],
        *,
        enabled: bool = True,
        who: RunAs | None = None,
    ) -> None:
        self.path = folder / SOCKET_NAME
        self.env = env
        self.who = who
        self.enabled = (
            enabled
            and os.environ.get("CUBE_LAB_SERVING_WARM", "1") != "0"
            and len(str(self.path)) <= MAX_SOCKET_PATH
        )
        self.uid = os.getuid() if who is None else who.uid  # the host's, checked on connect
        self.wanted = False  # a cold spawn found no host: start one once the deploy is ready
        self.proc: subprocess.Popen[bytes] | None = None  # the host this client started

    def _ask(self, request: dict[str, Any], timeout: float, fds: tuple[int, ...] = ()) -> Any:
        return ask(self.path, request, timeout, fds, peer_uid=self.uid)

    def start_wanted(self) -> None:
        """Start the host a cold ``spawn`` found missing. Called once the deployment is
        ready: a host importing its libraries beside a cold start would slow that start."""
        if self.wanted:
            self.wanted = False
            self.start()

    def spawn(
        self, module: str, argv: list[str], cwd: Path, env: dict[str, str], log: int, flavor: str
    ) -> int | None:
        """Fork ``python -m module argv`` in ``cwd`` with ``env``, its output appended to the
        open descriptor ``log``; the child's pid, or None."""
        if not self.enabled:
            return None
        hello = self._ask({"op": "hello"}, 0.5)
        if hello is None:
            if not self.path.exists():
                self.wanted = True
            return None  # none yet, or busy importing a library: this time, start it cold
        if hello.get("fingerprint") != fingerprint():
            self._ask({"op": "quit"}, 2.0)
            self.wanted = True
            return None
        request = {"op": "spawn", "module": module, "argv": argv, "cwd": str(cwd),
                   "env": env, "flavor": flavor}  # fmt: skip
        reply = self._ask(request, 5.0, (log,))
        pid = reply.get("pid") if reply else None
        if not isinstance(pid, int) or not self._owns(pid):
            return None
        return pid

    def _owns(self, pid: int) -> bool:
        """Whether ``pid`` runs as this host's account (always, for the service's own)."""
        if self.who is None:
            return True
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False
        uids = [line.split()[1:] for line in status.splitlines() if line.startswith("Uid:")]
        return bool(uids) and all(uid == str(self.who.uid) for uid in uids[0])

    def ensure(self) -> bool:
        """Start a host unless a current one answers; True when one was started."""
        if not self.enabled:
            return False
        hello = self._ask({"op": "hello"}, 0.5)
        if hello is not None and hello.get("fingerprint") == fingerprint():
            return False
        if hello is not None:
            self._ask({"op": "quit"}, 2.0)
        self.start()
        return True

    def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        idle = os.environ.get("CUBE_LAB_SERVING_WARM_IDLE_S", str(IDLE_S))
        argv = [sys.executable, "-m", "cube_lab.serving.warmhost", "--socket", str(self.path),
                "--idle", idle]  # fmt: skip
        # never through a link (the folder may be the host account's to write)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW
        with open(os.open(self.path.parent / LOG_NAME, flags, 0o640), "ab") as out:
            self.proc = start(argv, self.path.parent, self.env, out, run_as=self.who)

    def quit(self) -> bool:
        """Ask the host to leave; one this client started (it may still be importing, deaf
        to requests) is ended and waited for. True when a host was there."""
        answered = self._ask({"op": "quit"}, 2.0) is not None
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return answered
        try:
            proc.wait(timeout=5 if answered else 0.01)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return True


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m cube_lab.serving.warmhost")
    p.add_argument("--socket", required=True)
    p.add_argument("--idle", type=float, default=IDLE_S)
    a = p.parse_args(argv)
    Host(Path(a.socket), a.idle).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
