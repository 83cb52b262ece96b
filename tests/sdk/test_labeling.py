"""``cl.labeling``: create a labeling project over a dataset, assign its tasks, follow the
progress per person and label, export the answers as a dataset version; in this process and
through ``cl.connect`` against a real second server, with the same answers in both."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest

import cube_lab as cl
from cube_lab import sdk
from cube_lab.errors import CubeError, NotFound
from cube_lab.identity import Caller
from cube_lab.sdk.labeling import LabelingProject
from cube_lab.sdk.views import LiveView
from cube_lab.workspace import default_workspace
from tests.sdk.test_sdk import _connect, _same_everywhere, local, server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TEXTS = ["good", "bad, very", "meh", "fine"]
ANSWERS = ["pos", "neg", "neg"]  # the fourth stays unlabeled


def _dataset_and_answers(root: Path) -> Any:
    """Make the dataset and, later, answer three tasks as alice: with the service here, with
    the REST API over there (what the labeling panel does); not part of what is tested."""
    with open(root / "reviews.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["text"])
        writer.writerows([t] for t in TEXTS)
    transport = sdk.current()
    if transport.kind == "local":
        ws, alice = default_workspace(), Caller("alice")

        def answer() -> None:
            for expected in ANSWERS:
                task = ws.labeling.next(alice, "alice", "mood")
                assert task is not None
                ws.labeling.save(
                    alice, "alice", "mood", task.id, {"labels": [expected]}, submit=True
                )

        return answer
    client = transport.client  # type: ignore[attr-defined]

    def answer_over_rest() -> None:
        for expected in ANSWERS:
            task = client.post("projects/alice/labeling/mood/next", {})
            body = {"result": {"labels": [expected]}, "submit": True}
            client.put(f"projects/alice/labeling/mood/tasks/{task['id']}", body)

    return answer_over_rest


def _labeling(root: Path) -> dict[str, Any]:
    answer = _dataset_and_answers(root)
    made = cl.datasets.create("reviews", "reviews.csv")  # relative to the current folder
    assert (made["name"], made["project"], made["kind"], made["item_count"]) == (
        "reviews",
        "alice",
        "texts",
        4,
    ), made
    assert cl.datasets.get("reviews")["versions"] == made["versions"]
    with pytest.raises(CubeError) as bad_source:
        cl.datasets.create("nums", 42)  # type: ignore[arg-type]
    with pytest.raises(CubeError) as twice:
        cl.datasets.create("reviews", "reviews.csv")
    mood = cl.labeling.create(
        "mood", "reviews", "text-class", ["pos", "neg"], review=False, instructions="Tone."
    )
    assert isinstance(mood, LabelingProject)
    assert (mood.name, mood.project, mood.dataset, mood.labels) == (
        "mood",
        "alice",
        "reviews",
        ["pos", "neg"],
    )
    fresh = cl.labeling.progress("mood")
    assert (fresh["total"], fresh["new"], fresh["submitted"]) == (4, 4, 0)

    assert cl.labeling.assign("mood", ["alice"]) == {"alice": 4}
    assert cl.labeling.progress("mood")["by_user"]["alice"]["assigned"] == 4
    answer()
    done = mood.progress()
    assert (done["submitted"], done["assigned"]) == (3, 1), done
    assert done["by_label"] == {"pos": 1, "neg": 2}
    assert done["by_user"]["alice"] == {
        "assigned": 1,
        "submitted": 3,
        "accepted": 0,
        "rejected": 0,
    }
    assert "3/4 labeled" in repr(mood)
    view = LiveView(mood, refresh_s=0.1)  # a task is still open: the view follows it
    assert mood.live and view.count.value == "3 of 4 tasks" and view.bar.value == 3.0
    assert view.footer.value.startswith("Refreshing")
    (summary,) = view.parts
    assert "<td style='padding:0 8px'>alice</td><td style='padding:0 8px'>1</td>" in (
        summary.people.value
    )
    assert "<td style='padding:0 8px'>neg</td><td style='padding:0 8px'>2</td>" in (
        summary.labels.value
    )
    assert all(f"<td style='padding:0 8px'>{t}</td>" in summary.samples.value for t in TEXTS)

    exported = cl.labeling.export("mood", "jsonl")
    assert exported["dataset"] == "reviews" and exported["version"]["version"] == 1
    assert exported["version"]["item_count"] == 3
    assert exported["download_url"].endswith("/datasets/reviews/versions/1/download")
    rows = cl.datasets.load("reviews", version=1)  # the version, as a DataFrame
    assert list(rows["label"]) == ANSWERS and list(rows["text"]) == TEXTS[:3]
    second = mood.export("csv", only="submitted")
    assert second["version"]["version"] == 2 and second["version"]["format"] == "csv"

    assert [p.name for p in cl.labeling.projects()] == ["mood"]
    assert cl.labeling.get("mood").data["instructions"] == "Tone."
    with pytest.raises(NotFound) as missing:
        cl.labeling.get("nope")
    with pytest.raises(CubeError) as duplicate:
        cl.labeling.create("mood", "reviews", "text-class", ["pos"])
    with pytest.raises(CubeError) as bad_type:
        cl.labeling.create("boxes", "reviews", "image-bbox", ["cat"])
    with pytest.raises(CubeError) as bad_format:
        mood.export("yolo")
    return {
        "progress": done,
        "view": [summary.people.value, summary.labels.value, summary.samples.value],
        "exported": {k: exported["version"][k] for k in ("version", "format", "labeling")},
        "errors": [
            e.value.to_json() | {"class": type(e.value).__name__}
            for e in (missing, duplicate, bad_type, bad_format, bad_source, twice)
        ],
    }


def test_labeling_here_and_over_rest_answer_the_same(
    local: Path,  # noqa: F811  (the fixture of test_sdk)
    server: tuple[str, Path],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    here = _labeling(local)
    assert sdk.current().kind == "local"
    errors = [e["error"] for e in here["errors"]]
    assert errors[0] == "labeling project 'nope' not found in project 'alice'", errors
    assert "already exists" in errors[1] and "image-bbox" in errors[2], errors
    monkeypatch.setenv("XDG_CACHE_HOME", str(local.parent / "cache"))
    theirs = _labeling(_connect(server, monkeypatch))
    _same_everywhere(here, theirs)
    assert json.dumps(here["progress"]["by_label"]) == '{"pos": 1, "neg": 2}'


def _thumbnails(root: Path) -> list[str]:
    """An image labeling project's view shows the first images, small, inline."""
    from PIL import Image

    (root / "pets").mkdir()
    for i, size in enumerate([(300, 200), (64, 64), (50, 400)]):
        Image.new("RGB", size, (40 * i, 90, 200)).save(root / "pets" / f"p{i}.png")
    cl.datasets.create("pets", "pets")
    pets = cl.labeling.create("pets-kind", "pets", "image-class", ["cat", "dog"])
    (summary,) = LiveView(pets).parts
    return re.findall(
        r"<img src='data:image/jpeg;base64,([^']+)' alt='(p\d.png)'", (summary.samples.value)
    )


def test_an_image_labeling_view_shows_thumbnails_here_and_over_rest(
    local: Path,  # noqa: F811  (the fixture of test_sdk)
    server: tuple[str, Path],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import base64
    import io

    from PIL import Image

    here = _thumbnails(local)
    assert [name for _, name in here] == ["p0.png", "p1.png", "p2.png"]
    sizes = [Image.open(io.BytesIO(base64.b64decode(data))).size for data, _ in here]
    assert sizes == [(72, 48), (64, 64), (9, 72)], sizes  # at most 72 px, the shape kept
    assert _thumbnails(_connect(server, monkeypatch)) == here


def test_the_labeling_package_keeps_its_modules_and_the_sdk_calls() -> None:
    """``cl.labeling`` is the labeling package: its ``progress`` stays the SDK's function
    when the service's ``progress`` module loads, and that module still imports by name."""
    import cube_lab.labeling
    import cube_lab.labeling.service  # loads cube_lab.labeling.progress
    from cube_lab.labeling.progress import progress as count_tasks

    assert cl.labeling is cube_lab.labeling
    assert callable(cl.labeling.progress) and cl.labeling.progress.__module__ == "cube_lab.labeling"
    assert count_tasks.__module__ == "cube_lab.labeling.progress"
    assert cube_lab.labeling.service.progress is count_tasks
