"""`cube-lab dataset ...` and `cube-lab label ...`: the commands, their output and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from labeling_util import make_images

from cube_lab.cli import main
from cube_lab.identity import Caller


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any) -> Any:
    monkeypatch.setenv("CUBE_LAB_USER", "alice")
    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def test_dataset_and_label_commands(cli: Any, ws: Any, tmp_path: Path) -> None:
    make_images(tmp_path / "pics", 4)
    code, out, _ = cli("dataset", "create", "pics", "pics")
    assert code == 0 and out.startswith("Created dataset pics in project alice: 4 images")
    code, out, _ = cli("dataset", "list", "--json")
    assert [d["name"] for d in json.loads(out)] == ["pics"]

    code, out, _ = cli(
        "label", "create", "pets", "--dataset", "pics", "--type", "image-bbox",
        "--labels", "cat,dog", "--no-review",
    )  # fmt: skip
    assert code == 0 and "1=cat, 2=dog" in out
    code, out, _ = cli("label", "assign", "pets", "--users", "alice")
    assert (code, out.strip()) == (0, "Assigned 4 to alice")

    alice = Caller("alice")  # annotate through the service, as the UI would
    while (task := ws.labeling.next(alice, "alice", "pets")) is not None:
        box = {"label": "cat", "x": 1, "y": 1, "w": 5, "h": 6}
        ws.labeling.save(alice, "alice", "pets", task.id, {"boxes": [box]}, submit=True)
    code, out, _ = cli("label", "list")
    assert code == 0 and "4/4 done" in out
    code, out, _ = cli("label", "show", "pets")
    assert "alice" in out and "labels: cat=4, dog=0" in out

    code, out, _ = cli("label", "export", "pets", "--format", "yolo", "-o", "yolo-out")
    assert code == 0 and "version 1" in out and "copied to yolo-out" in out
    data = yaml.safe_load((tmp_path / "yolo-out" / "data.yaml").read_text())
    assert data["names"] == {0: "cat", 1: "dog"}
    assert len(list((tmp_path / "yolo-out" / "labels").glob("*.txt"))) == 4
    code, _, err = cli("label", "export", "pets", "--format", "yolo", "-o", "yolo-out")
    assert code == 2 and "yolo-out already exists and is not empty" in err
    code, out, _ = cli("label", "export", "pets", "--format", "coco", "-o", "coco.json")
    assert code == 0 and "its images are in" in out  # the README's example: the COCO file
    assert len(json.loads((tmp_path / "coco.json").read_text())["annotations"]) == 4

    code, out, _ = cli("label", "export", "pets", "--format", "labelstudio", "-o", "ls.json")
    assert code == 0 and len(json.loads((tmp_path / "ls.json").read_text())) == 4
    cli(
        "label", "create", "copy", "--dataset", "pics", "--type", "image-bbox",
        "--labels", "cat,dog",
    )  # fmt: skip
    code, out, _ = cli("label", "import", "copy", "ls.json", "--format", "labelstudio")
    assert (code, out.strip()) == (0, "Imported 4 task(s), skipped 0")
    code, out, _ = cli("dataset", "show", "pics")
    assert "v1  yolo" in out and "v2  coco" in out and "v3  labelstudio" in out


def test_bad_input_exits_non_zero_with_a_message(cli: Any, tmp_path: Path) -> None:
    make_images(tmp_path / "pics", 2)
    (tmp_path / "pics" / "x.png").write_bytes(b"garbage")
    code, _, err = cli("dataset", "create", "pics", "pics")
    assert code == 2 and "x.png" in err and err.startswith("cube-lab: error:")
    code, _, err = cli(
        "label", "create", "p", "--dataset", "nope", "--type", "image-class", "--labels", "a"
    )
    assert code == 1 and "dataset 'nope' not found" in err
    (tmp_path / "bad.json").write_text("{not json")
    code, _, err = cli("label", "import", "p", "bad.json", "--format", "labelstudio")
    assert code == 2 and "bad.json is not valid JSON" in err


def test_the_real_command(tmp_path: Path) -> None:
    """One run of the installed entry point, as a script would call it."""
    make_images(tmp_path / "pics", 2)
    done = subprocess.run(
        [sys.executable, "-m", "cube_lab.cli", "dataset", "create", "pics", "pics", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "CUBE_LAB_USER": "alice"},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["item_count"] == 2
