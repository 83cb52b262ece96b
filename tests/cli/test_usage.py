"""What the command line says to someone finding their way: its version, and for a mistyped
command or subcommand the closest one, in English or in Chinese ($LANG)."""

from __future__ import annotations

import pytest

from cube_lab import __version__
from cube_lab.cli import main


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"cube-lab {__version__}\n"


@pytest.mark.parametrize(
    ("argv", "suggested"),
    [
        (["modles", "list"], "model"),
        (["pipelnes", "list"], "pipeline"),
        (["model", "lst"], "list"),
        (["deploy", "--help-me"], None),  # an unknown option: argparse's own message
        (["zzz"], None),  # nothing close: no guess
    ],
)
def test_a_mistyped_command_names_the_closest(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    suggested: str | None,
) -> None:
    monkeypatch.setenv("LANG", "C")
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    if suggested:
        assert err.rstrip().endswith(f"did you mean {suggested!r}?"), err
    else:
        assert "did you mean" not in err


def test_in_chinese(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    with pytest.raises(SystemExit):
        main(["modles", "list"])
    assert capsys.readouterr().err.rstrip().endswith("你是不是想输入 'model'\uff1f")
