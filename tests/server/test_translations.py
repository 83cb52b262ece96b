"""The zh-CN catalog of the lab extension: complete, placeholders kept, served by JupyterLab.

scripts/extract_strings.py finds every ``trans.__`` / ``_n`` / ``_p`` string in src/; the
catalog (cube_lab/locale/zh_CN/LC_MESSAGES/cube_lab.po, compiled to cube_lab.json) must hold
each of them, and a real server must hand the compiled JSON to JupyterLab's front end under
the ``cube_lab`` domain when the user picks 中文 (简体) in Settings > Language.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "extract_strings", ROOT / "scripts" / "extract_strings.py"
)
assert _spec and _spec.loader
extract_strings = importlib.util.module_from_spec(_spec)
sys.modules["extract_strings"] = extract_strings
_spec.loader.exec_module(extract_strings)

LANG = "zh_CN"

# docs/glossary.zh-CN.md: an English term in a string -> the Chinese its translation carries
GLOSSARY = {
    r"\bpipelines?\b(?<!Kubeflow Pipelines)": "流水线",
    r"\bjob templates?\b": "任务模板",
    r"\bdistributed training\b": "分布式训练",
    r"\btuning\b": "超参搜索",
    r"\bdeployments?\b": "推理服务",
    r"\bregistry\b": "模型仓库",
    r"\blabeling\b": "标注",
    r"\bdatasets?\b": "数据集",
    r"\bquota\b": "配额",
    r"\bnodes?\b": "节点",
    r"\btrials?\b": "试验",
    r"\bexperiments?\b": "实验",
    r"\baliase?s?\b": "别名",
    r"\bcanary\b": "金丝雀",
    r"\breplicas?\b": "副本",
    r"\bannotators?\b": "标注员",
    r"\bcheckpoint\b": "检查点",
}


@pytest.fixture(scope="module")
def found() -> dict[tuple[str | None, str], Any]:
    messages, errors = extract_strings.extract()
    assert errors == [], "calls the extractor cannot read:\n" + "\n".join(errors)
    return messages


@pytest.fixture(scope="module")
def catalog() -> dict[tuple[str | None, str], list[str]]:
    return extract_strings.translations(LANG)


# -- the extractor -------------------------------------------------------------------------


def test_extractor_reads_quotes_plurals_contexts_and_refuses_expressions(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "panels").mkdir(parents=True)
    (src / "panels" / "a.tsx").write_text(
        "const a = trans.__('It\\'s %1', x);\n"
        'const b = this._trans.__("say \\"hi\\"");\n'
        "const c = trans.__(`two\n  lines`);\n"
        "const d = trans._n('%1 node', '%1 nodes', n);\n"
        "const e = trans._p('menu', 'Open');\n"
        "const f = trans.__(\n  // why\n  'joined ' +\n    'string'\n);\n"
        "const g = trans.__(label);\n"
        "const h = trans.__(`${x} items`);\n"
        "const i = trans.__('It\\'s %1', y);\n",
        encoding="utf-8",
    )
    (src / "__tests__").mkdir()
    (src / "__tests__" / "t.spec.ts").write_text("trans.__('test only')", encoding="utf-8")
    messages, errors = extract_strings.extract(src, dynamic={})
    assert set(messages) == {
        (None, "It's %1"),
        (None, 'say "hi"'),
        (None, "two\n  lines"),
        (None, "%1 node"),
        ("menu", "Open"),
        (None, "joined string"),
    }
    assert messages[(None, "%1 node")].plural == "%1 nodes"
    assert messages[(None, "It's %1")].where == ["src/panels/a.tsx:1", "src/panels/a.tsx:14"]
    assert [e.split(": ", 1)[0] for e in errors] == ["src/panels/a.tsx:12", "src/panels/a.tsx:13"]
    assert "use %1" in errors[1]


def test_every_string_in_src_is_found(found: dict) -> None:
    # every call site in src/ is read (none skipped), so the catalog sees all of them
    calls = dynamic = 0
    for path in extract_strings.source_files():
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(ROOT).as_posix()
        for call in extract_strings.CALL.finditer(text):
            calls += 1
            arg = extract_strings._argument(text, call.end())
            dynamic += arg in extract_strings.DYNAMIC_CALLS.get(rel, ())
    sites = sum(
        1 for m in found.values() for w in m.where if w.startswith("src/") and not w.endswith(":0")
    )
    assert calls > 1000
    assert sites + dynamic == calls
    assert len(found) > 800


def test_literal_check_flags_prose_outside_the_translator(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "panels").mkdir(parents=True)
    (src / "panels" / "a.tsx").write_text(
        "const a = 'Pick a file to run.';\n"  # flagged: prose, no translator
        'const b = <p title="Save the pipeline first">x</p>;\n'  # flagged
        "const c = trans.__('Give it a name.');\n"
        "const d = trans._n('%1 node', '%1 nodes were removed for good.', n);\n"
        "const e = 'cube-TField-input cube-mod-invalid';\n"
        "const f = `cube-Button ${x}`;\n"
        "const g = 'image-bbox';\n"
        "// A comment is not shown to anyone.\n"
        "/* Nor is this block comment. */\n"
        "const h = { description: 'The cube-lab side panels: one per capability.' };\n"
        "console.warn('Could not load the settings.');\n"
        "const i = 'Label Studio JSON';\n"
        "const j = 'nvidia.com/gpu';\n",
        encoding="utf-8",
    )
    messages, errors = extract_strings.extract(src, dynamic={})
    assert errors == []
    found = extract_strings.untranslated_literals(src, messages)
    assert found == [
        "src/panels/a.tsx:1: 'Pick a file to run.'",
        'src/panels/a.tsx:2: "Save the pipeline first"',
    ]


PENDING_ELSEWHERE: set[str] = set()


def test_no_prose_outside_the_translator(found: dict) -> None:
    left = [
        line
        for line in extract_strings.untranslated_literals(messages=found)
        if re.sub(r":\d+:", ":", line, count=1) not in PENDING_ELSEWHERE
    ]
    assert left == [], (
        "English text a user reads that does not go through trans.__ (wrap it, then run "
        "`scripts/extract_strings.py update` and translate it):\n" + "\n".join(left)
    )


def test_settings_schemas_are_extracted_with_jupyterlabs_contexts(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "schema").mkdir()
    schema = {
        "title": "Demo",
        "description": "Settings of the demo.",
        "jupyter.lab.setting-icon-label": "Demo",
        "jupyter.lab.internationalization": {"selectors": ["properties/.*/default"]},
        "properties": {
            "every": {"title": "Every (seconds)", "description": "How often.", "default": "x"},
            "n": {"type": "number", "default": 3},
        },
    }
    (tmp_path / "schema" / "plugin.json").write_text(json.dumps(schema, indent=2), "utf-8")
    messages, errors = extract_strings.extract(tmp_path / "src", dynamic={})
    # the contexts JupyterLab's server looks the strings up under (translate_schema)
    assert set(messages) == {
        ("schema", "Demo"),
        ("schema", "Settings of the demo."),
        ("settings", "Demo"),
        ("settings", "Every (seconds)"),
        ("settings", "How often."),
        ("schema", "x"),  # the schema's own selector
    }
    assert messages[("settings", "Every (seconds)")].where == ["schema/plugin.json:12"]
    # without the cube_lab domain JupyterLab would look in its own catalog: an error
    assert len(errors) == 1 and "schema/plugin.json" in errors[0] and '"cube_lab"' in errors[0]


def test_the_settings_schema_names_the_cube_lab_domain(found: dict) -> None:
    schema = json.loads((ROOT / "schema" / "plugin.json").read_text("utf-8"))
    assert schema["jupyter.lab.internationalization"]["domain"] == "cube_lab"
    assert ("settings", "Refresh interval (seconds)") in found
    assert ("schema", "Settings shared by the cube-lab panels.") in found


def test_the_server_catalog_is_the_po() -> None:
    from cube_lab.locale import catalog

    assert extract_strings.mo_path(LANG).read_bytes() == extract_strings.compiled_mo(LANG), (
        "run `scripts/extract_strings.py compile`"
    )
    zh = catalog(LANG)
    assert zh.pgettext("settings", "Refresh interval (seconds)") == "刷新间隔（秒）"  # noqa: RUF001
    assert zh.gettext("Pipeline") == "流水线"
    assert catalog("en").gettext("Pipeline") == "Pipeline"


def test_template_texts_are_extracted_from_template_yaml(tmp_path: Path) -> None:
    folder = tmp_path / "templates" / "greet"
    folder.mkdir(parents=True)
    (folder / "template.yaml").write_text(
        "name: greet\n"
        "display_name: Say hello\n"
        "category: Data\n"
        "description: >-\n"
        "  Writes a greeting\n"
        "  to a file.\n"
        "command: [python, '{template_dir}/greet.py', '{who}']\n"
        "parameters:\n"
        "  type: object\n"
        "  properties:\n"
        "    who: {type: string, title: Who, description: The one to greet.}\n"
        "    count: {type: integer, default: 1}\n",
        encoding="utf-8",
    )
    (folder / "greet.py").write_text("print('hello')\n", encoding="utf-8")
    messages, errors = extract_strings.extract_templates(tmp_path / "templates", tmp_path)
    assert errors == []
    ours = {m.msgid: m.where for m in messages if m.where[0].startswith("templates/")}
    assert ours == {
        "Say hello": ["templates/greet/template.yaml:2"],
        "Writes a greeting to a file.": ["templates/greet/template.yaml:5"],  # folded
        "Who": ["templates/greet/template.yaml:11"],
        "The one to greet.": ["templates/greet/template.yaml:11"],
    }
    # the categories the palette groups templates under
    assert {"Data", "Training", "Evaluation", "Registry", "Inference"} <= {
        m.msgid for m in messages
    }
    (folder / "template.yaml").write_text("name: greet\n", encoding="utf-8")
    _, errors = extract_strings.extract_templates(tmp_path / "templates", tmp_path)
    assert len(errors) == 1 and errors[0].startswith("templates/greet/template.yaml: ")


def test_every_served_template_text_has_a_zh_cn_entry(catalog: dict) -> None:
    # what GET /cube-lab/api/templates sends, each text the pipeline editor shows
    from cube_lab.jobtemplates.catalog import TemplateCatalog

    served = TemplateCatalog().to_json()
    assert served["errors"] == []
    texts: list[str] = []
    for template in served["templates"]:
        texts += [template["display_name"], template["category"], template["description"]]
        for prop in template["parameters"].get("properties", {}).values():
            texts += [prop[k] for k in ("title", "description") if k in prop]
    assert len(served["templates"]) >= 6 and len(texts) > 60
    assert [t for t in texts if not catalog.get((None, t))] == []
    assert catalog[(None, "Train a scikit-learn model")] == ["训练 scikit-learn 模型"]


def test_every_node_kind_title_has_a_zh_cn_entry(catalog: dict) -> None:
    # what GET /cube-lab/api/pipelines/node-kinds sends: built-in kinds, the plug-ins'
    # (training, tuning) and the catalog components' kind
    from cube_lab.pipelines import catalogs
    from cube_lab.pipelines.nodekinds import node_kinds

    titles = {kind.display_name for kind in node_kinds().values()}
    titles |= {
        getattr(v, "display_name", None)
        for v in vars(catalogs).values()
        if isinstance(v, type) and hasattr(v, "ops")
    } - {None}
    assert {"Training job", "Hyperparameter search", "Catalog component"} <= titles
    assert sorted(t for t in titles if not catalog.get((None, t))) == []


def test_every_translator_uses_the_cube_lab_domain() -> None:
    domains: set[str] = set()
    for path in extract_strings.source_files():
        domains |= set(re.findall(r"translator\.load\(\s*(.+?)\s*\)", path.read_text("utf-8")))
    assert domains == {"'cube_lab'"}
    # the entry point JupyterLab's translation manager looks packages up by: its name is the
    # domain and the JSON's file name
    eps = {ep.name: ep.value for ep in entry_points(group="jupyterlab.locale")}
    assert eps.get("cube_lab") == "cube_lab"
    assert extract_strings.json_path(LANG) == (
        ROOT / "cube_lab" / "locale" / LANG / "LC_MESSAGES" / "cube_lab.json"
    )


# -- the catalog ---------------------------------------------------------------------------


def test_every_string_has_a_zh_cn_translation(found: dict, catalog: dict) -> None:
    missing = [f"{m.where[0]}: {m.msgid!r}" for k, m in found.items() if not catalog.get(k)]
    assert missing == [], (
        f"{len(missing)} strings have no {LANG} translation: run "
        "`scripts/extract_strings.py update`, translate them in the .po, then `compile`:\n"
        + "\n".join(missing)
    )


def test_placeholders_match_the_english(found: dict, catalog: dict) -> None:
    bad = []
    for key, msg in found.items():
        want = extract_strings.placeholders(msg.msgid)
        want |= extract_strings.placeholders(msg.plural or "")
        bad += [
            (msg.msgid, form)
            for form in catalog.get(key, [])
            if extract_strings.placeholders(form) != want
        ]
    assert bad == []


def test_markup_and_literals_kept(found: dict, catalog: dict) -> None:
    # keys, variables and paths the user types or copies stay as in the English
    literal = re.compile(r"\$[A-Z_]+|/v2/[a-z/]+|Ctrl[+-][A-Za-z+-]+|\{\"_type\"|%load_ext")
    bad = []
    for key, msg in found.items():
        for form in catalog.get(key, []):
            if sorted(literal.findall(msg.msgid)) != sorted(literal.findall(form)):
                bad.append((msg.msgid, form))
    assert bad == []


def test_no_stale_entries(found: dict, catalog: dict) -> None:
    stale = sorted(k[1] for k in catalog.keys() - found.keys())
    assert stale == [], "strings no longer in src/: run `scripts/extract_strings.py update`"


def test_glossary_terms_are_used(catalog: dict) -> None:
    glossary = (ROOT / "docs" / "glossary.zh-CN.md").read_text(encoding="utf-8")
    off = []
    for pattern, zh in GLOSSARY.items():
        assert zh in glossary, f"{zh} is not in docs/glossary.zh-CN.md"
        for (_, msgid), forms in catalog.items():
            text = re.sub(
                r"\{\w+(![rsa])?(:[^{}]*)?\}", "", msgid
            )  # a server field's name is no term
            if re.search(pattern, text, re.I) and not all(zh in f for f in forms):
                off.append((pattern, msgid, forms))
    assert off == []


def test_compiled_json_is_the_po() -> None:
    path = extract_strings.json_path(LANG)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data == extract_strings.compiled(LANG, extract_strings._version()), (
        "run `scripts/extract_strings.py compile`"
    )
    meta = data[""]
    assert meta["domain"] == "cube_lab"
    assert meta["language"] == "zh-CN"  # the tag JupyterLab's front end looks strings up under
    assert meta["plural_forms"] == "nplurals=1; plural=0;"
    # JupyterLab's Gettext takes one form for a singular string, more than one for a plural
    assert data["Pipeline"] == ["流水线"]
    assert data["%1 node"] == ["%1 个节点", "%1 个节点"]


def test_source_catalog_is_current(found: dict) -> None:
    pot = extract_strings.read_po(extract_strings.POT)
    ids = {(e.context, e.id[0] if isinstance(e.id, tuple) else e.id) for e in pot if e.id}
    assert ids == set(found), "run `scripts/extract_strings.py extract`"


def test_the_wheel_carries_the_catalog() -> None:
    from hatchling.builders.wheel import WheelBuilder

    files = {f.distribution_path for f in WheelBuilder(str(ROOT)).recurse_included_files()}
    assert f"cube_lab/locale/{LANG}/LC_MESSAGES/cube_lab.json" in files
    assert f"cube_lab/locale/{LANG}/LC_MESSAGES/cube_lab.mo" in files


# -- what JupyterLab serves -------------------------------------------------------------------


@pytest.fixture
def jp_server_config(jp_server_config: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    # cube-lab's server plus JupyterLab's (it serves /lab/api/translations)
    jp_server_config["ServerApp"]["jpserver_extensions"] = {"cube_lab": True, "jupyterlab": True}
    # the settings schema where an installed lab extension has it (the build copies
    # schema/*.json there), from the source: no build needed
    schemas = tmp_path / "labextensions" / "cube-lab" / "schemas" / "cube-lab"
    schemas.mkdir(parents=True)
    for path in (ROOT / "schema").glob("*.json"):
        (schemas / path.name).write_bytes(path.read_bytes())
    (schemas.parent.parent / "package.json").write_text(
        (ROOT / "package.json").read_text("utf-8"), "utf-8"
    )
    jp_server_config.setdefault("LabApp", {})["extra_labextensions_path"] = [
        str(tmp_path / "labextensions")
    ]
    return jp_server_config


@pytest.fixture
def reset_locale() -> Any:
    from jupyterlab_server.translation_utils import translator

    yield
    translator.set_locale("en")  # the handler sets it process-wide


async def test_jupyterlab_serves_cube_lab_in_chinese(jp_fetch: Any, reset_locale: Any) -> None:
    from conftest import TOKENS

    headers = {"Authorization": f"token {TOKENS['alice']}"}
    listing = json.loads((await jp_fetch("lab", "api", "translations", headers=headers)).body)
    assert "zh_CN" in listing["data"], listing["message"]  # 中文 (简体) in Settings > Language

    resp = await jp_fetch("lab", "api", "translations", LANG, headers=headers)
    answer = json.loads(resp.body)
    assert answer["message"] == ""
    ours = answer["data"]["cube_lab"]
    assert ours == json.loads(extract_strings.json_path(LANG).read_text(encoding="utf-8"))
    assert ours[""]["language"] == "zh-CN"
    assert ours["Pipeline Editor"] == ["流水线编辑器"]
    assert ours["Launch distributed training and follow its jobs"] == ["启动分布式训练并跟踪其任务"]
    assert ours["Deploy %1 v%2"] == ["部署 %1 v%2"]
    # JupyterLab's own strings come from its language pack, next to ours
    assert answer["data"]["jupyterlab"][""]["language"] == "zh-CN"

    english = json.loads((await jp_fetch("lab", "api", "translations", "en", headers=headers)).body)
    assert "cube_lab" not in english["data"]


async def test_the_settings_editor_gets_cube_labs_schema_in_chinese(
    jp_fetch: Any, reset_locale: Any
) -> None:
    from conftest import TOKENS

    headers = {"Authorization": f"token {TOKENS['alice']}"}

    async def schema() -> dict:
        resp = await jp_fetch("lab", "api", "settings", "cube-lab:plugin", headers=headers)
        return json.loads(resp.body)["schema"]

    english = await schema()
    assert english["jupyter.lab.internationalization"]["domain"] == "cube_lab"
    assert english["properties"]["refreshInterval"]["title"] == "Refresh interval (seconds)"

    # Settings > Language > 中文 (简体): what the language menu saves
    await jp_fetch(
        "lab",
        "api",
        "settings",
        "@jupyterlab/translation-extension:plugin",
        method="PUT",
        body=json.dumps({"raw": json.dumps({"locale": LANG})}),
        headers=headers,
    )
    chinese = await schema()
    assert chinese["description"] == "cube-lab 各面板共用的设置。"
    refresh = chinese["properties"]["refreshInterval"]
    assert refresh["title"] == "刷新间隔（秒）"  # noqa: RUF001
    assert refresh["description"].startswith("cube-lab 面板在可见时")


# -- the hub's pages ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "locale"),
    [
        ("zh-CN,zh;q=0.9,en;q=0.8", "zh_CN"),
        ("zh", "zh_CN"),
        ("zh-Hans-CN", "zh_CN"),
        ("fr-FR, zh;q=0.5", "zh_CN"),
        ("en-US,en;q=0.9,zh-CN;q=0.8", "en"),
        ("en;q=0.1, zh-CN", "zh_CN"),
        ("zh-TW", "en"),  # Traditional Chinese: not our catalog
        ("zh-CN;q=0", "en"),
        ("", "en"),
        (None, "en"),
    ],
)
def test_the_browsers_language_picks_the_hub_pages_locale(header: str | None, locale: str) -> None:
    from cube_lab.locale import negotiate

    assert negotiate(header) == locale


def _render_hub_page(name: str, texts: dict[str, Any]) -> str:
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    from cube_lab.hub import admin

    env = Environment(
        loader=FileSystemLoader(admin.TEMPLATES), autoescape=select_autoescape(["html"])
    )
    user = type("User", (), {"name": "alice"})
    profile = type("Profile", (), {"name": "cpu", "display_name": "CPU only"})
    group = {
        "name": "vision",
        "problem": "bad json",
        "usage": {
            "total": {"servers": 1, "cpu": 2, "nvidia.com/gpu": 1},
            "users": {"bob": {"servers": 1, "nvidia.com/gpu": 1}},
        },
        "quota": {"servers": 3},
        "users": ["bob"],
        "profiles": ["cpu"],
    }
    return env.get_template(name).render(
        user=user,
        prefix="/services/cube-admin/",
        hub_prefix="/hub/",
        xsrf_token="t0k3n",
        profiles=[profile],
        resources=["nvidia.com/gpu"],
        show=admin.show,
        groups=[group],
        **texts,
    )


def test_every_text_of_the_hub_pages_goes_through_the_translator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # rendered with a translator that marks what it translated: every text a person reads
    # (text, placeholders, tooltips, labels, the script's messages) is marked, or is data
    from html.parser import HTMLParser

    from markupsafe import Markup, escape

    from cube_lab.hub import admin

    def mark(msgid: str, *args: object) -> str:
        return f"«{msgid}»" + "".join(f"[{a}]" for a in args)

    def translator_for(locale: str, html: bool = False) -> Any:
        return (lambda m, *a: Markup(escape(mark(m, *a)))) if html else mark

    monkeypatch.setattr(admin, "translator_for", translator_for)
    texts = admin.page_texts("en")
    # data, and the examples in placeholders (a group's name, its members)
    data = {"alice", "vision", "bob", "CPU only", "bad json", "alice, bob", "1 nvidia.com/gpu"}

    class Texts(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.found: list[str] = []
            self.script = ""
            self._in_script = False

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self._in_script = tag == "script"
            for key, value in attrs:
                if key in ("placeholder", "title", "alt", "aria-label") and value:
                    self.found.append(value)

        def handle_endtag(self, tag: str) -> None:
            self._in_script = False

        def handle_data(self, text: str) -> None:
            if self._in_script:
                self.script += text
            elif text.strip():
                self.found.append(text.strip())

    for name in ("admin.html", "forbidden.html"):
        parser = Texts()
        parser.feed(_render_hub_page(name, texts))
        bare = [
            t
            for t in parser.found
            if not t.startswith("«") and t not in data and re.search("[A-Za-z]{2}", t)
        ]
        assert bare == [], f"{name}: text outside the translator: {bare}"
        # the script's own strings: only identifiers, URLs and what T holds
        prose = re.findall(r'"([A-Z][a-z]+ [^"]*)"', parser.script)
        assert prose == [], f"{name}: script messages outside the translator: {prose}"


def test_the_hub_admin_page_speaks_chinese_or_english() -> None:
    from cube_lab.hub import admin

    chinese = _render_hub_page("admin.html", admin.page_texts("zh_CN"))
    assert '<html lang="zh-CN">' in chinese
    for text in ("项目组与配额", "新建项目组", "保存配额与资源规格", "退出登录", "不限（例如 10）"):  # noqa: RUF001
        assert text in chinese
    assert "GPU 数（nvidia.com/gpu）" in chinese  # noqa: RUF001 - label() translated
    assert '"created": ' + json.dumps("已创建项目组 %1") in chinese  # the script's messages
    assert "Project groups and quotas" not in chinese and "Create group" not in chinese

    english = _render_hub_page("admin.html", admin.page_texts("en"))
    assert '<html lang="en">' in english
    assert "Project groups and quotas" in english and "GPUs (nvidia.com/gpu)" in english
    assert "项目组" not in english

    forbidden = _render_hub_page("forbidden.html", admin.page_texts("zh_CN"))
    assert "此页面仅供 Hub 管理员使用" in forbidden and "前往你的首页" in forbidden
    assert "/hub/admin" not in forbidden and "/hub/authorize" not in forbidden  # no admin links
