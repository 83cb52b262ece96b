"""More server messages in the reader's language (issue 22): the KFP compiler's refusals over
REST (Accept-Language) and in ``cube-lab pipeline compile`` (LANG), the deployment router's
refusals (Accept-Language), the model loaders' errors, and the plug-in node kinds' form titles
the pipeline editor translates; English otherwise."""

# ruff: noqa: RUF001  (the Chinese texts asserted here use full-width punctuation)

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pipeline_util import node, write_pipeline

from cube_lab.locale.messages import Text, localize

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "extract_strings", ROOT / "scripts" / "extract_strings.py"
)
assert _spec and _spec.loader
extract_strings = importlib.util.module_from_spec(_spec)
sys.modules["extract_strings"] = extract_strings
_spec.loader.exec_module(extract_strings)


def _published_value(folder: Path) -> None:
    """A pipeline that validates but cannot compile for KFP: a node's env var reads a value
    another node publishes, which only local runs pass on."""
    (folder / "x.py").write_text("print('x')\n")
    write_pipeline(
        folder,
        [
            node("prep", "cube-lab:shell", label="Prep", command="echo n=1"),
            node(
                "x",
                filename="x.py",
                label="Fit",
                upstream=("prep",),
                env_vars=[{"env_var": "A", "value": "{{ nodes.prep.values.n }}"}],
            ),
        ],
    )


ENGLISH_ERROR = (
    "node 'Fit' (x): env var 'A' uses a value published by another node "
    "('{{ nodes.prep.values.n }}')"
)
CHINESE_ERROR = (
    "节点 'Fit'（x）：环境变量 'A' 使用了另一个节点发布的值（'{{ nodes.prep.values.n }}'）"
)
CHINESE_DETAIL = "节点的值只在本地运行时传递；请改用流水线参数或文件。"


async def test_a_kfp_compile_refusal_follows_accept_language(
    jp_fetch: Any, jp_root_dir: Path
) -> None:
    _published_value(jp_root_dir)

    async def compile_(headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        resp = await jp_fetch(
            "cube",
            "api",
            "v1",
            "pipelines",
            "compile",
            method="POST",
            body=json.dumps({"path": "p.pipeline"}),
            headers={"Authorization": "token alice-secret", **headers},
            raise_error=False,
        )
        return resp.code, json.loads(resp.body)

    code, english = await compile_({})
    assert code == 400
    assert english["error"] == ENGLISH_ERROR
    assert english["detail"].startswith("Node values are passed only in local runs")
    code, chinese = await compile_({"Accept-Language": "zh-CN, en;q=0.5"})
    assert code == 400
    assert chinese == {"error": CHINESE_ERROR, "detail": CHINESE_DETAIL}


def _compile_cli(folder: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES", "LANG")}
    return subprocess.run(
        [sys.executable, "-m", "cube_lab.cli", "pipeline", "compile", "p.pipeline"],
        cwd=folder,
        env={**clean, "CUBE_LAB_USER": "alice", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_compile_refusal_follows_lang(tmp_path: Path) -> None:
    _published_value(tmp_path)
    english = _compile_cli(tmp_path, LANG="C.UTF-8")
    assert english.returncode != 0
    assert ENGLISH_ERROR in english.stderr
    chinese = _compile_cli(tmp_path, LANG="zh_CN.UTF-8")
    assert chinese.returncode != 0
    assert CHINESE_ERROR in chinese.stderr
    assert CHINESE_DETAIL in chinese.stderr
    assert "published by another node" not in chinese.stderr
    assert not (tmp_path / "p.yaml").exists()


def _router_request(headers: dict[str, str], path: str = "/predict") -> Any:
    from cube_lab.serving.http import Request

    return Request("POST", path, "", headers, b"{}", True, path, "127.0.0.1")


def test_the_routers_refusals_follow_accept_language() -> None:
    from cube_lab.serving.access import Gate, Refusal
    from cube_lab.serving.router import Router

    gate = Gate("guarded", "router-token")
    gate.configure({"auth": "required", "rate_limit": None, "allow": [], "deny": ["127.0.0.1"]})
    refused = gate.check({}, "127.0.0.1", 0.0, 0.0)
    assert isinstance(refused, Refusal) and refused.status == 403
    no_key = Gate("guarded", "router-token")
    no_key.configure({"auth": "required"})
    missing = no_key.check({}, "10.0.0.1", 0.0, 0.0)
    assert isinstance(missing, Refusal) and missing.status == 401

    def answer(verdict: Refusal, headers: dict[str, str], path: str = "/predict") -> Any:
        req = _router_request(headers, path)
        resp = Router._error(req, verdict.status, verdict.error, verdict.detail)
        return json.loads(resp.body)

    english = answer(refused, {})
    assert english["error"] == "client address 127.0.0.1 may not call deployment 'guarded'"
    chinese = answer(refused, {"accept-language": "zh-CN,zh;q=0.9"})
    assert chinese["error"] == "客户端地址 127.0.0.1 不允许调用推理服务 'guarded'"
    assert chinese["detail"].startswith("推理服务的允许/拒绝列表拒绝了它")

    assert answer(missing, {"accept-language": "en-US"})["error"] == (
        "deployment 'guarded' needs an API key"
    )
    told = answer(missing, {"accept-language": "zh-CN"})
    assert told["error"] == "推理服务 'guarded' 需要 API 密钥"
    # the detail's own sentence in Chinese, the commands and header names as they are
    assert told["detail"].startswith("请以 `Authorization: Bearer <key>`")
    assert "`cube-lab deployment keys create guarded KEY-NAME`" in told["detail"]
    # OpenAI's routes keep OpenAI's shape, in English, for its clients
    openai = answer(missing, {"accept-language": "zh-CN"}, "/v1/chat/completions")
    assert openai["error"]["message"].startswith("deployment 'guarded' needs an API key")


def test_a_model_loaders_error_is_told_in_chinese(tmp_path: Path) -> None:
    from cube_lab.serving import loaders

    with pytest.raises(loaders.LoadError) as missing:
        loaders.load(tmp_path / "gone", "sklearn")
    message = missing.value.args[0]
    assert isinstance(message, Text)
    assert message == f"the model artifact {tmp_path / 'gone'} does not exist"
    assert localize(message, "zh_CN") == f"模型文件 {tmp_path / 'gone'} 不存在"

    (tmp_path / "m").mkdir()
    with pytest.raises(loaders.LoadError) as flavor:
        loaders.load(tmp_path / "m", "keras")
    assert str(flavor.value).startswith("cannot serve flavor 'keras'")
    assert localize(flavor.value.args[0], "zh_CN").startswith("无法部署模型格式 'keras'")


def test_plug_in_node_kinds_form_titles_are_extracted_and_translated() -> None:
    from cube_lab.pipelines.nodekinds import node_kinds

    found, errors = extract_strings.extract_node_kinds(extract_strings.PACKAGE, ROOT)
    assert errors == []
    extracted = {m.msgid for m in found}
    catalog = extract_strings.translations("zh_CN")
    # what GET .../pipelines/node-kinds sends as each kind's form: every title and description
    texts = set()
    for kind in node_kinds().values():
        schema = getattr(kind, "schema", None) or {}
        for prop in schema.get("properties", {}).values():
            texts |= {prop[k] for k in ("title", "description") if isinstance(prop.get(k), str)}
    assert {"Trials at a time", "Processes per worker", "Max steps (overrides)"} <= texts
    assert sorted(texts - extracted) == []
    assert sorted(t for t in texts if not catalog.get((None, t))) == []
    assert catalog[(None, "Trials at a time")] == ["同时运行的试验数"]
    assert catalog[(None, "Experiment config (NNI YAML)")] == ["实验配置（NNI YAML）"]


def test_the_schema_titles_of_a_kind_are_read_from_its_module(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "kind.py").write_text(
        "SCHEMA = {'properties': {'a': {'title': 'Alpha', 'enum': list(range(3))},\n"
        "                         'b': {'type': 'integer', 'description': 'Beta things'}}}\n"
        "class K:\n"
        "    ops = ('x:k',)\n"
        "    display_name = 'Kay'\n"
        "    schema = SCHEMA\n"
        "class NotAKind:\n"
        "    schema = {'properties': {'c': {'title': 'Gamma'}}}\n"
    )
    found, _ = extract_strings.extract_node_kinds(package, tmp_path)
    assert {m.msgid: m.where[0] for m in found} == {
        "Kay": "pkg/kind.py:5",
        "Alpha": "pkg/kind.py:1",
        "Beta things": "pkg/kind.py:2",
    }
