"""Server messages a person reads follow their locale: REST errors by Accept-Language, the CLI
by LC_ALL / LC_MESSAGES / LANG; English otherwise (cube_lab/locale/messages.py)."""

# ruff: noqa: RUF001  (the Chinese texts asserted here use full-width punctuation)

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cube_lab.locale.messages import Text, _t, env_locale, localize

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "extract_strings", ROOT / "scripts" / "extract_strings.py"
)
assert _spec and _spec.loader
extract_strings = importlib.util.module_from_spec(_spec)
sys.modules["extract_strings"] = extract_strings
_spec.loader.exec_module(extract_strings)

CLI = [sys.executable, "-m", "cube_lab.cli"]


# -- the marker ----------------------------------------------------------------------------


def test_a_marked_message_is_its_english_and_is_told_again_in_chinese() -> None:
    msg = _t("project {name!r} not found", name="demo")
    assert msg == "project 'demo' not found" and isinstance(msg, str)
    assert json.dumps({"error": msg}) == '{"error": "project \'demo\' not found"}'
    assert pickle.loads(pickle.dumps(msg)) == msg
    assert msg.translated("zh_CN") == "找不到项目组 'demo'"
    assert msg.translated("en") == "project 'demo' not found"
    # error and detail, nested in lists and dicts; plain strings stay as they are
    body = {"error": msg, "detail": [_t("Ask a project owner."), "as is"]}
    assert localize(body, "zh_CN") == {
        "error": "找不到项目组 'demo'",
        "detail": ["请联系项目组所有者。", "as is"],
    }
    # a message with no entry stays English
    assert Text("nothing like this {n}", {"n": 1}).translated("zh_CN") == "nothing like this 1"


@pytest.mark.parametrize(
    ("env", "locale"),
    [
        ({"LANG": "zh_CN.UTF-8"}, "zh_CN"),
        ({"LC_MESSAGES": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, "zh_CN"),
        ({"LC_ALL": "C", "LANG": "zh_CN.UTF-8"}, "en"),
        ({"LC_ALL": "zh_CN.UTF-8", "LANG": "C.UTF-8"}, "zh_CN"),
        ({"LANG": "zh_TW.UTF-8"}, "en"),
        ({"LANG": "de_DE.UTF-8"}, "en"),
        ({}, "en"),
    ],
)
def test_the_command_lines_locale_comes_from_the_environment(
    env: dict[str, str], locale: str
) -> None:
    assert env_locale(env) == locale


# -- REST ------------------------------------------------------------------------------------


async def test_a_rest_error_comes_in_chinese_when_asked(jp_fetch: Any) -> None:
    async def get(headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        resp = await jp_fetch(
            "cube",
            "api",
            "v1",
            "projects",
            "nosuch",
            "models",
            "m",
            headers={"Authorization": "token alice-secret", **headers},
            raise_error=False,
        )
        return resp.code, json.loads(resp.body)

    code, english = await get({})
    assert code == 404 and set(english) == {"error", "detail"}
    assert english == {
        "error": "project 'nosuch' not found",
        "detail": "It does not exist or you are not a member; GET /cube/api/v1/projects lists "
        "yours.",
    }
    assert await get({"Accept-Language": "en-US,en;q=0.9"}) == (404, english)
    assert await get({"Accept-Language": "fr-FR, de;q=0.8"}) == (404, english)

    # JupyterLab's front end in 中文 (简体) sends "zh-CN, en;q=0.5" (src/api.ts)
    code, chinese = await get({"Accept-Language": "zh-CN, en;q=0.5"})
    assert code == 404 and set(chinese) == {"error", "detail"}  # the keys stay English
    assert chinese == {
        "error": "找不到项目组 'nosuch'",
        "detail": "它不存在，或你不是成员；GET /cube/api/v1/projects 列出你的项目组。",
    }

    # an input error the common path raises (a NUL byte in a query argument)
    resp = await jp_fetch(
        "cube",
        "api",
        "v1",
        "models",
        params={"archived": "a\x00b"},
        headers={"Authorization": "token alice-secret", "Accept-Language": "zh"},
        raise_error=False,
    )
    body = json.loads(resp.body)
    assert resp.code == 400
    assert body == {
        "error": "查询参数 'archived' 含有 NUL 字节（%00）",
        "detail": "请从查询字符串中去掉 NUL 字符。",
    }


# -- the CLI -------------------------------------------------------------------------------


def run(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES", "LANG")}
    return subprocess.run(
        [*CLI, *args],
        cwd=cwd,
        env={**clean, "CUBE_LAB_USER": "alice", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_cli_error_comes_in_chinese_under_a_chinese_locale(tmp_path: Path) -> None:
    english = run("model", "show", "nosuch", cwd=tmp_path, LANG="C.UTF-8")
    assert english.returncode == 1
    assert english.stderr.startswith("cube-lab: error: model 'nosuch' not found in project")
    assert "GET /cube/api/v1/models lists the models you can see." in english.stderr

    chinese = run("model", "show", "nosuch", cwd=tmp_path, LANG="zh_CN.UTF-8")
    assert chinese.returncode == 1
    assert chinese.stderr.startswith("cube-lab：错误：在项目组 ")
    assert "找不到模型 'nosuch'" in chinese.stderr
    assert "列出你能看到的模型" in chinese.stderr and "not found" not in chinese.stderr

    # --json keeps the REST API's body: English keys, the texts in the reader's language
    as_json = run("model", "show", "nosuch", "--json", cwd=tmp_path, LC_ALL="zh_CN.UTF-8")
    assert as_json.returncode == 1
    body = json.loads(as_json.stdout)
    assert set(body) == {"error", "detail"} and "找不到模型 'nosuch'" in body["error"]


def test_cli_help_and_argparse_errors_follow_lang(tmp_path: Path) -> None:
    chinese = run("model", "--help", cwd=tmp_path, LANG="zh_CN.UTF-8")
    assert chinese.returncode == 0
    assert chinese.stdout.startswith("用法：cube-lab model")
    assert "显示此帮助信息并退出" in chinese.stdout
    assert "把文件或文件夹注册为模型版本" in chinese.stdout  # `register`'s help
    english = run("model", "--help", cwd=tmp_path, LANG="en_US.UTF-8")
    assert english.stdout.startswith("usage: cube-lab model")
    assert "register a file or folder as a model version" in english.stdout

    missing = run("model", cwd=tmp_path, LANG="zh_CN.UTF-8")
    assert missing.returncode == 2
    assert "cube-lab model：错误：缺少以下必需参数：command" in missing.stderr
    missing = run("model", cwd=tmp_path)
    assert "the following arguments are required: command" in missing.stderr


# -- the check -----------------------------------------------------------------------------


def test_marked_messages_are_extracted_and_a_literal_is_required(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "service.py").write_text(
        "from cube_lab.locale.messages import _t\n"
        "def f(name, text):\n"
        "    raise ValueError(_t('project {name!r} not found', name=name))\n"
        "def g(text):\n"
        "    return _t(text)\n",
        encoding="utf-8",
    )
    messages, errors = extract_strings.extract_server_messages(pkg, tmp_path)
    assert [(m.msgid, m.where) for m in messages] == [
        ("project {name!r} not found", ["pkg/service.py:3"])
    ]
    assert errors == ["pkg/service.py:5: _t() needs a string literal message id"]


def test_check_fails_on_a_marked_message_without_entry_or_with_other_fields(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found, errors = extract_strings.extract()
    assert errors == []
    key = (None, "model {name!r} not found in project {project!r}")
    assert key in found  # a marked server message (cube_lab/registry)
    assert extract_strings.problems("zh_CN", found) == []

    real = extract_strings.translations

    def without(lang: str) -> dict:
        have = dict(real(lang))
        have[key] = []
        return have

    monkeypatch.setattr(extract_strings, "translations", without)
    bad = extract_strings.problems("zh_CN", found)
    assert any("not found in project" in p and "no zh_CN translation" in p for p in bad)

    def other_fields(lang: str) -> dict:
        have = dict(real(lang))
        have[key] = ["在项目组 {project} 中找不到模型 {name!r}"]  # {project!r} lost its !r
        return have

    monkeypatch.setattr(extract_strings, "translations", other_fields)
    bad = extract_strings.problems("zh_CN", found)
    assert any("placeholders differ" in p for p in bad)
    assert extract_strings.placeholders("{n:,} rows, {{literal}}, %(prog)s, %1") == {
        "{n:,}",
        "%(prog)s",
        "1",
    }
