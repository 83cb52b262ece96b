"""The store on a real PostgreSQL server (a throwaway cluster on loopback).

Skipped, with the reason, where PostgreSQL's server binaries are missing;
`make test` installs Debian's postgresql so CI always runs these.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cube_lab.config import Settings
from cube_lab.errors import Conflict
from cube_lab.identity import Caller
from cube_lab.store.db import HEAD_REVISION
from cube_lab.workspace import Workspace


def _pg_bin() -> Path | None:
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "initdb").exists():
            return candidate
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries not found (apt-get install postgresql)")
    # Not under pytest's tmp dir: that is private to root, and the server may run as postgres.
    root = Path(tempfile.mkdtemp(prefix="cube-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    # PostgreSQL refuses to run as root: run the cluster as the 'postgres' user then.
    prefix: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    subprocess.run(
        [*prefix, str(bindir / "initdb"), "-D", str(data), "-U", "cube", "--auth=trust"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            *prefix,
            str(bindir / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(root / "log"),
            "-o",
            f"-p {port} -k {sock} -h 127.0.0.1",
            "-w",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            ready = subprocess.run(
                [str(bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(port)],
                capture_output=True,
            )
            if ready.returncode == 0:
                break
            time.sleep(0.2)
        subprocess.run(
            [str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "cube", "cube"],
            check=True,
            capture_output=True,
        )
        yield f"postgresql+psycopg://cube@127.0.0.1:{port}/cube"
    finally:
        subprocess.run(
            [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_ws(pg_url: str, tmp_path: Path) -> Iterator[Workspace]:
    ws = Workspace.open(Settings.resolve(tmp_path / "data", pg_url))
    with ws.store.engine.begin() as conn:  # each test starts from empty tables
        conn.exec_driver_sql(
            "TRUNCATE projects, project_members, registered_models, "
            "model_versions, model_aliases RESTART IDENTITY CASCADE"
        )
    ws.projects._ensured.clear()
    yield ws
    ws.close()


def _register(url: str, data_dir: str, source: str, count: int) -> list[int]:
    ws = Workspace.open(Settings.resolve(data_dir, url))
    try:
        return [
            ws.registry.register(Caller("alice"), name="m", path=Path(source)).version
            for _ in range(count)
        ]
    finally:
        ws.close()


def test_migrations_and_registry_on_postgres(pg_ws: Workspace, tmp_path: Path) -> None:
    assert pg_ws.store.current_revision() == HEAD_REVISION
    pg_ws.store.migrate()  # a second start is a no-op
    source = tmp_path / "w.bin"
    source.write_bytes(b"x" * 10)
    alice = Caller("alice")
    v = pg_ws.registry.register(
        alice, name="m", path=source, metrics={"acc": 0.5}, aliases=["staging"]
    )
    assert (v.version, v.aliases) == (1, ["staging"])
    pg_ws.registry.register(alice, name="m", path=source)
    with pytest.raises(Conflict):
        pg_ws.registry.set_alias(alice, "alice", "m", "staging", 2, expected_version=None)
    page = pg_ws.registry.list_models(alice, q="M")
    assert (page.total, page.models[0].latest_version, page.models[0].aliases) == (
        1,
        2,
        {"staging": 1},
    )
    assert pg_ws.registry.list_models(Caller("bob")).total == 0


def test_concurrent_processes_on_postgres(pg_ws: Workspace, pg_url: str, tmp_path: Path) -> None:
    source = tmp_path / "w.bin"
    source.write_bytes(b"x" * 10)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(3) as pool:
        chunks = pool.starmap(
            _register, [(pg_url, str(pg_ws.settings.data_dir), str(source), 6) for _ in range(3)]
        )
    assert sorted(n for chunk in chunks for n in chunk) == list(range(1, 19))
