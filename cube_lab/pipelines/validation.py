"""Pipeline checks. Each finding names the node and the field, so the editor can mark it."""

from __future__ import annotations

import copy
import keyword
import re
from dataclasses import asdict, replace
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t
from .elyra_format import SCHEMA_VERSION, flatten
from .model import Pipeline
from .nodekinds import NodeContext, Problem, kind_for, node_kinds


class PipelineInvalid(InvalidInput):
    def __init__(self, problems: list[Problem]) -> None:
        first = problems[0]
        node = first.node_label or first.node_id
        where = _t("node {node!r}, ", node=node) if first.node_id else ""
        more = _t(" (and {n} more)", n=len(problems) - 1) if len(problems) > 1 else ""
        super().__init__(
            _t(
                "invalid pipeline: {where}{field}: {message}{more}",
                where=where,
                field=first.field,
                message=first.message,
                more=more,
            ),
            [asdict(p) for p in problems],
        )
        self.problems = problems


def find_cycle(pipeline: Pipeline) -> list[str] | None:
    """The ids along one cycle, or None (iterative DFS: deep chains must not recurse)."""
    upstream = {n.id: [u for u in n.upstream] for n in pipeline.nodes}
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    for start in upstream:
        if state.get(start):
            continue
        stack: list[tuple[str, int]] = [(start, 0)]
        path: list[str] = []
        while stack:
            node, index = stack.pop()
            if index == 0:
                state[node] = 1
                path.append(node)
            children = upstream.get(node, [])
            if index < len(children):
                stack.append((node, index + 1))
                child = children[index]
                if state.get(child) == 1:
                    return [*path[path.index(child) :], child]
                if not state.get(child) and child in upstream:
                    stack.append((child, 0))
            else:
                state[node] = 2
                path.pop()
    return None


def check(
    pipeline: Pipeline, ctx: NodeContext, given: dict[str, Any] | None = None
) -> list[Problem]:
    """Every problem found. ``given``: parameter values supplied for a run (a required
    parameter without a default is then fine when it is given)."""
    problems: list[Problem] = _check_document(pipeline)
    ids: set[str] = set()
    for node in pipeline.nodes:
        if node.id in ids:
            problems.append(Problem(node.id, "id", _t("duplicate node id"), node.label))
        ids.add(node.id)
    for node in pipeline.nodes:
        for up in node.upstream:
            if up not in ids:
                problems.append(
                    Problem(
                        node.id, "inputs", _t("link from unknown node {up!r}", up=up), node.label
                    )
                )
        kind = kind_for(node.op)
        if kind is None:
            problems.append(
                Problem(
                    node.id,
                    "op",
                    _t(
                        "unknown node type {op!r}; known: {known}",
                        op=node.op,
                        known=", ".join(sorted(node_kinds())),
                    ),
                    node.label,
                )
            )
        else:
            problems.extend(kind.check(node, ctx))
        problems.extend(_check_cube_settings(node.id, node.label, node.cube))
    cycle = find_cycle(pipeline)
    if cycle:
        labels = {n.id: n.label for n in pipeline.nodes}
        problems.append(
            Problem(
                cycle[0],
                "inputs",
                _t("cycle: {path}", path=" -> ".join(labels.get(c, c) for c in cycle)),
                labels.get(cycle[0]),
            )
        )
    parallelism = pipeline.cube.get("parallelism")
    if parallelism is not None and (
        isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1
    ):
        problems.append(Problem(None, "parallelism", _t("must be a whole number of at least 1")))
    alert_rules = pipeline.cube.get("alert_rules")
    if alert_rules is not None and (
        not isinstance(alert_rules, list) or not all(isinstance(r, str) and r for r in alert_rules)
    ):
        problems.append(
            Problem(
                None,
                "alert_rules",
                _t("must be a list of alert rule names of the run's project"),
            )
        )
    names = [p.name for p in pipeline.parameters]
    for name in {n for n in names if names.count(n) > 1}:
        problems.append(
            Problem(
                None, "pipeline_parameters", _t("parameter {name!r} is defined twice", name=name)
            )
        )
    problems.extend(_check_parameters(pipeline, given or {}))
    problems.extend(_check_elyra_properties(pipeline))
    _name_supernodes(pipeline, problems)
    return problems


def _name_supernodes(pipeline: Pipeline, problems: list[Problem]) -> None:
    """A problem inside a supernode names the node as ``Supernode > node`` (its id stays the
    inner node's), so the user can find it in Elyra's editor."""
    if not pipeline.raw:
        return
    try:
        within = flatten(copy.deepcopy(pipeline.raw), pipeline.primary_index).within
    except InvalidInput:
        return
    for i, problem in enumerate(problems):
        outer = within.get(problem.node_id or "")
        if outer:
            label = " > ".join([*outer, problem.node_label or problem.node_id or ""])
            problems[i] = replace(problem, node_label=label)


def _check_document(pipeline: Pipeline) -> list[Problem]:
    """What Elyra's validator refuses about the file as a whole."""
    problems: list[Problem] = []
    doc = pipeline.raw or {}
    schema = doc.get("version")
    try:
        schema_ok = float(schema) == float(SCHEMA_VERSION)
    except (TypeError, ValueError):
        schema_ok = False
    if not schema_ok:
        problems.append(
            Problem(
                None,
                "version",
                _t(
                    "the pipeline schema version is {schema!r}; Elyra pipelines use "
                    '{version!r} (set the document\'s "version" to "{version}")',
                    schema=schema,
                    version=SCHEMA_VERSION,
                ),
            )
        )
    pipelines = doc.get("pipelines") if isinstance(doc.get("pipelines"), list) else []
    ids = [p.get("id") for p in pipelines if isinstance(p, dict)]
    primary_id = doc.get("primary_pipeline")
    if primary_id not in ids:
        problems.append(
            Problem(
                None,
                "primary_pipeline",
                _t(
                    "primary_pipeline {primary!r} names no pipeline of this file"
                    " (pipeline ids: {ids})",
                    primary=primary_id,
                    ids=", ".join(repr(i) for i in ids) or _t("none"),
                ),
            )
        )
    primary = pipelines[pipeline.primary_index] if pipelines else {}
    app = primary.get("app_data") if isinstance(primary, dict) else None
    if not isinstance(app, dict) or "version" not in app:
        problems.append(
            Problem(
                None,
                "app_data.version",
                _t(
                    "the pipeline has no version; Elyra writes app_data.version (8 today). "
                    "Add it, or save the pipeline from the editor"
                ),
            )
        )
    if not pipeline.nodes:
        problems.append(Problem(None, "nodes", _t("the pipeline has no nodes; add at least one")))
    return problems


def _check_parameters(pipeline: Pipeline, given: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    for i, param in enumerate(pipeline.parameters):
        where = f"pipeline_parameters[{i}].name"
        if not param.name.isidentifier() or keyword.iskeyword(param.name):
            problems.append(
                Problem(
                    None,
                    where,
                    _t(
                        "{name!r} is not a valid parameter name: use letters, digits and "
                        "underscores, not starting with a digit, and not a Python keyword",
                        name=param.name,
                    ),
                )
            )
        if param.required and param.default in (None, "") and given.get(param.name) in (None, ""):
            problems.append(
                Problem(
                    None,
                    f"pipeline_parameters[{i}].default_value",
                    _t(
                        "parameter {name!r} is required but has no value; give it a default "
                        "value (or pass one for the run)",
                        name=param.name,
                    ),
                )
            )
    defined = {p.name for p in pipeline.parameters}
    for node in pipeline.nodes:
        used = node.params.get("pipeline_parameters")
        if used is None:
            continue
        if not isinstance(used, list):
            problems.append(
                Problem(node.id, "pipeline_parameters", _t("must be a list of names"), node.label)
            )
            continue
        for name in used:
            if name not in defined:
                problems.append(
                    Problem(
                        node.id,
                        "pipeline_parameters",
                        _t(
                            "references pipeline parameter {name!r}, which this pipeline does "
                            "not define (defined: {defined})",
                            name=name,
                            defined=", ".join(sorted(defined)) or _t("none"),
                        ),
                        node.label,
                    )
                )
    return problems


# A container image reference: [registry[:port]/]name[/name...][:tag][@digest]
_IMAGE = re.compile(
    r"^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::[0-9]+)?/)?"
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@[A-Za-z0-9]+:[0-9a-fA-F]{32,})?$"
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_RESOURCES = ("cpu", "cpu_limit", "gpu", "memory", "memory_limit")


def _check_elyra_properties(pipeline: Pipeline) -> list[Problem]:
    """Elyra-owned node properties (and their pipeline defaults): env vars, image, resources."""
    problems: list[Problem] = []
    scopes: list[tuple[str | None, str | None, dict[str, Any], str]] = [
        (None, None, pipeline.defaults, "pipeline_defaults.")
    ]
    scopes += [(n.id, n.label, n.params, "") for n in pipeline.nodes]
    for node_id, label, params, prefix in scopes:
        env = params.get("env_vars")
        for i, item in enumerate(env if isinstance(env, list) else []):
            where = f"{prefix}env_vars[{i}]"
            if not isinstance(item, dict):
                problems.append(
                    Problem(node_id, where, _t('must be {{"env_var": NAME, "value": ...}}'), label)
                )
                continue
            name = item.get("env_var")
            if not isinstance(name, str) or not name.strip():
                problems.append(
                    Problem(node_id, where, _t("environment variable name is empty"), label)
                )
            elif not _ENV_NAME.match(name):
                why = (
                    _t("environment variable name {name!r} includes spaces", name=name)
                    if re.search(r"\s", name)
                    else _t("environment variable name {name!r} is not a valid name", name=name)
                )
                problems.append(
                    Problem(
                        node_id,
                        where,
                        _t(
                            "{why}; use letters, digits and underscores, not starting with a digit",
                            why=why,
                        ),
                        label,
                    )
                )
        image = params.get("runtime_image")
        if image not in (None, "") and (not isinstance(image, str) or not _IMAGE.match(image)):
            problems.append(
                Problem(
                    node_id,
                    f"{prefix}runtime_image",
                    _t(
                        "{image!r} is not a valid container image name; write {form}, e.g. "
                        "python:3.11 or quay.io/org/image:1.0",
                        image=image,
                        form="[registry/]owner/image[:tag]",
                    ),
                    label,
                )
            )
        for key in _RESOURCES:
            value = params.get(key)
            if value is None or value == "":
                continue
            number = _leading_number(value)
            if number is None:
                problems.append(
                    Problem(
                        node_id,
                        f"{prefix}{key}",
                        _t("{value!r} is not a number", value=value),
                        label,
                    )
                )
            elif number < 0:
                problems.append(
                    Problem(
                        node_id,
                        f"{prefix}{key}",
                        _t(
                            "must be greater than zero (got {value!r}; 0 or empty means not set)",
                            value=value,
                        ),
                        label,
                    )
                )
    return problems


def _leading_number(value: Any) -> float | None:
    """The number in 4, 2.5, "4", "4G" or "500m"; None when there is none."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        found = re.match(r"^\s*(-?\d+(?:\.\d+)?)\s*[A-Za-z]*\s*$", value)
        return float(found.group(1)) if found else None
    return None


def _check_cube_settings(node_id: str, label: str, cube: dict[str, Any]) -> list[Problem]:
    problems = []
    for key, low in (("retries", 0), ("timeout_s", 0.001), ("retry_backoff_s", 0)):
        value = cube.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or value < low:
            problems.append(Problem(node_id, key, _t("must be a number >= {low}", low=low), label))
    return problems


def validate(pipeline: Pipeline, ctx: NodeContext, given: dict[str, Any] | None = None) -> None:
    problems = check(pipeline, ctx, given)
    if problems:
        raise PipelineInvalid(problems)
