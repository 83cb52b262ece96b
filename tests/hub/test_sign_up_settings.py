"""The sign_up: section of cube_hub.yaml reaches NativeAuthenticator's real config (issue 24)."""

from __future__ import annotations

from pathlib import Path

import pytest
from traitlets.config import Config

from cube_lab.errors import InvalidInput
from cube_lab.hub import settings as hub_settings
from cube_lab.hub.config import configure


def _write(tmp_path: Path, extra: str) -> Path:
    file = tmp_path / "cube_hub.yaml"
    file.write_text(f"admin_users: [teacher]\ndata_dir: {tmp_path / 'data'}\n{extra}")
    return file


def test_defaults_are_class_friendly(tmp_path: Path) -> None:
    s = hub_settings.load(_write(tmp_path, ""))
    assert (s.open_signup, s.allowed_failed_logins, s.seconds_before_next_try) == (False, 10, 30)
    c = Config()
    configure(c, s)
    n = c.NativeAuthenticator
    assert (n.open_signup, n.allowed_failed_logins, n.seconds_before_next_try) == (False, 10, 30)
    assert c.CubeNativeAuthenticator.roster_passwords_one_time is True


def test_roster_passwords_may_be_kept(tmp_path: Path) -> None:
    c = Config()
    extra = "sign_up: {roster_passwords_one_time: false}\n"
    configure(c, hub_settings.load(_write(tmp_path, extra)))
    assert c.CubeNativeAuthenticator.roster_passwords_one_time is False


def test_settings_reach_native_authenticator(tmp_path: Path) -> None:
    extra = "sign_up: {open_signup: true, allowed_failed_logins: 0, seconds_before_next_try: 5}\n"
    c = Config()
    configure(c, hub_settings.load(_write(tmp_path, extra)))
    n = c.NativeAuthenticator
    assert (n.open_signup, n.allowed_failed_logins, n.seconds_before_next_try) == (True, 0, 5)


def test_checked_in_file_has_the_section() -> None:
    s = hub_settings.load(hub_settings.DEFAULT_FILE)
    assert s.allowed_failed_logins == 10 and s.seconds_before_next_try == 30


@pytest.mark.parametrize("bad", ["-1", "'ten'", "true"])
def test_bad_value_is_a_clear_error(tmp_path: Path, bad: str) -> None:
    with pytest.raises(InvalidInput, match="allowed_failed_logins"):
        hub_settings.load(_write(tmp_path, f"sign_up: {{allowed_failed_logins: {bad}}}\n"))
