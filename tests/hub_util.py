"""Shared by the tests that run a real hub (local shape) with a few users: start and stop it,
call the cube-lab API through a user's server, wait for a run.

Where the machine allows it (root, and a Python and checkout other accounts can run:
``.ci/run`` opens them) each user's server and jobs run as their own OS account.

A hub takes 10-30 s to start (with its users' servers), so each module shares one (a
module-scoped fixture) among the tests that can: every test passes alone and in any order, so
each makes what it needs under its own names, and a test that changes what the others see
(a group's quota, a running server) puts it back or gets its own. Only a test that needs a
fresh hub (it kills the hub, or checks what a first start leaves) starts one of its own with
``bare_hub`` or ``running_hub``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from cube_lab import accounts
from cube_lab.hub import devhub

REPO = Path(__file__).resolve().parents[1]


def os_accounts_usable() -> bool:
    """Root, and this Python and checkout open to other accounts: then each user's server and
    jobs run as their own OS account."""
    if os.geteuid() != 0:
        return False
    paths = [Path(os.path.realpath(sys.executable)), REPO]
    return all(p.stat().st_mode & 0o001 for path in paths for p in path.parents)


OS_ACCOUNTS = os_accounts_usable()
needs_accounts = pytest.mark.skipif(
    not OS_ACCOUNTS,
    reason="per-user OS accounts need root and a Python other accounts can run "
    "(chmod o+x the folders above it, as .ci/run does)",
)


@contextlib.contextmanager
def bare_hub(
    prefix: str, settings: Mapping[str, Any] | None = None, **options: Any
) -> Iterator[devhub.DevHub]:
    """A throwaway hub with ``settings`` (``devhub.start``'s ``options``), no users made;
    skips the test when the proxy cannot be installed."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        running = devhub.start(root, dict(settings or {}), **options)
    except FileNotFoundError as exc:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"cannot install configurable-http-proxy: {exc}")
    try:
        yield running
    finally:
        stop_hub(running)
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def running_hub(
    prefix: str,
    users: Iterable[str],
    *,
    groups: Mapping[str, list[str]] | None = None,
    spawn: bool = False,
) -> Iterator[devhub.DevHub]:
    """A throwaway hub with ``users`` (and hub ``groups`` of them), their servers started
    when ``spawn``; with OS accounts where the machine allows them. Skips the test when the
    proxy cannot be installed."""
    users = list(users)
    root = Path(tempfile.mkdtemp(prefix=prefix))
    root.chmod(0o711)  # the users' accounts pass through to their homes
    try:
        running = devhub.start(root, {}, os_accounts=OS_ACCOUNTS)
    except FileNotFoundError as exc:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"cannot install configurable-http-proxy: {exc}")
    try:
        for name in users:
            running.hub("POST", f"/users/{name}")
        for group, members in (groups or {}).items():
            running.hub("POST", f"/groups/{group}")
            status, body = running.hub("POST", f"/groups/{group}/users", {"users": members})
            assert status == 200, body
        if spawn:
            spawn_servers(running, users)
        yield running
    finally:
        stop_hub(running)
        shutil.rmtree(root, ignore_errors=True)
        if OS_ACCOUNTS:  # the system accounts the hub made for the users and groups
            for name in users:
                accounts.remove_user(name)
            for group in groups or {}:
                accounts.remove_group(group)


def _each(work: Any, names: list[str]) -> list[Any]:
    """``work(name)`` for every name at once (the hub starts and stops servers side by side;
    one after the other, each waits out the last: 5-10 s a server on a busy machine)."""
    if len(names) < 2:
        return [work(name) for name in names]
    with ThreadPoolExecutor(len(names)) as pool:
        return list(pool.map(work, names))


def spawn_servers(
    hub: devhub.DevHub, users: Iterable[str], options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Start each user's server (the cpu profile unless ``options``), all at once, and wait
    until every one is ready; the hub's record of each, by name."""
    names = list(users)
    answers = _each(lambda name: hub.spawn(name, dict(options or {"profile": "cpu"})), names)
    started = {}
    for name, (status, server) in zip(names, answers, strict=True):
        assert status == 201, f"{name}: {server}"
        started[name] = server
    return started


def running_servers(
    hub: devhub.DevHub, users: Iterable[str], options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Each user's running server, started (as ``spawn_servers``) where a test before stopped
    it or none ran yet: what tests that share a hub ask for instead of the servers a module
    started once."""
    found, missing = {}, []
    for name in users:
        status, user = hub.hub("GET", f"/users/{name}")
        assert status == 200, user
        server = (user.get("servers") or {}).get("")
        if server and server.get("ready") and not server.get("pending"):
            found[name] = server
        else:
            if server:  # stopping: wait until it is gone before starting it again
                hub.stop_server(name)
            missing.append(name)
    return {**found, **spawn_servers(hub, missing, options)}


def stop_hub(hub: devhub.DevHub) -> None:
    """Stop every running server at once, then the hub (``DevHub.stop`` stops them one by
    one, each in turn waiting for its server to end)."""
    with contextlib.suppress(OSError):
        _, active = hub.hub("GET", "/users?state=active")
        names = [u["name"] for u in active if u.get("servers")] if isinstance(active, list) else []
        with contextlib.suppress(TimeoutError):
            _each(hub.stop_server, names)
    hub.stop()


def login(client: httpx.Client, username: str, password: str | None) -> httpx.Response:
    """Post the hub's login form as a browser does: with the form's own hidden _xsrf field."""
    page = client.get("/hub/login")
    assert page.status_code == 200
    xsrf = re.search(r'name="_xsrf" value="([^"]*)"', page.text).group(1)
    assert xsrf, "the login form carries no XSRF token"
    form = {"username": username, "password": password or "", "_xsrf": xsrf}
    return client.post("/hub/login", data=form)


def xsrf_of(page: httpx.Response) -> str:
    found = re.search(r'name="_xsrf" value="([^"]*)"', page.text)
    assert found, page.text[:500]
    return found.group(1)


def change_password(client: httpx.Client, old: str, new: str, **headers: str) -> httpx.Response:
    page = client.get("/hub/change-password", headers=headers)
    assert page.status_code == 200, page.text[:300]
    form = {"old_password": old, "new_password": new, "new_password_confirmation": new,
            "_xsrf": xsrf_of(page)}  # fmt: skip
    return client.post("/hub/change-password", data=form, headers=headers)


def cube(hub: devhub.DevHub, owner: str, path: str, token: str, **kw: Any) -> tuple[int, Any]:
    """A cube-lab API request through ``owner``'s server, with ``token``."""
    return hub.request(
        kw.pop("method", "GET"), f"/user/{owner}/cube/api/v1/{path}", token=token, **kw
    )


def home(hub: devhub.DevHub, user: str) -> Path:
    return hub.data_dir / "users" / user


def wait_for_run(
    hub: devhub.DevHub, token: str, run_id: str, owner: str = "alice", timeout: float = 180
) -> dict[str, Any]:
    """The pipeline run once it has ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, found = cube(hub, owner, f"pipelines/runs/{run_id}", token)
        assert status == 200, found
        if found["status"] not in ("queued", "pending", "running"):
            return found
        time.sleep(0.5)
    raise TimeoutError(f"run {run_id} still {found['status']}")
