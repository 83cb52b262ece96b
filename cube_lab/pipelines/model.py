"""The in-memory pipeline: what the runner, the validator and the compilers work on.

A ``Pipeline`` keeps the document it was read from (``raw``), so writing it back
changes only what cube-lab changed and keeps everything Elyra or another tool put there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Elyra's generic node ops, and cube-lab's own (Elyra ignores ops it does not know
# only in the sense that it refuses to run them; the files stay valid pipeline-flow).
OP_NOTEBOOK = "execute-notebook-node"
OP_PYTHON = "execute-python-node"
OP_R = "execute-r-node"
OP_SHELL = "cube-lab:shell"
OP_TEMPLATE = "cube-lab:template"

CUBE_KEY = "cube_lab"  # cube-lab-only settings live under app_data.cube_lab


@dataclass
class Parameter:
    name: str
    type: str = "String"  # Elyra: String | Integer | Float | Bool
    default: Any = None
    required: bool = False
    description: str = ""


@dataclass
class Node:
    id: str
    op: str
    label: str
    params: dict[str, Any]  # app_data.component_parameters
    upstream: list[str]  # ids of the nodes this one depends on (inputs[].links[])
    cube: dict[str, Any] = field(default_factory=dict)  # retries, timeout_s, cache, ...

    @property
    def filename(self) -> str | None:
        value = self.params.get("filename")
        return value if isinstance(value, str) and value else None

    @property
    def retries(self) -> int:
        return int(self.cube.get("retries", 0) or 0)

    @property
    def timeout_s(self) -> float | None:
        value = self.cube.get("timeout_s")
        return float(value) if value else None

    @property
    def outputs(self) -> list[str]:
        return [o for o in self.params.get("outputs") or [] if isinstance(o, str) and o]

    @property
    def dependencies(self) -> list[str]:
        return [d for d in self.params.get("dependencies") or [] if isinstance(d, str) and d]


@dataclass
class Pipeline:
    name: str
    nodes: list[Node]
    parameters: list[Parameter]
    defaults: dict[str, Any]  # properties.pipeline_defaults
    cube: dict[str, Any]  # properties.cube_lab: parallelism, schedule, alert_rules, ...
    raw: dict[str, Any]  # the whole document as read
    path: Path | None = None  # the file, when read from one
    migrated_from: int | None = None  # the Elyra version it was upgraded from
    primary_index: int = 0  # which entry of the document's "pipelines" this is

    def node(self, node_id: str) -> Node:
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    def find(self, ref: str) -> Node | None:
        """A node by id, or by label when the label is unique."""
        for node in self.nodes:
            if node.id == ref:
                return node
        matches = [n for n in self.nodes if n.label == ref]
        return matches[0] if len(matches) == 1 else None

    @property
    def parallelism(self) -> int | None:
        value = self.cube.get("parallelism")
        return int(value) if value else None

    @property
    def alert_rules(self) -> list[str]:
        """Alert rules of the run's project told when a run of this pipeline fails
        (``properties.cube_lab.alert_rules``; cube_lab/alerts/engine.py)."""
        value = self.cube.get("alert_rules")
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []

    @property
    def folder(self) -> Path | None:
        return self.path.parent if self.path else None

    def downstream(self, node_id: str) -> set[str]:
        """``node_id`` and every node that depends on it, directly or not."""
        children: dict[str, list[str]] = {}
        for node in self.nodes:
            for up in node.upstream:
                children.setdefault(up, []).append(node.id)
        seen, stack = {node_id}, [node_id]
        while stack:
            for child in children.get(stack.pop(), []):
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
        return seen

    def upstream_closure(self, node_ids: set[str]) -> set[str]:
        """Every ancestor of ``node_ids`` (not including them)."""
        by_id = {n.id: n for n in self.nodes}
        seen: set[str] = set()
        stack = [u for nid in node_ids for u in by_id[nid].upstream]
        while stack:
            current = stack.pop()
            if current not in seen and current in by_id:
                seen.add(current)
                stack.extend(by_id[current].upstream)
        return seen - node_ids
