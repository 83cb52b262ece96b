"""Pipeline checks. Each finding names the node and the field, so the editor can mark it."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..errors import InvalidInput
from .model import Pipeline
from .nodekinds import NodeContext, Problem, kind_for, node_kinds


class PipelineInvalid(InvalidInput):
    def __init__(self, problems: list[Problem]) -> None:
        first = problems[0]
        where = f"node {first.node_label or first.node_id!r}, " if first.node_id else ""
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(
            f"invalid pipeline: {where}{first.field}: {first.message}{more}",
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


def check(pipeline: Pipeline, ctx: NodeContext) -> list[Problem]:
    problems: list[Problem] = []
    ids: set[str] = set()
    for node in pipeline.nodes:
        if node.id in ids:
            problems.append(Problem(node.id, "id", "duplicate node id", node.label))
        ids.add(node.id)
    for node in pipeline.nodes:
        for up in node.upstream:
            if up not in ids:
                problems.append(
                    Problem(node.id, "inputs", f"link from unknown node {up!r}", node.label)
                )
        kind = kind_for(node.op)
        if kind is None:
            problems.append(
                Problem(
                    node.id,
                    "op",
                    f"unknown node type {node.op!r}; known: {', '.join(sorted(node_kinds()))}",
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
                "cycle: " + " -> ".join(labels.get(c, c) for c in cycle),
                labels.get(cycle[0]),
            )
        )
    parallelism = pipeline.cube.get("parallelism")
    if parallelism is not None and (
        isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1
    ):
        problems.append(Problem(None, "parallelism", "must be a whole number of at least 1"))
    names = [p.name for p in pipeline.parameters]
    for name in {n for n in names if names.count(n) > 1}:
        problems.append(
            Problem(None, "pipeline_parameters", f"parameter {name!r} is defined twice")
        )
    return problems


def _check_cube_settings(node_id: str, label: str, cube: dict[str, Any]) -> list[Problem]:
    problems = []
    for key, low in (("retries", 0), ("timeout_s", 0.001), ("retry_backoff_s", 0)):
        value = cube.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or value < low:
            problems.append(Problem(node_id, key, f"must be a number >= {low}", label))
    return problems


def validate(pipeline: Pipeline, ctx: NodeContext) -> None:
    problems = check(pipeline, ctx)
    if problems:
        raise PipelineInvalid(problems)
