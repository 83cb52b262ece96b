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
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t
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
            _t("{where} must be a {value}", where=where, value=_json_name(names)),
            _t("found {value}", value=_json_name(type(value).__name__)),
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
        raise PipelineFormatError(
            _t("pipeline file {value!r} not found", value=str(path))
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PipelineFormatError(_t("cannot read {name}", name=path.name), str(exc)) from None
    return loads(text, path)


def loads(text: str, path: Path | None = None) -> Pipeline:
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise PipelineFormatError(_t("the pipeline file is not valid JSON"), str(exc)) from None
    return _from_own_document(_expect(doc, dict, "the pipeline document"), path)


def from_document(doc: Any, path: Path | None = None) -> Pipeline:
    """A pipeline from a parsed document; the document itself is left as it was."""
    return _from_own_document(copy.deepcopy(_expect(doc, dict, "the pipeline document")), path)


def _from_own_document(doc: dict[str, Any], path: Path | None) -> Pipeline:
    """Like from_document, but takes over ``doc`` (migration edits it in place)."""
    if doc.get("doc_type", "pipeline") != "pipeline":
        raise PipelineFormatError(
            _t("doc_type is {value!r}, not 'pipeline'", value=doc.get("doc_type"))
        )
    pipelines = _expect(doc.get("pipelines"), list, "pipelines")
    if not pipelines:
        raise PipelineFormatError(
            _t("pipelines is empty"), _t("A .pipeline file holds one pipeline.")
        )
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
    nodes = flatten(doc, index).nodes
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
        raise PipelineFormatError(
            _t("app_data.version must be a number"), _t("found {version!r}", version=version)
        )
    if version > ELYRA_VERSION:
        raise PipelineFormatError(
            _t(
                "this pipeline was written by a newer Elyra (pipeline version {version:g})",
                version=version,
            ),
            _t(
                "cube-lab reads Elyra pipeline versions 0 to {ELYRA_VERSION}.",
                ELYRA_VERSION=ELYRA_VERSION,
            ),
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
                _t(
                    "{where}.{key}[{i}] is not in the form Elyra 3 wrote ({item!r})",
                    where=where,
                    key=key,
                    i=i,
                    item=item,
                ),
                _KV_FORMS[key],
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


def _node(raw: dict[str, Any], node_id: str, where: str) -> Node:
    """An execution node's settings; its links are resolved by ``flatten``."""
    op = raw.get("op")
    if not isinstance(op, str) or not op:
        raise PipelineFormatError(
            _t("{where}.op is missing", where=where),
            _t("node {node_id!r} needs an op", node_id=node_id),
        )
    app = _expect(raw.get("app_data") or {}, dict, f"{where}.app_data")
    params = _expect(
        app.get("component_parameters") or {}, dict, f"{where}.app_data.component_parameters"
    )
    cube = _expect(app.get(CUBE_KEY) or {}, dict, f"{where}.app_data.{CUBE_KEY}")
    label = _label(raw) or params.get("filename") or node_id
    return Node(node_id, op, str(label), params, [], cube)


def _label(raw: dict[str, Any]) -> str | None:
    app = raw.get("app_data") if isinstance(raw.get("app_data"), dict) else {}
    ui = app.get("ui_data") if isinstance(app.get("ui_data"), dict) else {}
    label = app.get("label") or ui.get("label")
    return label if isinstance(label, str) and label else None


def _links(raw: dict[str, Any], where: str) -> list[tuple[int, int, str, str]]:
    """Every link into a node: (port index, link index, node_id_ref, port_id_ref)."""
    out = []
    for p, port in enumerate(_expect(raw.get("inputs") or [], list, f"{where}.inputs")):
        port = _expect(port, dict, f"{where}.inputs[{p}]")
        for k, link in enumerate(
            _expect(port.get("links") or [], list, f"{where}.inputs[{p}].links")
        ):
            link = _expect(link, dict, f"{where}.inputs[{p}].links[{k}]")
            ref = link.get("node_id_ref")
            if not isinstance(ref, str) or not ref:
                raise PipelineFormatError(
                    _t(
                        "{where}.inputs[{p}].links[{k}].node_id_ref is missing",
                        where=where,
                        p=p,
                        k=k,
                    ),
                    _t(
                        "a link into node {value!r} must name its upstream node",
                        value=raw.get("id"),
                    ),
                )
            port_ref = link.get("port_id_ref")
            out.append((p, k, ref, port_ref if isinstance(port_ref, str) else ""))
    return out


# -- supernodes ------------------------------------------------------------------------------
#
# Elyra's editor (elyra-ai/elyra-canvas) keeps a supernode's nodes as another entry of
# ``pipelines[]``: the supernode names it in ``subflow_ref.pipeline_id_ref``. Each input port
# of the supernode names, in ``subflow_node_ref``, an entry *binding* node inside; the inner
# nodes the outside feeds link from that binding. Each output port names an exit binding, whose
# input links come from the inner nodes that feed the outside; a node downstream links to the
# supernode with ``port_id_ref`` set to that output port's id. The port ids are
# ``<inner node id>_<inner port id>`` (Elyra's own parser reads only these), which is the
# fallback when a port names no binding. ``flatten`` turns all of it into one DAG of execution
# nodes; the document itself is never restructured.

Vertex = tuple[Any, ...]


@dataclass
class Flat:
    """A document's execution nodes as one DAG, and where each came from."""

    nodes: list[Node]
    # flat id -> (index in pipelines[], id in that pipeline, path of supernode ids around it)
    origin: dict[str, tuple[int, str, tuple[str, ...]]]
    within: dict[str, list[str]]  # flat id -> labels of the supernodes around it, outermost first
    # flat id -> {(input port index, link index): the execution nodes that link reaches}
    link_sources: dict[str, dict[tuple[int, int], list[str]]]
    # flat id -> the nodes a supernode's port feeds it from without a link of its own (the
    # port-id form Elyra's parser reads)
    fed: dict[str, list[str]] = field(default_factory=dict)
    has_supernodes: bool = False


@dataclass
class _Instance:
    """One pipeline of the document as reached through a chain of supernodes."""

    index: int
    path: tuple[str, ...]
    labels: tuple[str, ...]
    raw: dict[str, dict[str, Any]] = field(default_factory=dict)  # node id -> raw node
    kinds: dict[str, str] = field(default_factory=dict)  # node id -> x (execution) | b | s
    flat: dict[str, str] = field(default_factory=dict)  # execution node id -> flat id
    children: dict[str, _Instance] = field(default_factory=dict)  # supernode id -> inside


class _Flattener:
    def __init__(self, doc: dict[str, Any]) -> None:
        pipelines = doc.get("pipelines") if isinstance(doc.get("pipelines"), list) else []
        self.pipelines = pipelines
        self.by_id = {
            p["id"]: i
            for i, p in enumerate(pipelines)
            if isinstance(p, dict) and isinstance(p.get("id"), str)
        }
        self.preds: dict[Vertex, list[Vertex]] = {}
        self.taken: set[str] = set()
        self.nodes: list[Node] = []
        self.flat = Flat([], {}, {}, {})
        self.node_links: dict[str, list[tuple[int, int, Vertex]]] = {}
        self.out_done: set[Vertex] = set()
        self.chain: list[int] = []  # the pipelines being expanded, outermost first

    def add(self, vertex: Vertex, pred: Vertex) -> None:
        self.preds.setdefault(vertex, []).append(pred)

    def expand(self, index: int, path: tuple[str, ...], labels: tuple[str, ...]) -> _Instance:
        pipeline = _expect(self.pipelines[index], dict, f"pipelines[{index}]")
        where = f"pipelines[{index}].nodes"
        inst = _Instance(index, path, labels)
        self.chain.append(index)
        raws = _expect(pipeline.get("nodes", []), list, where)
        for i, raw in enumerate(raws):  # claim this level's ids before any inner one
            raw = _expect(raw, dict, f"{where}[{i}]")
            node_id = raw.get("id")
            if not isinstance(node_id, str) or not node_id:
                raise PipelineFormatError(
                    _t("{where}[{i}].id is missing", where=where, i=i),
                    _t("Every node needs a unique string id."),
                )
            kind = raw.get("type", "execution_node")
            if kind not in ("execution_node", "super_node", "binding"):
                raise PipelineFormatError(
                    _t("node {node_id!r} is a {kind!r}", node_id=node_id, kind=kind),
                    _t("cube-lab runs execution nodes, supernodes and their binding nodes."),
                )
            inst.raw[node_id] = raw
            inst.kinds[node_id] = {"execution_node": "x", "super_node": "s"}.get(kind, "b")
            if kind == "execution_node":
                flat_id = node_id if node_id not in self.taken else ".".join((*path, node_id))
                self.taken.add(flat_id)
                inst.flat[node_id] = flat_id
                node = _node(raw, flat_id, f"{where}[{i}]")
                self.nodes.append(node)
                self.flat.origin[flat_id] = (index, node_id, path)
                self.flat.within[flat_id] = list(labels)
        for i, raw in enumerate(raws):
            if inst.kinds[raw["id"]] == "s":
                self.flat.has_supernodes = True
                inst.children[raw["id"]] = self.child(inst, raw, f"{where}[{i}]")
        for i, raw in enumerate(raws):
            node_id, kind = raw["id"], inst.kinds[raw["id"]]
            links = _links(raw, f"{where}[{i}]")
            if kind == "x":
                flat_id = inst.flat[node_id]
                found = [(p, k, self.source(inst, ref, port)) for p, k, ref, port in links]
                self.node_links[flat_id] = found
                for _, _, vertex in found:
                    self.add(("x", flat_id), vertex)
            elif kind == "b":  # an exit binding: fed by inner nodes
                for _, _, ref, port in links:
                    self.add(("b", path, node_id), self.source(inst, ref, port))
            else:
                self.enter(inst, raw, links)
        self.chain.pop()
        return inst

    def child(self, inst: _Instance, raw: dict[str, Any], where: str) -> _Instance:
        node_id = raw["id"]
        ref = raw.get("subflow_ref")
        pipeline_id = ref.get("pipeline_id_ref") if isinstance(ref, dict) else None
        if not isinstance(pipeline_id, str) or pipeline_id not in self.by_id:
            raise PipelineFormatError(
                _t(
                    (
                        "super_node {node_id!r} refers to pipeline {pipeline_id!r}, which "
                        "this file does not hold"
                    ),
                    node_id=node_id,
                    pipeline_id=pipeline_id,
                ),
                _t(
                    (
                        "{where}.subflow_ref.pipeline_id_ref must name an entry of "
                        "pipelines[] (ids: {value})"
                    ),
                    where=where,
                    value=", ".join(repr(i) for i in self.by_id),
                ),
            )
        index = self.by_id[pipeline_id]
        if index in self.chain:
            raise PipelineFormatError(
                _t(
                    "super_node {node_id!r} contains itself (pipeline {pipeline_id!r})",
                    node_id=node_id,
                    pipeline_id=pipeline_id,
                ),
                _t("A supernode's pipeline cannot hold the supernode, directly or not."),
            )
        label = _label(raw) or node_id
        return self.expand(index, (*inst.path, node_id), (*inst.labels, label))

    def source(self, inst: _Instance, ref: str, port: str) -> Vertex:
        """The vertex a link from ``ref``'s port ``port`` comes from."""
        kind = inst.kinds.get(ref)
        if kind == "x":
            return ("x", inst.flat[ref])
        if kind == "b":
            return ("b", inst.path, ref)
        if kind == "s":
            return self.out_port(inst, ref, port)
        return ("?", ref)

    @staticmethod
    def _split(child: _Instance, port_id: str) -> tuple[str, str] | None:
        """``<inner node id>_<inner port id>`` as the editor names supernode ports."""
        for node_id in sorted(child.kinds, key=len, reverse=True):
            if port_id.startswith(node_id + "_"):
                return node_id, port_id[len(node_id) + 1 :]
        return None

    def out_port(self, inst: _Instance, super_id: str, port_id: str) -> Vertex:
        vertex: Vertex = ("so", inst.path, super_id, port_id)
        child = inst.children.get(super_id)
        if vertex in self.out_done or child is None:
            return vertex
        self.out_done.add(vertex)
        ports = inst.raw[super_id].get("outputs")
        port = next(
            (
                p
                for p in (ports if isinstance(ports, list) else [])
                if isinstance(p, dict) and p.get("id") == port_id
            ),
            None,
        )
        binding = port.get("subflow_node_ref") if port else None
        split = self._split(child, port_id)
        if isinstance(binding, str) and child.kinds.get(binding) == "b":
            self.add(vertex, ("b", child.path, binding))
        elif split and child.kinds[split[0]] == "x":
            self.add(vertex, ("x", child.flat[split[0]]))
        elif split and child.kinds[split[0]] == "s":
            self.add(vertex, self.out_port(child, *split))
        else:  # a link from the supernode as a whole: from whatever leaves it
            exits = [n for n, k in child.kinds.items() if k == "b" and child.raw[n].get("inputs")]
            for n in exits:
                self.add(vertex, ("b", child.path, n))
            if not exits:
                for flat_id in child.flat.values():
                    self.add(vertex, ("x", flat_id))
        return vertex

    def enter(
        self, inst: _Instance, raw: dict[str, Any], links: list[tuple[int, int, str, str]]
    ) -> None:
        """Connect a supernode's input ports to the inner nodes they feed."""
        super_id = raw["id"]
        child = inst.children[super_id]
        ports = [p for p in raw.get("inputs") or [] if isinstance(p, dict)]
        for p, port in enumerate(ports):
            port_id = port.get("id") if isinstance(port.get("id"), str) else ""
            vertex: Vertex = ("si", inst.path, super_id, port_id)
            for q, _, ref, ref_port in links:
                if q == p:
                    self.add(vertex, self.source(inst, ref, ref_port))
            self.connect_in(child, port.get("subflow_node_ref"), port_id, vertex)

    def connect_in(self, child: _Instance, binding: Any, port_id: str, vertex: Vertex) -> None:
        split = self._split(child, port_id)
        if isinstance(binding, str) and child.kinds.get(binding) == "b":
            self.add(("b", child.path, binding), vertex)
        elif split and child.kinds[split[0]] == "x":
            self.add(("x", child.flat[split[0]]), vertex)
        elif split and child.kinds[split[0]] == "s":
            self.add(("si", child.path, *split), vertex)

    def resolve(self, vertex: Vertex) -> list[str]:
        """The execution nodes behind ``vertex`` (through ports and bindings)."""
        out: list[str] = []
        seen: set[Vertex] = set()
        stack = [vertex]
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            if current[0] in ("x", "?"):
                if current[1] not in out:
                    out.append(current[1])
                continue
            stack.extend(reversed(self.preds.get(current, [])))
        return out


def flatten(doc: dict[str, Any], primary_index: int = 0) -> Flat:
    """The execution nodes of the primary pipeline and of every supernode in it (nested ones
    too) as one DAG: a link into a supernode reaches the inner nodes its port feeds, a link
    from one leaves from the inner nodes behind its port. Inner ids stay as they are unless an
    outer node took them first (then ``<supernode id>.<node id>``)."""
    f = _Flattener(doc)
    f.expand(primary_index, (), ())
    for node in f.nodes:
        ups: list[str] = []
        sources: dict[tuple[int, int], list[str]] = {}
        for p, k, vertex in f.node_links.get(node.id, []):
            sources[(p, k)] = f.resolve(vertex)
        own = {vertex for _, _, vertex in f.node_links.get(node.id, [])}
        fed: list[str] = []
        for vertex in f.preds.get(("x", node.id), []):  # its links, and ports that feed it
            found = f.resolve(vertex)
            ups.extend(u for u in found if u not in ups)
            if vertex not in own:
                fed.extend(found)
        node.upstream = ups
        f.flat.fed[node.id] = fed
        f.flat.link_sources[node.id] = sources
    f.flat.nodes = f.nodes
    return f.flat


def _parameters(raw: Any) -> list[Parameter]:
    out = []
    for i, item in enumerate(_expect(raw, list, "pipeline_parameters")):
        item = _expect(item, dict, f"pipeline_parameters[{i}]")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise PipelineFormatError(_t("pipeline_parameters[{i}].name is missing", i=i))
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
    flat = flatten(copy.deepcopy(doc), pipeline.primary_index) if pipeline.raw else None
    if flat is not None and flat.has_supernodes:
        _write_with_supernodes(doc, pipeline, flat)
        return doc
    old = {n.get("id"): n for n in primary.get("nodes", []) if isinstance(n, dict)}
    primary["nodes"] = [_write_node(node, old.get(node.id)) for node in pipeline.nodes]
    return doc


def _write_with_supernodes(doc: dict[str, Any], pipeline: Pipeline, flat: Flat) -> None:
    """Write each execution node back into the entry of ``pipelines[]`` it came from; the
    supernodes, their ports and binding nodes stay exactly as they were. A node the pipeline
    no longer holds leaves its entry; a new node joins the primary pipeline."""
    current = {n.id: n for n in pipeline.nodes}
    first: dict[tuple[int, str], str] = {}  # a shared sub-pipeline is written once
    for flat_id, (index, raw_id, _path) in flat.origin.items():
        first.setdefault((index, raw_id), flat_id)
    indices = sorted({index for index, _, _ in flat.origin.values()} | {pipeline.primary_index})
    for index in indices:
        entry = doc["pipelines"][index]
        nodes = []
        for raw in entry.get("nodes") or []:
            if raw.get("type", "execution_node") != "execution_node":
                nodes.append(raw)
                continue
            flat_id = first.get((index, raw.get("id")))
            if flat_id in current:
                nodes.append(_write_inner(current[flat_id], raw, flat))
        entry["nodes"] = nodes
    primary = doc["pipelines"][pipeline.primary_index]
    for node in pipeline.nodes:
        if node.id not in flat.origin:
            _check_same_level(node.id, node.upstream, (), flat)
            primary["nodes"].append(_write_node(node, None))


def _check_same_level(node_id: str, upstream: list[str], path: tuple[str, ...], flat: Flat) -> None:
    """A new link can only be written between two nodes of the same pipeline entry."""
    for up in upstream:
        origin = flat.origin.get(up)
        if (origin[2] if origin else ()) != path:
            where = " > ".join(flat.within.get(up) or ["the main pipeline"])
            here = " > ".join(flat.within.get(node_id) or ["the main pipeline"])
            raise PipelineFormatError(
                _t(
                    (
                        "the new link from {up!r} to {node_id!r} crosses a supernode boundary"
                        " ({where} -> {here})"
                    ),
                    up=up,
                    node_id=node_id,
                    where=where,
                    here=here,
                ),
                _t(
                    "cube-lab keeps supernodes as Elyra wrote them: link across a "
                    "supernode in Elyra's editor (through the supernode's ports), or "
                    "expand it there first."
                ),
            )


def _write_inner(node: Node, previous: dict[str, Any], flat: Flat) -> dict[str, Any]:
    """``_write_node`` for a document with supernodes: links whose nodes are still upstream
    stay as written (ports, bindings and all); a new link joins the first input port."""
    raw = copy.deepcopy(previous)
    raw["op"] = node.op
    app = _dict_at(raw, "app_data")
    app["label"] = node.label
    app["component_parameters"] = node.params
    _dict_at(app, "ui_data")["label"] = node.label
    if node.cube:
        app[CUBE_KEY] = node.cube
    else:
        app.pop(CUBE_KEY, None)
    sources = flat.link_sources.get(node.id, {})
    wanted = set(node.upstream)
    covered = wanted & set(flat.fed.get(node.id, []))
    ports = [p for p in raw.get("inputs") or [] if isinstance(p, dict)]
    for p, port in enumerate(ports):
        kept = []
        for k, link in enumerate(port.get("links") or []):
            found = sources.get((p, k), [])
            if set(found) <= wanted:
                kept.append(link)
                covered.update(found)
        if "links" in port:
            port["links"] = kept
    new = [up for up in node.upstream if up not in covered]
    if new:
        _check_same_level(node.id, new, flat.origin[node.id][2], flat)
        if not ports:
            ports = [{"id": "inPort", "links": []}]
        links = ports[0].setdefault("links", [])
        for up in new:
            ref = flat.origin[up][1] if up in flat.origin else up
            links.append({"id": uuid.uuid4().hex, "node_id_ref": ref, "port_id_ref": "outPort"})
        raw["inputs"] = ports
    return raw


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
