"""The ``cube-lab`` command as a user runs it: a real subprocess, real exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "cube_lab.cli"]


def run(*args: str, cwd: Path, user: str = "alice") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CUBE_LAB_USER": user}
    return subprocess.run(
        [*CLI, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "model.onnx"
    path.write_bytes(b"onnx" * 64)
    return path


def test_register_list_show_alias_download(tmp_path: Path, model_file: Path) -> None:
    out = run(
        "model",
        "register",
        "model.onnx",
        "--name",
        "det",
        "--metric",
        "map=0.51",
        "--param",
        "epochs=20",
        "--param",
        "optimizer=adam",
        "--alias",
        "staging",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "Registered det v1 (onnx, file, 256 bytes" in out.stdout
    out = run(
        "model",
        "register",
        str(model_file),
        "--name",
        "det",
        "--metric",
        "map=0.55",
        "--json",
        cwd=tmp_path,
    )
    version = json.loads(out.stdout)
    assert version["version"] == 2 and version["metrics"] == {"map": 0.55}

    listed = json.loads(run("model", "list", "--json", cwd=tmp_path).stdout)
    assert [(m["name"], m["latest_version"], m["aliases"]) for m in listed] == [
        ("det", 2, {"staging": 1})
    ]
    table = run("model", "list", cwd=tmp_path).stdout
    assert "det" in table and "staging=v1" in table

    assert run("model", "alias", "det", "production", "2", cwd=tmp_path).returncode == 0
    shown = json.loads(run("model", "show", "det", "--json", cwd=tmp_path).stdout)
    assert shown["aliases"] == {"production": 2, "staging": 1}
    assert shown["versions"][1]["params"] == {"epochs": 20, "optimizer": "adam"}
    compare = run("model", "compare", "det", "1", "2", cwd=tmp_path).stdout
    assert "metric map" in compare and "0.51" in compare and "0.55" in compare

    target = tmp_path / "copy.onnx"
    assert (
        run("model", "download", "det:production", "-o", str(target), cwd=tmp_path).returncode == 0
    )
    assert target.read_bytes() == model_file.read_bytes()


def test_other_users_models_are_invisible(tmp_path: Path, model_file: Path) -> None:
    assert run("model", "register", "model.onnx", "--name", "mine", cwd=tmp_path).returncode == 0
    assert json.loads(run("model", "list", "--json", cwd=tmp_path, user="bob").stdout) == []
    out = run("model", "show", "mine", "--project", "alice", cwd=tmp_path, user="bob")
    assert out.returncode == 1 and "project 'alice' not found" in out.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["model", "register", "missing.pt", "--name", "m"], "does not exist"),
        (["model", "register", "model.onnx", "--name", "no good"], "invalid model name"),
        (["model", "register", "model.onnx", "--name", "m", "--metric", "acc"], "KEY=VALUE"),
        (
            ["model", "register", "model.onnx", "--name", "m", "--metric", "acc=hi"],
            "must be a number",
        ),
        (["model", "delete", "m"], "--yes"),
    ],
)
def test_bad_input_exits_non_zero_with_a_message(
    tmp_path: Path, model_file: Path, args: list[str], message: str
) -> None:
    out = run(*args, cwd=tmp_path)
    assert out.returncode != 0 and message in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert (
        json.loads(run("model", "list", "--json", cwd=tmp_path).stdout) == [] or args[1] == "delete"
    )


def test_delete_and_archive(tmp_path: Path, model_file: Path) -> None:
    for _ in range(2):
        run("model", "register", "model.onnx", "--name", "m", cwd=tmp_path)
    assert run("model", "archive", "m", cwd=tmp_path).returncode == 0
    assert json.loads(run("model", "list", "--json", cwd=tmp_path).stdout) == []
    assert len(json.loads(run("model", "list", "--all", "--json", cwd=tmp_path).stdout)) == 1
    assert run("model", "delete", "m:1", "--yes", cwd=tmp_path).returncode == 0
    shown = json.loads(run("model", "show", "m", "--json", cwd=tmp_path).stdout)
    assert [v["version"] for v in shown["versions"]] == [2]
    assert run("model", "delete", "m", "--yes", cwd=tmp_path).returncode == 0
    assert json.loads(run("model", "list", "--all", "--json", cwd=tmp_path).stdout) == []


def test_projects_from_the_cli(tmp_path: Path, model_file: Path) -> None:
    assert run("project", "create", "vision", cwd=tmp_path).returncode == 0
    out = run("project", "member", "vision", "bob", cwd=tmp_path)
    assert out.returncode == 0 and "Invited bob to vision" in out.stdout
    out = run("project", "list", cwd=tmp_path, user="bob")
    assert "vision" in out.stdout and "Invited to: vision (from alice)" in out.stdout
    listed = json.loads(run("project", "list", "--json", cwd=tmp_path, user="bob").stdout)
    assert [p["name"] for p in listed] == ["bob"]  # invited is not a member
    out = run("project", "invitations", cwd=tmp_path, user="bob")
    assert out.returncode == 0 and "vision" in out.stdout and "alice" in out.stdout
    out = run("project", "accept", "vision", cwd=tmp_path, user="bob")
    assert out.returncode == 0 and "You are now member of vision" in out.stdout
    out = run("project", "accept", "vision", cwd=tmp_path, user="bob")
    assert out.returncode == 1 and "no invitation to project 'vision'" in out.stderr
    # carol declines; a squatted user name is refused with what to do instead
    assert run("project", "member", "vision", "carol", cwd=tmp_path).returncode == 0
    assert run("project", "decline", "vision", cwd=tmp_path, user="carol").returncode == 0
    out = run("project", "invitations", cwd=tmp_path, user="carol")
    assert out.returncode == 0 and "No invitations." in out.stdout
    out = run("project", "create", "carol", cwd=tmp_path)
    assert out.returncode == 1 and "project name 'carol' is not available" in out.stderr
    assert "'alice-carol'" in out.stderr
    assert (
        run(
            "model",
            "register",
            "model.onnx",
            "--name",
            "shared",
            "--project",
            "vision",
            cwd=tmp_path,
        ).returncode
        == 0
    )
    listed = json.loads(run("model", "list", "--json", cwd=tmp_path, user="bob").stdout)
    assert [(m["project"], m["name"]) for m in listed] == [("vision", "shared")]
    projects = json.loads(run("project", "list", "--json", cwd=tmp_path, user="bob").stdout)
    assert {p["name"]: p["role"] for p in projects} == {"bob": "owner", "vision": "member"}
