"""``%cube_register`` in a lab server started for a project (the spawner sets
``CUBE_LAB_PROJECT``) registers into that project unless ``--project`` says otherwise (issue 24)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cube_lab import magics
from cube_lab.hub.spawner import ENV_PROJECT
from cube_lab.sdk import models as sdk_models


class Version:
    name, version, flavor, data = "m", 1, "file", {"size_bytes": 2}

    def __init__(self, project: str | None) -> None:
        self.project = project or "alice"


@pytest.mark.parametrize(
    ("env", "flag", "expected"),
    [("ai101", "", "ai101"), ("ai101", "--project other", "other"), (None, "", None)],
)
def test_the_servers_project_is_the_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env: str | None, flag: str,
    expected: str | None,
) -> None:  # fmt: skip
    assert ENV_PROJECT == "CUBE_LAB_PROJECT"
    if env is None:
        monkeypatch.delenv(ENV_PROJECT, raising=False)
    else:
        monkeypatch.setenv(ENV_PROJECT, env)
    seen: dict[str, Any] = {}

    def register(target: Any, name: str, **kw: Any) -> Version:
        seen.update(kw, target=target)
        return Version(kw["project"])

    monkeypatch.setattr(sdk_models.models, "register", register)
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"ab")
    shell = type("Shell", (), {"user_ns": {}, "configurables": [], "config": None})()
    cube = magics.CubeMagics.__new__(magics.CubeMagics)
    cube.shell = shell
    magics.CubeMagics.cube_register(cube, f"m {weights} {flag}")
    assert seen["project"] == expected
