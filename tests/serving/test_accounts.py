"""Deployments under per-user OS accounts (the local hub shape, ``Settings.os_accounts``): the
model servers, which load a user's pickle (arbitrary code), run as the deployment owner's
account, from a copy of the model it may read, without the store's keys in their
environment; the router (no user code) stays the service's user.

As root only: the tests create a real system account (``useradd``) with a per-run name and
remove it afterwards; elsewhere they are skipped, with the reason.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import pickle
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from serving_util import stop_serving

from cube_lab import accounts
from cube_lab.config import Settings
from cube_lab.identity import Caller
from cube_lab.workspace import Workspace

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("useradd") is None,
    reason="running model servers as their owner's system account needs root and useradd",
)


class Probe:
    """Pickled, it unpickles by running code, as any pickle may: the code writes who loaded
    it (its uid) and whether it could open the store's database and artifacts into its
    working folder, then returns a real model."""

    def __init__(self, model: Any, db: Path, artifacts: Path) -> None:
        self.blob = pickle.dumps(model)
        self.db, self.artifacts = str(db), str(artifacts)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        code = (
            "[open('loaded-by.json', 'w').write(__import__('json').dumps({"
            "'uid': __import__('os').getuid(),"
            f"'db': __import__('os').access({self.db!r}, __import__('os').R_OK),"
            f"'artifacts': __import__('os').access({self.artifacts!r}, __import__('os').R_OK),"
            "'cwd': __import__('os').getcwd()})),"
            f" __import__('pickle').loads({self.blob!r})][-1]"
        )
        return (eval, (code,))


def _opens(path: str) -> bool:
    try:
        with open(path, "rb"):
            return True
    except OSError:
        return False


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Workspace, Caller, Path, Any]]:
    """A workspace with os_accounts on, in a folder other accounts may pass through, and a
    hub user (a mixed-case, dotted name: escaped into its account) with a registered model."""
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    base = Path(tempfile.mkdtemp(prefix="cube-serving-accounts-", dir="/tmp"))
    os.chmod(base, 0o711)
    umask = os.umask(0o022)
    os.umask(umask)
    name = f"TServe.{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("HOME", str(base))
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    ws = Workspace.open(replace(Settings.resolve(base / "store"), os_accounts=True))
    # keys the service holds: none may reach a model server
    monkeypatch.setenv("CUBE_LAB_DB_URL", ws.settings.db_url)
    monkeypatch.setenv("CUBE_LAB_DATA_DIR", str(ws.settings.data_dir))
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "the-service-s-own-hub-token")
    caller = Caller(name)
    try:
        who = accounts.run_as(name)
        if not accounts.runnable_by(sys.executable, who):
            pytest.skip(f"{sys.executable} is not open to other accounts (give /root o+x)")
        x, y = load_iris(return_X_y=True)
        model = LogisticRegression(max_iter=500).fit(x, y)
        settings = ws.settings
        probe = base / "model.pkl"
        probe.write_bytes(
            pickle.dumps(Probe(model, settings.data_dir / "cube-lab.db", settings.artifacts_dir))
        )
        ws.registry.register(caller, name="iris", path=probe, flavor="sklearn")
        yield ws, caller, base, (x, model, who)
    finally:
        try:
            stop_serving(ws, caller)
        finally:
            ws.close()
            accounts.remove_user(name)
            os.umask(umask)
            shutil.rmtree(base, ignore_errors=True)


def _status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def _predict(port: int, rows: list[list[float]]) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        body = json.dumps({"instances": rows}).encode()
        conn.request("POST", "/predict", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_model_servers_run_as_the_owner_without_the_store(env: Any) -> None:
    ws, caller, _, (x, model, who) = env
    started = time.monotonic()
    dep = ws.serving.deploy(caller, "iris:1", name="iris", auth="none")
    print(f"deploy-to-ready as the owner (cold): {time.monotonic() - started:.2f}s")
    assert dep.status == "running" and dep.endpoint
    port = int(dep.endpoint.rsplit(":", 1)[1])
    rows = x[[0, 60, 120]].tolist()
    status, answer = _predict(port, rows)
    assert status == 200, answer
    assert answer["predictions"] == model.predict(x[[0, 60, 120]]).tolist()

    servers = [p for p in dep.processes if p["role"] == "server"]
    router = next(p for p in dep.processes if p["role"] == "router")
    assert servers
    data_dir = ws.settings.data_dir
    for server in servers:
        uids = _status(server["pid"])["Uid"].split()
        assert uids == [str(who.uid)] * 4, uids  # real, effective, saved, filesystem
        seen = _environ(server["pid"])
        for key in ("CUBE_LAB_DB_URL", "CUBE_LAB_DATA_DIR", "JUPYTERHUB_API_TOKEN"):
            assert key not in seen, key
        assert seen["HOME"] == who.home and seen["USER"] == who.name
        # the path it was given is a copy of its own, not the store's artifact
        argv = Path(f"/proc/{server['pid']}/cmdline").read_bytes().split(b"\0")
        path = Path(argv[argv.index(b"--path") + 1].decode())
        assert ws.settings.artifacts_dir not in path.parents
        assert path.stat().st_uid == 0 and path.stat().st_gid == who.gid
        assert path.stat().st_mode & 0o777 == 0o640  # the owner reads it, cannot change it
    # the router loads no user code: it stays the service's user (root)
    assert _status(router["pid"])["Uid"].split()[0] == "0"

    # the pickle's own code ran as the owner and could not open the store
    folder = Path(ws.serving._folder(caller, "iris", None)[1])
    loaded = json.loads((folder / "run" / "loaded-by.json").read_text())
    assert loaded["uid"] == who.uid
    assert loaded["db"] is False and loaded["artifacts"] is False
    assert Path(loaded["cwd"]) == folder / "run"
    assert (data_dir / "cube-lab.db").stat().st_mode & 0o077 == 0  # root's alone

    # the backend key still guards the model server: straight to its port without the key
    status, _ = _predict(servers[0]["port"], rows)
    assert status in (401, 403)

    # no warm host is shared across accounts: the service's own is never started
    assert not (ws.serving.root / "warmhost.sock").exists()
    ws.serving.undeploy(caller, "iris")


def _wait_for_host(sock: Path, uid: int) -> dict[str, Any]:
    from cube_lab.serving.warmhost import ask

    deadline = time.monotonic() + 90
    while (hello := ask(sock, {"op": "hello"}, peer_uid=uid)) is None:
        assert time.monotonic() < deadline, "the owner's warm host never answered"
        time.sleep(0.2)
    return hello


def test_later_deploys_fork_from_the_owners_own_warm_host(env: Any) -> None:
    ws, caller, _, (x, model, who) = env
    ws.serving.deploy(caller, "iris:1", name="iris", auth="none")  # cold: the host starts after
    sock = ws.serving.root / "warm" / who.name / "warmhost.sock"
    host = _wait_for_host(sock, who.uid)
    assert _status(host["pid"])["Uid"].split() == [str(who.uid)] * 4
    st = sock.stat()
    assert st.st_uid == who.uid and st.st_mode & 0o077 == 0  # the account's alone

    started = time.monotonic()
    dep = ws.serving.deploy(caller, "iris:1", name="iris-warm", auth="none")
    print(f"deploy-to-ready as the owner (warm): {time.monotonic() - started:.2f}s")
    folder = Path(ws.serving._folder(caller, "iris-warm", None)[1])
    servers = [p for p in dep.processes if p["role"] == "server"]
    assert servers
    for server in servers:
        status = _status(server["pid"])
        assert status["PPid"] == str(host["pid"])  # forked by the owner's host
        assert status["Uid"].split() == [str(who.uid)] * 4
        seen = _environ(server["pid"])
        for key in ("CUBE_LAB_DB_URL", "CUBE_LAB_DATA_DIR", "JUPYTERHUB_API_TOKEN"):
            assert key not in seen, key
        assert seen["HOME"] == who.home
        assert os.readlink(f"/proc/{server['pid']}/cwd") == str(folder / "run")
        # its output goes to the deployment's log, which stays the service's file
        assert os.readlink(f"/proc/{server['pid']}/fd/1") == str(folder / "log.txt")
    assert (folder / "log.txt").stat().st_uid == 0
    status, answer = _predict(int(dep.endpoint.rsplit(":", 1)[1]), x[:3].tolist())
    assert status == 200 and answer["predictions"] == model.predict(x[:3]).tolist()
    ws.serving.undeploy(caller, "iris-warm")
    ws.serving.undeploy(caller, "iris")


def test_a_host_of_another_account_at_the_owners_socket_is_not_used(env: Any) -> None:
    """What the account could do to its host's folder: put there a socket (or a link to
    one) that another account's process answers. The service asks nothing of it."""
    import socket
    import threading

    from cube_lab.serving.warmhost import fingerprint

    ws, caller, _, (x, _, who) = env
    ws.serving.deploy(caller, "iris:1", name="iris", auth="none")
    sock = ws.serving.root / "warm" / who.name / "warmhost.sock"
    _wait_for_host(sock, who.uid)
    ws.serving.quit_warm_hosts()
    deadline = time.monotonic() + 30
    while sock.exists():
        assert time.monotonic() < deadline
        time.sleep(0.1)

    asked: list[bytes] = []
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(sock))  # this process: root, not the owner
    listener.listen(8)
    listener.settimeout(0.2)
    stop = threading.Event()

    def answer() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    data = conn.recv(65536)
                except OSError:
                    continue
                asked.append(data)
                reply = {"fingerprint": fingerprint(), "pid": 1}  # a lie: "forked" pid 1
                with contextlib.suppress(OSError):
                    conn.sendall(json.dumps(reply).encode() + b"\n")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        dep = ws.serving.deploy(caller, "iris:1", name="iris-fake", auth="none")
    finally:
        stop.set()
        thread.join()
        listener.close()
    assert not any(b'"spawn"' in data for data in asked), asked
    servers = [p for p in dep.processes if p["role"] == "server"]
    assert servers and all(p["pid"] != 1 for p in servers)
    for server in servers:
        assert _status(server["pid"])["Uid"].split()[0] == str(who.uid)
    status, _ = _predict(int(dep.endpoint.rsplit(":", 1)[1]), x[:1].tolist())
    assert status == 200
    ws.serving.undeploy(caller, "iris-fake")
    ws.serving.undeploy(caller, "iris")


def test_a_switched_version_runs_as_the_owner_too(env: Any) -> None:
    ws, caller, base, (x, model, who) = env
    dep = ws.serving.deploy(caller, "iris:1", name="iris", auth="none")
    first = {p["pid"] for p in dep.processes if p["role"] == "server"}
    ws.registry.register(caller, name="iris", path=base / "model.pkl", flavor="sklearn")
    dep = ws.serving.switch(caller, "iris", "2")
    assert dep.version == 2
    servers = [p for p in dep.processes if p["role"] == "server"]
    assert servers and not first & {p["pid"] for p in servers}
    for server in servers:
        assert _status(server["pid"])["Uid"].split()[0] == str(who.uid)
    status, answer = _predict(int(dep.endpoint.rsplit(":", 1)[1]), x[:2].tolist())
    assert status == 200 and answer["predictions"] == model.predict(x[:2]).tolist()
    ws.serving.undeploy(caller, "iris")


def test_a_model_file_the_owner_cannot_load_fails_the_deploy_with_its_log(env: Any) -> None:
    ws, caller, base, _ = env
    broken = base / "broken.pkl"
    broken.write_bytes(b"not a pickle")
    ws.registry.register(caller, name="broken", path=broken, flavor="sklearn")
    with pytest.raises(Exception) as failed:
        ws.serving.deploy(caller, "broken", name="broken")
    assert getattr(failed.value, "status", None) == 422
    assert ws.serving.get(caller, "broken").status == "failed"
