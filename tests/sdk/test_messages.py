"""The SDK's errors in the notebook's language: over REST the client asks the server for
JupyterLab's language (else ``LANG``'s) with Accept-Language, and the magics tell the
in-process errors again in it; English otherwise."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from server_util import TOKEN, free_port, start_server, wait_up

import cube_lab as cl
from cube_lab import sdk
from cube_lab.errors import InvalidInput, NotFound
from cube_lab.locale.messages import _t
from cube_lab.magics import _cube_errors
from cube_lab.sdk import view_locale
from cube_lab.sdk.models import parse_ref

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No Settings > Language choice and no locale variables: each test sets its own."""
    settings = tmp_path / "lab-settings"
    settings.mkdir()
    monkeypatch.setenv("JUPYTERLAB_SETTINGS_DIR", str(settings))
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(name, raising=False)
    view_locale.forget()
    yield settings
    view_locale.forget()


def _lang(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("LANG", value)
    view_locale.forget()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """A real ``jupyter server`` with cube-lab (as alice, its own store): its URL."""
    root, data = tmp_path / "server-root", tmp_path / "server-data"
    root.mkdir()
    port = free_port()
    proc = start_server(root, data, port, tmp_path)
    try:
        wait_up(port)
        yield f"http://127.0.0.1:{port}/"
    finally:
        sdk.disconnect()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_a_rest_sdk_error_comes_in_chinese_under_a_chinese_locale(
    lab: Path, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cl.connect(server, token=TOKEN)

    _lang(monkeypatch, "C.UTF-8")
    with pytest.raises(NotFound) as english:
        cl.models.get("nosuch")
    assert english.value.error.startswith("model 'nosuch' not found in project")
    assert "GET /cube/api/v1/models lists the models you can see." in str(english.value.detail)

    _lang(monkeypatch, "zh_CN.UTF-8")
    with pytest.raises(NotFound) as chinese:
        cl.models.get("nosuch")
    assert "找不到模型 'nosuch'" in chinese.value.error
    assert "not found" not in chinese.value.error
    assert "列出你能看到的模型" in str(chinese.value.detail)

    # JupyterLab's Settings > Language wins over LANG: the kernel reads the user's choice
    _lang(monkeypatch, "en_US.UTF-8")
    file = lab / view_locale.SETTINGS
    file.parent.mkdir(parents=True)
    file.write_text('{\n  // the user chose 中文 (简体)\n  "locale": "zh_CN"\n}\n')
    view_locale.forget()
    with pytest.raises(NotFound) as chosen:
        cl.models.get("nosuch")
    assert "找不到模型 'nosuch'" in chosen.value.error


def test_the_magics_tell_an_in_process_error_in_the_notebooks_language(
    lab: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    @_cube_errors
    def show(ref: str) -> None:
        parse_ref(ref)  # the SDK's own check, before any store or server

    _lang(monkeypatch, "zh_CN.UTF-8")
    with pytest.raises(UsageError) as chinese:
        show("iris:")
    text = str(chinese.value)
    assert text.startswith("cube-lab: 模型引用 'iris:' ") and "lacks" not in text
    assert '"iris:3"' in text  # the example stays as it is

    _lang(monkeypatch, "C.UTF-8")
    with pytest.raises(UsageError) as english:
        show("iris:")
    assert str(english.value) == (
        "cube-lab: model reference 'iris:' lacks a name or a version\n"
        'e.g. "iris:3" or "iris@production".'
    )


def test_the_sdks_own_messages_have_chinese_entries() -> None:
    with pytest.raises(InvalidInput) as bad:
        parse_ref("")
    assert bad.value.error == "a model reference must be a non-empty string, got ''"
    assert "模型引用" in bad.value.error.translated("zh_CN")  # type: ignore[attr-defined]
    timeout = _t(
        "{kind} {id} is still {status} after {timeout:g}s",
        kind="job",
        id="j1",
        status="running",
        timeout=2.0,
    )
    assert timeout == "job j1 is still running after 2s"
    assert "j1" in timeout.translated("zh_CN") and "still" not in timeout.translated("zh_CN")
