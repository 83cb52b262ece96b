"""Course material in the store (``cube_lab.hub.course_material``) with a real workspace: a
teacher's model and dataset version handed out into the course's project, read-only to the
students; a student's submission carrying the models and pipeline runs its folder references,
the models copied into the teacher's project, the runs' records and logs in the snapshot."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cube_lab.errors import Conflict, Forbidden, InvalidInput, NotFound
from cube_lab.hub.course import COURSE_PROPERTY, RUNS_FOLDER, CourseBook, Courses
from cube_lab.hub.course_material import CourseMaterial
from cube_lab.identity import Caller
from cube_lab.labeling.dataset_copy import copy_dataset
from cube_lab.registry.service import ORIGIN_TAG
from tests.pipeline_util import node, script, write_pipeline

TEACH, S1, S2 = Caller("teach"), Caller("s1"), Caller("s2")


def group() -> dict[str, Any]:
    roster = {"teach": {"display_name": "林老师", "email": "", "role": "teacher"}}
    return {
        "name": "ai-course",
        "users": ["teach", "s1", "s2"],
        "properties": {COURSE_PROPERTY: {}, "cube_lab_roster": roster},
    }


@pytest.fixture
def setup(ws: Any, tmp_path: Path) -> tuple[Courses, Any]:
    users = tmp_path / "users"
    material = CourseMaterial(ws, lambda user: users / user)
    courses = Courses(users, CourseBook(tmp_path / "hub" / "courses"), material=material)
    for who in (TEACH, S1, S2):  # as the hub's groups make them members
        ws.projects.ensure_personal(who)
        ws.projects.join_groups(who.username, ["ai-course"])
    return courses, ws


def teacher_material(ws: Any, tmp_path: Path) -> None:
    """teach's model (two versions) and a texts dataset with one exported version."""
    weights = tmp_path / "weights.bin"
    weights.write_bytes(b"w1" * 1000)
    ws.registry.register(TEACH, name="base", path=weights, metrics={"acc": 0.5})
    weights.write_bytes(b"w2" * 1000)
    ws.registry.register(TEACH, name="base", path=weights, metrics={"acc": 0.7})
    texts = tmp_path / "reviews.csv"
    texts.write_text("text,label\ngood film,pos\nbad film,neg\n")
    ws.datasets.create(TEACH, "reviews", texts)
    dataset = ws.datasets.get(TEACH, "teach", "reviews")
    ws.datasets.add_version(
        TEACH, dataset.id, "jsonl", "reviews-labels", 2,
        lambda folder: (folder / "labels.jsonl").write_text('{"text": "good film"}\n')
        and "labels.jsonl",
    )  # fmt: skip


def test_models_and_datasets_handed_out_read_only_into_the_course(
    setup: tuple[Courses, Any], tmp_path: Path
) -> None:
    courses, ws = setup
    teacher_material(ws, tmp_path)
    out = courses.hand_out(group(), name="lab1", owner="teach", models=["base:1", "base"],
                           datasets="reviews")  # fmt: skip
    assert out["handout"]["mode"] == "readonly" and out["students"] == []  # no folder
    assert [(m["from"], m["status"], m["to"]["version"]) for m in out["models"]] == [
        ("teach/base:v1", "copied", 1), ("teach/base:v2", "copied", 2)
    ]  # fmt: skip
    [row] = out["datasets"]
    assert (row["status"], row["to"]) == (
        "copied", {"project": "ai-course", "name": "reviews", "version": 1})  # fmt: skip

    # the students see them in the course's project, and read them
    model = ws.registry.get_model(S1, "ai-course", "base")
    assert model.read_only and model.owner == "teach"
    assert [v.metrics["acc"] for v in reversed(model.versions)] == [0.5, 0.7]
    assert model.versions[0].tags[ORIGIN_TAG] == "teach/base:v2"
    download = ws.registry.download(S1, "ai-course", "base", 2)
    original = ws.registry.download(TEACH, "teach", "base", 2)
    assert download.path.read_bytes() == b"w2" * 1000
    assert os.stat(download.path).st_ino == os.stat(original.path).st_ino  # linked, not copied
    ref = ws.datasets.resolve(S2, "reviews")  # found in the course's project, the only one
    assert (ref.project, ref.version) == ("ai-course", 1)
    assert (ref.path).read_text() == '{"text": "good film"}\n'
    items = ws.datasets.items(S2, "ai-course", "reviews")
    assert [i["text"] for i in items] == ["good film", "bad film"]
    # the source was snapshotted: the teacher's later edits do not reach the class
    (tmp_path / "reviews.csv").write_text("text\nchanged\n")
    copy = ws.datasets.get(S1, "ai-course", "reviews")
    assert copy.read_only and Path(copy.source).read_text().startswith("text,label\ngood")

    # ...but not change them
    weights = tmp_path / "weights.bin"
    for change in (
        lambda: ws.registry.delete_model(S1, "ai-course", "base"),
        lambda: ws.registry.delete_version(S1, "ai-course", "base", 1),
        lambda: ws.registry.set_alias(S1, "ai-course", "base", "best", 1),
        lambda: ws.registry.update_model(S1, "ai-course", "base", archived=True),
        lambda: ws.registry.update_model(S1, "ai-course", "base", read_only=False),
        lambda: ws.registry.register(S1, name="base", project="ai-course", path=weights),
        lambda: ws.datasets.delete(S1, "ai-course", "reviews"),
        lambda: ws.datasets.add_version(S1, copy.id, "csv", "x", 0, lambda f: ""),
    ):
        with pytest.raises(Forbidden) as refused:
            change()
        assert refused.value.detail
    assert ws.registry.get_model(S1, "ai-course", "base").version_count == 2
    # the teacher may: an alias, and a new version
    ws.registry.set_alias(TEACH, "ai-course", "base", "best", 2)

    # again: nothing copied twice; a new version of the teacher's is added
    again = courses.hand_out(group(), name="lab1", owner="teach", models=["base:2"],
                             datasets=["teach/reviews:v1"])  # fmt: skip
    assert [m["status"] for m in again["models"]] == ["up to date"]
    assert [d["status"] for d in again["datasets"]] == ["up to date"]
    assert [m["ref"] for m in again["handout"]["models"]] == ["base:1", "base", "base:2"]
    assert ws.registry.get_model(TEACH, "ai-course", "base").version_count == 2
    assert len(ws.datasets.get(TEACH, "ai-course", "reviews").versions) == 1


def test_bad_references_fail_before_anything_is_copied(
    setup: tuple[Courses, Any], tmp_path: Path
) -> None:
    courses, ws = setup
    teacher_material(ws, tmp_path)
    for models, datasets, error in (
        (["base:9"], None, NotFound),
        (["base", "nope"], None, NotFound),
        (["base"], ["reviews:v7"], NotFound),
        (["../etc"], None, InvalidInput),
        ([3], None, InvalidInput),
        (["s1/private:1"], None, NotFound),  # another user's project: not theirs to see
    ):
        if models == ["s1/private:1"]:
            ws.registry.register(S1, name="private", path=tmp_path / "reviews.csv")
        with pytest.raises(error):
            courses.hand_out(group(), name="lab1", owner="teach", models=models,
                             datasets=datasets)  # fmt: skip
    assert ws.registry.list_models(S1, project="ai-course").total == 0
    assert courses.handouts("ai-course") == []
    # an assignment needs a folder; nothing to hand out at all is refused
    with pytest.raises(InvalidInput, match="needs a folder"):
        courses.hand_out(group(), name="lab1", owner="teach", mode="copy", models=["base"])
    with pytest.raises(InvalidInput, match="give a folder"):
        courses.hand_out(group(), name="lab1", owner="teach")
    # a name a student already uses in the course's project is theirs: not overwritten
    weights = tmp_path / "s1.bin"
    weights.write_bytes(b"mine")
    ws.registry.register(S1, name="base", project="ai-course", path=weights)
    with pytest.raises(Conflict, match="s1's"):
        courses.hand_out(group(), name="lab1", owner="teach", models=["base"])
    assert not ws.registry.get_model(S1, "ai-course", "base").read_only
    # without the store's side (no cube-lab service) models cannot be handed out
    bare = Courses(courses.users_dir, courses.book)
    with pytest.raises(InvalidInput, match="cube-lab service"):
        bare.hand_out(group(), name="lab1", owner="teach", models=["base"])


def test_a_model_already_in_the_course_is_made_read_only_where_it_is(
    setup: tuple[Courses, Any], tmp_path: Path
) -> None:
    courses, ws = setup
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"shared")
    ws.registry.register(TEACH, name="shared", project="ai-course", path=weights)
    out = courses.hand_out(group(), name="m", owner="teach", models=["ai-course/shared"])
    assert out["models"][0]["status"] == "in place"
    assert ws.registry.get_model(S1, "ai-course", "shared").read_only
    # its owner may lift it
    ws.registry.update_model(TEACH, "ai-course", "shared", read_only=False)
    ws.registry.delete_model(S1, "ai-course", "shared")


def test_a_submission_carries_the_runs_and_models_its_folder_references(
    setup: tuple[Courses, Any], tmp_path: Path
) -> None:
    courses, ws = setup
    starter = courses.home("teach") / "lab2"
    starter.mkdir(parents=True)
    (starter / "train.ipynb").write_text('{"cells": []}')
    courses.hand_out(group(), name="lab2", source="lab2", owner="teach")
    work = courses.home("s1") / "course" / "ai-course" / "lab2"
    # a pipeline in the folder, run; one elsewhere in the home, run too
    script(work, "step.py", "print('epoch 1 loss 0.5')\n")
    pipeline = write_pipeline(work, [node("a", filename="step.py")], name="train")
    elsewhere = courses.home("s1") / "other"
    elsewhere.mkdir()
    script(elsewhere, "step.py", "print('not this one')\n")
    other = write_pipeline(elsewhere, [node("a", filename="step.py")], name="other")
    run_ids = []
    for path, root in ((pipeline, courses.home("s1")), (other, courses.home("s1"))):
        runner, recorder = ws.pipelines.prepare(S1, path, root)
        assert ws.pipelines.run_foreground(runner, recorder) == "succeeded"
        run_ids.append(runner.plan.run_id)
    # models: one from the notebook in the folder, one by the run, one from elsewhere
    for name, source, run_id in (
        ("cnn", "course/ai-course/lab2/train.ipynb", None),
        ("from-run", None, run_ids[0]),
        ("unrelated", "other/x.ipynb", None),
    ):
        weights = tmp_path / f"{name}.bin"
        weights.write_bytes(name.encode() * 10)
        ws.registry.register(S1, name=name, path=weights, source=source, pipeline_run_id=run_id,
                             metrics={"acc": 0.9})  # fmt: skip

    entry = courses.submit(group(), "lab2", "s1")
    assert [(r["kind"], r["id"], r["status"]) for r in entry["runs"]] == [
        ("pipeline", run_ids[0], "succeeded")
    ]
    copied = {m["from"]["name"]: m["to"] for m in entry["models"]}
    assert sorted(copied) == ["cnn", "from-run"]
    assert copied["cnn"] == {"project": "teach", "name": "ai-course.lab2.cnn", "version": 1}
    version = ws.registry.get_version(TEACH, "teach", "ai-course.lab2.cnn", 1)
    assert version.tags["cube_lab.student"] == "s1" and version.metrics == {"acc": 0.9}
    assert version.tags[ORIGIN_TAG] == "s1/cnn:v1"
    with pytest.raises(NotFound):  # the student sees nothing of the teacher's project
        ws.registry.get_model(S1, "teach", "ai-course.lab2.cnn")
    # the snapshot holds the run's record and its log
    snap = courses.home("teach") / entry["folder"]
    records = json.loads((snap / RUNS_FOLDER / "runs.json").read_text())
    assert records[0]["pipeline_path"] == "course/ai-course/lab2/p.pipeline"
    log = snap / RUNS_FOLDER / f"pipeline-{run_ids[0]}" / "a.log"
    assert "epoch 1 loss 0.5" in log.read_text()
    assert "runs.json" not in [f["path"] for f in entry["files"]]
    # submitting again copies no model twice
    again = courses.submit(group(), "lab2", "s1")
    assert again["models"] == entry["models"]
    assert ws.registry.get_model(TEACH, "teach", "ai-course.lab2.cnn").version_count == 1
    # s2 has nothing: a submission of files only
    (courses.home("s2") / "course" / "ai-course" / "lab2" / "a.py").write_text("1")
    other_entry = courses.submit(group(), "lab2", "s2")
    assert other_entry["runs"] == [] and other_entry["models"] == []
    mine = courses.mine("ai-course", "s1")[0]["submission"]
    assert (mine["models"], mine["runs"]) == (2, 1)


def test_a_store_that_does_not_answer_costs_the_references_not_the_files(
    setup: tuple[Courses, Any], tmp_path: Path
) -> None:
    from cube_lab.hub.material_client import StoreMaterial

    courses, _ = setup
    (courses.home("teach") / "lab3").mkdir(parents=True)
    (courses.home("teach") / "lab3" / "a.md").write_text("x")
    courses.hand_out(group(), name="lab3", source="lab3", owner="teach")
    courses.material = StoreMaterial("http://127.0.0.1:9/", "token")  # nothing listens there
    entry = courses.submit(group(), "lab3", "s1")
    assert [f["path"] for f in entry["files"]] == ["a.md"]
    assert "did not answer" in entry["references_error"]


def test_copy_dataset_of_a_source_only_dataset(ws: Any, tmp_path: Path) -> None:
    images = tmp_path / "pets"
    images.mkdir()
    (images / "a.png").write_bytes(_png())
    (images / "leak").symlink_to("/etc/passwd")  # a link leading out: not copied
    ws.datasets.create(TEACH, "pets", images)
    ws.projects.join_groups("teach", ["ai-course"])
    view, status = copy_dataset(ws.datasets, TEACH, "pets", None, project="teach",
                                to_project="ai-course", read_only=True)  # fmt: skip
    assert status == "copied" and view.versions == [] and view.item_count == 1
    assert sorted(p.name for p in Path(view.source).iterdir()) == ["a.png"]
    again = copy_dataset(ws.datasets, TEACH, "pets", None, project="teach",
                         to_project="ai-course")  # fmt: skip
    assert again[1] == "up to date"


def _png() -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (4, 3)).save(out, "PNG")
    return out.getvalue()
