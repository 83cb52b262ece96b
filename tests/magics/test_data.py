"""``%cube_dataset`` and ``%cube_label`` in the "Python 3 (cube-lab)" kernel: a dataset
version loaded into a variable, a labeling project's progress, assignment and export, and
their mistakes answered with a message (no traceback)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from kernel_util import REPO, run_in_kernel

from cube_lab.identity import Caller
from cube_lab.magics_data import describe, progress_lines, variable_name


def text(cell: Any) -> str:
    """What a notebook shows of a cell: its streams as written (a busy kernel may send one
    print in two messages), then any other output on a line of its own."""
    return "".join(
        o.get("text", "") if o.get("output_type") == "stream" else f"{o.get('evalue', '')}\n"
        for o in cell.outputs
    )


def test_variable_names_and_descriptions() -> None:
    assert variable_name("pets-v2") == "pets_v2"
    assert variable_name("2024 data") == "ds_2024_data"
    assert variable_name("评论") == "评论"  # a Chinese name is a Python identifier
    assert variable_name("--") == "dataset"
    assert describe([1, 2]) == "list of 2 items"
    lines = progress_lines(
        "mood",
        {
            "total": 4,
            "new": 0,
            "assigned": 1,
            "submitted": 3,
            "by_user": {"alice": {"assigned": 4, "submitted": 3}},
            "by_label": {"neg": 2, "pos": 1},
        },
    )
    assert lines[0].startswith("mood: 3 of 4 labeled (75%)")
    assert lines[1:] == ["  alice: 4 assigned, 3 submitted, 0 accepted", "  labels: neg 2, pos 1"]


def test_dataset_and_label_magics_in_the_kernel(tmp_path: Path, settings: Any, ws: Any) -> None:
    with open(tmp_path / "reviews.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["text"])
        writer.writerows([t] for t in ["good", "bad, very", "meh", "fine"])
    ws.datasets.create(Caller("alice"), "reviews", tmp_path / "reviews.csv")
    env = {
        "JUPYTER_PATH": str(REPO),
        "CUBE_LAB_DATA_DIR": str(settings.data_dir),
        "CUBE_LAB_USER": "alice",
        "CUBE_LAB_LAB_URL": "/lab",
    }
    answer = (
        "from cube_lab.workspace import default_workspace\n"
        "from cube_lab.identity import Caller\n"
        "w, me = default_workspace(), Caller('alice')\n"
        "for label in ['pos', 'neg', 'neg']:\n"
        "    task = w.labeling.next(me, 'alice', 'mood')\n"
        "    w.labeling.save(me, 'alice', 'mood', task.id, {'labels': [label]}, submit=True)\n"
    )
    nb = run_in_kernel(
        [
            "%cube_dataset reviews",
            "print(type(reviews).__name__, len(reviews), list(reviews['text'])[:2])",
            "%cube_dataset reviews --path --as where",
            "import cube_lab as cl\n"
            "_ = cl.labeling.create('mood', 'reviews', 'text-class', ['pos', 'neg'], review=False)",
            "%cube_label mood --assign alice",
            answer,
            "%cube_label mood",
            "%cube_label mood --export csv --as labeled",
            "print(sorted(labeled.columns), len(labeled))",
            "%cube_dataset nosuch",
            "%cube_label mood --export pdf",
        ],
        tmp_path,
        env,
    )
    shown, typed, path, _, assigned, answered, progress, export, loaded, missing, bad = nb.cells
    assert "reviews = reviews v" in text(shown) and "4 rows x 1 columns" in text(shown)
    assert "DataFrame 4 ['good', 'bad, very']" in text(typed), text(typed)
    assert text(path).startswith("where = reviews v") and "PosixPath" in text(path)
    assert "Assigned in mood: alice 4" in text(assigned)
    assert answered.outputs == [], answered.outputs
    out = text(progress)
    assert "mood: 3 of 4 labeled (75%)" in out and "alice: 1 assigned, 3 submitted" in out, out
    assert "Open in JupyterLab: /lab?cube-open=labeling&project=alice&name=mood" in out
    assert "Exported mood as csv: dataset reviews v" in text(export), text(export)
    # the three answers, one row each, loaded from the version the export wrote
    assert text(loaded) == "['annotator', 'index', 'label', 'name', 'status', 'text'] 3\n"
    # IPython shows a magic's UsageError as its message on stderr, no traceback
    for cell, message in ((missing, "nosuch"), (bad, "invalid choice: 'pdf'")):
        assert [o["name"] for o in cell.outputs] == ["stderr"], cell.outputs
        assert "cube-lab:" in text(cell) or "%cube_label" in text(cell), text(cell)
        assert message in text(cell), text(cell)
