"""Compile a pipeline to Kubeflow Pipelines v2 IR YAML with the ``kfp`` SDK, and submit it.

``kfp`` pins exact versions of requests/urllib3/kubernetes, so it is an optional extra
(``cube-lab[kfp]``) imported only inside the functions that need it.

Each node becomes a container component. Its command runs in ``project_dir`` (where the
pipeline's folder must be in the image or on a mounted volume: KFP pods do not share the
lab's disk) via ``sh -c 'cd "$0" && exec "$@"' DIR env NAME=VALUE ... <argv>``: the ``cd``
gives the working directory local runs use, and ``env`` carries values only known at run
time (pipeline parameters, the run id), because KFP substitutes placeholders in a
container's command but not in its ``env`` list. Constant variables stay in ``env``.

What the IR cannot hold is still written down: in the pipeline's description and in
pod annotations, and returned by ``plan_pipeline(...).notes``.
"""

from __future__ import annotations

import inspect
import json
import keyword
import logging
import math
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from .. import accelerators
from ..errors import CubeError, InvalidInput
from ..jobtemplates.model import PLACEHOLDER_RE, TEMPLATE_DIR
from ..k8s import pod_labels
from ..locale.messages import _t
from .model import OP_NOTEBOOK, OP_PYTHON, OP_R, OP_SHELL, OP_TEMPLATE, Node, Pipeline

log = logging.getLogger(__name__)

DEFAULT_IMAGE = "python:3.11-slim"
DEFAULT_IMAGES = {OP_R: "rocker/r-ver:4.4"}  # python:3.11-slim has no Rscript
PROJECT_DIR = "/workspace"  # where the pipeline's folder sits inside the container
TEMPLATE_ROOT = "/opt/cube-lab/templates"  # where images carry the job templates' code
NOTEBOOK_OUTPUT = "executed_notebook"  # the output artifact an executed notebook goes to
ANNOTATION_PREFIX = "cube-lab.io/"
CD_THEN_EXEC = 'cd "$0" && exec "$@"'

_PARAM_TYPES: dict[str, type] = {"String": str, "Integer": int, "Float": float, "Bool": bool}
_PARAM_REF = re.compile(r"\{\{\s*params\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_ANY_REF = re.compile(r"\{\{\s*(params|nodes)\.")
# Inside a plan, checked references become marks that only the emitter turns into KFP
# placeholders, so text a node passes on literally (a shell command) is never rewritten.
_MARK_RE = re.compile(r"<<cube-lab:param:([A-Za-z_][A-Za-z0-9_]*)>>")
_OUTPUT_MARK = "<<cube-lab:executed-notebook>>"
_RUN_ID_MARK = "<<cube-lab:run-id>>"


def _mark(name: str) -> str:
    return f"<<cube-lab:param:{name}>>"


# Elyra node fields the IR cannot carry without the kfp-kubernetes extension.
_UNSUPPORTED_ELYRA = ("mounted_volumes", "kubernetes_secrets", "kubernetes_shared_mem_size")


# -- the plan: plain Python, no kfp ----------------------------------------------------------


@dataclass
class TaskPlan:
    """Everything one node turns into; strings may hold marks of pipeline parameters."""

    node: Node
    name: str  # component and task name in the IR
    image: str
    workdir: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # constant values
    runtime_env: dict[str, str] = field(default_factory=dict)  # values with references
    notebook_output: bool = False
    cpu: str | None = None
    cpu_limit: str | None = None
    memory: str | None = None
    memory_limit: str | None = None
    accelerator: accelerators.Accelerator | None = None
    accelerator_count: int = 0
    extra_limits: dict[str, str] = field(default_factory=dict)  # companions the IR cannot hold
    retries: int = 0
    retry_backoff_s: float | None = None
    timeout_s: float | None = None
    cache: bool = True
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    pod_labels: dict[str, str] = field(default_factory=dict)
    pod_annotations: dict[str, str] = field(default_factory=dict)
    upstream: list[str] = field(default_factory=list)  # task names
    # a catalog component: its KFP component YAML, and per YAML input name its argument:
    # ("value", v) | ("param", pipeline parameter) | ("output", task name, output name)
    component_text: str | None = None
    arguments: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    def parameters_used(self) -> list[str]:
        texts = [*self.argv, *self.runtime_env.values()]
        return sorted({m for text in texts for m in _MARK_RE.findall(text)})


@dataclass
class PipelinePlan:
    name: str  # the IR's pipeline name (lower-case, dashes)
    display_name: str
    parameters: list[tuple[str, type, Any]]  # name, Python type, default
    tasks: list[TaskPlan]  # in topological order
    notes: list[str] = field(default_factory=list)

    def description(self) -> str:
        text = f"Compiled by cube-lab from the pipeline {self.display_name!r}."
        if self.notes:
            text += " Not enforced by KFP: " + " ".join(self.notes)
        return text


def _node_error(node: Node, what: str, detail: Any = None) -> InvalidInput:
    return InvalidInput(
        _t("node {label!r} ({id}): {what}", label=node.label, id=node.id, what=what), detail
    )


def _slug(text: str, sep: str = "-") -> str:
    # Task names end up in pod names: keep them short, lower-case and DNS-safe.
    slug = re.sub(r"[^a-z0-9]+", sep, text.lower())[:40].strip(sep)
    return slug if slug and slug[0].isalpha() else f"node{sep}{slug}".rstrip(sep)


def _topological(pipeline: Pipeline) -> list[Node]:
    """Nodes with every node after its upstream ones; ties keep the file's order."""
    by_id = {n.id: n for n in pipeline.nodes}
    if len(by_id) != len(pipeline.nodes):
        dup = next(n for n in pipeline.nodes if sum(m.id == n.id for m in pipeline.nodes) > 1)
        raise _node_error(dup, _t("its id is used by another node"), _t("Node ids must be unique."))
    for node in pipeline.nodes:
        for up in node.upstream:
            if up not in by_id:
                raise _node_error(node, _t("it links from an unknown node {up!r}", up=up))
    order: list[Node] = []
    placed: set[str] = set()
    while len(order) < len(pipeline.nodes):
        ready = [n for n in pipeline.nodes if n.id not in placed and set(n.upstream) <= placed]
        if not ready:
            stuck = [n.label for n in pipeline.nodes if n.id not in placed]
            raise InvalidInput(
                _t("the pipeline has a cycle"), _t("among nodes: {value}", value=", ".join(stuck))
            )
        order.extend(ready)
        placed.update(n.id for n in ready)
    return order


def _parameters(pipeline: Pipeline) -> list[tuple[str, type, Any]]:
    out = []
    for p in pipeline.parameters:
        if not p.name.isidentifier() or keyword.iskeyword(p.name) or p.name == NOTEBOOK_OUTPUT:
            raise InvalidInput(
                _t("pipeline parameter {name!r} cannot be a KFP pipeline input", name=p.name),
                _t("KFP input names must be Python identifiers (letters, digits, _)."),
            )
        kind = _PARAM_TYPES.get(p.type)
        if kind is None:
            raise InvalidInput(
                _t(
                    "pipeline parameter {name!r} has unknown type {type!r}",
                    name=p.name,
                    type=p.type,
                ),
                _t("Use one of {value}.", value=", ".join(_PARAM_TYPES)),
            )
        default = p.default
        if kind is float and isinstance(default, int) and not isinstance(default, bool):
            default = float(default)
        if default is not None and type(default) is not kind:
            raise InvalidInput(
                _t(
                    "pipeline parameter {name!r}: default {default!r} is not a {type}",
                    name=p.name,
                    default=default,
                    type=p.type,
                )
            )
        out.append((p.name, kind, default))
    return out


def _resolve_refs(node: Node, text: str, where: str, known: set[str]) -> str:
    """``{{ params.X }}`` -> a mark; refuses what KFP cannot resolve: values published by
    other nodes, unknown parameters, malformed references."""
    if not _ANY_REF.search(text):
        return text
    if len(re.findall(r"\{\{\s*params\.", text)) != len(_PARAM_REF.findall(text)):
        raise _node_error(
            node,
            _t("{where} has a malformed reference ({text!r})", where=where, text=text),
            _t("Write {{{{ params.NAME }}}}."),
        )
    if re.search(r"\{\{\s*nodes\.", text):
        raise _node_error(
            node,
            _t("{where} uses a value published by another node ({text!r})", where=where, text=text),
            _t("Node values are passed only in local runs; use a pipeline parameter or a file."),
        )
    for name in _PARAM_REF.findall(text):
        if name not in known:
            raise _node_error(
                node,
                _t(
                    "{where} refers to unknown pipeline parameter {name!r}",
                    where=where,
                    name=name,
                ),
            )
    return _PARAM_REF.sub(lambda m: _mark(m.group(1)), text)


def _relative_file(node: Node, value: Any, where: str) -> PurePosixPath:
    if not isinstance(value, str) or not value.strip():
        raise _node_error(node, _t("no {where} given", where=where))
    path = PurePosixPath(value.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts:
        raise _node_error(
            node,
            _t("{where} {value!r} leaves the pipeline's folder", where=where, value=value),
            _t("Use a relative path."),
        )
    return path


def _json_type(prop: Any) -> str | None:
    """A JSON-schema property's type; for ``[integer, "null"]`` the non-null one."""
    kind = prop.get("type") if isinstance(prop, dict) else None
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    return kind if isinstance(kind, str) else None


def _env_items(source: Any) -> list[tuple[str, str]]:
    return [
        (str(item["env_var"]), "" if item.get("value") is None else str(item["value"]))
        for item in source or []
        if isinstance(item, dict) and item.get("env_var")
    ]


def _key_values(source: Any) -> dict[str, str]:
    return {
        str(item["key"]): str(item.get("value") or "")
        for item in source or []
        if isinstance(item, dict) and item.get("key")
    }


class _Planner:
    def __init__(
        self, pipeline: Pipeline, catalog: Any, project_dir: str, template_root: str,
        default_image: str, identity: tuple[str, str] | None = None,
    ) -> None:  # fmt: skip
        self.pipeline = pipeline
        self.identity = identity  # (project, owner) the steps' pods are labelled with
        self.catalog = catalog
        self.project_dir = PurePosixPath(project_dir)
        self.template_root = PurePosixPath(template_root)
        self.default_image = default_image
        self.params = _parameters(pipeline)
        self.known = {name for name, _, _ in self.params}
        self.notes: list[str] = []
        self.names: dict[str, str] = {}  # node id -> task name, as nodes are planned

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def plan(self) -> PipelinePlan:
        names: dict[str, str] = {}
        tasks = []
        for node in _topological(self.pipeline):
            name = base = _slug(node.label)
            if name in names.values():
                name = base = f"{base}-{_slug(node.id)[:8].strip('-')}"
            counter = 2
            while name in names.values():
                name, counter = f"{base}-{counter}", counter + 1
            names[node.id] = name
            self.names = names
            task = self.task(node, name)
            task.upstream = [names[u] for u in node.upstream]
            tasks.append(task)
        return PipelinePlan(
            _slug(self.pipeline.name), self.pipeline.name, self.params, tasks, self.notes
        )

    def task(self, node: Node, name: str) -> TaskPlan:
        builders = {OP_NOTEBOOK: self.notebook, OP_PYTHON: self.script, OP_R: self.script,
                    OP_SHELL: self.shell, OP_TEMPLATE: self.template}  # fmt: skip
        builder = builders.get(node.op)
        if builder is None and node.op not in builders:
            from . import catalogs

            if catalogs.kind_for(node.op) is not None:
                builder = self.catalog_component
        if builder is None:
            raise _node_error(
                node,
                _t("node type {op!r} cannot be compiled to Kubeflow Pipelines", op=node.op),
                _t("KFP compilation supports: {value}.", value=", ".join(builders)),
            )
        task = TaskPlan(node, name, "", str(self.project_dir), [])
        self.environment(node, task)
        builder(node, task)  # after the environment: a kind's own variables win, as locally
        self.resources(node, task)
        self.settings(node, task)
        return task

    # -- commands, one per node kind ------------------------------------------------------

    def image(self, node: Node, fallback: str | None = None) -> str:
        for candidate in (node.params.get("runtime_image"), fallback,
                          self.pipeline.defaults.get("runtime_image")):  # fmt: skip
            if isinstance(candidate, str) and candidate.strip():
                return candidate.strip()
        return DEFAULT_IMAGES.get(node.op, self.default_image)

    def script(self, node: Node, task: TaskPlan) -> None:
        path = _relative_file(node, node.filename, "filename")
        task.image = self.image(node)
        task.workdir = str(self.project_dir / path.parent)
        task.argv = ["Rscript" if node.op == OP_R else "python", path.name]

    def notebook(self, node: Node, task: TaskPlan) -> None:
        path = _relative_file(node, node.filename, "filename")
        task.image = self.image(node)
        task.workdir = str(self.project_dir / path.parent)
        task.notebook_output = True
        task.argv = ["papermill", path.name, _OUTPUT_MARK]
        literal: dict[str, Any] = {}
        values: dict[str, Any] = {n: _mark(n) for n in self._listed(node)}
        values.update(node.cube.get("parameters") or {})
        for key, value in values.items():
            if isinstance(value, str):
                value = _resolve_refs(
                    node, value, _t("notebook parameter {key!r}", key=key), self.known
                )
            if isinstance(value, str) and _MARK_RE.search(value):
                task.argv += ["-p", str(key), value]  # papermill reads the type from the text
            else:
                literal[key] = value
        if literal:
            task.argv += ["-y", json.dumps(literal, sort_keys=True)]
        self.note("Notebook images need papermill installed.")

    def shell(self, node: Node, task: TaskPlan) -> None:
        command = node.params.get("command")
        if not isinstance(command, str) or not command.strip():
            raise _node_error(node, _t("no command given"))
        task.image = self.image(node)
        # Like local runs, the command is passed on as written: pipeline parameters reach it
        # as environment variables ($NAME), which the shell quotes safely.
        task.argv = ["sh", "-c", command]

    def template(self, node: Node, task: TaskPlan) -> None:
        name = node.params.get("template")
        if not isinstance(name, str) or not name:
            raise _node_error(node, _t("no job template chosen"))
        if self.catalog is None:
            raise _node_error(node, _t("job template nodes need a template catalog"))
        try:
            template = self.catalog.get(name)
        except CubeError as exc:
            raise _node_error(node, exc.error, exc.detail) from None
        values = self._template_values(node, template)
        home = str(self.template_root / template.name)

        def substitute(match: re.Match[str]) -> str:
            key = match.group(1)
            if key == TEMPLATE_DIR:
                return home
            if key in values:
                value = values[key]
                return value if isinstance(value, str) else json.dumps(value)
            return match.group(0)

        task.argv = [PLACEHOLDER_RE.sub(substitute, arg) for arg in template.command_template]
        # A template's own image carries its dependencies; a pipeline-wide default is for
        # Elyra's generic nodes, so it comes after the template's image here.
        task.image = self.image(node, fallback=template.image)
        params_json = self._params_json(values, template)
        target = task.runtime_env if _MARK_RE.search(params_json) else task.env
        target["CUBE_PARAMS"] = params_json
        self.note(f"Job template code is expected under {self.template_root}/<name> in the image.")

    def catalog_component(self, node: Node, task: TaskPlan) -> None:
        """An Elyra catalog component: its own container spec, compiled by the kfp SDK's
        component loader (inputValue / inputPath / outputPath as KFP substitutes them)."""
        from . import catalogs

        component = catalogs.catalogs().get(node.op)
        if component is None:
            raise _node_error(
                node,
                _t("component {op!r} is not in any component catalog", op=node.op),
                catalogs.HOW_TO_ADD,
            )
        by_id = {n.id: n for n in self.pipeline.nodes}
        ancestors = self.pipeline.upstream_closure({node.id})
        for item in component.inputs:
            widget, value = catalogs._value(node.params.get(item.ref))
            if widget == "inputpath" and isinstance(value, dict):
                parent_id = str(value.get("value"))
                parent = by_id.get(parent_id)
                if parent is None or parent_id not in ancestors:
                    raise _node_error(
                        node,
                        _t(
                            "input {name!r} takes an output of {parent!r}, which is not a "
                            "parent of this node",
                            name=item.name,
                            parent=parent_id,
                        ),
                        _t("Link the parent node to this one."),
                    )
                source = catalogs.catalogs().get(parent.op)
                option = str(value.get("option", ""))
                out = next((o for o in source.outputs if o.ref == option), None) if source else None
                if out is None:
                    raise _node_error(
                        node,
                        _t(
                            "input {name!r}: node {label!r} has no output {output!r}",
                            name=item.name,
                            label=parent.label,
                            output=option.removeprefix("output_"),
                        ),
                    )
                task.arguments[item.name] = ("output", self.names[parent_id], out.name)
            elif widget == "parameter":
                if value not in self.known:
                    if item.default is not None:
                        task.arguments[item.name] = ("value", item.default)  # as Elyra does
                    continue
                task.arguments[item.name] = ("param", value)
            else:
                if widget == "file" and value:
                    value = self._file_text(node, value, item.ref)
                if value is None or value == "":
                    value = item.default
                if value is None:
                    if not item.optional:
                        raise _node_error(
                            node, _t("required input {name!r} has no value", name=item.name)
                        )
                    continue
                if item.path:
                    raise _node_error(
                        node, _t("input {name!r} needs a parent's output", name=item.name)
                    )
                if item.json_type in ("object", "array") and not isinstance(value, str):
                    value = json.dumps(value)
                elif item.json_type == "string":
                    value = str(value)
                task.arguments[item.name] = ("value", value)
        task.image = component.image
        task.component_text = component.definition
        self.note(f"Catalog component {component.name!r} runs its own image {component.image}.")

    def _file_text(self, node: Node, value: Any, where: str) -> str:
        folder = self.pipeline.folder
        if folder is None:
            raise _node_error(
                node, _t("{where} reads a file, and the pipeline has no folder", where=where)
            )
        path = _relative_file(node, value, where)
        try:
            return (folder / path).read_text(encoding="utf-8")
        except OSError as exc:
            raise _node_error(
                node, _t("{where}: cannot read {value!r}", where=where, value=value), str(exc)
            ) from None

    def _template_values(self, node: Node, template: Any) -> dict[str, Any]:
        raw = node.params.get("parameters") or {}
        if not isinstance(raw, dict):
            raise _node_error(node, _t("template parameters must be an object"))
        props = (template.parameters or {}).get("properties", {})
        stand_ins: dict[str, Any] = {}
        refs: dict[str, str] = {}
        for key, value in raw.items():
            if isinstance(value, str) and _ANY_REF.search(value):
                refs[key] = _resolve_refs(
                    node, value, _t("template parameter {key!r}", key=key), self.known
                )
                kind = _json_type(props.get(key))
                if kind == "boolean" or (kind in ("integer", "number")
                                         and not _PARAM_REF.fullmatch(value.strip())):  # fmt: skip
                    raise _node_error(
                        node,
                        _t(
                            "template parameter {key!r} ({kind}) cannot take {value!r} in KFP",
                            key=key,
                            kind=kind,
                            value=value,
                        ),
                        _t("Only string parameters and whole-value number references compile."),
                    )
                # the default passes the schema's bounds; the value itself comes at run time
                default = (props.get(key) or {}).get("default")
                stand_ins[key] = default if default is not None else (
                    {"integer": 0, "number": 0.0}.get(kind or "", "ref"))  # fmt: skip
        try:
            checked = template.validate_params({**raw, **stand_ins})
        except CubeError as exc:
            raise _node_error(node, exc.error, exc.detail) from None
        return {**checked, **refs}

    def _params_json(self, values: dict[str, Any], template: Any) -> str:
        props = (template.parameters or {}).get("properties", {})
        marks = {}
        shown = {}
        for key, value in values.items():
            number_ref = isinstance(value, str) and _json_type(props.get(key)) in (
                "integer", "number")  # fmt: skip
            if number_ref:  # the reference must land unquoted in the JSON
                marks[f"\x00{key}\x00"] = value.strip()
                shown[key] = f"\x00{key}\x00"
            else:
                shown[key] = value
        text = json.dumps(shown, sort_keys=True)
        for mark, ref in marks.items():
            text = text.replace(json.dumps(mark), ref)
        return text

    def _listed(self, node: Node) -> list[str]:
        names = node.params.get("pipeline_parameters") or []
        for name in names:
            if name not in self.known:
                raise _node_error(
                    node, _t("it uses unknown pipeline parameter {name!r}", name=name)
                )
        return [str(n) for n in names]

    # -- environment, resources, settings -------------------------------------------------

    def environment(self, node: Node, task: TaskPlan) -> None:
        items = _env_items(self.pipeline.defaults.get("env_vars"))
        items += _env_items(node.params.get("env_vars"))
        # Elyra hands pipeline parameters over as environment variables.
        items += [(n, _mark(n)) for n in self._listed(node)]
        for name, value in items:
            task.env.pop(name, None)
            task.runtime_env.pop(name, None)
            value = _resolve_refs(node, value, _t("env var {name!r}", name=name), self.known)
            if _MARK_RE.search(value):
                task.runtime_env[name] = value
            else:
                task.env[name] = value
        task.env["CUBE_NODE_ID"] = node.id
        task.runtime_env["CUBE_RUN_ID"] = _RUN_ID_MARK

    def resources(self, node: Node, task: TaskPlan) -> None:
        p = node.params
        task.cpu = self._quantity(node, p.get("cpu"), "cpu", "")
        task.cpu_limit = self._quantity(node, p.get("cpu_limit"), "cpu_limit", "") or task.cpu
        task.memory = self._quantity(node, p.get("memory"), "memory", "G")
        task.memory_limit = (
            self._quantity(node, p.get("memory_limit"), "memory_limit", "G") or task.memory
        )
        self.accelerator(node, task)

    @staticmethod
    def _quantity(node: Node, value: Any, where: str, unit: str) -> str | None:
        if value is None or value == "":
            return None
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise _node_error(
                node, _t("{where} must be a number", where=where), _t("got {value!r}", value=value)
            )
        if isinstance(value, int | float):
            if value < 0:  # validation refuses it too; never drop it silently
                raise _node_error(
                    node,
                    _t("{where} must be greater than zero", where=where),
                    _t("got {value!r}", value=value),
                )
            if value == 0:
                return None  # Elyra writes 0 for "not set"
            return f"{value:g}{unit}"
        if value.strip().startswith("-"):
            raise _node_error(
                node,
                _t("{where} must be greater than zero", where=where),
                _t("got {value!r}", value=value),
            )
        return value.strip() + (unit if value.strip().replace(".", "", 1).isdigit() else "")

    def accelerator(self, node: Node, task: TaskPlan) -> None:
        chosen = node.cube.get("accelerator")
        count: Any = node.params.get("gpu") or node.cube.get("accelerator_count")
        if not chosen and not count:
            return
        if not chosen:
            chosen = node.params.get("gpu_vendor") or "nvidia-gpu"
        try:
            acc = accelerators.get(str(chosen))
            limits = accelerators.resources_for(
                acc.key, count if count else 1,
                memory_mib=node.cube.get("accelerator_memory_mib"),
                cores_percent=node.cube.get("accelerator_cores_percent"),
            )  # fmt: skip
        except InvalidInput as exc:
            raise _node_error(node, exc.error, exc.detail) from None
        task.accelerator = acc
        task.accelerator_count = int(limits.pop(acc.resource))
        task.extra_limits = limits
        task.node_selector.update(acc.node_selector_dict())
        task.tolerations += [t.to_k8s() for t in acc.tolerations]
        if limits:
            task.pod_annotations[ANNOTATION_PREFIX + "extra-limits"] = json.dumps(
                limits, sort_keys=True
            )
            self.note(
                f"KFP's IR holds one accelerator resource per task, so {', '.join(limits)} "
                f"(node {node.label!r}) is only recorded in the pod annotation "
                f"{ANNOTATION_PREFIX}extra-limits."
            )
        if acc.scheduler:
            self.note(
                f"{acc.display_name} needs schedulerName {acc.scheduler}, which KFP cannot "
                "set per task; make it the namespace's default scheduler."
            )

    def settings(self, node: Node, task: TaskPlan) -> None:
        task.retries = node.retries
        backoff = node.cube.get("retry_backoff_s")
        task.retry_backoff_s = float(backoff) if backoff else None
        task.timeout_s = node.timeout_s
        task.cache = bool(node.cube.get("cache", True))
        for source in (self.pipeline.defaults, node.params):
            for item in source.get("kubernetes_tolerations") or []:
                if isinstance(item, dict) and (item.get("key") or item.get("operator")):
                    keep = ("key", "operator", "value", "effect")
                    task.tolerations.append({k: str(item[k]) for k in keep if item.get(k)})
            task.pod_labels.update(_key_values(source.get("kubernetes_pod_labels")))
            task.pod_annotations.update(_key_values(source.get("kubernetes_pod_annotations")))
            for key in _UNSUPPORTED_ELYRA:
                if source.get(key):
                    self.note(f"{key} is not compiled (it needs the kfp-kubernetes extension).")
        task.pod_annotations[ANNOTATION_PREFIX + "node-id"] = node.id
        if self.identity is not None:  # after the node's own labels: these are not the user's
            project, owner = self.identity
            pipeline = _slug(self.pipeline.name)
            task.pod_labels.update(pod_labels.run_node(project, owner, pipeline, node.id))


def identity_of(workspace: Any, caller: Any) -> tuple[str, str]:
    """(project, owner) for a caller's compiled pipeline: the caller's personal project,
    as local runs without a project have it."""
    workspace.projects.ensure_personal(caller)
    with workspace.store.read() as s:
        return workspace.projects.resolve(s, caller, None).name, caller.username


def plan_pipeline(
    pipeline: Pipeline,
    catalog: Any = None,
    *,
    project_dir: str = PROJECT_DIR,
    template_root: str = TEMPLATE_ROOT,
    default_image: str = DEFAULT_IMAGE,
    identity: tuple[str, str] | None = None,
) -> PipelinePlan:
    """What each node compiles to, checked; raises InvalidInput naming the node.

    ``identity`` (project, owner): every step's pod carries ``cube_lab.k8s.pod_labels``'
    vocabulary (kind ``run-node``, the pipeline and the node's id; the run is the
    ``pipeline/runid`` label KFP sets on each pod, as it is known only when KFP starts it)."""
    if not pipeline.nodes:
        raise InvalidInput(
            _t("the pipeline has no nodes"), _t("Add at least one node to compile it.")
        )
    planner = _Planner(pipeline, catalog, project_dir, template_root, default_image, identity)
    return planner.plan()


# -- emitting the IR with kfp ----------------------------------------------------------------


def _kfp() -> Any:
    try:
        import kfp
        import kfp.compiler
        import kfp.dsl
    except ImportError:
        raise InvalidInput(
            _t("the kfp package is not installed"), _t("pip install 'cube-lab[kfp]'")
        ) from None
    return kfp


def _render(text: str, inputs: dict[str, Any], output: Any, run_id: str) -> str:
    text = _MARK_RE.sub(lambda m: str(inputs[m.group(1)]), text)
    text = text.replace(_RUN_ID_MARK, run_id)
    return text.replace(_OUTPUT_MARK, str(output.path)) if output is not None else text


def _component(task: TaskPlan, types: dict[str, type]) -> Any:
    """A container component whose inputs are the pipeline parameters the node uses."""
    dsl = _kfp().dsl
    used = task.parameters_used()
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    signature = [inspect.Parameter(n, kind, annotation=types[n]) for n in used]
    if task.notebook_output:
        signature.append(
            inspect.Parameter(NOTEBOOK_OUTPUT, kind, annotation=dsl.Output[dsl.Artifact])
        )

    def body(*args: Any) -> Any:
        given = dict(zip([p.name for p in signature], args, strict=True))
        output = given.pop(NOTEBOOK_OUTPUT, None)
        env = [f"{k}={v}" for k, v in task.runtime_env.items()]
        argv = ["sh", "-c", CD_THEN_EXEC, task.workdir, "env", *env, *task.argv]
        rendered = [_render(a, given, output, dsl.PIPELINE_JOB_ID_PLACEHOLDER) for a in argv]
        return dsl.ContainerSpec(image=task.image, command=rendered)

    body.__signature__ = inspect.Signature(signature)  # type: ignore[attr-defined]
    body.__name__ = body.__qualname__ = task.name.replace("-", "_")
    body.__doc__ = None
    return dsl.container_component(body)


def _catalog_component(task: TaskPlan) -> Any:
    kfp = _kfp()
    try:
        return kfp.components.load_component_from_text(task.component_text)
    except Exception as exc:  # the SDK raises what its YAML and spec checks raise
        raise _node_error(task.node, _t("KFP could not load the component"), str(exc)) from None


def _catalog_arguments(task: TaskPlan, given: dict[str, Any], made: dict[str, Any]) -> Any:
    from kfp.dsl.utils import sanitize_input_name

    out: dict[str, Any] = {}
    for name, argument in task.arguments.items():
        key = sanitize_input_name(name)
        if argument[0] == "param":
            out[key] = given[argument[1]]
        elif argument[0] == "output":
            out[key] = made[argument[1]].outputs[sanitize_input_name(argument[2])]
        else:
            out[key] = argument[1]
    return out


def _configure(pipeline_task: Any, task: TaskPlan) -> None:
    pipeline_task.set_display_name(task.node.label)
    for name, value in task.env.items():
        pipeline_task.set_env_variable(name, value)
    if task.cpu:
        pipeline_task.set_cpu_request(task.cpu)
    if task.cpu_limit:
        pipeline_task.set_cpu_limit(task.cpu_limit)
    if task.memory:
        pipeline_task.set_memory_request(task.memory)
    if task.memory_limit:
        pipeline_task.set_memory_limit(task.memory_limit)
    if task.accelerator is not None:
        pipeline_task.set_accelerator_type(task.accelerator.resource)
        pipeline_task.set_accelerator_limit(task.accelerator_count)
    if task.retries:
        backoff = f"{task.retry_backoff_s:g}s" if task.retry_backoff_s else None
        pipeline_task.set_retry(task.retries, backoff_duration=backoff)
    pipeline_task.set_caching_options(task.cache)
    # Kubernetes settings go where the kfp-kubernetes extension puts them (the task's
    # KubernetesExecutorConfig); KFP's core API has no timeout, node selector or toleration.
    k8s: dict[str, Any] = {}
    if task.timeout_s:
        k8s["activeDeadlineSeconds"] = str(math.ceil(task.timeout_s))  # int64 as JSON string
    if task.node_selector:
        k8s["nodeSelector"] = {"labels": dict(task.node_selector)}
    if task.tolerations:
        k8s["tolerations"] = task.tolerations
    metadata = {k: v for k, v in (("labels", task.pod_labels),
                                  ("annotations", task.pod_annotations)) if v}  # fmt: skip
    if metadata:
        k8s["podMetadata"] = metadata
    if k8s:
        pipeline_task.platform_config["kubernetes"] = k8s


def _pipeline_func(plan: PipelinePlan) -> Any:
    dsl = _kfp().dsl
    types = {name: kind for name, kind, _ in plan.parameters}
    components = {
        task.name: _catalog_component(task) if task.component_text else _component(task, types)
        for task in plan.tasks
    }
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    signature = [
        inspect.Parameter(name, kind, annotation=t, default=d) for name, t, d in plan.parameters
    ]

    def body(*args: Any, **kwargs: Any) -> None:
        given = {**dict(zip([p.name for p in signature], args, strict=False)), **kwargs}
        made: dict[str, Any] = {}
        for task in plan.tasks:
            component = components[task.name]
            try:
                if task.component_text:
                    arguments = _catalog_arguments(task, given, made)
                else:
                    arguments = {n: given[n] for n in task.parameters_used()}
                made[task.name] = component(**arguments)
                _configure(made[task.name], task)
            except ValueError as exc:  # the SDK's checks of quantities and names
                raise _node_error(task.node, _t("KFP refused a setting"), str(exc)) from None
            made[task.name].after(*[made[u] for u in task.upstream])

    body.__signature__ = inspect.Signature(signature)  # type: ignore[attr-defined]
    body.__name__ = body.__qualname__ = plan.name.replace("-", "_")
    body.__doc__ = None
    return dsl.pipeline(
        name=plan.name, display_name=plan.display_name, description=plan.description()
    )(body)


def compile_pipeline(
    pipeline: Pipeline,
    catalog: Any,
    output: Path,
    *,
    project_dir: str = PROJECT_DIR,
    template_root: str = TEMPLATE_ROOT,
    default_image: str = DEFAULT_IMAGE,
    identity: tuple[str, str] | None = None,
) -> Path:
    """Write KFP v2 IR YAML for ``pipeline`` to ``output`` (atomically) and return the path
    (``identity``: as for ``plan_pipeline``)."""
    kfp = _kfp()
    plan = plan_pipeline(
        pipeline, catalog, project_dir=project_dir, template_root=template_root,
        default_image=default_image, identity=identity,
    )  # fmt: skip
    for note in plan.notes:
        log.warning("kfp compile of %s: %s", pipeline.name, note)
    func = _pipeline_func(plan)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(suffix=".yaml", prefix=f".{output.name}.", dir=output.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        kfp.compiler.Compiler().compile(func, package_path=str(tmp))
        tmp.replace(output)
    except (ValueError, TypeError) as exc:
        raise InvalidInput(
            _t("KFP could not compile pipeline {name!r}", name=pipeline.name), str(exc)
        ) from None
    finally:
        tmp.unlink(missing_ok=True)
    return output


# -- submitting ------------------------------------------------------------------------------


def pipeline_inputs(ir_path: Path) -> dict[str, Any]:
    """The compiled pipeline's inputs: name -> {parameterType, defaultValue?, isOptional?}."""
    import yaml

    docs = list(yaml.safe_load_all(Path(ir_path).read_text(encoding="utf-8")))
    spec = docs[0] if docs and isinstance(docs[0], dict) else {}
    root = spec.get("root", {}).get("inputDefinitions", {})
    return dict(root.get("parameters", {}))


def submit(
    ir_path: Path,
    host: str,
    run_name: str | None = None,
    params: dict[str, Any] | None = None,
    *,
    experiment: str | None = None,
    namespace: str | None = None,
) -> str:
    """Start a run of a compiled pipeline on the KFP at ``host``; returns the run id."""
    kfp = _kfp()
    ir_path = Path(ir_path)
    if not ir_path.is_file():
        raise InvalidInput(_t("compiled pipeline {value!r} not found", value=str(ir_path)))
    known = pipeline_inputs(ir_path)
    unknown = sorted(set(params or {}) - set(known))
    if unknown:
        raise InvalidInput(
            _t("unknown pipeline parameters: {value}", value=", ".join(unknown)),
            _t(
                "The pipeline takes: {value}.",
                value=", ".join(sorted(known)) or _t("no parameters"),
            ),
        )
    client = kfp.Client(host=host)
    try:
        result = client.create_run_from_pipeline_package(
            str(ir_path), arguments=dict(params or {}), run_name=run_name,
            experiment_name=experiment, namespace=namespace,
        )  # fmt: skip
    except Exception as exc:  # the client raises whatever its HTTP layer raised
        raise CubeError(
            _t("Kubeflow Pipelines at {host} did not accept the run", host=host), str(exc)
        ) from exc
    return str(result.run_id)
