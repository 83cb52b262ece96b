"""Writing a ``Pipeline`` back as an Elyra document, its supernodes and what cube-lab does not
know kept as they were."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

from ...locale.messages import _t
from ..model import CUBE_KEY, Node, Pipeline
from .common import ELYRA_VERSION, SCHEMA_URL, PipelineFormatError
from .flatten import Flat, flatten

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
