"""A throwaway hub on free loopback ports inside one folder, for tests, benchmarks and UI tests:
the real JupyterHub, configurable-http-proxy, cube-admin service and local spawner, configured
by ``config.configure`` from a settings file written here, plus one extra service whose token
(``DevHub.token``) may manage users, servers and groups - what a test drives the hub with.

    python -m cube_lab.hub.devhub --root /tmp/h --port 8000   # foreground, Ctrl-C stops it
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .config import ADMIN_SCOPE, HUB_FOLDER, ONE_TIME_FILE

DRIVER = "cube-test-driver"
DEFAULT_SETTINGS: dict[str, Any] = {
    "shape": "local",
    "admin_users": ["admin"],
    "idle_timeout": 0,
    "profiles": {
        "cpu": {"display_name": "CPU", "cpu": 1, "memory": "1G", "default": True},
        "gpu-1": {"display_name": "1 GPU", "cpu": 2, "accelerator": "nvidia-gpu", "count": 1},
    },
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_ports(count: int, taken: int | None = None) -> list[int]:
    """``count`` distinct free loopback ports, none of them ``taken``. Every socket stays bound
    until all are picked: a port closed before the next is asked for may come back as the next
    (the proxy and its API on one port: EADDRINUSE, the hub exits)."""
    with contextlib.ExitStack() as stack:
        found: list[int] = []
        while len(found) < count:
            sock = stack.enter_context(socket.socket())
            sock.bind(("127.0.0.1", 0))
            bound = int(sock.getsockname()[1])
            if bound != taken:
                found.append(bound)
        return found


def ensure_proxy() -> None:
    """npm install configurable-http-proxy into hub/node_modules when it is missing."""
    if (HUB_FOLDER / "node_modules" / ".bin" / "configurable-http-proxy").exists():
        return
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--silent"],
        cwd=HUB_FOLDER,
        check=True,
        capture_output=True,
    )


def child_env(root: Path, os_accounts: bool = False) -> dict[str, str]:
    """The hub's environment: nothing under the real $HOME or Jupyter folders; per-user OS
    accounts (when run as root) only when asked for."""
    env = dict(os.environ)
    env["CUBE_LAB_OS_ACCOUNTS"] = "1" if os_accounts else "0"
    env.update(
        {
            "HOME": str(root / "home"),
            "JUPYTER_CONFIG_DIR": str(root / "jconfig"),
            "JUPYTER_DATA_DIR": str(root / "jdata"),
            "JUPYTER_RUNTIME_DIR": str(root / "jruntime"),
            "IPYTHONDIR": str(root / "ipython"),
            "MLFLOW_DISABLE_TELEMETRY": "true",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        }
    )
    for var in ("CUBE_LAB_DATA_DIR", "CUBE_LAB_DB_URL", "CUBE_HUB_DATA_DIR", "JUPYTERHUB_USER"):
        env.pop(var, None)
    (root / "home").mkdir(parents=True, exist_ok=True)
    return env


@dataclass
class DevHub:
    root: Path
    url: str  # the public URL (the proxy)
    token: str  # the driver service's token
    log: Path
    settings_file: Path
    proc: subprocess.Popen[bytes] | None = None
    children: list[int] = field(default_factory=list)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    def request(
        self, method: str, path: str, body: Any = None, *, token: str | None = None
    ) -> tuple[int, Any]:
        """(status, parsed JSON or text) of a request to the public URL."""
        req = urllib.request.Request(
            self.url.rstrip("/") + path,
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={"Authorization": f"token {token or self.token}"},
        )
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")

    def hub(self, method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        return self.request(method, f"/hub/api{path}", body, **kw)

    def admin(self, method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        return self.request(method, f"/services/cube-admin/api/{path}", body, **kw)

    def user_token(self, name: str) -> str:
        status, body = self.hub("POST", f"/users/{name}/tokens", {"note": "devhub"})
        assert status == 201, body
        return body["token"]

    def spawn(
        self, name: str, options: Mapping[str, Any] | None = None, timeout: float = 120
    ) -> Any:
        """Start ``name``'s server and wait until it is ready; the hub's answer if it refused."""
        status, body = self.hub("POST", f"/users/{name}/server", dict(options or {}))
        if status not in (201, 202):
            return status, body
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            _, user = self.hub("GET", f"/users/{name}")
            server = (user.get("servers") or {}).get("")
            if server and server.get("ready"):
                return 201, server
            if not server:
                return 500, f"{name}'s server stopped while starting; see {self.log}"
            time.sleep(0.3)
        raise TimeoutError(f"{name}'s server not ready after {timeout} s; see {self.log}")

    def stop_server(self, name: str, timeout: float = 60) -> None:
        self.hub("DELETE", f"/users/{name}/server")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            _, user = self.hub("GET", f"/users/{name}")
            if not (user.get("servers") or {}):
                return
            time.sleep(0.3)
        raise TimeoutError(f"{name}'s server did not stop")

    def admin_password(self) -> str | None:
        match = re.search(r"one-time password:\s+(\S+)", self.log.read_text(errors="replace"))
        return match.group(1) if match else None

    def stop(self, timeout: float = 20) -> None:
        """Stop every server, then the hub; whatever it started and left is killed."""
        if self.proc is None:
            return
        try:
            _, users = self.hub("GET", "/users?state=active")
            for user in users if isinstance(users, list) else []:
                self.hub("DELETE", f"/users/{user['name']}/server")
        except OSError:
            pass
        started = _descendants(self.proc.pid)
        # the services and the proxy first: the hub would wait 30 s for each to obey SIGINT
        for pid in started:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for pid in started:  # anything that ignored SIGTERM
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc = None


def _stop_with_parent() -> None:
    """In the hub's process before it starts: SIGTERM it when its parent dies, even by
    SIGKILL (Playwright ends its web server so), so no hub outlives a test run."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Linux /proc; elsewhere none are found)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # "pid (comm) state ppid ...": comm may hold spaces, so split after the last ')'
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def write_files(
    root: Path, settings: Mapping[str, Any] | None = None, port: int | None = None
) -> tuple[Path, Path, str]:
    """The settings file and a jupyterhub_config.py that applies it plus the driver service."""
    root.mkdir(parents=True, exist_ok=True)
    merged = {**DEFAULT_SETTINGS, **dict(settings or {})}
    public, hub_port, proxy_api, admin, service = free_ports(5, taken=port)
    merged.update(
        {
            "bind_url": f"http://127.0.0.1:{port or public}",
            "hub_bind_url": f"http://127.0.0.1:{hub_port}",
            "proxy_api_url": f"http://127.0.0.1:{proxy_api}",
            "admin_url": f"http://127.0.0.1:{admin}",
            "service_url": f"http://127.0.0.1:{service}",
            "data_dir": str(root / "data"),
        }
    )
    settings_file = root / "cube_hub.yaml"
    _write_private(settings_file, yaml.safe_dump(merged, sort_keys=False))
    token = secrets.token_hex(24)
    config = root / "jupyterhub_config.py"
    driver_scopes = [
        "admin:users",
        "admin:servers",
        "tokens",
        "admin:groups",
        "list:users",
        "read:users",
        "access:servers",
        "access:services",
        ADMIN_SCOPE,
    ]
    _write_private(
        config,
        "from cube_lab.hub.config import configure\n"
        "from cube_lab.hub.settings import load\n"
        "c = get_config()  # noqa: F821\n"
        f"configure(c, load({str(settings_file)!r}))\n"
        "c.JupyterHub.cleanup_servers = True  # a throwaway hub takes its servers with it\n"
        f"c.JupyterHub.services.append({{'name': {DRIVER!r}, 'api_token': {token!r}}})\n"
        f"c.JupyterHub.load_roles.append({{'name': {DRIVER!r}, 'scopes': {driver_scopes!r},"
        f" 'services': [{DRIVER!r}]}})\n",
    )
    return settings_file, config, token


def _write_private(path: Path, text: str) -> None:
    """Write ``path`` readable by its owner alone (0600, whatever the umask, an older file's
    mode too): the hub's root is one user accounts pass through, and these files hold the
    driver service's admin token, the admin's one-time password (the log) and the database."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        os.fchmod(fd, 0o600)
        out.write(text)


def start(
    root: Path,
    settings: Mapping[str, Any] | None = None,
    *,
    port: int | None = None,
    timeout: float = 120,
    os_accounts: bool = False,
    one_time_admin_password: bool = False,
) -> DevHub:
    """Start a throwaway hub. Its admin's printed password is theirs to keep (tests and UI tests
    log in with it), unless ``one_time_admin_password``: then, as on a real hub, every hub page
    sends the admin to change it first."""
    ensure_proxy()
    settings_file, config, token = write_files(root, settings, port)
    url = yaml.safe_load(settings_file.read_text())["bind_url"]
    log = root / "hub.log"
    log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.fchmod(log_fd, 0o600)  # it holds the admin's one-time password
    try:
        proc = subprocess.Popen(
            [str(Path(sys.executable).with_name("jupyterhub")), "-f", str(config)],
            cwd=root,
            env=child_env(root, os_accounts),
            stdout=log_fd,  # a hub restarted on the same folder appends
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_stop_with_parent,
        )
    finally:
        os.close(log_fd)  # the hub holds its own copy
    hub = DevHub(root, url, token, log, settings_file, proc)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the hub exited with {proc.returncode}; see {log}")
        try:
            status, _ = hub.admin("GET", "groups")
            if status == 200:  # the proxy, the hub and the cube-admin service all answer
                if not one_time_admin_password:
                    (hub.data_dir / "hub" / ONE_TIME_FILE).unlink(missing_ok=True)
                return hub
        except OSError:
            pass
        time.sleep(0.5)
    hub.stop()
    raise TimeoutError(f"the hub did not come up in {timeout} s; see {log}")


def main() -> None:
    parser = argparse.ArgumentParser(description="Run a throwaway cube-lab hub in a folder.")
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    hub = start(args.root.resolve(), port=args.port)
    print(f"cube-lab dev hub at {hub.url} (log: {hub.log})", flush=True)
    password = hub.admin_password()
    if password:
        print(f"admin password: {password}", flush=True)
    stop = signal.Signals.SIGTERM

    def finish(*_: Any) -> None:
        hub.stop()
        sys.exit(0)

    signal.signal(stop, finish)
    signal.signal(signal.SIGINT, finish)
    while hub.proc is not None and hub.proc.poll() is None:
        time.sleep(1)


if __name__ == "__main__":
    main()
