"""Generate the benchmark pipelines as Elyra-format ``.pipeline`` files.

Two shapes, each written into its own folder together with one Python script per node
(``n_<layer>_<index>.py``), so that every runner executes the very same files:

- ``wide``: 4 layers of 5 nodes, each node sleeps 1 s; every node of a layer depends on
  every node of the previous layer (critical path 4 s).
- ``chain``: N trivial nodes, each depending on the one before.

The files follow the pipeline-flow v3 schema with Elyra pipeline version 8 (what Elyra 4.x
writes): ``pipelines[0].nodes[]`` with ``op: "execute-python-node"``,
``app_data.component_parameters.filename``, and links on the downstream node's
``inputs[0].links[]`` (``node_id_ref`` + ``port_id_ref: "outPort"``).

    python benchmarks/pipelines/generate.py wide OUT_DIR
    python benchmarks/pipelines/generate.py chain OUT_DIR --nodes 200
"""

from __future__ import annotations

import argparse
import json
import uuid
from pathlib import Path

SCHEMA = "http://api.dataplatform.ibm.com/schemas/common-pipeline/pipeline-flow/pipeline-flow-v3-schema.json"
RUNTIME_IMAGE = "python:3.11-slim"  # ignored by local runners; required by Elyra's validation

SLEEP_SCRIPT = """\
import time

time.sleep({seconds})
print("{name} done")
"""

TRIVIAL_SCRIPT = """\
print("{name} done")
"""


def _node_id(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"cube-lab-bench/{name}"))


def _node(name: str, upstream: list[str], x: int, y: int) -> dict:
    node = {
        "id": _node_id(name),
        "type": "execution_node",
        "op": "execute-python-node",
        "app_data": {
            "component_parameters": {
                "filename": f"{name}.py",
                "runtime_image": RUNTIME_IMAGE,
                "dependencies": [],
                "include_subdirectories": False,
                "outputs": [],
                "env_vars": [],
                "kubernetes_pod_annotations": [],
                "kubernetes_pod_labels": [],
                "kubernetes_secrets": [],
                "kubernetes_shared_mem_size": {},
                "kubernetes_tolerations": [],
                "mounted_volumes": [],
            },
            "label": "",
            "ui_data": {
                "label": f"{name}.py",
                "image": "/static/elyra/python.svg",
                "x_pos": x,
                "y_pos": y,
                "description": "Run Python script",
            },
        },
        "inputs": [
            {
                "id": "inPort",
                "app_data": {
                    "ui_data": {"cardinality": {"min": 0, "max": -1}, "label": "Input Port"}
                },
            }
        ],
        "outputs": [
            {
                "id": "outPort",
                "app_data": {
                    "ui_data": {"cardinality": {"min": 0, "max": -1}, "label": "Output Port"}
                },
            }
        ],
    }
    if upstream:
        node["inputs"][0]["links"] = [
            {
                "id": _node_id(f"{up}->{name}"),
                "node_id_ref": _node_id(up),
                "port_id_ref": "outPort",
            }
            for up in upstream
        ]
    return node


def _document(name: str, nodes: list[dict]) -> dict:
    pipeline_id = str(uuid.uuid4())
    return {
        "doc_type": "pipeline",
        "version": "3.0",
        "json_schema": SCHEMA,
        "id": str(uuid.uuid4()),
        "primary_pipeline": pipeline_id,
        "pipelines": [
            {
                "id": pipeline_id,
                "nodes": nodes,
                "app_data": {
                    "ui_data": {"comments": []},
                    "version": 8,
                    "runtime_type": "LOCAL",
                    "properties": {
                        "name": name,
                        "runtime": "Generic",
                        "pipeline_defaults": {
                            "kubernetes_pod_annotations": [],
                            "kubernetes_pod_labels": [],
                            "kubernetes_shared_mem_size": {},
                            "kubernetes_tolerations": [],
                            "mounted_volumes": [],
                            "kubernetes_secrets": [],
                            "env_vars": [],
                        },
                        "pipeline_parameters": [],
                    },
                },
                "runtime_ref": "",
            }
        ],
        "schemas": [],
    }


def generate_wide(
    out_dir: Path, layers: int = 4, width: int = 5, sleep_s: float = 1.0
) -> tuple[Path, int]:
    """Write the layered pipeline; return (path of the .pipeline file, node count)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    nodes, previous = [], []
    for layer in range(layers):
        current = []
        for index in range(width):
            name = f"n_{layer}_{index}"
            (out_dir / f"{name}.py").write_text(SLEEP_SCRIPT.format(seconds=sleep_s, name=name))
            nodes.append(_node(name, previous, 80 + 220 * layer, 60 + 90 * index))
            current.append(name)
        previous = current
    path = out_dir / "wide.pipeline"
    path.write_text(json.dumps(_document("wide", nodes), indent=2))
    return path, len(nodes)


def generate_chain(out_dir: Path, length: int = 200) -> tuple[Path, int]:
    """Write the chain pipeline; return (path of the .pipeline file, node count)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    nodes, previous = [], []
    for index in range(length):
        name = f"n_{index}_0"
        (out_dir / f"{name}.py").write_text(TRIVIAL_SCRIPT.format(name=name))
        nodes.append(_node(name, previous, 80 + 200 * (index % 10), 60 + 90 * (index // 10)))
        previous = [name]
    path = out_dir / "chain.pipeline"
    path.write_text(json.dumps(_document(f"chain{length}", nodes), indent=2))
    return path, len(nodes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shape", choices=["wide", "chain"])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--nodes", type=int, default=200, help="chain length")
    args = parser.parse_args()
    if args.shape == "wide":
        path, count = generate_wide(args.out_dir)
    else:
        path, count = generate_chain(args.out_dir, args.nodes)
    print(f"{path} ({count} nodes)")


if __name__ == "__main__":
    main()
