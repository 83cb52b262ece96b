"""Concurrent registrations of one name get distinct versions, across threads and processes."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from cube_lab.config import Settings
from cube_lab.identity import Caller
from cube_lab.workspace import Workspace


def _register_many(data_dir: str, source: str, count: int, user: str) -> list[int]:
    ws = Workspace.open(Settings.resolve(data_dir))  # its own engine, like a second server
    try:
        caller = Caller(user)
        return [
            ws.registry.register(caller, name="shared", path=Path(source), project="team").version
            for _ in range(count)
        ]
    finally:
        ws.close()


def _setup(ws: Any, tmp_path: Path) -> Path:
    ws.projects.create(Caller("alice"), "team")
    ws.projects.set_member(Caller("alice"), "team", "bob", "member")
    ws.projects.accept(Caller("bob"), "team")
    source = tmp_path / "w.bin"
    source.write_bytes(b"w" * 4096)
    return source


def test_threads_get_distinct_versions(ws: Any, tmp_path: Path) -> None:
    source = _setup(ws, tmp_path)
    with ThreadPoolExecutor(8) as pool:
        futures = [
            pool.submit(ws.registry.register, Caller(u), name="shared", path=source, project="team")
            for u in ["alice", "bob"] * 10
        ]
        numbers = sorted(f.result().version for f in futures)
    assert numbers == list(range(1, 21))


def test_two_processes_get_distinct_versions(ws: Any, tmp_path: Path) -> None:
    source = _setup(ws, tmp_path)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(3) as pool:
        results = pool.starmap(
            _register_many,
            [
                (str(ws.settings.data_dir), str(source), 8, user)
                for user in ("alice", "bob", "alice")
            ],
        )
    numbers = sorted(n for chunk in results for n in chunk)
    assert numbers == list(range(1, 25))
    detail = ws.registry.get_model(Caller("bob"), "team", "shared")
    assert detail.version_count == 24
    for v in detail.versions:  # every row has its file, and every file its row
        assert ws.registry.download(Caller("bob"), "team", "shared", v.version).path.is_file()
    stored = list((ws.settings.artifacts_dir / "models").rglob("w.bin"))
    assert len(stored) == 24
