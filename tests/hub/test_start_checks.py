"""What a hub says at start, before any user waits on a spawn: a data dir under a folder user
accounts cannot pass (a 0700 temp or home folder) makes every server fail after the start
timeout, so the hub names the folder and the chmod that fixes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from cube_lab import accounts
from cube_lab.hub.config import warn_closed_folders
from cube_lab.hub.settings import ENV_DATA_DIR, parse


def test_a_data_dir_users_cannot_reach_is_named_with_its_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(accounts, "enabled", lambda: True)  # servers run as users' accounts
    monkeypatch.setenv("LANG", "C")
    monkeypatch.delenv(ENV_DATA_DIR, raising=False)  # it would win over the file's data_dir
    private = tmp_path / "home"
    (private / "hub").mkdir(parents=True)
    private.chmod(0o700)
    settings = parse({"data_dir": str(private / "hub" / "data"), "admin_users": ["root"]},
                     private / "hub" / "cube_hub.yaml")  # fmt: skip
    assert private in warn_closed_folders(settings)
    err = capsys.readouterr().err
    assert "user accounts cannot pass" in err and "chmod o+x " in err
    assert err.count(str(private)) == 2  # the folder, and in the command that fixes it
    private.chmod(0o711)  # the fix it names
    assert private not in warn_closed_folders(settings)
    assert str(private) not in capsys.readouterr().err
    monkeypatch.setattr(accounts, "enabled", lambda: False)  # servers run as the hub's user
    private.chmod(0o700)
    assert warn_closed_folders(settings) == []
