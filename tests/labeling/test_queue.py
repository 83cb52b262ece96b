"""The task queue: assignment (round robin, batch), next with `after`, and concurrent
annotators that never get the same task (threads on SQLite, on PostgreSQL, and over HTTP)."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from labeling_util import make_csv, make_images, team

from cube_lab.config import Settings
from cube_lab.errors import Forbidden, InvalidInput
from cube_lab.identity import Caller
from cube_lab.labeling import queue
from cube_lab.workspace import Workspace
from tests.store.test_postgres import pg_url  # noqa: F401 - the throwaway PostgreSQL cluster fixture

USERS = [f"user{i}" for i in range(8)]


def _text_project(ws: Workspace, owner: Caller, tmp_path: Path, count: int, **options: Any) -> str:
    project = team(ws, owner, *USERS)
    make_csv(tmp_path / "texts.csv", [f"text number {i}" for i in range(count)])
    ws.datasets.create(owner, "texts", tmp_path / "texts.csv", project=project)
    ws.labeling.create(
        owner,
        "sentiment",
        dataset="texts",
        type="text-class",
        labels=["pos", "neg"],
        project=project,
        **options,
    )
    return project


def _annotate_until_empty(ws: Workspace, project: str, user: str, seen: list[int]) -> None:
    caller = Caller(user)
    while True:
        task = ws.labeling.next(caller, project, "sentiment")
        if task is None:
            return
        seen.append(task.id)
        ws.labeling.save(caller, project, "sentiment", task.id, {"labels": ["pos"]}, submit=True)


def _run_annotators(ws: Workspace, project: str) -> dict[str, list[int]]:
    seen: dict[str, list[int]] = {u: [] for u in USERS}
    errors: list[BaseException] = []

    def work(user: str) -> None:
        try:
            _annotate_until_empty(ws, project, user, seen[user])
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(u,)) for u in USERS]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    return seen


def _check_no_double_assignment(ws: Workspace, project: str, seen: dict[str, list[int]]) -> None:
    everyone = [task_id for ids in seen.values() for task_id in ids]
    assert len(everyone) == 200 and len(set(everyone)) == 200, Counter(everyone).most_common(3)
    owner = Caller("owner")
    page = ws.labeling.list_tasks(owner, project, "sentiment", limit=500)
    assert page["total"] == 200
    by_id = {t.id: t for t in page["tasks"]}
    for user, ids in seen.items():
        assert {by_id[i].assignee for i in ids} <= {user}
    assert {t.status for t in page["tasks"]} == {"submitted"}
    progress = ws.labeling.get(owner, project, "sentiment").progress
    assert progress.submitted == 200 and progress.new == 0
    assert sum(u.submitted for u in progress.by_user.values()) == 200


def test_eight_annotators_never_share_a_task(ws: Workspace, tmp_path: Path) -> None:
    project = _text_project(ws, Caller("owner"), tmp_path, 200, review=False)
    seen = _run_annotators(ws, project)
    _check_no_double_assignment(ws, project, seen)
    # the work spread over several annotators (not one thread doing everything)
    assert sum(1 for ids in seen.values() if ids) >= 2


def test_raw_claims_are_exclusive(ws: Workspace, tmp_path: Path) -> None:
    project = _text_project(ws, Caller("owner"), tmp_path, 200)
    labeling_id = ws.labeling.get(Caller("owner"), project, "sentiment").id
    won: dict[str, list[int]] = {u: [] for u in USERS}

    def claim_all(user: str) -> None:
        while True:
            with ws.store.write() as s:
                task_id = queue.claim(s, labeling_id, user)
            if task_id is None:
                return
            won[user].append(task_id)

    threads = [threading.Thread(target=claim_all, args=(u,)) for u in USERS]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    everyone = [i for ids in won.values() for i in ids]
    assert sorted(everyone) == sorted(set(everyone)) and len(everyone) == 200


def test_eight_annotators_on_postgres(pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    ws = Workspace.open(Settings.resolve(tmp_path / "pg-data", pg_url))
    try:
        with ws.store.engine.begin() as conn:  # a fresh schema content for this test
            conn.exec_driver_sql("TRUNCATE projects RESTART IDENTITY CASCADE")
        ws.projects._ensured.clear()
        project = _text_project(ws, Caller("owner"), tmp_path, 200, review=False)
        seen = _run_annotators(ws, project)
        _check_no_double_assignment(ws, project, seen)
    finally:
        ws.close()


def test_assign_round_robin_and_batch(ws: Workspace, tmp_path: Path) -> None:
    owner = Caller("owner")
    project = _text_project(ws, owner, tmp_path, 20)
    assert ws.labeling.assign(owner, project, "sentiment", ["user0", "user1"], "batch", 3) == {
        "user0": 3,
        "user1": 3,
    }
    mine = ws.labeling.list_tasks(owner, project, "sentiment", assignee="user0")["tasks"]
    assert [t.index for t in mine] == [0, 1, 2]
    dealt = ws.labeling.assign(owner, project, "sentiment", ["user2", "user3", "user2"])
    assert dealt == {"user2": 7, "user3": 7}  # the 14 left, dealt in turn; duplicates once
    user3 = ws.labeling.list_tasks(owner, project, "sentiment", assignee="user3")["tasks"]
    assert [t.index for t in user3] == [7, 9, 11, 13, 15, 17, 19]
    assert ws.labeling.assign(owner, project, "sentiment", ["user4"]) == {"user4": 0}
    with pytest.raises(InvalidInput, match="mallory is not a member"):
        ws.labeling.assign(owner, project, "sentiment", ["mallory"])
    with pytest.raises(InvalidInput, match="unknown assignment mode"):
        ws.labeling.assign(owner, project, "sentiment", ["user0"], "lottery")
    with pytest.raises(Forbidden):
        ws.labeling.assign(Caller("user0"), project, "sentiment", ["user0"])


def test_next_walks_the_queue_then_the_pool(ws: Workspace, tmp_path: Path) -> None:
    owner = Caller("owner")
    project = _text_project(ws, owner, tmp_path, 6)
    ws.labeling.assign(owner, project, "sentiment", ["user0"], "batch", 2)
    user0 = Caller("user0")
    first = ws.labeling.next(user0, project, "sentiment")
    assert (first.index, first.status, first.assignee) == (0, "assigned", "user0")
    # a draft keeps the task in the queue (autosave)
    ws.labeling.save(user0, project, "sentiment", first.id, {"labels": ["neg"]})
    again = ws.labeling.next(user0, project, "sentiment")
    assert again.id == first.id and again.result == {"labels": ["neg"]}
    second = ws.labeling.next(user0, project, "sentiment", after=first.id)
    assert second.index == 1
    # past the queue: claimed from the pool
    third = ws.labeling.next(user0, project, "sentiment", after=second.id)
    assert third.index == 2 and third.assignee == "user0"
    # another user claims next from the pool, never one of user0's
    other = ws.labeling.next(Caller("user1"), project, "sentiment")
    assert other.index == 3
    for task in (first, second, third):
        ws.labeling.save(user0, project, "sentiment", task.id, {"labels": ["pos"]}, submit=True)
    for _ in range(2):  # the last two from the pool
        task = ws.labeling.next(user0, project, "sentiment")
        ws.labeling.save(user0, project, "sentiment", task.id, {"labels": ["pos"]}, submit=True)
    assert ws.labeling.next(user0, project, "sentiment") is None
    # wrap-around: user1's skipped task comes back after the pool is empty
    back = ws.labeling.next(Caller("user1"), project, "sentiment", after=other.id)
    assert back.id == other.id
    with pytest.raises(InvalidInput, match="after must be a task id"):
        ws.labeling.next(user0, project, "sentiment", after="3")


async def test_two_annotators_over_http(api: Any, jp_root_dir: Path) -> None:
    make_images(jp_root_dir / "pics", 40)
    assert (await api("alice", "POST", "projects", {"name": "crew"}))[0] == 201
    assert (await api("alice", "PUT", "projects/crew/members/bob", {"role": "member"}))[0] == 200
    assert (await api("bob", "POST", "invitations/crew/accept"))[0] == 200
    status, _ = await api(
        "alice", "POST", "datasets", {"project": "crew", "name": "pics", "path": "pics"}
    )
    assert status == 201
    body = {
        "project": "crew",
        "name": "pets",
        "dataset": "pics",
        "type": "image-class",
        "labels": ["cat", "dog"],
        "review": False,
    }
    assert (await api("alice", "POST", "labeling", body))[0] == 201
    seen: dict[str, list[int]] = {"alice": [], "bob": []}

    async def annotate(user: str) -> None:
        while True:
            status, task = await api(user, "POST", "projects/crew/labeling/pets/next")
            if status == 204:
                return
            assert status == 200 and task["assignee"] == user
            seen[user].append(task["id"])
            label = {"labels": ["cat" if user == "alice" else "dog"]}
            status, saved = await api(
                user,
                "PUT",
                f"projects/crew/labeling/pets/tasks/{task['id']}",
                {"result": label, "submit": True},
            )
            assert status == 200 and saved["status"] == "submitted", saved

    await asyncio.gather(annotate("alice"), annotate("bob"))
    assert not set(seen["alice"]) & set(seen["bob"])
    assert len(seen["alice"]) + len(seen["bob"]) == 40
    assert seen["alice"] and seen["bob"]
    status, lab = await api("alice", "GET", "projects/crew/labeling/pets")
    progress = lab["progress"]
    assert progress["submitted"] == 40
    assert progress["by_label"] == {"cat": len(seen["alice"]), "dog": len(seen["bob"])}
    assert progress["by_user"]["bob"]["submitted"] == len(seen["bob"])
