"""Reads one ``templates/<name>/template.yaml`` into a JobTemplate, or says what is wrong."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from .model import CATEGORIES, PLACEHOLDER_RE, TEMPLATE_DIR, JobTemplate, TemplateOutput
from .params import check_schema

TEMPLATE_FILE = "template.yaml"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*\Z")
REQUIRED = ("name", "display_name", "category", "description", "command", "parameters")
OPTIONAL = ("image", "outputs")


class TemplateLoadError(Exception):
    """A template.yaml that cannot be used; ``problems`` says each thing to fix."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        super().__init__(f"{path}: {'; '.join(problems)}")
        self.path = path
        self.problems = problems


def _text(doc: dict[str, Any], key: str, problems: list[str]) -> str:
    value = doc.get(key)
    if not isinstance(value, str) or not value.strip():
        problems.append(f"'{key}' must be a non-empty string")
        return ""
    return value.strip()


def _read(path: Path) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise TemplateLoadError(path, [f"not valid YAML{where}: {problem}"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TemplateLoadError(path, [f"cannot be read: {exc}"]) from None
    if not isinstance(doc, dict):
        raise TemplateLoadError(path, ["must be a mapping of keys (name, command, parameters...)"])
    return doc


def _command(
    doc: dict[str, Any], properties: dict[str, Any] | None, problems: list[str]
) -> list[str]:
    command = doc.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
        problems.append("'command' must be a non-empty list of strings")
        return []
    if properties is None:  # the schema is broken: placeholder names cannot be checked
        return command
    for arg in command:
        for key in PLACEHOLDER_RE.findall(arg):
            if key != TEMPLATE_DIR and key not in properties:
                problems.append(
                    f"'command' uses {{{key}}}, which is neither {{{TEMPLATE_DIR}}} nor a parameter"
                )
    return command


def _outputs(
    doc: dict[str, Any], properties: dict[str, Any], problems: list[str]
) -> list[TemplateOutput]:
    raw = doc.get("outputs") or []
    if not isinstance(raw, list):
        problems.append("'outputs' must be a list of {name, parameter, description}")
        return []
    outputs: list[TemplateOutput] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            problems.append(f"outputs[{i}] must be a mapping with a 'name'")
            continue
        name, param = item["name"], item.get("parameter")
        prop = properties.get(param) if isinstance(param, str) else None
        if not isinstance(prop, dict) or prop.get("type") != "string":
            problems.append(f"output {name!r}: 'parameter' must name a string parameter")
            continue
        if any(o.name == name for o in outputs):
            problems.append(f"output {name!r} is declared twice")
            continue
        outputs.append(TemplateOutput(name, param, str(item.get("description") or "")))
    return outputs


def load_template(folder: Path) -> JobTemplate:
    """Load ``folder/template.yaml``; raises TemplateLoadError listing every problem found."""
    path = folder / TEMPLATE_FILE
    doc = _read(path)
    problems: list[str] = []
    unknown = [k for k in doc if k not in REQUIRED + OPTIONAL and not str(k).startswith("x-")]
    if unknown:
        problems.append(
            f"unknown keys {sorted(map(str, unknown))}; allowed: {list(REQUIRED + OPTIONAL)} "
            "(prefix your own keys with 'x-')"
        )
    name = _text(doc, "name", problems)
    if name and not NAME_RE.match(name):
        problems.append(f"'name' {name!r} must be lower-case letters, digits and '-'")
    elif name and name != folder.name:
        problems.append(f"'name' {name!r} must equal the folder name {folder.name!r}")
    display_name = _text(doc, "display_name", problems)
    description = _text(doc, "description", problems)
    category = _text(doc, "category", problems)
    if category and category not in CATEGORIES:
        problems.append(f"'category' {category!r} must be one of {list(CATEGORIES)}")
    image = doc.get("image")
    if image is not None and (not isinstance(image, str) or not image.strip()):
        problems.append("'image' must be a container image reference such as python:3.11-slim")
    parameters = doc.get("parameters")
    schema_problems = check_schema(parameters)
    problems.extend(schema_problems)
    properties = None if schema_problems else parameters["properties"]  # type: ignore[index]
    command = _command(doc, properties, problems)
    outputs = [] if properties is None else _outputs(doc, properties, problems)
    if problems:
        raise TemplateLoadError(path, problems)
    assert isinstance(parameters, dict)
    return JobTemplate(
        name=name,
        display_name=display_name,
        category=category,
        description=description,
        directory=folder.resolve(),
        command_template=tuple(command),
        parameters=parameters,
        outputs=tuple(outputs),
        image=image,
        extra={k: v for k, v in doc.items() if str(k).startswith("x-")},
    )
