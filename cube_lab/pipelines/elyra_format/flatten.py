"""A pipeline's nodes as cube-lab runs them: supernodes (Elyra's nested pipelines) flattened
into one graph, links checked, parameters read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...locale.messages import _t
from ..model import CUBE_KEY, Node, Parameter
from .common import PipelineFormatError, expect


def _node(raw: dict[str, Any], node_id: str, where: str) -> Node:
    """An execution node's settings; its links are resolved by ``flatten``."""
    op = raw.get("op")
    if not isinstance(op, str) or not op:
        raise PipelineFormatError(
            _t("{where}.op is missing", where=where),
            _t("node {node_id!r} needs an op", node_id=node_id),
        )
    app = expect(raw.get("app_data") or {}, dict, f"{where}.app_data")
    params = expect(
        app.get("component_parameters") or {}, dict, f"{where}.app_data.component_parameters"
    )
    cube = expect(app.get(CUBE_KEY) or {}, dict, f"{where}.app_data.{CUBE_KEY}")
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
    for p, port in enumerate(expect(raw.get("inputs") or [], list, f"{where}.inputs")):
        port = expect(port, dict, f"{where}.inputs[{p}]")
        for k, link in enumerate(
            expect(port.get("links") or [], list, f"{where}.inputs[{p}].links")
        ):
            link = expect(link, dict, f"{where}.inputs[{p}].links[{k}]")
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
        pipeline = expect(self.pipelines[index], dict, f"pipelines[{index}]")
        where = f"pipelines[{index}].nodes"
        inst = _Instance(index, path, labels)
        self.chain.append(index)
        raws = expect(pipeline.get("nodes", []), list, where)
        for i, raw in enumerate(raws):  # claim this level's ids before any inner one
            raw = expect(raw, dict, f"{where}[{i}]")
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


def parameters_of(raw: Any) -> list[Parameter]:
    out = []
    for i, item in enumerate(expect(raw, list, "pipeline_parameters")):
        item = expect(item, dict, f"pipeline_parameters[{i}]")
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
