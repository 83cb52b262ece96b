#!/usr/bin/env python3
"""cube-lab's translatable strings: extract them from ``src/``, keep the zh-CN catalog in step.

The lab extension marks its strings with ``trans.__('...')``, ``trans._n('...', '...', n)``,
``trans._p('context', '...')`` and ``trans._np('context', '...', '...', n)`` on a bundle from
``translator.load('cube_lab')``. The same catalog holds what else a person reads in cube-lab:
the settings schema's titles (schema/*.json), the job templates' texts
(templates/*/template.yaml) and the node kinds' titles, which the front end translates, and the
hub's pages (``_("...")`` in cube_lab/hub/templates). This script:

- ``extract``: writes the source catalog ``cube_lab/locale/cube_lab.pot`` (every msgid, with the
  files and lines it comes from);
- ``update``: merges the source catalog into each ``cube_lab/locale/<lang>/LC_MESSAGES/cube_lab.po``
  (new strings come in untranslated, strings gone from ``src/`` are dropped);
- ``compile``: writes ``cube_lab.json`` next to each ``.po``, the Jed-style JSON that
  JupyterLab's translation manager serves (``/lab/api/translations/<lang>``), found through
  the ``jupyterlab.locale`` entry point ``cube_lab = cube_lab`` (pyproject.toml), and
  ``cube_lab.mo``, which the server reads to translate the settings schema (schema/*.json,
  whose ``jupyter.lab.internationalization`` domain is ``cube_lab``: see cube_lab/locale);
- ``check``: exits 1 when a string has no translation, placeholders differ, an entry is stale
  or a compiled JSON is out of date.

Plain Python plus babel (a dependency of jupyterlab_server) for reading and writing PO files.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
SCHEMA = ROOT / "schema"
TEMPLATES = ROOT / "templates"
PACKAGE = ROOT / "cube_lab"
HUB_TEMPLATES = PACKAGE / "hub" / "templates"
# The hub's pages (Jinja): ``_("...")`` for HTML text, ``_js("...")`` for the script's strings.
HUB_CALL = re.compile(r"(?<![\w.])_(?:js)?\(")
# Texts the hub's pages get from Python (label(): a quota dimension's name, made in
# cube_lab/hub/quotas.py; admin.page_texts translates its words): each must still be there.
HUB_DYNAMIC: dict[str, list[str]] = {
    "cube_lab/hub/quotas.py": [
        "CPU cores",
        "GiB memory",
        "servers",
        "jobs",
        "MiB of device memory",
        "percent of device cores",
        "MIG slices",
        "NPUs",
        "vGPUs",
        "GPUs",
    ],
    "cube_lab/hub/admin.py": ["%1 (%2)"],
    # the hub's spawn form (Spawner.options_form), in the spawn page's browser language
    "cube_lab/hub/spawner.py": ["Resource profile", "Project (its quota is used)"],
}
LOCALE = ROOT / "cube_lab" / "locale"
DOMAIN = "cube_lab"
POT = LOCALE / f"{DOMAIN}.pot"
# The language tag JupyterLab's front end looks strings up under ("zh_CN" -> "zh-CN").
LANGUAGES = {"zh_CN": {"language": "zh-CN", "plural_forms": "nplurals=1; plural=0;"}}

CALL = re.compile(r"\b_?trans\.(__|_n|_p|_np)\(")
# how many string arguments each function takes first: (context?, msgid, plural?)
SHAPES = {
    "__": ("msgid",),
    "_n": ("msgid", "plural"),
    "_p": ("ctx", "msgid"),
    "_np": ("ctx", "msgid", "plural"),
}
PLACEHOLDER = re.compile(r"%(\d+)")
# The named fields of a server message's ``str.format`` template (``{name}``, ``{name!r}``,
# ``{n:g}``); ``{{`` and ``}}`` are literal braces.
# argparse's own (Python's %-format): ``%s``, ``%r``, ``%(prog)s``; a help text's ``%(default)s``.
PERCENT = re.compile(r"%(?:\([a-z_]+\))?[rsd]")
FIELD = re.compile(r"(?<!\{)\{([A-Za-z_]\w*(?:![rsa])?(?::[^{}]*)?)\}")
# Calls like ``trans.__(taskTypeLabel(t))`` translate a message id made elsewhere: the ids such
# a call can get, by the file that holds them as literals (checked: each must still be there).
DYNAMIC: dict[str, list[str]] = {
    "src/panels/labeling/logic.ts": [  # taskTypeLabel(), progress segments' statuses
        "Image classification",
        "Object detection (boxes)",
        "Text classification",
        "Named entities (spans)",
        "accepted",
        "submitted",
        "assigned",
        "rejected",
        "new",
    ],
    "src/panels/pipelines/schedule.tsx": [  # CRON_PRESETS
        "Every hour",
        "Every day at 03:00 UTC",
        "Every Monday at 03:00 UTC",
        "On the 1st of the month at 03:00 UTC",
    ],
    "src/panels/deployments/accessLogic.ts": [  # planAccess, planNewKey, accessSummary
        "Requests a second must be a number above 0.",
        "The burst must be a whole number of requests, 1 or more.",
        "%1 is not an IP address or CIDR network.",
        "Give the key a name, e.g. what it is for.",
        'A key name starts with a letter or digit and holds only letters, digits, ".", "_" '
        'and "-".',
        "Days until it expires: a number from 1 to 3650, or empty for never.",
        "API key required (%1 in force)",
        "open: no key asked",
        "%1 requests/s per key, bursts of %2",
        "%1 requests/s, bursts of %2",
        "only %1 address range(s)",
        "%1 denied",
    ],
    "src/panels/training/logic.ts": [  # splitArgs' errors, shown as a field's error
        "unclosed double quote",
        "unclosed single quote",
    ],
    "src/panels/tuning/logic.ts": [  # SHAPES: what a search-space entry's _value must be
        "a non-empty list of options",
        "[lower, upper] integers with lower < upper",
        "[low, high] with low < high",
        "[low, high, q] with low < high and q > 0",
        "[low, high] with 0 < low < high",
        "[low, high, q] with 0 < low < high and q > 0",
        "[mu, sigma] with sigma > 0",
        "[mu, sigma, q] with sigma > 0 and q > 0",
    ],
}
# The calls whose argument is such an id (file -> the argument expressions): any other call
# with a non-literal argument is an error, since no catalog can know its text.
DYNAMIC_CALLS: dict[str, set[str]] = {
    "src/panels/deployments/access.tsx": {"message", "request.error"},
    "src/panels/labeling/annotator.tsx": {"taskTypeLabel(proj.type)"},
    "src/panels/labeling/forms.tsx": {"taskTypeLabel(t)"},
    "src/panels/labeling/panel.tsx": {"taskTypeLabel(p.type)"},
    "src/panels/labeling/project.tsx": {"taskTypeLabel(p.type)", "s.status"},
    "src/panels/pipelines/kinds.ts": {"text"},  # serverText(): templates' and node kinds' texts
    "src/panels/pipelines/schedule.tsx": {"p.label"},
    "src/panels/training/logic.ts": {"(err as Error).message"},
    "src/panels/tuning/logic.ts": {"(err as Error).message", "SHAPES[kind]"},
}
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


@dataclass
class Message:
    msgid: str
    plural: str | None = None
    ctx: str | None = None
    where: list[str] = field(default_factory=list)

    @property
    def key(self) -> tuple[str | None, str]:
        return (self.ctx, self.msgid)


class ExtractError(ValueError):
    pass


def _skip_space(text: str, i: int) -> int:
    while i < len(text):
        if text[i].isspace():
            i += 1
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = len(text) if i < 0 else i
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end < 0 else end + 2
        else:
            break
    return i


def _read_literal(text: str, i: int) -> tuple[str, int]:
    """One JS string literal at ``text[i]`` ('...', "..." or `...` without ${})."""
    quote = text[i]
    if quote not in "'\"`":
        raise ExtractError("the argument is not a string literal")
    out: list[str] = []
    i += 1
    while i < len(text):
        ch = text[i]
        if ch == quote:
            return "".join(out), i + 1
        if ch == "\\":
            nxt = text[i + 1]
            if nxt == "\n":  # line continuation
                i += 2
                continue
            if nxt == "u":
                if text[i + 2] == "{":
                    end = text.index("}", i)
                    out.append(chr(int(text[i + 3 : end], 16)))
                    i = end + 1
                else:
                    out.append(chr(int(text[i + 2 : i + 6], 16)))
                    i += 6
                continue
            if nxt == "x":
                out.append(chr(int(text[i + 2 : i + 4], 16)))
                i += 4
                continue
            out.append(ESCAPES.get(nxt, nxt))
            i += 2
            continue
        if quote == "`" and text.startswith("${", i):
            raise ExtractError("a template literal with ${...} cannot be translated; use %1")
        if ch == "\n" and quote != "`":
            raise ExtractError("unterminated string literal")
        out.append(ch)
        i += 1
    raise ExtractError("unterminated string literal")


def _read_string_arg(text: str, i: int) -> tuple[str, int]:
    """A string argument: one literal or literals joined with ``+``."""
    i = _skip_space(text, i)
    value, i = _read_literal(text, i)
    while True:
        j = _skip_space(text, i)
        if j < len(text) and text[j] == "+":
            j = _skip_space(text, j + 1)
            more, i = _read_literal(text, j)
            value += more
        else:
            return value, j


def _argument(text: str, i: int) -> str:
    """The first argument's expression text, up to the ``,`` or ``)`` that ends it."""
    depth, start = 0, _skip_space(text, i)
    for j in range(start, min(len(text), start + 200)):
        if text[j] in "([{":
            depth += 1
        elif text[j] in ")]}" and depth:
            depth -= 1
        elif text[j] in ",)" and not depth:
            return text[start:j].strip()
    return ""


def extract_file(path: Path, rel: str) -> tuple[list[Message], list[str]]:
    text = path.read_text(encoding="utf-8")
    messages: list[Message] = []
    errors: list[str] = []
    for match in CALL.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        where = f"{rel}:{line}"
        values: dict[str, str] = {}
        i = match.end()
        try:
            for n, part in enumerate(SHAPES[match.group(1)]):
                if n:
                    i = _skip_space(text, i)
                    if text[i] != ",":
                        raise ExtractError("expected more string arguments")
                    i += 1
                values[part], i = _read_string_arg(text, i)
            i = _skip_space(text, i)
            if text[i] not in ",)":
                raise ExtractError("the argument is an expression, not a string literal")
        except (ExtractError, IndexError) as err:
            if not values and _argument(text, match.end()) in DYNAMIC_CALLS.get(rel, ()):
                continue  # its ids are in DYNAMIC
            errors.append(f"{where}: {err}")
            continue
        messages.append(Message(values["msgid"], values.get("plural"), values.get("ctx"), [where]))
    return messages, errors


def source_files(src: Path = SRC) -> list[Path]:
    files = [p for p in src.rglob("*") if p.suffix in (".ts", ".tsx") and p.is_file()]
    return sorted(p for p in files if "__tests__" not in p.parts and not p.name.endswith(".d.ts"))


I18N_KEY = "jupyter.lab.internationalization"


def schema_selectors(schema: dict) -> list[tuple[re.Pattern[str], str]]:
    """The JSON paths of a settings schema that JupyterLab's server translates, with the
    context (msgctxt) it looks each up under: its default selectors plus the schema's own
    ``jupyter.lab.internationalization.selectors`` (context "schema")."""
    from jupyterlab_server.translation_utils import DEFAULT_SCHEMA_SELECTORS

    pairs = dict(DEFAULT_SCHEMA_SELECTORS)
    pairs.update({sel: "schema" for sel in schema.get(I18N_KEY, {}).get("selectors", [])})
    return [(re.compile("^/" + sel + "$"), ctx) for sel, ctx in pairs.items()]


def extract_schema(path: Path, rel: str) -> tuple[list[Message], list[str]]:
    """The strings of a settings schema (``schema/*.json``) that the Settings editor shows:
    titles, descriptions, the icon label... (what ``translator.translate_schema`` looks up in
    the schema's domain, which must be cube_lab's)."""
    text = path.read_text(encoding="utf-8")
    schema = json.loads(text)
    errors = []
    if schema.get(I18N_KEY, {}).get("domain") != DOMAIN:
        errors.append(
            f'{rel}: set "{I18N_KEY}": {{"selectors": [], "domain": "{DOMAIN}"}} so that '
            "JupyterLab looks its titles and descriptions up in cube_lab's catalog"
        )
    selectors = schema_selectors(schema)
    messages: list[Message] = []

    def walk(node: object, prefix: str) -> None:
        items = node.items() if isinstance(node, dict) else ()
        for key, value in items:
            at = f"{prefix}/{key}"
            if isinstance(value, str):
                ctx = next((c for pattern, c in selectors if pattern.fullmatch(at)), None)
                if ctx is not None and value.strip():
                    offset = text.find(json.dumps(value, ensure_ascii=False))
                    line = text.count("\n", 0, max(offset, 0)) + 1
                    messages.append(Message(value, ctx=ctx, where=[f"{rel}:{line}"]))
            elif isinstance(value, dict):
                walk(value, at)
            elif isinstance(value, list):
                for i, element in enumerate(value):
                    walk(element, f"{at}[{i}]")

    walk(schema, "")
    return messages, errors


def _line_of(text: str, value: str) -> int:
    """The line where ``value`` (or its first words, for folded YAML text) starts; 1 if unseen."""
    words = value.split()
    for probe in (value, *(" ".join(words[:n]) for n in (6, 4, 3, 2))):
        at = text.find(probe) if probe else -1
        if at >= 0:
            return text.count("\n", 0, at) + 1
    return 1


def extract_templates(templates: Path, rel_root: Path) -> tuple[list[Message], list[str]]:
    """The texts of the job templates the pipeline editor shows (palette, properties): each
    template's title, description and parameters' titles and descriptions, as the server's
    loader reads them (GET /cube-lab/api/templates), and the categories they sit under.

    The front end passes each through ``trans.__`` (``serverText`` in kinds.ts)."""
    from cube_lab.jobtemplates.loader import TEMPLATE_FILE, TemplateLoadError, load_template
    from cube_lab.jobtemplates.model import CATEGORIES

    model = (PACKAGE / "jobtemplates" / "model.py").relative_to(ROOT).as_posix()
    messages = [
        Message(c, where=[f"{model}:{_line_of(_read(ROOT / model), c)}"]) for c in CATEGORIES
    ]
    errors: list[str] = []

    def texts(schema: Any, out: list[str]) -> None:
        props = schema.get("properties") if isinstance(schema, dict) else None
        for prop in (props or {}).values():
            if isinstance(prop, dict):
                out += [prop[k] for k in ("title", "description") if isinstance(prop.get(k), str)]
                texts(prop, out)
                texts(prop.get("items"), out)

    for folder in sorted(p.parent for p in templates.glob(f"*/{TEMPLATE_FILE}")):
        path = folder / TEMPLATE_FILE
        rel = path.relative_to(rel_root).as_posix()
        try:
            template = load_template(folder)
        except TemplateLoadError as err:
            errors.append(f"{rel}: {'; '.join(err.problems)}")
            continue
        text = path.read_text(encoding="utf-8")
        found = [template.display_name, template.description]
        texts(template.parameters, found)
        for value in found:
            if value.strip():
                messages.append(Message(value, where=[f"{rel}:{_line_of(text, value)}"]))
    return messages, errors


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def extract_hub_pages(folder: Path, rel_root: Path) -> tuple[list[Message], list[str]]:
    """The texts of the hub's pages (the cube-admin page and its forms): every ``_("...")``
    and ``_js("...")`` of cube_lab/hub/templates/*.html, and the words they get from Python
    (HUB_DYNAMIC). cube_lab.hub.admin renders them in the browser's language."""
    messages: list[Message] = []
    errors: list[str] = []
    for path in sorted(folder.rglob("*.html")):  # the hub's own pages in jupyterhub/
        rel = path.relative_to(rel_root).as_posix()
        text = path.read_text(encoding="utf-8")
        for match in HUB_CALL.finditer(text):
            where = f"{rel}:{text.count(chr(10), 0, match.start()) + 1}"
            try:
                value, end = _read_string_arg(text, match.end())
                if text[end] not in ",)":
                    raise ExtractError("the argument is an expression, not a string literal")
            except (ExtractError, IndexError) as err:
                errors.append(f"{where}: {err}")
                continue
            messages.append(Message(value, where=[where]))
    for rel, ids in HUB_DYNAMIC.items():
        source = (rel_root / rel).read_text(encoding="utf-8")
        for msgid in ids:
            if msgid not in source:
                errors.append(f"{rel}: {msgid!r} is gone: update HUB_DYNAMIC")
                continue
            messages.append(Message(msgid, where=[f"{rel}:0"]))
    return messages, errors


def _parse(source: str, name: str) -> Any:
    """``ast.parse``, once more on a fresh thread if it fails with CPython 3.11's "AST
    constructor recursion depth mismatch" (a SystemError seen once in a full pytest run, in a
    thread whose recursion count earlier code had left off; a new thread starts clean)."""
    import ast
    from concurrent.futures import ThreadPoolExecutor

    try:
        return ast.parse(source, name)
    except SystemError:
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(ast.parse, source, name).result()


def _schema_texts(schema: Any) -> list[Any]:
    """The ``title`` and ``description`` string constants of a JSON schema written as a
    Python expression (the literal dict of a node kind's ``schema``), wherever they sit."""
    import ast

    out = []
    for node in ast.walk(schema):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=False):
                if (
                    isinstance(key, ast.Constant)
                    and key.value in ("title", "description")
                    and isinstance(value, ast.Constant)
                    and isinstance(value.value, str)
                    and value.value.strip()
                ):
                    out.append(value)
    return out


def extract_node_kinds(package: Path, rel_root: Path) -> tuple[list[Message], list[str]]:
    """The ``display_name`` of every node kind class in the package (a class that sets both
    ``ops`` and ``display_name``): GET /cube-lab/api/pipelines/node-kinds hands them to the
    palette, which translates them. With them the titles and descriptions of the kind's
    ``schema`` (a plug-in kind's parameters: finetune, training, tuning), which the properties
    panel's form shows through ``serverText``; the schema is a dict literal in the class or a
    module-level name bound to one."""
    import ast

    messages: list[Message] = []
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        tree = _parse(_read(path), str(path))
        module_values: dict[str, ast.expr] = {}
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                if isinstance(stmt.targets[0], ast.Name):
                    module_values[stmt.targets[0].id] = stmt.value
            elif (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and stmt.value is not None
            ):
                module_values[stmt.target.id] = stmt.value
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            values: dict[str, ast.expr] = {}
            for stmt in cls.body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                    target, value = stmt.targets[0], stmt.value
                    if isinstance(target, ast.Name):
                        values[target.id] = value
                    elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                        for t, v in zip(target.elts, value.elts, strict=False):
                            if isinstance(t, ast.Name):
                                values[t.id] = v
                elif (
                    isinstance(stmt, ast.AnnAssign)
                    and isinstance(stmt.target, ast.Name)
                    and stmt.value is not None
                ):
                    values[stmt.target.id] = stmt.value
            name = values.get("display_name")
            if "ops" in values and isinstance(name, ast.Constant) and isinstance(name.value, str):
                rel = path.relative_to(rel_root).as_posix()
                messages.append(Message(name.value, where=[f"{rel}:{name.lineno}"]))
                schema = values.get("schema")
                if isinstance(schema, ast.Name):
                    schema = module_values.get(schema.id)
                for text in _schema_texts(schema) if schema is not None else ():
                    messages.append(Message(text.value, where=[f"{rel}:{text.lineno}"]))
    return messages, []


def extract_server_messages(package: Path, rel_root: Path) -> tuple[list[Message], list[str]]:
    """The server's messages a person reads: every ``_t("...")`` of the package's modules
    (cube_lab/locale/messages.py: REST ``error``/``detail`` texts and CLI messages, which the
    handlers and the CLI translate to the reader's locale). Its argument must be a literal."""
    import ast

    messages: list[Message] = []
    errors: list[str] = []
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        source = _read(path)
        if "_t(" not in source:
            continue
        rel = path.relative_to(rel_root).as_posix()
        for node in ast.walk(_parse(source, str(path))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "_t"
            ):
                continue
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                messages.append(Message(first.value, where=[f"{rel}:{node.lineno}"]))
            else:
                errors.append(f"{rel}:{node.lineno}: _t() needs a string literal message id")
    return messages, errors


def extract_cli_texts(package: Path, rel_root: Path) -> tuple[list[Message], list[str]]:
    """``cube-lab --help``'s texts, as the parser holds them (cube_lab/cli/i18n.py translates
    them by LANG), and argparse's own headings and errors."""
    from cube_lab import cli
    from cube_lab.cli import i18n as cli_i18n

    where = (package / "cli" / "__init__.py").relative_to(rel_root).as_posix()
    i18n = (package / "cli" / "i18n.py").relative_to(rel_root).as_posix()
    texts = cli_i18n.parser_texts(cli.build_parser())
    messages = [Message(t, where=[f"{where}:0"]) for t in texts]
    messages += [Message(t, where=[f"{i18n}:0"]) for t in cli_i18n.ARGPARSE_TEXTS]
    return messages, []


def extract(
    src: Path = SRC,
    dynamic: dict[str, list[str]] | None = None,
    schema_dir: Path | None = None,
) -> tuple[dict[tuple[str | None, str], Message], list[str]]:
    """Every translatable message in ``src`` and the settings schemas (keyed by context and
    msgid), and the calls that could not be read (a non-literal argument cannot be looked up
    in a catalog)."""
    dynamic = DYNAMIC if dynamic is None else dynamic
    if schema_dir is None:
        schema_dir = SCHEMA if src == SRC else src.parent / "schema"
    found: dict[tuple[str | None, str], Message] = {}
    errors: list[str] = []
    parts: list[tuple[Path, Any, Any]] = [
        (p, p.relative_to(src.parent).as_posix(), extract_file) for p in source_files(src)
    ]
    parts += [
        (p, p.relative_to(schema_dir.parent).as_posix(), extract_schema)
        for p in sorted(schema_dir.glob("*.json"))
    ]
    if src == SRC:  # the server's texts the front end translates (templates, node kinds)
        parts += [
            (TEMPLATES, ROOT, extract_templates),
            (PACKAGE, ROOT, extract_node_kinds),
            (HUB_TEMPLATES, ROOT, extract_hub_pages),
            (PACKAGE, ROOT, extract_server_messages),
            (PACKAGE, ROOT, extract_cli_texts),
        ]
    for path, rel, reader in parts:
        messages, errs = reader(path, rel)
        errors += errs
        for msg in messages:
            seen = found.get(msg.key)
            if seen is None:
                found[msg.key] = msg
                continue
            seen.where += msg.where
            if msg.plural and seen.plural and msg.plural != seen.plural:
                errors.append(f"{msg.where[0]}: {msg.msgid!r} has two plural forms")
            seen.plural = seen.plural or msg.plural
    for rel, ids in dynamic.items():
        text = (src.parent / rel).read_text(encoding="utf-8")
        for msgid in ids:
            if f"'{msgid}'" not in text and f'"{msgid}"' not in text:
                errors.append(f"{rel}: {msgid!r} is gone: update DYNAMIC in {Path(__file__).name}")
                continue
            msg = found.setdefault((None, msgid), Message(msgid))
            msg.where.append(f"{rel}:0")
    return found, errors


# -- literals that never reach the translator ------------------------------------------------

# A quoted string on one line (a template literal only without ${...}).
LITERAL = re.compile(
    r"""(?<![\w$])('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\\n$]|\\.)*`)"""
)
# English prose: a capitalised word and two more words after spaces, or a sentence of three
# words or more ending in "." (identifiers, CSS classes, paths and keys have no spaces).
PROSE = re.compile(r"^[A-Z][a-z]+(?:,? [A-Za-z%\d][\w'-]*){2,}|^[A-Za-z]\S* \S+ .*\.$")
# Where a literal is not text for the UI: what precedes it (plug-in and token descriptions,
# which JupyterLab shows untranslated; console messages for developers).
NOT_UI = re.compile(r"(\bdescription:|console\.\w+\(|new Token<[^>]*>\(\s*'[^']*',)\s*$")
# Product names, shown as they are in every language.
NAMES = {"Label Studio JSON"}


def untranslated_literals(
    src: Path = SRC, messages: dict[tuple[str | None, str], Message] | None = None
) -> list[str]:
    """English prose in ``src`` that is neither a catalog message nor an argument of a
    translator call: a user would read it in English whatever the language."""
    if messages is None:
        messages, _ = extract(src)
    known = {m.msgid for m in messages.values()} | {m.plural for m in messages.values() if m.plural}
    out: list[str] = []
    for path in source_files(src):
        rel = path.relative_to(src.parent).as_posix()
        text = _blank_comments(path.read_text(encoding="utf-8"))
        for match in LITERAL.finditer(text):
            try:
                value = _read_literal(text, match.start())[0]
            except (ExtractError, IndexError, ValueError):
                continue
            if value in known or value in NAMES or not PROSE.search(value):
                continue
            if NOT_UI.search(text[max(0, match.start() - 80) : match.start()]):
                continue
            line = text.count("\n", 0, match.start()) + 1
            out.append(f"{rel}:{line}: {match.group()}")
    return out


def _blank_comments(text: str) -> str:
    """``text`` with its comments turned to spaces (lines kept), strings left alone."""
    out = list(text)
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in "'\"`":
            try:
                _, i = _read_literal(text, i)
            except (ExtractError, IndexError, ValueError):
                i += 1
            continue
        if text.startswith("//", i) or text.startswith("/*", i):
            end = text.find("\n", i) if text[i + 1] == "/" else text.find("*/", i) + 2
            end = len(text) if end < (1 if text[i + 1] == "/" else 2) else end
            for j in range(i, end):
                if out[j] != "\n":
                    out[j] = " "
            i = end
            continue
        i += 1
    return "".join(out)


def placeholders(text: str) -> set[str]:
    """The placeholders a translation must keep: ``%1``, ``%2``... (the front end's, the hub
    pages') and the named fields of the server's ``_t`` templates."""
    fields = {"{" + f + "}" for f in FIELD.findall(text.replace("{{", "").replace("}}", ""))}
    return set(PLACEHOLDER.findall(text)) | fields | set(PERCENT.findall(text.replace("%%", "")))


# -- PO files (babel) ---------------------------------------------------------------------


def _catalog(
    messages: dict[tuple[str | None, str], Message], locale: str | None = None, since=None
):
    from babel.messages.catalog import Catalog

    catalog = Catalog(
        locale=locale,
        domain=DOMAIN,
        project="cube-lab",
        version=_version(),
        copyright_holder="the cube-lab authors",
        msgid_bugs_address="https://github.com/cube-lab/cube-lab/issues",
        last_translator="cube-lab",
        language_team="cube-lab zh-CN (docs/glossary.zh-CN.md)",
        creation_date=since,
        revision_date=since,
        fuzzy=False,
        header_comment=(
            f"# cube-lab's lab extension: {'its strings' if locale is None else locale}.\n"
            "# Terms: docs/glossary.zh-CN.md. Made by scripts/extract_strings.py\n"
            "# (extract, update, compile): translate the msgstr lines, then run `compile`."
        ),
    )
    for msg in sorted(messages.values(), key=lambda m: (m.where[0], m.msgid)):
        locations = [(w.rsplit(":", 1)[0], int(w.rsplit(":", 1)[1])) for w in msg.where]
        msgid = (msg.msgid, msg.plural) if msg.plural else msg.msgid
        catalog.add(msgid, locations=locations, context=msg.ctx)
    return catalog


def write_po(catalog, path: Path) -> None:
    from babel.messages.pofile import write_po as _write

    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        _write(fh, catalog, width=0, omit_header=False, sort_output=False)


def read_po(path: Path):
    from babel.messages.pofile import read_po as _read

    with path.open("rb") as fh:
        return _read(fh, domain=DOMAIN)


def po_path(lang: str) -> Path:
    return LOCALE / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


def json_path(lang: str) -> Path:
    return LOCALE / lang / "LC_MESSAGES" / f"{DOMAIN}.json"


def mo_path(lang: str) -> Path:
    return LOCALE / lang / "LC_MESSAGES" / f"{DOMAIN}.mo"


def compiled_mo(lang: str) -> bytes:
    """The gettext ``.mo`` of ``lang``: what the server reads (Python's gettext) to translate
    the settings schema and, through cube_lab.locale, server-side messages."""
    import io

    from babel.messages.mofile import write_mo

    buf = io.BytesIO()
    write_mo(buf, read_po(po_path(lang)), use_fuzzy=False)
    return buf.getvalue()


def translations(lang: str) -> dict[tuple[str | None, str], list[str]]:
    """The catalog of ``lang``: (context, msgid) -> its forms ([] when untranslated)."""
    out: dict[tuple[str | None, str], list[str]] = {}
    for entry in read_po(po_path(lang)):
        if not entry.id:
            continue
        msgid = entry.id[0] if isinstance(entry.id, tuple) else entry.id
        forms = list(entry.string) if isinstance(entry.string, tuple) else [entry.string]
        out[(entry.context, msgid)] = [f for f in forms if f]
    return out


def update(lang: str, found: dict[tuple[str | None, str], Message]) -> None:
    old = read_po(po_path(lang)) if po_path(lang).exists() else None
    # keep the header's dates: a catalog rewritten with nothing new stays the same file
    catalog = _catalog(found, locale=lang, since=old.creation_date if old else None)
    if old is not None:
        for entry in catalog:
            if not entry.id:
                continue
            prev = old.get(entry.id[0] if isinstance(entry.id, tuple) else entry.id, entry.context)
            if prev is None:
                continue
            prev_forms = prev.string if isinstance(prev.string, tuple) else (prev.string,)
            if isinstance(entry.id, tuple):
                entry.string = tuple(prev_forms)[:1] or ("",)
            else:
                entry.string = prev_forms[0]
    write_po(catalog, po_path(lang))


def compiled(lang: str, version: str) -> dict:
    """The Jed-style JSON for ``lang``: ``{"": metadata, msgid: [forms], "ctx\\u0004msgid": ...}``.

    A plural entry carries two forms: JupyterLab's front end takes an entry with one form
    for a singular string only; Chinese has one form, repeated."""
    meta = LANGUAGES[lang]
    data: dict = {
        "": {
            "domain": DOMAIN,
            "language": meta["language"],
            "plural_forms": meta["plural_forms"],
            "version": version,
        }
    }
    for entry in read_po(po_path(lang)):
        if not entry.id:
            continue
        msgid = entry.id[0] if isinstance(entry.id, tuple) else entry.id
        key = f"{entry.context}\u0004{msgid}" if entry.context else msgid
        if isinstance(entry.id, tuple):
            form = entry.string[0] if entry.string else ""
            if form:
                data[key] = [form, form]
        elif entry.string:
            data[key] = [entry.string]
    return data


def _version() -> str:
    package = json.loads((ROOT / "package.json").read_text(encoding="utf-8"))
    return str(package["version"])


def dumps_json(data: dict) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def problems(lang: str, found: dict[tuple[str | None, str], Message]) -> list[str]:
    """What makes ``lang``'s catalog incomplete or wrong against ``found``."""
    have = translations(lang)
    out: list[str] = []
    for key, msg in found.items():
        forms = have.get(key)
        label = f"{msg.where[0]}: {msg.msgid!r}"
        if not forms:
            out.append(f"{label}: no {lang} translation")
            continue
        for form in forms:
            if placeholders(form) != placeholders(msg.msgid) | placeholders(msg.plural or ""):
                out.append(f"{label}: placeholders differ in {form!r}")
    for key in have.keys() - found.keys():
        out.append(f"{key[1]!r}: stale {lang} entry (extracted from nowhere any more)")
    path = json_path(lang)
    if not path.exists() or path.read_text(encoding="utf-8") != dumps_json(
        compiled(lang, _version())
    ):
        out.append(
            f"{path.relative_to(ROOT)} is out of date: run scripts/extract_strings.py compile"
        )
    mo = mo_path(lang)
    if not mo.exists() or mo.read_bytes() != compiled_mo(lang):
        out.append(f"{mo.relative_to(ROOT)} is out of date: run scripts/extract_strings.py compile")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["extract", "update", "compile", "check"])
    args = parser.parse_args(argv)
    found, errors = extract()
    for err in errors:
        print(f"error: {err}", file=sys.stderr)
    if errors:
        return 1
    if args.command == "extract":
        old = read_po(POT) if POT.exists() else None
        write_po(_catalog(found, since=old.creation_date if old else None), POT)
        print(f"{len(found)} messages -> {POT.relative_to(ROOT)}")
    elif args.command == "update":
        for lang in LANGUAGES:
            update(lang, found)
            print(f"{lang}: {po_path(lang).relative_to(ROOT)}")
    elif args.command == "compile":
        for lang in LANGUAGES:
            path = json_path(lang)
            data = compiled(lang, _version())
            path.write_text(dumps_json(data), encoding="utf-8")
            mo_path(lang).write_bytes(compiled_mo(lang))
            print(f"{lang}: {len(data) - 1} messages -> {path.relative_to(ROOT)} and .mo")
    else:
        bad = [p for lang in LANGUAGES for p in problems(lang, found)]
        for line in bad:
            print(line, file=sys.stderr)
        print(f"{len(found)} messages, {len(bad)} problems")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
