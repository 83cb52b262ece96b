"""Elyra pipeline versions 0-7 brought to version 8, one Elyra step per version, in place."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

from ...locale.messages import _t
from ..model import OP_NOTEBOOK
from .common import ELYRA_VERSION, PipelineFormatError, expect

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


def upgrade(app_data: dict[str, Any], primary: dict[str, Any], doc: dict[str, Any]) -> int | None:
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
        for i, node in enumerate(expect(p.setdefault("nodes", []), list, "pipelines[].nodes")):
            node = expect(node, dict, f"nodes[{i}]")
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
