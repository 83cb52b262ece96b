"""Run an Elyra-format ``.pipeline`` file with ``kfp.local`` (SubprocessRunner).

Runs inside the kfp peer venv (``benchmarks/.peers/kfp``). The DAG of the ``.pipeline`` file
is rebuilt as a kfp v2 DSL pipeline of lightweight components: one ``run_script`` task per node
(which executes that node's script file with ``runpy``), ordered with ``.after()`` exactly as
the Elyra links say. ``kfp.local`` then runs it with ``SubprocessRunner(use_venv=False)``, i.e.
in this venv's interpreter (kfp's default lightweight component still runs
``pip install kfp==<version>`` before each task, which is part of kfp.local's per-task cost).

    benchmarks/.peers/kfp/bin/python benchmarks/pipelines/kfp_run.py X.pipeline [--limit N]
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

from kfp import dsl, local


@dsl.component
def run_script(path: str):
    import runpy

    runpy.run_path(path, run_name="__main__")


def load_dag(pipeline_file: Path) -> list[tuple[str, str, list[str]]]:
    """Return [(node id, absolute script path, upstream ids)] in topological order."""
    doc = json.loads(pipeline_file.read_text())
    nodes = doc["pipelines"][0]["nodes"]
    entries = {}
    for node in nodes:
        filename = node["app_data"]["component_parameters"]["filename"]
        upstream = [
            link["node_id_ref"] for port in node.get("inputs", []) for link in port.get("links", [])
        ]
        entries[node["id"]] = (str((pipeline_file.parent / filename).resolve()), upstream)
    order, done = [], set()
    while len(order) < len(entries):
        ready = [
            nid
            for nid, (_, ups) in entries.items()
            if nid not in done and all(u in done for u in ups)
        ]
        if not ready:
            raise SystemExit("cycle in pipeline")
        for nid in ready:
            order.append((nid, entries[nid][0], entries[nid][1]))
            done.add(nid)
    return order


def build_pipeline(dag: list[tuple[str, str, list[str]]]):
    @dsl.pipeline(name="bench")
    def bench():
        tasks = {}
        for nid, path, upstream in dag:
            task = run_script(path=path)
            task.set_caching_options(False)
            task.set_display_name(Path(path).stem)
            if upstream:
                task.after(*[tasks[u] for u in upstream])
            tasks[nid] = task

    return bench


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("pipeline", type=Path)
    args = parser.parse_args()
    dag = load_dag(args.pipeline.resolve())
    with tempfile.TemporaryDirectory(prefix="kfp-local-") as root:
        local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root=root)
        build_pipeline(dag)()
    print(f"kfp.local ran {len(dag)} tasks", file=sys.stderr)


if __name__ == "__main__":
    main()
