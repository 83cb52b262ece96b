"""A project group's shared folder on a real hub (local shape): ``projects/<group>`` in each
member's home is a link to ``<data_dir>/projects/<group>``; the cube-lab service takes paths
that lead there from members only, and a pipeline there runs inside that folder.

With OS accounts (root, and a Python every account can run) the nodes run as the member's
account, reaching the folder through the project's OS group; elsewhere as the hub's user.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cube_lab import accounts
from cube_lab.hub import devhub
from cube_lab.names import folder_name
from tests.hub_util import OS_ACCOUNTS, cube, running_hub
from tests.pipeline_util import node, script, write_pipeline

pytestmark = pytest.mark.hub

USERS = ("alice", "bob")
GROUP = "ml-team"


@pytest.fixture(scope="module")
def hub() -> Iterator[devhub.DevHub]:
    groups = {GROUP: ["alice"]}
    with running_hub("cube-hub-projects-", USERS, groups=groups, spawn=True) as running:
        yield running


@pytest.fixture(scope="module")
def tokens(hub: devhub.DevHub) -> dict[str, str]:
    return {name: hub.user_token(name) for name in USERS}


def shared_folder(hub: devhub.DevHub) -> Path:
    return hub.data_dir / "projects" / folder_name(GROUP)


def link_in_home(hub: devhub.DevHub, user: str) -> str:
    """The name of the link to the group's folder in ``user``'s ``projects/``."""
    links = hub.data_dir / "users" / user / "projects"
    for link in links.iterdir():
        if link.is_symlink() and link.resolve() == shared_folder(hub).resolve():
            return f"projects/{link.name}"
    raise AssertionError(f"no link to {shared_folder(hub)} in {links}")


def test_a_members_pipeline_in_the_project_folder_runs_there(
    hub: devhub.DevHub, tokens: dict[str, str]
) -> None:
    folder = shared_folder(hub)
    step = script(folder, "where.py", "import os\nprint('cwd', os.getcwd(), 'uid', os.getuid())\n")
    write_pipeline(folder, [node("where", filename=step)], filename="flow.pipeline")
    for made in (folder / step, folder / "flow.pipeline"):
        os.chmod(made, 0o664)  # as a member would leave them: the group's to read
    path = f"{link_in_home(hub, 'alice')}/flow.pipeline"

    status, checked = cube(
        hub, "alice", "pipelines/validate", tokens["alice"], method="POST", body={"path": path}
    )
    assert status == 200 and checked["valid"], checked
    status, run = cube(
        hub, "alice", "pipelines/runs", tokens["alice"], method="POST", body={"path": path}
    )
    assert status == 201, run
    assert run["pipeline_path"] == path  # named as the member's file browser names it
    deadline = time.monotonic() + 120
    while run["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, run
        time.sleep(0.5)
        status, run = cube(hub, "alice", f"pipelines/runs/{run['id']}", tokens["alice"])
        assert status == 200, run
    assert run["status"] == "succeeded", json.dumps(run)[:3000]
    status, log = cube(hub, "alice", f"pipelines/runs/{run['id']}/nodes/where/log", tokens["alice"])
    assert status == 200
    assert f"cwd {folder.resolve()}" in log["text"], log
    if OS_ACCOUNTS:
        assert f"uid {accounts.run_as('alice').uid}" in log["text"], log

    # a file there registers as a model of hers
    (folder / "weights.bin").write_bytes(b"\x01\x02")
    os.chmod(folder / "weights.bin", 0o664)
    status, version = cube(
        hub, "alice", "models", tokens["alice"], method="POST",
        body={"name": "team-weights", "path": f"{link_in_home(hub, 'alice')}/weights.bin"},
    )  # fmt: skip
    assert status == 201, version


def test_a_members_training_job_in_the_project_folder_runs_there_and_reruns(
    hub: devhub.DevHub, tokens: dict[str, str]
) -> None:
    folder = shared_folder(hub)
    step = script(folder, "fit.py", "import os\nprint('cwd', os.getcwd(), 'uid', os.getuid())\n")
    os.chmod(folder / step, 0o664)
    link = link_in_home(hub, "alice")
    alice = tokens["alice"]

    def ran(job: dict) -> tuple[dict, str]:
        deadline = time.monotonic() + 120
        while job["status"] in ("queued", "running"):
            assert time.monotonic() < deadline, job
            time.sleep(0.5)
            status, job = cube(hub, "alice", f"training/jobs/{job['id']}", alice)
            assert status == 200, job
        _, log = cube(hub, "alice", f"training/jobs/{job['id']}/log", alice)
        return job, log["text"]

    for body in (
        {"framework": "plain", "script": f"{link}/{step}"},
        {"framework": "plain", "script": step, "working_dir": link},
    ):
        status, job = cube(hub, "alice", "training/jobs", alice, method="POST", body=body)
        assert status == 201, job
        job, text = ran(job)
        assert job["status"] == "succeeded", (body, job, text)
        assert f"cwd {folder.resolve()}" in text, text
        if OS_ACCOUNTS:
            assert f"uid {accounts.run_as('alice').uid}" in text, text
    status, again = cube(hub, "alice", f"training/jobs/{job['id']}/rerun", alice, method="POST")
    assert status == 201, again
    again, text = ran(again)
    assert again["status"] == "succeeded" and f"cwd {folder.resolve()}" in text, text


def test_a_link_made_by_a_non_member_leads_nowhere(
    hub: devhub.DevHub, tokens: dict[str, str]
) -> None:
    folder = shared_folder(hub)
    if not (folder / "flow.pipeline").exists():
        write_pipeline(folder, [node("n", filename=script(folder, "n.py", "pass\n"))],
                       filename="flow.pipeline")  # fmt: skip
    # bob points a link of his own at the group's folder, as he could from his terminal
    sneaky = hub.data_dir / "users" / "bob" / "sneaky"
    sneaky.symlink_to(folder)
    try:
        for route, body in (
            ("pipelines/validate", {"path": "sneaky/flow.pipeline"}),
            ("pipelines/runs", {"path": "sneaky/flow.pipeline"}),
            ("models", {"name": "taken", "path": "sneaky/flow.pipeline"}),
            ("training/jobs", {"framework": "plain", "script": "sneaky/n.py"}),
            ("training/jobs", {"framework": "plain", "script": "n.py", "working_dir": "sneaky"}),
            ("tuning/experiments", {"folder": "sneaky", "config": {}}),
        ):
            status, answer = cube(hub, "bob", route, tokens["bob"], method="POST", body=body)
            assert status == 400, (route, answer)
            assert "outside" in answer["error"], answer
    finally:
        sneaky.unlink()
