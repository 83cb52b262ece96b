"""Knowledge bases under a real hub (local shape): the lab server forwards the kb routes to
the cube-lab service, which resolves paths in the user's home, runs the ingest and keeps its
progress and the index in its own data dir; another user gets a 404."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from cube_lab.hub import devhub
from tests.hub_util import cube, home, running_hub
from tests.kb.test_service import DOCS, RARE, make_docs

pytestmark = pytest.mark.hub

USERS = ("alice", "bob")


@pytest.fixture(scope="module")
def hub() -> Iterator[devhub.DevHub]:
    with running_hub("cube-hub-kb-", USERS, spawn=True) as running:
        yield running


def _finished(hub: devhub.DevHub, token: str, where: str) -> dict[str, Any]:
    deadline = time.monotonic() + 180
    while True:
        status, record = cube(hub, "alice", where, token)
        assert status == 200, record
        if record["status"] not in ("queued", "running"):
            return record
        assert time.monotonic() < deadline, record
        time.sleep(0.2)


def test_kb_through_the_lab_server_at_the_service(hub: devhub.DevHub) -> None:
    tokens = {name: hub.user_token(name) for name in USERS}
    alice = tokens["alice"]
    folder = home(hub, "alice")
    make_docs(folder / "docs")
    body = {"name": "docs", "chunk_size": 64, "overlap": 8}
    status, view = cube(hub, "alice", "kb", alice, method="POST", body=body)
    assert status == 201 and view["project"] == "alice", view

    where = "kb/alice/docs"
    status, started = cube(
        hub, "alice", f"{where}/sources", alice, method="POST", body={"paths": ["docs"]}
    )
    assert status == 202 and started["files_total"] == len(DOCS), started
    record = _finished(hub, alice, f"{where}/ingests/{started['id']}")
    assert (record["status"], record["files_done"], record["chunks"]) == (
        "succeeded",
        len(DOCS),
        len(DOCS),
    ), record
    status, found = cube(
        hub, "alice", f"{where}/search", alice, method="POST", body={"query": RARE, "k": 1}
    )
    assert status == 200 and found["hits"][0]["source"] == "docs/garden.md", found

    status, refused = cube(
        hub, "alice", f"{where}/sources", alice, method="POST", body={"paths": ["../bob"]}
    )
    assert status == 400 and "outside" in refused["error"], refused
    status, _ = cube(hub, "bob", where, tokens["bob"])
    assert status == 404
    status, listed = cube(hub, "bob", "kb", tokens["bob"])
    assert status == 200 and listed["knowledge_bases"] == []

    # the index and the ingest records are the service's, nothing is in alice's home
    service_state = hub.data_dir / "cube-lab" / "kb"
    assert len(list(service_state.rglob("kb.json"))) == 1
    assert len(list(service_state.rglob("ingests/*.json"))) == 1
    assert not list(folder.rglob("kb.json"))
