"""Read and write Elyra ``.pipeline`` files (pipeline-flow v3, Elyra pipeline version 8).

Older Elyra versions 5-7 are migrated on load; anything older, newer, or not a
pipeline at all is refused with a ``PipelineFormatError`` that names the field.
The reader never lets a Python exception other than that escape, whatever the input.
"""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from .model import CUBE_KEY, Node, Parameter, Pipeline

ELYRA_VERSION = 8
OLDEST_MIGRATED = 5
SCHEMA_URL = (
    "http://api.dataplatform.ibm.com/schemas/common-pipeline/pipeline-flow/"
    "pipeline-flow-v3-schema.json"
)
# Before version 7 these sat directly in a node's app_data.
_COMPONENT_KEYS = (
    "filename",
    "runtime_image",
    "env_vars",
    "dependencies",
    "include_subdirectories",
    "outputs",
    "cpu",
    "gpu",
    "memory",
    "kubernetes_secrets",
    "mounted_volumes",
)


class PipelineFormatError(InvalidInput):
    """The file is not a pipeline cube-lab can read; ``detail`` names the field."""


def _expect(value: Any, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise PipelineFormatError(
            f"{where} must be a {_json_name(names)}", f"found {_json_name(type(value).__name__)}"
        )
    return value


def _json_name(python_name: str) -> str:
    names = {
        "dict": "object",
        "list": "array",
        "str": "string",
        "int": "number",
        "float": "number",
        "bool": "boolean",
        "NoneType": "null",
    }
    return " or ".join(names.get(n.strip(), n) for n in python_name.split(" or "))


def load(path: Path) -> Pipeline:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PipelineFormatError(f"pipeline file {str(path)!r} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PipelineFormatError(f"cannot read {path.name}", str(exc)) from None
    return loads(text, path)


def loads(text: str, path: Path | None = None) -> Pipeline:
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise PipelineFormatError("the pipeline file is not valid JSON", str(exc)) from None
    return _from_own_document(_expect(doc, dict, "the pipeline document"), path)


def from_document(doc: Any, path: Path | None = None) -> Pipeline:
    """A pipeline from a parsed document; the document itself is left as it was."""
    return _from_own_document(copy.deepcopy(_expect(doc, dict, "the pipeline document")), path)


def _from_own_document(doc: dict[str, Any], path: Path | None) -> Pipeline:
    """Like from_document, but takes over ``doc`` (migration edits it in place)."""
    if doc.get("doc_type", "pipeline") != "pipeline":
        raise PipelineFormatError(f"doc_type is {doc.get('doc_type')!r}, not 'pipeline'")
    pipelines = _expect(doc.get("pipelines"), list, "pipelines")
    if not pipelines:
        raise PipelineFormatError("pipelines is empty", "A .pipeline file holds one pipeline.")
    primary_id = doc.get("primary_pipeline")
    index = next(
        (
            i
            for i, p in enumerate(pipelines)
            if isinstance(primary_id, str) and isinstance(p, dict) and p.get("id") == primary_id
        ),
        0,
    )
    primary = _expect(pipelines[index], dict, f"pipelines[{index}]")
    app_data = _expect(primary.setdefault("app_data", {}), dict, "pipelines[0].app_data")
    migrated_from = _migrate(app_data, primary)
    properties = _expect(app_data.setdefault("properties", {}), dict, "app_data.properties")
    defaults = _expect(properties.get("pipeline_defaults") or {}, dict, "pipeline_defaults")
    cube = _expect(properties.get(CUBE_KEY) or {}, dict, f"properties.{CUBE_KEY}")
    name = properties.get("name")
    if not isinstance(name, str) or not name:
        name = path.stem if path else "pipeline"
    nodes = [
        _node(raw, f"pipelines[0].nodes[{i}]")
        for i, raw in enumerate(_expect(primary.get("nodes", []), list, "pipelines[0].nodes"))
    ]
    params = _parameters(properties.get("pipeline_parameters") or [])
    return Pipeline(name, nodes, params, defaults, cube, doc, path, migrated_from, index)


def _migrate(app_data: dict[str, Any], primary: dict[str, Any]) -> int | None:
    version = app_data.get("version", ELYRA_VERSION)
    if isinstance(version, bool) or not isinstance(version, int | float):
        raise PipelineFormatError("app_data.version must be a number", f"found {version!r}")
    version = int(version)
    if version > ELYRA_VERSION:
        raise PipelineFormatError(
            f"this pipeline was written by a newer Elyra (pipeline version {version})",
            f"cube-lab reads Elyra pipeline versions {OLDEST_MIGRATED} to {ELYRA_VERSION}.",
        )
    if version < OLDEST_MIGRATED:
        raise PipelineFormatError(
            f"Elyra pipeline version {version} is too old to migrate",
            f"cube-lab migrates versions {OLDEST_MIGRATED} to {ELYRA_VERSION}; open and save "
            "the file once in Elyra 3.x or newer to upgrade it.",
        )
    if version == ELYRA_VERSION:
        return None
    for i, node in enumerate(_expect(primary.get("nodes", []), list, "pipelines[0].nodes")):
        node_app = _expect(node, dict, f"nodes[{i}]").setdefault("app_data", {})
        _expect(node_app, dict, f"nodes[{i}].app_data")
        if version < 7:  # v7 moved node settings under component_parameters
            params = node_app.setdefault("component_parameters", {})
            for key in _COMPONENT_KEYS:
                if key in node_app:
                    params.setdefault(key, node_app.pop(key))
        params = _expect(node_app.get("component_parameters", {}), dict, "component_parameters")
        # v8 turned "NAME=value" strings into {"env_var", "value"} objects
        params["env_vars"] = [_env_object(e) for e in params.get("env_vars") or []]
    app_data["version"] = ELYRA_VERSION
    return version


def _env_object(entry: Any) -> Any:
    if isinstance(entry, str):
        name, _, value = entry.partition("=")
        return {"env_var": name.strip(), "value": value}
    return entry


def _node(raw: Any, where: str) -> Node:
    raw = _expect(raw, dict, where)
    node_id = raw.get("id")
    if not isinstance(node_id, str) or not node_id:
        raise PipelineFormatError(f"{where}.id is missing", "Every node needs a unique string id.")
    kind = raw.get("type", "execution_node")
    if kind != "execution_node":
        raise PipelineFormatError(
            f"node {node_id!r} is a {kind!r}",
            "cube-lab runs execution nodes only; expand super-nodes into the main pipeline.",
        )
    op = raw.get("op")
    if not isinstance(op, str) or not op:
        raise PipelineFormatError(f"{where}.op is missing", f"node {node_id!r} needs an op")
    app = _expect(raw.get("app_data") or {}, dict, f"{where}.app_data")
    params = _expect(
        app.get("component_parameters") or {}, dict, f"{where}.app_data.component_parameters"
    )
    cube = _expect(app.get(CUBE_KEY) or {}, dict, f"{where}.app_data.{CUBE_KEY}")
    ui = app.get("ui_data") if isinstance(app.get("ui_data"), dict) else {}
    label = app.get("label") or ui.get("label") or params.get("filename") or node_id
    upstream: list[str] = []
    for p, port in enumerate(_expect(raw.get("inputs") or [], list, f"{where}.inputs")):
        port = _expect(port, dict, f"{where}.inputs[{p}]")
        for k, link in enumerate(
            _expect(port.get("links") or [], list, f"{where}.inputs[{p}].links")
        ):
            link = _expect(link, dict, f"{where}.inputs[{p}].links[{k}]")
            ref = link.get("node_id_ref")
            if not isinstance(ref, str) or not ref:
                raise PipelineFormatError(
                    f"{where}.inputs[{p}].links[{k}].node_id_ref is missing",
                    f"a link into node {node_id!r} must name its upstream node",
                )
            if ref not in upstream:
                upstream.append(ref)
    return Node(node_id, op, str(label), params, upstream, cube)


def _parameters(raw: Any) -> list[Parameter]:
    out = []
    for i, item in enumerate(_expect(raw, list, "pipeline_parameters")):
        item = _expect(item, dict, f"pipeline_parameters[{i}]")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise PipelineFormatError(f"pipeline_parameters[{i}].name is missing")
        default = item.get("default_value") if isinstance(item.get("default_value"), dict) else {}
        out.append(
            Parameter(
                name=name,
                type=str(default.get("type", "String")),
                default=default.get("value"),
                required=bool(item.get("required", False)),
                description=str(item.get("description", "")),
            )
        )
    return out


# -- writing ---------------------------------------------------------------------------------


def _dict_at(container: dict[str, Any], key: str) -> dict[str, Any]:
    """``container[key]`` as a dict, replacing whatever non-object the reader tolerated."""
    value = container.get(key)
    if not isinstance(value, dict):
        value = container[key] = {}
    return value


def new_document(name: str) -> dict[str, Any]:
    """An empty Elyra v8 pipeline document."""
    return {
        "doc_type": "pipeline",
        "version": "3.0",
        "json_schema": SCHEMA_URL,
        "id": "elyra-auto-generated-pipeline",
        "primary_pipeline": "primary",
        "pipelines": [
            {
                "id": "primary",
                "nodes": [],
                "app_data": {
                    "ui_data": {"comments": []},
                    "version": ELYRA_VERSION,
                    "properties": {
                        "name": name,
                        "runtime": "Generic",
                        "pipeline_defaults": {},
                        "pipeline_parameters": [],
                    },
                },
                "runtime_ref": "",
            }
        ],
        "schemas": [],
    }


def to_document(pipeline: Pipeline) -> dict[str, Any]:
    """The document to save: the one read, with nodes, links and properties brought up to date."""
    doc = copy.deepcopy(pipeline.raw) if pipeline.raw else new_document(pipeline.name)
    primary = doc["pipelines"][pipeline.primary_index]
    app_data = _dict_at(primary, "app_data")
    app_data["version"] = ELYRA_VERSION
    props = _dict_at(app_data, "properties")
    props["name"] = pipeline.name
    props["pipeline_defaults"] = pipeline.defaults
    props["pipeline_parameters"] = [
        {
            "name": p.name,
            "description": p.description,
            "required": p.required,
            "default_value": {"type": p.type, "value": p.default},
        }
        for p in pipeline.parameters
    ]
    if pipeline.cube:
        props[CUBE_KEY] = pipeline.cube
    else:
        props.pop(CUBE_KEY, None)
    old = {n.get("id"): n for n in primary.get("nodes", []) if isinstance(n, dict)}
    primary["nodes"] = [_write_node(node, old.get(node.id)) for node in pipeline.nodes]
    return doc


def _write_node(node: Node, previous: dict[str, Any] | None) -> dict[str, Any]:
    raw = (
        copy.deepcopy(previous)
        if previous
        else {
            "id": node.id,
            "type": "execution_node",
            "outputs": [
                {
                    "id": "outPort",
                    "app_data": {
                        "ui_data": {"cardinality": {"min": 0, "max": -1}, "label": "Output Port"}
                    },
                }
            ],
        }
    )
    raw["op"] = node.op
    app = _dict_at(raw, "app_data")
    app["label"] = node.label
    app["component_parameters"] = node.params
    _dict_at(app, "ui_data")["label"] = node.label
    if node.cube:
        app[CUBE_KEY] = node.cube
    else:
        app.pop(CUBE_KEY, None)
    old_links = {
        link.get("node_id_ref"): link
        for port in raw.get("inputs") or []
        if isinstance(port, dict)
        for link in port.get("links") or []
        if isinstance(link, dict)
    }
    links = [
        old_links.get(up) or {"id": uuid.uuid4().hex, "node_id_ref": up, "port_id_ref": "outPort"}
        for up in node.upstream
    ]
    ports = [p for p in raw.get("inputs") or [] if isinstance(p, dict)]
    if not ports:
        ports = [
            {
                "id": "inPort",
                "app_data": {
                    "ui_data": {"cardinality": {"min": 0, "max": -1}, "label": "Input Port"}
                },
            }
        ]
    for port in ports[1:]:  # cube-lab keeps every link on the first input port
        port["links"] = []
    ports[0]["links"] = links
    raw["inputs"] = ports
    return raw


def dumps(pipeline: Pipeline) -> str:
    return json.dumps(to_document(pipeline), indent=2) + "\n"


def save(pipeline: Pipeline, path: Path) -> None:
    """Write atomically: a crash never leaves half a pipeline file."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.write_text(dumps(pipeline), encoding="utf-8")
    tmp.replace(path)
