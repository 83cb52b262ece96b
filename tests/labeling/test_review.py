"""Review: reject back to the annotator's queue with the comment, resubmit, accept; who may
review; what can change after a decision; progress per person and per label."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from labeling_util import image_project, team

from cube_lab.errors import Conflict, Forbidden, InvalidInput
from cube_lab.identity import Caller

ALICE, BOB, CAROL, DAVE = (Caller(n) for n in ("alice", "bob", "carol", "dave"))
BOX = {"boxes": [{"label": "cat", "x": 1, "y": 1, "w": 10, "h": 10}]}


def _setup(ws: Any, tmp_path: Path, **options: Any) -> str:
    project = team(ws, ALICE, "bob", "carol", "dave")
    image_project(ws, ALICE, tmp_path / "pics", 4, project=project, **options)
    return project


def test_reject_resubmit_accept(ws: Any, tmp_path: Path) -> None:
    project = _setup(ws, tmp_path, reviewers=["carol"])
    task = ws.labeling.next(BOB, project, "pets")
    ws.labeling.save(BOB, project, "pets", task.id, BOX, submit=True)
    with pytest.raises(Forbidden, match="not a reviewer"):
        ws.labeling.review(BOB, project, "pets", task.id, "accept")
    own = ws.labeling.next(CAROL, project, "pets")  # a reviewer who also annotates
    ws.labeling.save(CAROL, project, "pets", own.id, BOX, submit=True)
    with pytest.raises(Forbidden, match="your own work"):
        ws.labeling.review(CAROL, project, "pets", own.id, "accept")
    with pytest.raises(Forbidden, match="not a reviewer"):
        ws.labeling.review(DAVE, project, "pets", task.id, "accept")
    with pytest.raises(InvalidInput, match="unknown decision"):
        ws.labeling.review(CAROL, project, "pets", task.id, "maybe")

    rejected = ws.labeling.review(CAROL, project, "pets", task.id, "reject", "the cat is bigger")
    assert (rejected.status, rejected.assignee) == ("assigned", "bob")
    assert (rejected.review_comment, rejected.reviewer) == ("the cat is bigger", "carol")
    progress = ws.labeling.get(ALICE, project, "pets").progress
    assert (progress.rejected, progress.assigned, progress.submitted) == (1, 1, 1)
    assert progress.by_user["bob"].rejected == 1
    assert ws.labeling.list_tasks(ALICE, project, "pets", status="rejected")["total"] == 1

    # the rejected task is first in bob's queue again, with the comment and his result
    back = ws.labeling.next(BOB, project, "pets")
    assert back.id == task.id and back.review_comment == "the cat is bigger"
    assert back.result == BOX
    bigger = {"boxes": [{"label": "cat", "x": 0, "y": 0, "w": 30, "h": 20}]}
    again = ws.labeling.save(BOB, project, "pets", task.id, bigger, submit=True)
    assert again.status == "submitted"
    assert ws.labeling.get(ALICE, project, "pets").progress.rejected == 0

    accepted = ws.labeling.review(ALICE, project, "pets", task.id, "accept")  # an owner
    assert (accepted.status, accepted.reviewer, accepted.result) == ("accepted", "alice", bigger)
    with pytest.raises(Conflict, match="can no longer be changed"):
        ws.labeling.save(BOB, project, "pets", task.id, BOX)
    with pytest.raises(Conflict, match="only submitted tasks"):
        ws.labeling.review(CAROL, project, "pets", task.id, "reject")

    progress = ws.labeling.get(ALICE, project, "pets").progress
    assert (progress.accepted, progress.submitted, progress.total, progress.new) == (1, 1, 4, 2)
    assert progress.by_user["bob"].accepted == 1 and progress.by_user["carol"].submitted == 1
    assert progress.by_label == {"cat": 2, "dog": 0}


def test_only_the_assignee_edits(ws: Any, tmp_path: Path) -> None:
    project = _setup(ws, tmp_path)
    task = ws.labeling.next(BOB, project, "pets")
    with pytest.raises(Forbidden, match="not in your queue"):
        ws.labeling.save(CAROL, project, "pets", task.id, BOX)
    pool_task = ws.labeling.list_tasks(ALICE, project, "pets", status="new")["tasks"][0]
    with pytest.raises(Forbidden):
        ws.labeling.save(BOB, project, "pets", pool_task.id, BOX)
    with pytest.raises(Conflict, match="only submitted tasks"):
        ws.labeling.review(ALICE, project, "pets", task.id, "accept")  # not submitted yet


def test_without_review_a_submit_is_final(ws: Any, tmp_path: Path) -> None:
    project = _setup(ws, tmp_path, review=False)
    task = ws.labeling.next(BOB, project, "pets")
    ws.labeling.save(BOB, project, "pets", task.id, BOX, submit=True)
    with pytest.raises(Conflict, match="no review step"):
        ws.labeling.review(ALICE, project, "pets", task.id, "accept")
    with pytest.raises(Conflict):
        ws.labeling.save(BOB, project, "pets", task.id, BOX)


def test_reviewers_must_be_members(ws: Any, tmp_path: Path) -> None:
    project = team(ws, ALICE, "bob")
    with pytest.raises(InvalidInput, match="mallory is not a member"):
        image_project(ws, ALICE, tmp_path / "pics", 2, project=project, reviewers=["mallory"])
