"""Build Elyra-format pipelines for tests: ``write_pipeline(folder, [node(...), ...])``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cube_lab.pipelines import elyra_format


def node(
    node_id: str,
    op: str = "execute-python-node",
    upstream: tuple[str, ...] = (),
    label: str | None = None,
    cube: dict[str, Any] | None = None,
    **params: Any,
) -> dict[str, Any]:
    app: dict[str, Any] = {
        "label": label or node_id,
        "component_parameters": params,
        "ui_data": {"label": label or node_id, "x_pos": 10, "y_pos": 20},
    }
    if cube:
        app["cube_lab"] = cube
    return {
        "id": node_id,
        "type": "execution_node",
        "op": op,
        "app_data": app,
        "inputs": [
            {
                "id": "inPort",
                "links": [
                    {"id": f"{u}-{node_id}", "node_id_ref": u, "port_id_ref": "outPort"}
                    for u in upstream
                ],
            }
        ],
        "outputs": [{"id": "outPort"}],
    }


def script(folder: Path, name: str, code: str) -> str:
    (folder / name).write_text(code)
    return name


def write_pipeline(
    folder: Path,
    nodes: list[dict[str, Any]],
    name: str = "test",
    parameters: list[dict[str, Any]] | None = None,
    cube: dict[str, Any] | None = None,
    filename: str = "p.pipeline",
) -> Path:
    doc = elyra_format.new_document(name)
    primary = doc["pipelines"][0]
    primary["nodes"] = nodes
    props = primary["app_data"]["properties"]
    props["pipeline_parameters"] = parameters or []
    if cube:
        props["cube_lab"] = cube
    path = folder / filename
    path.write_text(json.dumps(doc, indent=1))
    return path
