"""Local deployments' processes: the router and the model servers on this machine.

Each runs in its own session so it outlives whoever started it (the server, ``cube-lab
deploy``); model servers are forked from a warm host when one is up (no start-up wait), else
started afresh. The deployment service records their pids with their start time and boot
id (``identity``), so that after a restart only those still its own are ended
(``still_ours``; a pid another program has since is left alone, see ``cube_lab.processes``).

Under ``Settings.os_accounts`` every model server runs as its deployment owner's account,
forked from that account's own warm host: none is shared across accounts. The router stays
the service's own user.

The service (``service.py``) knows none of this: it talks to ``LocalBackend`` through
``backend.ServingBackend``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from .. import accounts
from ..accounts import RunAs
from ..config import Settings
from ..locale.messages import _t
from ..logtail import read_chunk
from ..monitoring import files as resource_files
from ..monitoring import watch as watch_resources
from ..monitoring.monitor import Watch
from ..processes import Group, group_of, pid_alive, start, still_ours
from . import backend_auth
from .backend import DeploymentFailed, OIPSpec, ServerPlan, Started
from .router import TOKEN_ENV
from .router_client import RouterClient
from .warmhost import LOG_NAME as WARM_LOG
from .warmhost import WarmHostClient

READY_TIMEOUT_S = 120.0
STOP_GRACE_S = 5.0
RUN_DIR = "run"  # under os_accounts: the model servers' own folder (cwd, ready files)
# the service's own hub credentials: never in a process that runs a user's model
_SERVICE_ENV_PREFIXES = ("JUPYTERHUB_", "JPY_")


class LocalBackend:
    """Starts, watches and ends a local deployment's processes (see the module's text)."""

    kind = "local"

    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = root  # <data_dir>/serving
        self.settings = settings
        self._procs: dict[int, subprocess.Popen[bytes]] = {}  # children of this process
        self._warm = WarmHostClient(self.root, _child_env({}), enabled=not settings.os_accounts)
        self._warm_accounts: dict[str, WarmHostClient] = {}
        # each model server's resource sampler (cube_lab/monitoring), by pid: one file per
        # replica in <deployment folder>/resources/, ended with the process
        self._watches: dict[int, Watch] = {}

    # -- who, where ----------------------------------------------------------------------------

    def host_name(self) -> str:
        return socket.gethostname()

    def creator(self) -> int:
        return os.getpid()

    def creator_busy(self, creator: Any) -> bool:
        return creator != os.getpid() and pid_alive(creator)

    def router(self, host: str, port: int, token: str) -> RouterClient:
        return RouterClient(host, port, token)

    # -- start ---------------------------------------------------------------------------------

    def start_router(
        self, name: str, folder: Path, token: str, host: str, port: int | None
    ) -> Started:
        ready = folder / "ready" / "router.json"
        argv = [
            sys.executable,
            "-m",
            "cube_lab.serving.router",
            "--name",
            name,
            "--host",
            host,
            "--port",
            str(port or 0),
            "--config",
            str(folder / "config.json"),
            "--ready-file",
            str(ready),
        ]
        # The router stays the service's own user even under os_accounts: it loads no user
        # code (it forwards requests, checks keys and limits), and it holds the token that
        # reconfigures it, which the owner's model servers must not reach.
        return self._spawn(argv, folder, {TOKEN_ENV: token}, "router"), ready

    def start_servers(
        self, folder: Path, plan: ServerPlan, replicas: int, key: str, who: RunAs | None = None
    ) -> list[Started]:
        """Start the model servers; ``key``: the backend key they demand of every request
        (in their environment: argv is world-readable in /proc). ``who``: the deployment
        owner's account they run as (``Settings.os_accounts``), in the deployment's run folder
        and with the plan's path a copy the account reads (never a path into the store).
        With an ``LLMPlan`` they are LLM servers (``cube_lab.serving.llm``), started cold: a
        fork of a host that imported torch may hang in its thread pools."""
        env = {backend_auth.KEY_ENV: key} if key else {}
        ready_dir = folder / (RUN_DIR if who is not None else "ready")
        started: list[Started] = []
        for _ in range(replicas):
            ready = ready_dir / f"server-{uuid.uuid4().hex[:8]}.json"
            if not isinstance(plan, OIPSpec):
                llm_env = {**env, "TOKENIZERS_PARALLELISM": "false"}
                started.append(
                    (self._spawn(plan.argv(ready), folder, llm_env, "llm", who, False), ready)
                )
                continue
            argv = [
                sys.executable,
                "-m",
                "cube_lab.serving.server",
                "--name",
                plan.model,
                "--version",
                str(plan.version),
                "--flavor",
                plan.flavor,
                "--path",
                str(plan.path),
                "--ready-file",
                str(ready),
            ]
            if plan.batching:
                argv += ["--batch-max-rows", str(plan.batching["max_rows"])]
                argv += ["--batch-wait-ms", str(plan.batching["wait_ms"])]
            started.append((self._spawn(argv, folder, env, plan.flavor, who), ready))
        for proc, ready in started:
            self._watch(folder, proc.pid, ready.stem)
        return started

    def _watch(self, folder: Path, pid: int, replica: str) -> None:
        """Sample one model server's process tree while it runs (kind ``deployment``, the
        deployment's id, the replica as the node)."""
        for gone in [p for p, w in self._watches.items() if not w.running]:
            del self._watches[gone]  # ended with their processes
        self._watches[pid] = watch_resources(
            resource_files.deployment_file(folder, replica),
            [pid],
            kind="deployment",
            object_id=folder.name,
            node=replica,
            ends_itself=True,
        )

    def _spawn(
        self,
        argv: list[str],
        folder: Path,
        extra: dict[str, str],
        flavor: str,
        who: RunAs | None = None,
        warm: bool = True,
    ) -> Any:
        """``python -m MODULE ...``: forked from the warm host when one is up (no start-up
        wait), else started afresh (always when not ``warm``). With ``who``: as that account
        (from its own host), in the run folder, with no store keys and none of the service's
        hub credentials."""
        env = _child_env(extra) if who is None else _owner_env(extra)
        cwd = folder if who is None else folder / RUN_DIR
        forked_env = env if who is None else accounts.job_env(env, who)
        with open(folder / "log.txt", "ab") as log:  # the service's log: the server gets the fd
            pid = (
                self._warm_host(who).spawn(argv[2], argv[3:], cwd, forked_env, log.fileno(), flavor)
                if warm
                else None
            )
            if pid is not None:
                return Forked(pid)
            proc = start(argv, cwd, env, log, run_as=who)
        self._procs[proc.pid] = proc
        return proc

    def wait_ready(self, started: list[Started], folder: Path) -> list[dict[str, Any]]:
        deadline = time.monotonic() + READY_TIMEOUT_S
        found: dict[int, dict[str, Any]] = {}
        while len(found) < len(started):
            for i, (proc, ready) in enumerate(started):
                if i in found:
                    continue
                text = _read_ready(ready)
                if text is not None:
                    found[i] = json.loads(text)
                elif proc.poll() is not None:
                    code = "" if proc.returncode is None else f" with code {proc.returncode}"
                    raise DeploymentFailed(
                        _t("a serving process exited{code} before it was ready", code=code),
                        _tail(folder / "log.txt"),
                    )
            if time.monotonic() > deadline:
                raise DeploymentFailed(
                    _t("not ready after {READY_TIMEOUT_S:.0f} s", READY_TIMEOUT_S=READY_TIMEOUT_S),
                    _tail(folder / "log.txt"),
                )
            if len(found) < len(started):
                time.sleep(0.01)
        return [found[i] for i in range(len(started))]

    # -- the warm hosts --------------------------------------------------------------------------

    def _warm_host(self, who: RunAs | None) -> WarmHostClient:
        """The warm host that forks ``who``'s model servers (the service's own for None)."""
        if who is None:
            return self._warm
        host = self._warm_accounts.get(who.name)
        if host is None:
            folder = self.root / "warm" / who.name
            # the account makes its socket there; the log is root's, made now (no link)
            accounts.job_folder(folder, who, self.settings.data_dir, files=(WARM_LOG,))
            host = WarmHostClient(folder, _owner_env({}), who=who)
            self._warm_accounts[who.name] = host
        return host

    def started(self, who: RunAs | None) -> None:
        self._warm_host(who).start_wanted()

    def prewarm(self) -> bool:
        """Start the warm host now if models were served from this data dir before, so the
        first deploy after a restart is warm too; True when one was started."""
        if not self.root.is_dir() or self.settings.os_accounts:
            return False  # under os_accounts the model servers start cold, as their owners
        return self._warm.ensure()

    def quit_warm_hosts(self) -> None:
        """Ask every warm host this backend started to leave (tests, a clean shutdown)."""
        for host in (self._warm, *self._warm_accounts.values()):
            host.quit()

    # -- watch, end ----------------------------------------------------------------------------

    def identity(self, pid: int) -> dict[str, Any]:
        return identity(pid)

    def still_ours(self, info: dict[str, Any], host: str | None) -> dict[str, Any]:
        return still_ours_of(info, host)

    def alive(self, pid: int | None) -> bool:
        proc = self._procs.get(pid or 0)
        if proc is not None:
            return proc.poll() is None  # our child: a zombie is not alive
        return pid_alive(pid)

    def stop(self, info: dict[str, Any]) -> None:
        pids = [s["pid"] for s in info.get("servers", [])]
        if info.get("router"):
            pids.insert(0, info["router"]["pid"])
        for pid in pids:
            self._signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        while any(self.alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.02)
        for pid in pids:
            if self.alive(pid):
                self._signal(pid, signal.SIGKILL)
            self._reap(pid)
            sampled = self._watches.pop(pid, None)
            if sampled is not None:
                sampled.stop()

    def stop_pid(self, pid: int) -> None:
        self.stop({"servers": [{"pid": pid}]})

    def _signal(self, pid: int, sig: int) -> None:
        # each process leads its own session: the group holds it and anything it started
        if not self.alive(pid):
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)

    def _reap(self, pid: int) -> None:
        proc = self._procs.pop(pid, None)
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1)


class Forked:
    """A serving process the warm host forked: not our child, so its exit code is the host's."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return None if pid_alive(self.pid) else -1


def identity(pid: int) -> dict[str, Any]:
    """What proves later that ``pid`` is still this process (its start time, the boot)."""
    group = group_of(pid)
    return {"start_ticks": group.start_ticks, "boot_id": group.boot_id} if group else {}


def still_ours_of(info: dict[str, Any], host: str | None) -> dict[str, Any]:
    """The recorded router and servers whose pid still names the process that was started
    (records without a start time, from before it was kept, cannot tell: left alone)."""

    def ours(entry: dict[str, Any] | None) -> bool:
        if not entry or not entry.get("pid") or not entry.get("start_ticks"):
            return False
        pid = int(entry["pid"])
        return still_ours(Group(pid, pid, int(entry["start_ticks"]), entry["boot_id"], host or ""))

    router = info.get("router")
    return {
        "router": router if ours(router) else None,
        "servers": [s for s in info.get("servers", []) if ours(s)],
    }


def _child_env(extra: dict[str, str]) -> dict[str, str]:
    """This process's environment, with cube-lab importable, plus ``extra``."""
    env = dict(os.environ)
    env.pop(backend_auth.KEY_ENV, None)  # only the model servers get one, their own
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


def _owner_env(extra: dict[str, str]) -> dict[str, str]:
    """A model server's environment when it runs as its owner: ``_child_env`` without the
    service's hub credentials (``processes.start`` then takes the store's keys out)."""
    env = _child_env(extra)
    return {k: v for k, v in env.items() if not k.startswith(_SERVICE_ENV_PREFIXES)}


def share_read(top: Path, gid: int) -> None:
    """``top`` and everything in it ``root:<gid>``, folders 0750 and files 0640 (links are
    left as they are, only their owner changed)."""
    os.chown(top, 0, gid)
    os.chmod(top, 0o750)
    for here, dirs, files in os.walk(top):  # never into a link
        for name in dirs + files:
            path = os.path.join(here, name)
            os.chown(path, 0, gid, follow_symlinks=False)
            if not os.path.islink(path):
                os.chmod(path, 0o750 if name in dirs else 0o640)


def _read_ready(path: Path) -> str | None:
    """A ready file's text, or None while there is none. Not through a link, nor from a
    fifo or anything else but a plain file: under os_accounts the owner's account writes
    in the folder it lies in."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise DeploymentFailed(
            _t("cannot read the ready file {name}: {exc}", name=path.name, exc=exc)
        ) from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise DeploymentFailed(_t("the ready file {name} is not a plain file", name=path.name))
        return fh.read(4096).decode("utf-8", "replace")


def _tail(path: Path, lines: int = 30) -> str:
    if not path.is_file():
        return ""
    text = read_chunk(path, 0, 16 * 1024, True).text
    return "\n".join(text.splitlines()[-lines:])
