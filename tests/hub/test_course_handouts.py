"""Hand-out and collection (``cube_lab.hub.course``) on folders, with a fake clock: copies that
never overwrite a student's edits, read-only shares, links never followed out of a space,
submissions on time and late, the deadline's collection and its manifest."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from cube_lab.errors import Conflict, InvalidInput, NotFound
from cube_lab.hub.course import COURSE_PROPERTY, CourseBook, Courses, parse_deadline

T0 = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def group(*students: str) -> dict[str, Any]:
    roster = {"teach": {"display_name": "林老师", "email": "", "role": "teacher"},
              "ta": {"display_name": "助教", "email": "", "role": "assistant"}}  # fmt: skip
    return {
        "name": "ai-course",
        "users": ["teach", "ta", *students],
        "properties": {COURSE_PROPERTY: {}, "cube_lab_roster": roster},
    }


@pytest.fixture
def courses(tmp_path: Path) -> Courses:
    return Courses(tmp_path / "users", CourseBook(tmp_path / "hub" / "courses"), Clock())


def starter(courses: Courses) -> Path:
    src = courses.home("teach") / "lab1-starter"
    (src / "data").mkdir(parents=True)
    (src / "lab1.ipynb").write_text('{"cells": []}')
    (src / "flow.pipeline").write_text('{"doc_type": "pipeline"}')
    (src / "data" / "train.csv").write_text("x,y\n1,2\n")
    return src


def copy_of(courses: Courses, student: str, name: str = "lab1") -> Path:
    return courses.home(student) / "course" / "ai-course" / name


def test_a_copy_hand_out_never_overwrites_a_students_edits_and_reaches_new_students(
    courses: Courses,
) -> None:
    src = starter(courses)
    (src / "secret-link").symlink_to("/etc/passwd")  # links in the source are not copied
    out = courses.hand_out(group("s1", "s2"), name="lab1", source="lab1-starter", owner="teach")
    assert sorted(out["files"]) == ["data/train.csv", "flow.pipeline", "lab1.ipynb"]
    assert out["skipped"] == ["secret-link"]
    assert [(r["student"], r["status"], len(r["copied"])) for r in out["students"]] == [
        ("s1", "copied", 3), ("s2", "copied", 3)
    ]  # fmt: skip
    assert (copy_of(courses, "s1") / "data" / "train.csv").read_text() == "x,y\n1,2\n"
    assert not (copy_of(courses, "s1") / "secret-link").exists()
    assert not (courses.home("ta") / "course").exists()  # staff get no copy

    # s1 edits the notebook; the teacher fixes the starter and adds a file; s3 joins
    (copy_of(courses, "s1") / "lab1.ipynb").write_text("mine")
    (src / "lab1.ipynb").write_text('{"cells": ["fixed"]}')
    (src / "hints.md").write_text("hint")
    again = courses.hand_out(
        group("s1", "s2", "s3"), name="lab1", source="lab1-starter", owner="teach"
    )
    rows = {r["student"]: r for r in again["students"]}
    assert (copy_of(courses, "s1") / "lab1.ipynb").read_text() == "mine"
    assert rows["s1"]["copied"] == ["hints.md"] and "lab1.ipynb" in rows["s1"]["kept"]
    assert (copy_of(courses, "s2") / "lab1.ipynb").read_text() == '{"cells": []}'  # kept too
    assert rows["s3"]["status"] == "copied" and len(rows["s3"]["copied"]) == 4
    assert again["handout"]["students"] == 3
    # nothing new: up to date
    third = courses.hand_out(group("s1"), name="lab1", source="lab1-starter", owner="teach")
    assert third["students"][0]["status"] == "up to date"
    with pytest.raises(Conflict):
        courses.hand_out(group("s1"), name="lab1", source="lab1-starter", mode="readonly",
                         owner="teach")  # fmt: skip


def test_a_read_only_share_is_read_only_and_follows_the_teachers_changes(
    courses: Courses,
) -> None:
    src = starter(courses)
    courses.hand_out(group("s1"), name="notes", source="lab1-starter", mode="readonly",
                     owner="teach")  # fmt: skip
    nb = copy_of(courses, "s1", "notes") / "lab1.ipynb"
    assert stat.S_IMODE(nb.stat().st_mode) == 0o444
    (src / "lab1.ipynb").write_text("v2")
    out = courses.hand_out(group("s1"), name="notes", source="lab1-starter", mode="readonly",
                           owner="teach")  # fmt: skip
    assert out["students"][0]["updated"] == ["lab1.ipynb"]
    assert nb.read_text() == "v2"
    with pytest.raises(InvalidInput, match="read-only"):
        courses.submit(group("s1"), "notes", "s1")


def test_paths_never_leave_a_space(courses: Courses, tmp_path: Path) -> None:
    starter(courses)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text("not the teacher's")
    for bad in ("../../outside", "/etc", "", "lab1-starter/../../outside"):
        with pytest.raises(InvalidInput):
            courses.hand_out(group("s1"), name="lab1", source=bad, owner="teach")
    # a link in the teacher's space to a folder outside it is not followed either
    (courses.home("teach") / "sneaky").symlink_to(outside)
    with pytest.raises(InvalidInput, match="link"):
        courses.hand_out(group("s1"), name="lab1", source="sneaky", owner="teach")
    with pytest.raises(InvalidInput, match="not a teacher"):
        courses.hand_out(group("s1"), name="lab1", source="lab1-starter", owner="s1")
    with pytest.raises(InvalidInput, match="hand-out name"):
        courses.hand_out(group("s1"), name="../x", source="lab1-starter", owner="teach")
    # a student who planted a link where the copy goes gets an error, nothing lands outside
    (courses.home("s2") / "course").symlink_to(outside)
    out = courses.hand_out(group("s1", "s2"), name="lab1", source="lab1-starter", owner="teach")
    rows = {r["student"]: r for r in out["students"]}
    assert rows["s1"]["status"] == "copied"
    assert rows["s2"]["status"] == "error" and "link" in rows["s2"]["error"]
    assert sorted(p.name for p in outside.iterdir()) == ["x.txt"]
    # and a link inside a student's folder is not collected: the teacher never gets /etc/passwd
    (copy_of(courses, "s1") / "passwd").symlink_to("/etc/passwd")
    entry = courses.submit(group("s1"), "lab1", "s1")
    assert entry["skipped"] == ["passwd"]
    sub = courses.home("teach") / entry["folder"]
    assert not (sub / "passwd").exists() and (sub / "lab1.ipynb").is_file()


def test_submissions_on_time_late_and_collected_at_the_deadline(courses: Courses) -> None:
    clock: Clock = courses.clock  # type: ignore[assignment]
    starter(courses)
    g = group("s1", "s2", "s3", "s4")
    deadline = T0 + 3600
    courses.hand_out(g, name="lab1", source="lab1-starter", owner="teach", deadline=deadline)
    (copy_of(courses, "s1") / "answer.py").write_text("print(42)\n")
    clock.now = T0 + 60
    on_time = courses.submit(g, "lab1", "s1")
    assert (on_time["late"], on_time["how"], on_time["at"]) == (False, "submit", T0 + 60)
    files = {f["path"]: f for f in on_time["files"]}
    assert files["answer.py"]["sha256"] == hashlib.sha256(b"print(42)\n").hexdigest()
    assert files["answer.py"]["size"] == 10 and files["answer.py"]["mtime"] > 0
    snap = courses.home("teach") / "course/ai-course/lab1/submissions/s1"
    assert (snap / "answer.py").read_text() == "print(42)\n"

    # before the deadline nothing is due
    assert courses.collect_due([g]) == []
    # s4 deleted their folder: nothing to collect for them
    shutil.rmtree(copy_of(courses, "s4"))
    clock.now = deadline + 1
    (copy_of(courses, "s2") / "answer.py").write_text("print(1)\n")
    [done] = courses.collect_due([g])
    rows = {r["student"]: r for r in done["students"]}
    assert rows["s1"]["status"] == "submitted"  # the student's own submission is kept
    assert rows["s2"]["status"] == "collected" and rows["s2"]["late"] is False
    assert rows["s3"]["status"] == "collected"
    assert rows["s4"]["status"] == "missing"
    assert done["handout"]["collected"] == deadline + 1
    assert courses.collect_due([g]) == []  # once

    # s3 submits after the deadline: late, replaces the collected snapshot
    clock.now = deadline + 7200
    (copy_of(courses, "s3") / "answer.py").write_text("late")
    late = courses.submit(g, "lab1", "s3")
    assert late["late"] is True
    sub = courses.home("teach") / "course/ai-course/lab1/submissions/s3"
    assert (sub / "answer.py").read_text() == "late"
    table = {r["student"]: r for r in courses.submissions(g, "lab1")["submissions"]}
    assert [table[s]["status"] for s in ("s1", "s2", "s3", "s4")] == [
        "on time", "on time", "late", "missing"
    ]  # fmt: skip
    manifest = json.loads(
        (courses.home("teach") / "course/ai-course/lab1/submissions/manifest.json").read_text()
    )
    assert manifest["deadline"] == deadline
    assert sorted(manifest["submissions"]) == ["s1", "s2", "s3"]
    assert manifest["submissions"]["s3"]["late"] is True
    assert os.path.isdir(snap) and not any(p.name.startswith(".") for p in snap.parent.iterdir())

    # a new deadline is collected again; an unknown hand-out is a 404
    courses.hand_out(g, name="lab1", source="lab1-starter", owner="teach",
                     deadline=deadline + 86400)  # fmt: skip
    assert courses.book.load("ai-course")["handouts"]["lab1"]["collected"] is None
    with pytest.raises(NotFound):
        courses.collect(g, "nope")
    assert (copy_of(courses, "s4") / "lab1.ipynb").is_file()  # handed out to s4 again
    shutil.rmtree(copy_of(courses, "s4"))
    with pytest.raises(InvalidInput, match="has no folder"):
        courses.submit(g, "lab1", "s4")


def test_deadlines_parse_with_their_zone() -> None:
    assert parse_deadline("2027-01-15T08:00:00+08:00") == parse_deadline("2027-01-15T00:00:00Z")
    assert parse_deadline(None) is None and parse_deadline(12.5) == 12.5
    for bad in ("2027-01-15T08:00:00", "tomorrow", True, [1]):
        with pytest.raises(InvalidInput):
            parse_deadline(bad)
