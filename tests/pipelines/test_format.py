"""Reading and writing Elyra .pipeline files: round trips, migrations, refusals, fuzzing."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pipeline_util import node, write_pipeline
from property import examples

from cube_lab.pipelines import elyra_format
from cube_lab.pipelines.elyra_format import PipelineFormatError
from cube_lab.pipelines.model import Parameter

SAMPLES: list[list[dict[str, Any]]] = [
    [node("a", filename="a.py")],
    [
        node(
            "a",
            "execute-notebook-node",
            filename="nb/a.ipynb",
            runtime_image="img:1",
            env_vars=[{"env_var": "X", "value": "1"}],
            dependencies=["*.csv"],
            outputs=["o.csv"],
            cpu=2,
            gpu=1,
            memory=4,
            include_subdirectories=False,
        ),
        node("b", upstream=("a",), filename="b.py", pipeline_parameters=["lr"]),
        node("c", upstream=("a", "b"), filename="c.r", label="report", op="execute-r-node"),
    ],
    [
        node("s", "cube-lab:shell", command="echo hi", cube={"retries": 2, "timeout_s": 5}),
        node(
            "t",
            "cube-lab:template",
            upstream=("s",),
            template="split-data",
            parameters={"input_path": "x.csv"},
        ),
    ],
    [node(f"n{i}", upstream=(f"n{i - 1}",) if i else (), filename=f"n{i}.py") for i in range(30)],
]


@pytest.mark.parametrize("nodes", SAMPLES)
def test_round_trip_keeps_everything(tmp_path: Path, nodes: list[dict[str, Any]]) -> None:
    path = write_pipeline(
        tmp_path,
        nodes,
        parameters=[
            {
                "name": "lr",
                "description": "learning rate",
                "required": False,
                "default_value": {"type": "Float", "value": 0.1},
            }
        ],
        cube={"parallelism": 3},
    )
    original = json.loads(path.read_text())
    original["pipelines"][0]["app_data"]["ui_data"]["comments"] = [
        {"id": "c1", "content": "a note", "associated_id_refs": []}
    ]
    original["something_else"] = {"kept": True}  # keys other tools wrote survive
    path.write_text(json.dumps(original))
    pipeline = elyra_format.load(path)
    assert [n.id for n in pipeline.nodes] == [n["id"] for n in nodes]
    assert pipeline.parallelism == 3 and pipeline.parameters[0].default == 0.1
    out = tmp_path / "out.pipeline"
    elyra_format.save(pipeline, out)
    again = json.loads(out.read_text())
    assert again == original
    reloaded = elyra_format.load(out)
    assert [(n.id, n.op, n.upstream, n.params, n.cube) for n in reloaded.nodes] == [
        (n.id, n.op, n.upstream, n.params, n.cube) for n in pipeline.nodes
    ]


def test_changes_are_written_where_elyra_reads_them(tmp_path: Path) -> None:
    path = write_pipeline(tmp_path, [node("a", filename="a.py"), node("b", filename="b.py")])
    pipeline = elyra_format.load(path)
    pipeline.node("b").upstream.append("a")
    pipeline.node("b").cube["retries"] = 3
    pipeline.parameters.append(Parameter("epochs", "Integer", 5))
    doc = elyra_format.to_document(pipeline)
    b = doc["pipelines"][0]["nodes"][1]
    assert b["inputs"][0]["links"][0]["node_id_ref"] == "a"
    assert b["app_data"]["cube_lab"] == {"retries": 3}
    assert "cube_lab" not in b["app_data"]["component_parameters"]  # Elyra validates those
    params = doc["pipelines"][0]["app_data"]["properties"]["pipeline_parameters"]
    assert params[0]["default_value"] == {"type": "Integer", "value": 5}


def _old(version: int, nodes: list[dict[str, Any]]) -> str:
    doc = elyra_format.new_document("old")
    doc["pipelines"][0]["app_data"]["version"] = version
    doc["pipelines"][0]["nodes"] = nodes
    return json.dumps(doc)


def test_version_7_env_strings_are_migrated() -> None:
    raw = node("a", filename="a.py", env_vars=["A=1", "B=x=y"])
    pipeline = elyra_format.loads(_old(7, [raw]))
    assert pipeline.migrated_from == 7
    assert pipeline.node("a").params["env_vars"] == [
        {"env_var": "A", "value": "1"},
        {"env_var": "B", "value": "x=y"},
    ]


def test_version_6_node_settings_move_under_component_parameters() -> None:
    raw = {
        "id": "a",
        "type": "execution_node",
        "op": "execute-python-node",
        "app_data": {"filename": "a.py", "runtime_image": "img", "env_vars": ["K=V"]},
        "inputs": [],
        "outputs": [],
    }
    pipeline = elyra_format.loads(_old(6, [raw]))
    params = pipeline.node("a").params
    assert params["filename"] == "a.py" and params["env_vars"] == [{"env_var": "K", "value": "V"}]
    assert elyra_format.to_document(pipeline)["pipelines"][0]["app_data"]["version"] == 8


@pytest.mark.parametrize(
    "version, message",
    [(9, "newer Elyra (pipeline version 9)"), (8.5, "newer Elyra (pipeline version 8.5)")],
)
def test_unsupported_versions_are_named(version: int, message: str) -> None:
    with pytest.raises(PipelineFormatError, match=re.escape(message)):
        elyra_format.loads(_old(version, []))


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "not valid JSON"),
        ("[]", "must be a object"),
        ('{"pipelines": {}}', "pipelines must be a array"),
        ('{"pipelines": []}', "pipelines is empty"),
        ('{"pipelines": [{"nodes": [{"op": "x"}]}]}', "nodes[0].id is missing"),
        ('{"pipelines": [{"nodes": [{"id": "a"}]}]}', "op is missing"),
        (
            '{"pipelines": [{"nodes": [{"id": "a", "op": "x", "type": "super_node"}]}]}',
            "super_node",
        ),
        (
            '{"pipelines": [{"nodes": [{"id": "a", "op": "x", "inputs": [{"links": [{}]}]}]}]}',
            "node_id_ref is missing",
        ),
        ('{"doc_type": "notebook", "pipelines": []}', "not 'pipeline'"),
    ],
)
def test_malformed_documents_get_clear_errors(text: str, fragment: str) -> None:
    with pytest.raises(PipelineFormatError) as err:
        elyra_format.loads(text)
    assert fragment in err.value.error


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "id",
                    "op",
                    "type",
                    "nodes",
                    "pipelines",
                    "app_data",
                    "inputs",
                    "links",
                    "node_id_ref",
                    "version",
                    "properties",
                    "component_parameters",
                    "pipeline_parameters",
                    "name",
                    "default_value",
                    "env_vars",
                    "cube_lab",
                    "x",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_fuzzed_documents_never_crash_the_reader(doc: Any) -> None:
    try:
        pipeline = elyra_format.from_document(doc)
    except PipelineFormatError as exc:
        assert exc.error and exc.status == 400
        return
    elyra_format.dumps(pipeline)  # whatever loads also writes


BASE = json.loads(json.dumps(elyra_format.new_document("p")))
BASE["pipelines"][0]["nodes"] = [
    node("a", filename="a.py"),
    node("b", upstream=("a",), filename="b.py"),
]


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "pipelines",
                    "nodes",
                    "app_data",
                    "inputs",
                    "links",
                    "component_parameters",
                    "properties",
                    "version",
                ]
            ),
            json_values,
        ),
        min_size=1,
        max_size=4,
    )
)
def test_mutated_valid_documents_never_crash(mutations: list[tuple[str, Any]]) -> None:
    doc = copy.deepcopy(BASE)
    targets = [
        doc,
        doc["pipelines"][0],
        doc["pipelines"][0]["app_data"],
        doc["pipelines"][0]["nodes"][1],
        doc["pipelines"][0]["nodes"][1]["app_data"],
        doc["pipelines"][0]["nodes"][1]["inputs"][0],
    ]
    for i, (key, value) in enumerate(mutations):
        targets[i % len(targets)][key] = value
    try:
        elyra_format.dumps(elyra_format.from_document(doc))
    except PipelineFormatError as exc:
        assert exc.error
