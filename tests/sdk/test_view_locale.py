"""The notebook's live views speak the language chosen in JupyterLab's Settings > Language
(the user's settings file), else the environment's, else English."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cube_lab.sdk import view_locale
from cube_lab.sdk.views import LiveView


class Finished:
    """A handle that is done: what a view needs of it, and nothing else."""

    id = "j1"
    done = True
    live = False

    def refresh(self) -> Finished:
        return self

    def view_state(self) -> dict[str, Any]:
        return {
            "title": "job",
            "status": "succeeded",
            "progress": (3, 4, "steps"),
            "columns": ["metric", "last"],
            "rows": [["loss", 0.5]],
        }

    def view_parts(self) -> list[Any]:
        return []


def _settings(root: Path, text: str) -> None:
    file = root / view_locale.SETTINGS
    file.parent.mkdir(parents=True)
    file.write_text(text)


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("JUPYTERLAB_SETTINGS_DIR", str(tmp_path))
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(name, raising=False)
    view_locale.forget()
    yield tmp_path
    view_locale.forget()


def test_jupyterlabs_language_setting_is_the_views_language(lab: Path) -> None:
    _settings(lab, '{\n    // the language of the interface\n    "locale": "zh_CN"\n}\n')
    assert view_locale.lab_locale() == "zh_CN" and view_locale.view_locale() == "zh_CN"
    view = LiveView(Finished())
    assert view.status.value == "状态: <b>succeeded</b>"
    assert view.count.value == "3 / 4 步" and view.footer.value == "已结束"
    assert "<th style='text-align:left;padding:0 8px'>指标</th>" in view.table.value
    assert view.bar.description == "进度"


def test_the_browsers_language_or_no_setting_falls_back_to_lang(
    lab: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert view_locale.lab_locale() is None and view_locale.view_locale() == "en"
    assert LiveView(Finished()).footer.value == "Finished"
    _settings(lab, '{"locale": "default"}')
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    view_locale.forget()
    assert view_locale.view_locale() == "zh_CN"
    assert LiveView(Finished()).footer.value == "已结束"
    monkeypatch.setenv("LANG", "fr_FR.UTF-8")  # no catalog: English
    view_locale.forget()
    assert LiveView(Finished()).count.value == "3 of 4 steps"
