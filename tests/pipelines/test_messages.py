"""Pipeline validation problems in the reader's language: the REST validate answer by
Accept-Language, ``cube-lab pipeline validate`` by LANG; English otherwise."""

# ruff: noqa: RUF001  (the Chinese texts asserted here use full-width punctuation)

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from pipeline_util import node, write_pipeline


def _broken(folder: Path) -> None:
    """Two problems: a missing script, and a link from a node that does not exist."""
    write_pipeline(folder, [node("a", filename="missing.py", upstream=("ghost",))])


async def test_the_validate_answer_follows_accept_language(
    jp_fetch: Any, jp_root_dir: Path
) -> None:
    _broken(jp_root_dir)

    async def validate(headers: dict[str, str]) -> dict[str, Any]:
        resp = await jp_fetch(
            "cube",
            "api",
            "v1",
            "pipelines",
            "validate",
            method="POST",
            body=json.dumps({"path": "p.pipeline"}),
            headers={"Authorization": "token alice-secret", **headers},
        )
        return {p["field"]: p["message"] for p in json.loads(resp.body)["problems"]}

    english = await validate({})
    assert english == {
        "inputs": "link from unknown node 'ghost'",
        "filename": "file 'missing.py' not found",
    }
    chinese = await validate({"Accept-Language": "zh-CN, en;q=0.5"})
    assert chinese == {  # the fields (JSON keys, field names) stay English
        "inputs": "连线来自未知节点 'ghost'",
        "filename": "找不到文件 'missing.py'",
    }

    # a run refused for the same problems: the error sentence and each problem in Chinese
    resp = await jp_fetch(
        "cube",
        "api",
        "v1",
        "pipelines",
        "runs",
        method="POST",
        body=json.dumps({"path": "p.pipeline"}),
        headers={"Authorization": "token alice-secret", "Accept-Language": "zh-CN"},
        raise_error=False,
    )
    refused = json.loads(resp.body)
    assert resp.code == 400
    assert refused["error"].startswith("流水线无效：节点 'a'，")
    assert refused["error"].endswith("（另有 1 个问题）")
    assert {p["message"] for p in refused["detail"]} == set(chinese.values())


def _validate(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES", "LANG")}
    return subprocess.run(
        [sys.executable, "-m", "cube_lab.cli", "pipeline", "validate", "p.pipeline", *args],
        cwd=folder,
        env={**clean, "CUBE_LAB_USER": "alice", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_validate_prints_the_problems_in_lang(tmp_path: Path) -> None:
    _broken(tmp_path)
    english = _validate(tmp_path, LANG="C.UTF-8")
    assert english.returncode == 1
    assert "p.pipeline: 2 problem(s)" in english.stderr
    assert "node 'a': filename: file 'missing.py' not found" in english.stderr

    chinese = _validate(tmp_path, LANG="zh_CN.UTF-8")
    assert chinese.returncode == 1
    assert "p.pipeline：2 个问题" in chinese.stderr
    assert "节点 'a'：filename: 找不到文件 'missing.py'" in chinese.stderr
    assert "not found" not in chinese.stderr

    as_json = _validate(tmp_path, "--json", LC_ALL="zh_CN.UTF-8")
    problems = json.loads(as_json.stdout)["problems"]
    assert {p["message"] for p in problems} == {
        "连线来自未知节点 'ghost'",
        "找不到文件 'missing.py'",
    }
