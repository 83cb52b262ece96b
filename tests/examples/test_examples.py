"""The example notebooks (examples/*.ipynb), one per capability, run top to bottom in the
"Python 3 (cube-lab)" kernel against a store of their own: every cell runs without an error,
and what each notebook shows is what it promises."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest
from kernel_util import REPO
from nbclient import NotebookClient
from serving_util import stop_serving

from cube_lab.config import Settings
from cube_lab.identity import Caller
from cube_lab.workspace import Workspace

EXAMPLES = REPO / "examples"


def text(cell: Any) -> str:
    parts = []
    for out in cell.get("outputs", []):
        parts.append(out.get("text", ""))
        data = out.get("data") or {}
        parts.append(data.get("text/plain", ""))
    return "\n".join(parts)


def run(name: str, folder: Path, data: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    shutil.copytree(EXAMPLES, folder, dirs_exist_ok=True)
    nb = nbformat.read(folder / name, as_version=4)
    for key, value in {
        "JUPYTER_PATH": str(REPO),
        "CUBE_LAB_DATA_DIR": str(data),
        "CUBE_LAB_USER": "alice",
    }.items():
        monkeypatch.setenv(key, value)
    NotebookClient(nb, timeout=300, resources={"metadata": {"path": str(folder)}}).execute()
    errors = [
        out
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error" or out.get("name") == "stderr"
    ]
    assert not [e for e in errors if e.get("output_type") == "error"], errors
    return [c for c in nb.cells if c.cell_type == "code"]


def test_every_example_is_tested() -> None:
    names = sorted(p.name for p in EXAMPLES.glob("*.ipynb"))
    assert names == sorted(CHECKS), names


def _train(cells: list[Any]) -> None:
    assert "succeeded" in text(cells[2]) and "accuracy" in text(cells[2])
    assert text(cells[3]).startswith("example-iris-sgd:1 "), text(cells[3])


def _pipeline(cells: list[Any]) -> None:
    assert "succeeded [('prepare', 'succeeded'), ('summarize', 'succeeded')]" in text(cells[1])
    assert "50 rows, mean y" in text(cells[1]), text(cells[1])  # the run's parameter reached it


def _tune(cells: list[Any]) -> None:
    status, rest = text(cells[2]).split(" ", 1)
    assert status == "done" and rest.startswith("{'x': "), text(cells[2])
    assert -0.5 <= float(rest.split("}")[1]) <= 0  # -(x - 0.3)^2 for x in [0, 1]


def _deploy(cells: list[Any]) -> None:
    assert "[0, 0, 0]" in text(cells[2]), text(cells[2])
    assert "stopped" in text(cells[3])


def _label(cells: list[Any]) -> None:
    assert "texts 4" in text(cells[1])
    assert "reviews = example-reviews v" in text(cells[2]) and "great lecture" in text(cells[2])
    out = text(cells[4])
    assert "Assigned in example-mood: alice 4" in out and "0 of 4 labeled (0%)" in out, out


CHECKS = {
    "01-train-and-register.ipynb": _train,
    "02-pipeline.ipynb": _pipeline,
    "03-tune.ipynb": _tune,
    "04-deploy.ipynb": _deploy,
    "05-datasets-and-labeling.ipynb": _label,
}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_example_notebook_runs(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        cells = run(name, tmp_path / "examples", tmp_path / "cube-data", monkeypatch)
    finally:  # the deployment's warm host (and anything the notebook left running) ends here
        ws = Workspace.open(Settings.resolve(tmp_path / "cube-data"))
        try:
            stop_serving(ws, Caller("alice"))
        finally:
            ws.close()
    CHECKS[name](cells)
