"""Elyra component catalogs: catalogs read from Elyra's metadata files (directory, file, URL),
the op ids Elyra gives their components, validation of catalog nodes, the KFP compile, local runs
(a plain command runs; one that needs its image fails the node saying what is needed), and the
REST node-kinds listing. A differential against Elyra's own validator runs when its peer venv is
there.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pipeline_util import node, write_pipeline

from cube_lab.identity import Caller
from cube_lab.pipelines import catalogs, elyra_format, validation
from cube_lab.pipelines.nodekinds import NodeContext

DATA = Path(__file__).parents[1] / "data" / "catalogs"
COMPONENTS = DATA / "components"
ALICE = Caller("alice")
ELYRA_BIN = Path(__file__).parents[2] / "benchmarks" / ".peers" / "elyra" / "bin"


def sha12(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def catalog_dir() -> Path:
    return Path(os.environ["JUPYTER_DATA_DIR"]) / "metadata" / "component-catalogs"


def add_catalog(name: str, schema: str, display: str, **metadata: Any) -> Path:
    """A catalog file as `elyra-metadata create component-catalogs` writes it."""
    folder = catalog_dir()
    folder.mkdir(parents=True, exist_ok=True)
    metadata.setdefault("runtime_type", "KUBEFLOW_PIPELINES")
    metadata.setdefault("categories", [])
    path = folder / f"{name}.json"
    doc = {"display_name": display, "metadata": metadata, "schema_name": schema}
    path.write_text(json.dumps(doc, indent=2))
    catalogs.clear_cache()
    return path


@pytest.fixture
def components(tmp_path: Path) -> Path:
    """A copy of the fixture components (tests may add files)."""
    target = tmp_path / "components"
    shutil.copytree(COMPONENTS, target)
    return target


@pytest.fixture
def directory_catalog(components: Path) -> Path:
    add_catalog(
        "my_components", "local-directory-catalog", "My components",
        paths=[str(components)], include_subdirs=True,
    )  # fmt: skip
    return components


def by_name(found: catalogs.Catalogs) -> dict[str, catalogs.CatalogComponent]:
    return {c.name: c for c in found.components}


# -- reading catalogs -------------------------------------------------------------------------


def test_directory_catalog_lists_components_with_elyras_op_ids(directory_catalog: Path) -> None:
    found = catalogs.catalogs()
    comps = by_name(found)
    assert set(comps) == {"Write greeting", "Count lines", "Train model"}
    # the id hashes the path relative to the directory, as Elyra's directory connector does
    assert comps["Write greeting"].op == "local-directory-catalog:" + sha12("write_greeting.yaml")
    assert comps["Count lines"].op == "local-directory-catalog:" + sha12("more/count_lines.yaml")
    greet = comps["Write greeting"]
    assert greet.catalog == "My components" and greet.image == "busybox:1.36"
    assert greet.description == "Writes a greeting to a file, as many times as asked."
    inputs = {i.ref: i for i in greet.inputs}
    assert (inputs["greeting"].type, inputs["greeting"].default) == ("String", "hello")
    assert (inputs["times"].json_type, inputs["times"].default) == ("integer", 2)
    assert inputs["shout"].optional and not inputs["greeting"].optional
    assert [o.ref for o in greet.outputs] == ["output_greeting_file"]
    assert {i.ref: i.path for i in comps["Count lines"].inputs} == {"text": True, "label": False}
    # the broken file is reported, naming it, and does not hide the others
    assert [Path(e.location).name for e in found.errors] == ["broken.yaml"]


def test_directory_catalog_without_subdirs_reads_the_top_only(components: Path) -> None:
    add_catalog("top", "local-directory-catalog", "Top", paths=[str(components)])
    assert set(by_name(catalogs.catalogs())) == {"Write greeting"}


def test_file_catalog_hashes_the_path_as_written(components: Path) -> None:
    add_catalog(
        "files", "local-file-catalog", "Picked files",
        base_path=str(components), paths=["more/train_model.yaml"],
    )  # fmt: skip
    add_catalog(
        "absolute",
        "local-file-catalog",
        "Absolute",
        paths=[str(components / "write_greeting.yaml")],
    )
    comps = by_name(catalogs.catalogs())
    assert comps["Train model"].op == "local-file-catalog:" + sha12("more/train_model.yaml")
    greet_path = str(components / "write_greeting.yaml")
    assert comps["Write greeting"].op == "local-file-catalog:" + sha12(greet_path)
    assert comps["Train model"].catalog == "Picked files"


def test_a_missing_directory_and_an_airflow_catalog_are_reported(tmp_path: Path) -> None:
    add_catalog("gone", "local-directory-catalog", "Gone", paths=[str(tmp_path / "nowhere")])
    add_catalog(
        "af", "local-file-catalog", "Operators", runtime_type="APACHE_AIRFLOW", paths=["x.py"]
    )
    found = catalogs.catalogs()
    assert found.components == []
    messages = {e.catalog: e.message for e in found.errors}
    assert "nowhere" in messages["Gone"] and "not found" in messages["Gone"]
    assert "KUBEFLOW_PIPELINES" in messages["Operators"]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def http_root(components: Path) -> Iterator[str]:
    """A real HTTP server on loopback serving the components folder."""
    handler = lambda *a, **k: _Quiet(*a, directory=str(components), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_url_catalog_fetches_and_hashes_the_url(http_root: str) -> None:
    url = f"{http_root}/more/count_lines.yaml"
    add_catalog("web", "url-catalog", "Web components", paths=[url, f"{http_root}/missing.yaml"])
    found = catalogs.catalogs()
    assert [(c.name, c.op) for c in found.components] == [
        ("Count lines", "url-catalog:" + sha12(url))
    ]
    assert len(found.errors) == 1 and "missing.yaml" in found.errors[0].message
    assert "404" in found.errors[0].message


def test_an_unreachable_url_catalog_names_the_url() -> None:
    url = "http://127.0.0.1:9/components/x.yaml"  # the discard port: nothing listens
    add_catalog("offline", "url-catalog", "Offline", paths=[url])
    found = catalogs.catalogs()
    assert found.components == []
    assert found.errors[0].location == url and "not reachable" in found.errors[0].message


# -- pipelines ---------------------------------------------------------------------------------


def elyra_node(
    node_id: str,
    component: catalogs.CatalogComponent,
    upstream: tuple[str, ...] = (),
    **values: Any,
) -> dict[str, Any]:
    """A catalog node as Elyra's editor writes it: {widget, value} per input, component_source."""
    raw = node(node_id, component.op, upstream=upstream, label=node_id)
    params = component.default_parameters()  # the editor fills in the defaults
    for item in component.inputs:
        if item.ref in values:
            value = values[item.ref]
            widget = "inputpath" if isinstance(value, dict) else item.json_type
            params[item.ref] = {"widget": widget, "value": value}
    raw["app_data"]["component_parameters"] = params
    raw["app_data"]["component_source"] = json.dumps(
        {"catalog_type": component.schema_name, "component_ref": component.source}
    )
    return raw


def problems_of(path: Path) -> list[tuple[str | None, str, str]]:
    pipeline = elyra_format.load(path)
    found = validation.check(pipeline, NodeContext(path.parent, path.parent, None))
    return [(p.node_id, p.field, p.message) for p in found]


def greet_and_count(folder: Path, **greet: Any) -> Path:
    comps = by_name(catalogs.catalogs())
    nodes = [
        elyra_node(
            "greet", comps["Write greeting"], **{"greeting": "hi there", "times": 3, **greet}
        ),
        elyra_node(
            "count",
            comps["Count lines"],
            upstream=("greet",),
            label="greetings",
            text={"value": "greet", "option": "output_greeting_file"},
        ),
    ]
    return write_pipeline(folder, nodes)


def test_a_pipeline_as_elyra_writes_it_validates(directory_catalog: Path, tmp_path: Path) -> None:
    assert problems_of(greet_and_count(tmp_path)) == []


def test_validation_names_missing_and_mistyped_inputs(
    directory_catalog: Path, tmp_path: Path
) -> None:
    comps = by_name(catalogs.catalogs())
    nodes = [
        elyra_node("greet", comps["Write greeting"], greeting="hi", times="three"),
        elyra_node("count", comps["Count lines"], upstream=("greet",)),
    ]
    found = problems_of(write_pipeline(tmp_path, nodes))
    assert ("greet", "times", "input 'Times' is a Integer, got 'three'") in found
    assert ("count", "text", "required input 'Text' has no value") in found
    assert ("count", "label", "required input 'Label' has no value") in found
    assert len(found) == 3


def test_an_op_whose_catalog_is_not_configured_says_how_to_add_it(tmp_path: Path) -> None:
    op = "local-directory-catalog:" + sha12("elsewhere.yaml")
    found = problems_of(write_pipeline(tmp_path, [node("x", op)]))
    assert len(found) == 1
    node_id, field, message = found[0]
    assert (node_id, field) == ("x", "op")
    assert op in message and "metadata/component-catalogs" in message
    assert "elyra-metadata create component-catalogs" in message


def test_catalog_nodes_compile_to_kfp_with_their_own_containers(
    directory_catalog: Path, tmp_path: Path
) -> None:
    pytest.importorskip("kfp", reason="install cube-lab[kfp] to test KFP compilation")
    from google.protobuf import json_format
    from kfp import components

    from cube_lab.pipelines.kfp_compiler import compile_pipeline

    path = greet_and_count(tmp_path)
    ir_path = compile_pipeline(elyra_format.load(path), None, tmp_path / "p.yaml")
    spec = json_format.MessageToDict(
        components.load_component_from_file(str(ir_path)).pipeline_spec
    )
    executors = spec["deploymentSpec"]["executors"]
    containers = {k: v["container"] for k, v in executors.items()}
    greet = next(c for c in containers.values() if "seq" in " ".join(c["command"]))
    assert greet["image"] == "busybox:1.36"
    # the component's own command, inputs substituted by KFP (not cube-lab's cd wrapper)
    assert greet["command"][:3] == ["sh", "-c", 'for i in $(seq "$1"); do echo "$0"; done > "$2"']
    assert greet["command"][3:5] == [
        "{{$.inputs.parameters['greeting']}}",
        "{{$.inputs.parameters['times']}}",
    ]
    assert greet["command"][5] == "{{$.outputs.artifacts['greeting_file'].path}}"
    count = next(c for c in containers.values() if "wc -l" in " ".join(c["command"]))
    assert count["args"][0] == "{{$.inputs.artifacts['text'].path}}"
    tasks = spec["root"]["dag"]["tasks"]
    # tasks are named after the component (KFP's naming), shown with the node's label
    greet_task, count_task = tasks["write-greeting"], tasks["count-lines"]
    assert greet_task["taskInfo"]["name"] == "greet"
    params = greet_task["inputs"]["parameters"]
    assert params["greeting"]["runtimeValue"]["constant"] == "hi there"
    assert params["times"]["runtimeValue"]["constant"] == 3
    artifact = count_task["inputs"]["artifacts"]["text"]["taskOutputArtifact"]
    assert artifact == {"producerTask": "write-greeting", "outputArtifactKey": "greeting_file"}
    assert count_task["dependentTasks"] == ["write-greeting"]


def test_a_pipeline_parameter_feeds_a_catalog_input_in_kfp(
    directory_catalog: Path, tmp_path: Path
) -> None:
    pytest.importorskip("kfp", reason="install cube-lab[kfp] to test KFP compilation")
    from cube_lab.pipelines.kfp_compiler import plan_pipeline

    comps = by_name(catalogs.catalogs())
    raw = elyra_node("greet", comps["Write greeting"], greeting="x", times=1)
    raw["app_data"]["component_parameters"]["greeting"] = {"widget": "parameter", "value": "who"}
    params = [{"name": "who", "default_value": {"type": "String", "value": "world"}}]
    plan = plan_pipeline(elyra_format.load(write_pipeline(tmp_path, [raw], parameters=params)))
    assert plan.tasks[0].arguments == {"Greeting": ("param", "who"), "Times": ("value", 1)}


def test_a_plain_command_runs_locally_and_feeds_the_next_node(
    ws: Any, directory_catalog: Path, tmp_path: Path
) -> None:
    path = greet_and_count(tmp_path)
    runner, recorder = ws.pipelines.prepare(ALICE, path, path.parent)
    assert ws.pipelines.run_foreground(runner, recorder) == "succeeded", [
        ws.pipelines.tail_log(ALICE, runner.plan.run_id, n).text for n in ("greet", "count")
    ]
    assert "greetings 3" in ws.pipelines.tail_log(ALICE, runner.plan.run_id, "count").text


def test_a_component_needing_its_image_fails_the_node_not_the_validation(
    ws: Any, directory_catalog: Path, tmp_path: Path
) -> None:
    comps = by_name(catalogs.catalogs())
    path = write_pipeline(tmp_path, [elyra_node("train", comps["Train model"], epochs=2)])
    assert problems_of(path) == []
    runner, recorder = ws.pipelines.prepare(ALICE, path, path.parent)
    assert ws.pipelines.run_foreground(runner, recorder) == "failed"
    view = ws.pipelines.get_run(ALICE, runner.plan.run_id)
    error = view.nodes[0].error
    assert "cube-test-trainer-not-installed" in error and "example.org/trainer:1.0" in error
    assert "Kubeflow Pipelines" in error and "container runtime" in error


# -- REST ---------------------------------------------------------------------------------------


async def test_node_kinds_lists_catalog_components_with_their_inputs(
    api: Any, directory_catalog: Path
) -> None:
    add_catalog("offline", "url-catalog", "Offline", paths=["http://127.0.0.1:9/x.yaml"])
    code, body = await api("alice", "GET", "pipelines/node-kinds")
    assert code == 200
    listed = {k["display_name"]: k for k in body["node_kinds"] if k["name"] == "catalog"}
    greet = listed["Write greeting"]
    assert greet["op"] == "local-directory-catalog:" + sha12("write_greeting.yaml")
    component = greet["component"]
    assert component["catalog"] == "My components"
    assert component["default_parameters"] == {
        "greeting": {"widget": "string", "value": "hello"},
        "times": {"widget": "integer", "value": 2},
        "shout": {"widget": "boolean", "value": None},
    }
    assert [i["name"] for i in component["inputs"]] == ["Greeting", "Times", "Shout"]
    assert any(k["op"] == "execute-notebook-node" for k in body["node_kinds"])
    errors = {e["catalog"]: e for e in body["catalog_errors"]}
    assert "http://127.0.0.1:9/x.yaml" in errors["Offline"]["location"]


# -- differential: Elyra's own catalog and validator -----------------------------------------


@pytest.mark.skipif(
    not (ELYRA_BIN / "elyra-pipeline").exists(),
    reason="Elyra peer venv absent: python benchmarks/pipelines/setup_peers.py elyra",
)
def test_elyra_resolves_the_same_op_ids_and_gives_the_same_verdict(
    directory_catalog: Path, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "JUPYTER_DATA_DIR": str(tmp_path / "elyra-data"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "elyra-config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "elyra-runtime"),
        "HOME": str(tmp_path),
    }
    (tmp_path / "elyra-runtime").mkdir()

    def elyra(*args: str, cwd: Path = tmp_path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(ELYRA_BIN / args[0]), *args[1:]], cwd=cwd, env=env, capture_output=True,
            text=True, timeout=300,
        )  # fmt: skip

    made = elyra(
        "elyra-metadata", "create", "component-catalogs", "--schema_name=local-directory-catalog",
        "--name=mine", "--display_name=Mine", "--runtime_type=KUBEFLOW_PIPELINES",
        f"--paths=['{directory_catalog}']", "--include_subdirs=true",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    made = elyra(
        "elyra-metadata", "create", "runtimes", "--schema_name=kfp", "--name=kfp_test",
        "--display_name=kfp_test", "--api_endpoint=http://127.0.0.1:9",
        "--cos_endpoint=http://127.0.0.1:9", "--cos_bucket=bucket", "--cos_username=user",
        "--cos_password=password",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    good = greet_and_count(tmp_path)
    comps = by_name(catalogs.catalogs())
    bad = write_pipeline(
        tmp_path, [elyra_node("count", comps["Count lines"], label="x")], filename="bad.pipeline"
    )
    unknown = write_pipeline(
        tmp_path, [node("u", "local-directory-catalog:" + sha12("nope.yaml"))],
        filename="unknown.pipeline",
    )  # fmt: skip
    texts = {}
    for path, ok in ((good, True), (bad, False), (unknown, False)):
        out = elyra("elyra-pipeline", "validate", "--runtime-config", "kfp_test", path.name)
        texts[path.name] = text = out.stdout + out.stderr
        assert ("validation SUCCEEDED" in text) is ok, (path.name, text[-2000:])
        assert (problems_of(path) == []) is ok
    # the same findings, naming the same node and field
    assert "[Error][count][text]" in texts["bad.pipeline"]
    assert [(n, f) for n, f, _ in problems_of(bad)] == [("count", "text")]
    assert "[Error][u]" in texts["unknown.pipeline"] and "not found" in texts["unknown.pipeline"]
    assert [(n, f) for n, f, _ in problems_of(unknown)] == [("u", "op")]
