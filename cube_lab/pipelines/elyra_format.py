"""Read and write Elyra ``.pipeline`` files (pipeline-flow v3, Elyra pipeline version 8).

Older Elyra versions 0-7 are migrated on load, one Elyra step per version; anything newer,
or not a pipeline at all, is refused with a ``PipelineFormatError`` that names the field.
What loads but Elyra's validator would refuse (no nodes, no version, a schema version other
than 3.0, ...) is left to ``validation``, so the editor can still open the file to fix it.
The reader never lets a Python exception other than that escape, whatever the input.
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import InvalidInput
from .model import CUBE_KEY, OP_NOTEBOOK, Node, Parameter, Pipeline

ELYRA_VERSION = 8
SCHEMA_VERSION = "3.0"
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
    migrated_from = _migrate(app_data, primary, doc)
    properties = _expect(app_data.setdefault("properties", {}), dict, "app_data.properties")
    defaults = _expect(properties.get("pipeline_defaults") or {}, dict, "pipeline_defaults")
    cube = _expect(properties.get(CUBE_KEY) or {}, dict, f"properties.{CUBE_KEY}")
    name = properties.get("name")
    if not isinstance(name, str) or not name:  # Elyra before 3.x kept it in app_data
        name = app_data.get("name")
    if not isinstance(name, str) or not name:
        name = path.stem if path else "pipeline"
    nodes = [
        _node(raw, f"pipelines[0].nodes[{i}]")
        for i, raw in enumerate(_expect(primary.get("nodes", []), list, "pipelines[0].nodes"))
    ]
    params = _parameters(properties.get("pipeline_parameters") or [])
    return Pipeline(name, nodes, params, defaults, cube, doc, path, migrated_from, index)


def _migrate(app_data: dict[str, Any], primary: dict[str, Any], doc: dict[str, Any]) -> int | None:
    """Bring a document up to version 8 one Elyra step at a time (0 -> 1 -> ... -> 8), the way
    Elyra's pipeline editor does (``pipeline-services/src/migration``); returns the version read."""
    version = app_data.get("version")
    if version is None:
        if not _looks_like_v0(primary):
            return None  # validation reports the missing version; nothing to migrate
        version = 0
    if isinstance(version, bool) or not isinstance(version, int | float):
        raise PipelineFormatError("app_data.version must be a number", f"found {version!r}")
    if version > ELYRA_VERSION:
        raise PipelineFormatError(
            f"this pipeline was written by a newer Elyra (pipeline version {version:g})",
            f"cube-lab reads Elyra pipeline versions 0 to {ELYRA_VERSION}.",
        )
    if version == ELYRA_VERSION:
        return None
    pipelines = [p for p in doc.get("pipelines") or [] if isinstance(p, dict)]
    for p in pipelines:
        if not isinstance(p.get("app_data"), dict):
            p["app_data"] = {}
        for i, node in enumerate(_expect(p.setdefault("nodes", []), list, "pipelines[].nodes")):
            node = _expect(node, dict, f"nodes[{i}]")
            if not isinstance(node.get("app_data"), dict):
                node["app_data"] = {}
    for step, migrate in enumerate(_STEPS, start=1):
        if version < step:
            migrate(primary, pipelines)
    app_data["version"] = ELYRA_VERSION
    return int(version)


def _looks_like_v0(primary: dict[str, Any]) -> bool:
    """A file from before Elyra numbered its pipelines (it then had no version at all)."""
    app = primary.get("app_data") if isinstance(primary.get("app_data"), dict) else {}
    if any(k in app for k in ("title", "export", "export_format", "export_path")):
        return True
    for node in primary.get("nodes") or []:
        if not isinstance(node, dict):
            continue
        node_app = node.get("app_data")
        if node.get("type") == "pipeline_node" or (
            isinstance(node_app, dict) and any(k in node_app for k in _V0_NODE_RENAMES)
        ):
            return True
    return False


def _rename(container: dict[str, Any], old: str, new: str) -> None:
    if old in container:
        container[new] = container.pop(old)


_V0_NODE_RENAMES = {
    "notebook": "filename",
    "artifact": "filename",
    "docker_image": "runtime_image",
    "image": "runtime_image",
    "vars": "env_vars",
    "file_dependencies": "dependencies",
    "recursive_dependencies": "include_subdirectories",
}

Step = Callable[[dict[str, Any], list[dict[str, Any]]], None]


def _to_v1(primary: dict[str, Any], pipelines: list[dict[str, Any]]) -> None:
    """v0 -> v1: the pipeline's title becomes its name, export settings go, every node is a
    notebook node (the only kind there was) and its settings take their later names."""
    app = primary["app_data"]
    _rename(app, "title", "name")
    for key in ("export", "export_format", "export_path"):
        app.pop(key, None)
    for node in primary.get("nodes") or []:
        if node.get("type") == "pipeline_node":
            node["type"] = "execution_node"
        node["op"] = OP_NOTEBOOK
        for old, new in _V0_NODE_RENAMES.items():
            _rename(node["app_data"], old, new)


def _to_v2(primary: dict[str, Any], pipelines: list[dict[str, Any]]) -> None:
    """v1 -> v2: filenames were absolute; like Elyra, keep only the file's name (then relative
    to the pipeline file), leaving the user to fix the path of a file that lived elsewhere."""
    for node in primary.get("nodes") or []:
        filename = node["app_data"].get("filename")
        if isinstance(filename, str) and filename:
            node["app_data"]["filename"] = PurePosixPath(filename.replace("\\", "/")).name


def _to_v3(primary: dict[str, Any], pipelines: list[dict[str, Any]]) -> None:
    """v2 -> v3 (Python script nodes arrived): only the version changes, so that older
    Elyras refuse files with node types they do not know."""


def _to_v4(primary: dict[str, Any], pipelines: list[dict[str, Any]]) -> None:
    """v3 -> v4: a node's settings move from app_data into app_data.component_parameters, and
    its label from ui_data up to app_data.label."""
    for p in pipelines:
        for node in p.get("nodes") or []:
            old = node["app_data"]
            ui = old.pop("ui_data", None)
            ui = ui if isinstance(ui, dict) else {}
            label = ui.get("label")
            node["app_data"] = {
                "label": label if isinstance(label, str) else "",
                "component_parameters": old,
                "ui_data": ui,
            }


# Elyra 3.0 renamed the example components' ops (v5), then moved them into the example
# catalogs (v6). cube-lab does not run catalog components, but migrates their names so the
# file reads as Elyra reads it.
_V5_OPS = {
    "run-notebook-using-papermill": "run_notebook_using_papermill_Runnotebookusingpapermill",
    "filter-text": "filter_text_using_shell_and_grep_Filtertext",
    "bash-operator_BashOperator": "bash_operator_BashOperator",
    "email-operator_EmailOperator": "email_operator_EmailOperator",
    "http-operator_SimpleHttpOperator": "http_operator_SimpleHttpOperator",
    "spark-sql-operator_SparkSqlOperator": "spark_sql_operator_SparkSqlOperator",
    "spark-submit-operator_SparkSubmitOperator": "spark_submit_operator_SparkSubmitOperator",
    "slack-operator_SlackAPIPostOperator": "slack_operator_SlackAPIPostOperator",
}
_V6_OPS = {
    "run_notebook_using_papermill_Runnotebookusingpapermill": (
        "elyra-kfp-examples-catalog:61e6f4141f65"
    ),
    "filter_text_using_shell_and_grep_Filtertext": "elyra-kfp-examples-catalog:737915b826e9",
    "component_Downloaddata": "elyra-kfp-examples-catalog:a08014f9252f",
    "component_Calculatedatahash": "elyra-kfp-examples-catalog:d68ec7fcdf46",
    "bash_operator_BashOperator": "elyra-airflow-examples-catalog:3a55d015ea96",
    "email_operator_EmailOperator": "elyra-airflow-examples-catalog:a043648d3897",
    "http_operator_SimpleHttpOperator": "elyra-airflow-examples-catalog:b94cd49692e2",
    "spark_sql_operator_SparkSqlOperator": "elyra-airflow-examples-catalog:3b639742748f",
    "spark_submit_operator_SparkSubmitOperator": "elyra-airflow-examples-catalog:b29c25ec8bd6",
    "slack_operator_SlackAPIPostOperator": "elyra-airflow-examples-catalog:16a204f716a2",
}
_V6_RENAMED_FILES = {"a08014f9252f": "download_data.yaml", "d68ec7fcdf46": "calculate_hash.yaml"}
_RUNTIME_TYPES = {"kfp": "KUBEFLOW_PIPELINES", "airflow": "APACHE_AIRFLOW"}


def _to_v5(primary: dict[str, Any], pipelines: list[dict[str, Any]]) -> None:
    for p in pipelines:
        for node in p.get("nodes") or []:
            op = node.get("op")
            if isinstance(op, str) and op in _V5_OPS:
                node["op"] = _V5_OPS[op]


def _to_v6(primary: dict[str, Any], pipelines: list[dict[str, Any]]) -> None:
    """v5 -> v6: ``runtime`` becomes ``runtime_type``; example components get catalog ops and
    a ``component_source`` naming their catalog entry."""
    app = primary["app_data"]
    runtime = app.pop("runtime", None)
    if isinstance(runtime, str) and runtime in _RUNTIME_TYPES:
        app["runtime_type"] = _RUNTIME_TYPES[runtime]
    for p in pipelines:
        for node in p.get("nodes") or []:
            op = node.get("op")
            new_op = _V6_OPS.get(op) if isinstance(op, str) else None
            if not new_op:
                continue
            node["op"] = new_op
            catalog, _, ref = new_op.partition(":")
            source = node["app_data"].get("component_source")
            name = PurePosixPath(source).name if isinstance(source, str) else ""
            if name == "component.yaml":
                name = _V6_RENAMED_FILES.get(ref, name)
            node["app_data"]["component_source"] = json.dumps(
                {"catalog_type": catalog, "component_ref": {"component-id": name}},
                separators=(",", ":"),
            )


def _to_v7(primary: dict[str, Any], pipelines: list[dict[str, Any]]) -> None:
    """v6 -> v7 reshaped catalog components' parameters after the palette of the time; generic
    nodes are untouched. Settings a tool left directly in app_data (files written by hand)
    move under component_parameters here."""
    for p in pipelines:
        for node in p.get("nodes") or []:
            app = node["app_data"]
            params = app.setdefault("component_parameters", {})
            if isinstance(params, dict):
                for key in _COMPONENT_KEYS:
                    if key in app:
                        params.setdefault(key, app.pop(key))


_WIDGETS = {
    "BooleanControl": "boolean",
    "NumberControl": "number",
    "NestedEnumControl": "inputpath",
    "StringControl": "string",
}
# Elyra v8 turned its "KEY=VALUE" list properties into lists of objects; these patterns read
# the strings the way Elyra's step reads them.
_KV_PATTERNS = {
    "env_vars": re.compile(r"(?P<env_var>\w+)=?(?P<value>[^,]*?)(?= \w+=|$)"),
    "mounted_volumes": re.compile(r"(?P<path>[\w/]+)=?(?P<pvc_name>[^,]*?)(?= \w+=|$)"),
    "kubernetes_pod_annotations": re.compile(r"(?P<key>\w+)=?(?P<value>[^,]*?)(?= \w+=|$)"),
    "kubernetes_secrets": re.compile(
        r"(?P<env_var>\w+)=?(?P<name>[^:,\n\]]*):?(?P<key>[^,]*?)(?= \w+=|$)"
    ),
    "kubernetes_tolerations": re.compile(
        r"\w+=(?P<key>.*?):(?P<operator>[^,]*?):(?P<value>[^,]*?):(?P<effect>[^,]*?)(?= \w+=|$)"
    ),
}
_KV_FORMS = {
    "env_vars": "Write NAME=value.",
    "mounted_volumes": "Write /mount/path=pvc-name.",
    "kubernetes_pod_annotations": "Write key=value.",
    "kubernetes_secrets": "Write ENV_VAR=secret-name:key.",
    "kubernetes_tolerations": "Write id=key:operator:value:effect.",
}


def _kv_objects(key: str, items: Any, where: str) -> Any:
    if not isinstance(items, list):
        return items
    out: list[Any] = []
    for i, item in enumerate(items):
        if not isinstance(item, str):
            out.append(item)
            continue
        if key == "env_vars":  # the whole value after the first "=", as Elyra 3 ran it
            name, _, value = item.partition("=")
            out.append({"env_var": name.strip(), "value": value})
            continue
        found = _KV_PATTERNS[key].search(item)
        if found is None:
            raise PipelineFormatError(
                f"{where}.{key}[{i}] is not in the form Elyra 3 wrote ({item!r})", _KV_FORMS[key]
            )
        out.append(found.groupdict())
    return out


def _to_v8(primary: dict[str, Any], pipelines: list[dict[str, Any]]) -> None:
    """v7 -> v8: "KEY=VALUE" lists become objects, in nodes and in pipeline defaults; one-of
    controls and parent outputs become ``{"widget", "value"}``."""
    for p in pipelines:
        props = p["app_data"].get("properties")
        defaults = props.get("pipeline_defaults") if isinstance(props, dict) else None
        if isinstance(defaults, dict):
            for key in _KV_PATTERNS:
                if key in defaults:
                    defaults[key] = _kv_objects(key, defaults[key], "pipeline_defaults")
        for node in p.get("nodes") or []:
            params = node["app_data"].get("component_parameters")
            if not isinstance(params, dict):
                continue
            where = f"node {node.get('id')!r} component_parameters"
            for key, value in list(params.items()):
                if isinstance(value, dict) and isinstance(value.get("activeControl"), str):
                    control = value["activeControl"]
                    value = params[key] = {
                        "widget": _WIDGETS.get(control),
                        "value": value.get(control),
                    }
                if isinstance(value, dict) and set(value) == {"option", "value"}:
                    params[key] = {"widget": "inputpath", "value": value}
                if key in _KV_PATTERNS:
                    params[key] = _kv_objects(key, value, where)


_STEPS: tuple[Step, ...] = (_to_v1, _to_v2, _to_v3, _to_v4, _to_v5, _to_v6, _to_v7, _to_v8)


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
