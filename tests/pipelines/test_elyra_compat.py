"""Elyra pipelines: every version Elyra migrates, and Elyra's validator's verdicts, on cube-lab.

The fixtures in tests/data/elyra were written for these tests (no Elyra file is copied).
The differential test runs the same files through Elyra 4.1.1's own validator when its venv
exists (``python benchmarks/pipelines/setup_peers.py elyra``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cube_lab.pipelines import elyra_format, validation
from cube_lab.pipelines.nodekinds import NodeContext

DATA = Path(__file__).parents[1] / "data" / "elyra"
ELYRA_BIN = Path(__file__).parents[2] / "benchmarks" / ".peers" / "elyra" / "bin" / "elyra-pipeline"


def _problems(name: str) -> list[validation.Problem]:
    path = DATA / name
    pipeline = elyra_format.load(path)
    return validation.check(pipeline, NodeContext(path.parent, DATA, None))


# -- old versions, one Elyra step per version ---------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2])
def test_oldest_versions_become_notebook_nodes_with_relative_files(version: int) -> None:
    pipeline = elyra_format.load(DATA / f"v{version}.pipeline")
    assert pipeline.migrated_from == version
    (n,) = pipeline.nodes
    assert n.op == "execute-notebook-node" and n.label == "hello"
    assert n.params["filename"] == "hello.ipynb"  # v2 keeps only the file name
    assert n.params["runtime_image"] == "tensorflow/tensorflow:2.0.0-py3"
    assert n.params["env_vars"] == [{"env_var": "FOO", "value": "bar"}]
    assert _problems(f"v{version}.pipeline") == []
    doc = elyra_format.to_document(pipeline)
    assert doc["pipelines"][0]["app_data"]["version"] == 8
    if version == 0:
        app = doc["pipelines"][0]["app_data"]
        assert app["name"] == "from elyra 0.x" and "title" not in app and "export" not in app
        assert pipeline.name == "from elyra 0.x"
        assert n.params["dependencies"] == ["data.csv"]
        assert doc["pipelines"][0]["nodes"][0]["type"] == "execution_node"


def test_elyra_2x_file_version_3_moves_settings_and_labels() -> None:
    pipeline = elyra_format.load(DATA / "v3.pipeline")
    assert pipeline.migrated_from == 3
    nb, py = pipeline.nodes
    assert (nb.label, py.label) == ("notebook", "script")
    assert nb.params["env_vars"] == [
        {"env_var": "FOO", "value": "bar"},
        {"env_var": "EMPTY", "value": ""},
    ]
    assert py.params["cpu"] == 1 and py.params["memory"] == 2 and py.upstream == ["n1"]
    doc = elyra_format.to_document(pipeline)
    app = doc["pipelines"][0]["app_data"]
    assert app["runtime_type"] == "KUBEFLOW_PIPELINES" and "runtime" not in app  # v6 step
    raw = doc["pipelines"][0]["nodes"][0]["app_data"]
    assert "filename" not in raw and raw["ui_data"]["label"] == "notebook"
    assert _problems("v3.pipeline") == []


def test_version_4_to_8() -> None:
    pipeline = elyra_format.load(DATA / "v4.pipeline")
    assert pipeline.migrated_from == 4
    assert pipeline.nodes[0].params["env_vars"] == [{"env_var": "FOO", "value": "from v4"}]
    app = elyra_format.to_document(pipeline)["pipelines"][0]["app_data"]
    assert app["runtime_type"] == "APACHE_AIRFLOW"


def test_catalog_ops_are_renamed_as_elyra_does() -> None:
    doc = json.loads((DATA / "v4.pipeline").read_text())
    doc["pipelines"][0]["nodes"][0]["op"] = "run-notebook-using-papermill"
    doc["pipelines"][0]["nodes"][0]["app_data"]["component_source"] = "kfp/component.yaml"
    raw = elyra_format.to_document(elyra_format.from_document(doc))["pipelines"][0]["nodes"][0]
    assert raw["op"] == "elyra-kfp-examples-catalog:61e6f4141f65"
    assert json.loads(raw["app_data"]["component_source"]) == {
        "catalog_type": "elyra-kfp-examples-catalog",
        "component_ref": {"component-id": "component.yaml"},
    }


def test_v7_to_v8_converts_defaults_and_nodes() -> None:
    pipeline = elyra_format.load(DATA / "v7_defaults.pipeline")
    d = pipeline.defaults
    assert d["env_vars"] == [
        {"env_var": "FOO", "value": "from defaults"},
        {"env_var": "BAR", "value": "x=y"},
    ]
    assert d["mounted_volumes"] == [{"path": "/mnt/shared", "pvc_name": "shared-pvc"}]
    assert d["kubernetes_secrets"] == [{"env_var": "API_KEY", "name": "api-secret", "key": "key"}]
    assert d["kubernetes_tolerations"] == [
        {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoExecute"}
    ]
    assert d["kubernetes_pod_annotations"] == [{"key": "owner", "value": "cube"}]
    p = pipeline.nodes[0].params
    assert p["env_vars"] == [{"env_var": "NODE_ONLY", "value": "1"}]
    assert p["mounted_volumes"] == [{"path": "/mnt/data", "pvc_name": "data-pvc"}]
    assert p["kubernetes_secrets"] == [
        {"env_var": "DB_PASS", "name": "db-secret", "key": "password"}
    ]
    assert p["kubernetes_tolerations"] == [
        {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]
    assert _problems("v7_defaults.pipeline") == []


def test_v7_default_env_vars_reach_the_node() -> None:
    """The defaults' FOO=... used to be dropped (the node saw FOO=None)."""
    from cube_lab.pipelines.kfp_compiler import plan_pipeline

    (task,) = plan_pipeline(elyra_format.load(DATA / "v7_defaults.pipeline")).tasks
    assert task.env["FOO"] == "from defaults" and task.env["BAR"] == "x=y"
    assert task.env["NODE_ONLY"] == "1"
    assert {"owner": "cube", "team": "ml"}.items() <= task.pod_annotations.items()


# -- Elyra's validator's refusals ----------------------------------------------------------

REFUSED = {
    "invalid_zero_nodes.pipeline": (None, "nodes"),
    "invalid_no_version.pipeline": (None, "app_data.version"),
    "invalid_primary.pipeline": (None, "primary_pipeline"),
    "invalid_schema_version.pipeline": (None, "version"),
    "invalid_env_space.pipeline": ("n1", "env_vars[0]"),
    "invalid_env_empty.pipeline": ("n1", "env_vars[0]"),
    "invalid_param_class.pipeline": (None, "pipeline_parameters[0].name"),
    "invalid_param_2param.pipeline": (None, "pipeline_parameters[0].name"),
    "invalid_param_undefined.pipeline": ("n1", "pipeline_parameters"),
    "invalid_param_required.pipeline": (None, "pipeline_parameters[0].default_value"),
    "invalid_missing_dependency.pipeline": ("n1", "dependencies[0]"),
    "invalid_runtime_image.pipeline": ("n1", "runtime_image"),
    "invalid_negative_memory.pipeline": ("n1", "memory"),
}
ACCEPTED = [
    "valid_v8.pipeline",
    "valid_r_node.pipeline",
    "valid_notebook_any_suffix.pipeline",
    "nested/parent_path.pipeline",
]


@pytest.mark.parametrize("name, where", sorted(REFUSED.items()))
def test_refused_naming_node_and_field(name: str, where: tuple[str | None, str]) -> None:
    found = [(p.node_id, p.field) for p in _problems(name)]
    assert found == [where]


@pytest.mark.parametrize("name", ACCEPTED)
def test_accepted_as_elyra_accepts(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no Rscript: the R node still validates
    assert _problems(name) == []


def test_required_parameter_given_for_the_run_is_fine() -> None:
    path = DATA / "invalid_param_required.pipeline"
    pipeline = elyra_format.load(path)
    assert validation.check(pipeline, NodeContext(DATA, DATA, None), {"lr": "0.1"}) == []


def test_negative_memory_is_refused_by_the_kfp_planner_too() -> None:
    from cube_lab.errors import InvalidInput
    from cube_lab.pipelines.kfp_compiler import _Planner

    node = elyra_format.load(DATA / "invalid_negative_memory.pipeline").nodes[0]
    with pytest.raises(InvalidInput, match="memory must be greater than zero"):
        _Planner._quantity(node, -2, "memory", "G")


def test_r_node_without_rscript_fails_when_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    from cube_lab.errors import CubeError
    from cube_lab.pipelines.nodekinds import kind_for

    monkeypatch.setattr(shutil, "which", lambda _name: None)
    node = elyra_format.load(DATA / "valid_r_node.pipeline").nodes[0]
    with pytest.raises(CubeError, match="Rscript"):
        kind_for(node.op).command(node, NodeContext(DATA, DATA, None))


# -- differential: the same files through Elyra's own validator ----------------------------


def _elyra_errors(name: str, tmp_path: Path) -> list[str]:
    """``elyra-pipeline validate`` on a copy of the fixtures (the root is the folder it runs in,
    node paths resolve relative to the pipeline file): its error lines, [] when it passed."""
    root = tmp_path / "root"
    if not root.exists():
        shutil.copytree(DATA, root)
    env = {
        **os.environ,
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "HOME": str(tmp_path),
    }
    out = subprocess.run(
        [str(ELYRA_BIN), "validate", name],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    text = out.stdout + out.stderr
    if out.returncode == 0:
        assert "validation SUCCEEDED" in text, text[-2000:]
        return []
    lines = [ln.strip() for ln in text.splitlines() if "Error" in ln]
    return lines or [text.strip()[-500:]]


# Elyra's local runtime does not check images and resources (only its KFP/Airflow runtimes do);
# cube-lab checks them always, because the same file may be compiled for KFP.
_ELYRA_LOCAL_SKIPS = {"invalid_runtime_image.pipeline", "invalid_negative_memory.pipeline"}


@pytest.mark.skipif(
    not ELYRA_BIN.exists(),
    reason="Elyra peer venv absent: python benchmarks/pipelines/setup_peers.py elyra",
)
@pytest.mark.parametrize("name", sorted(set(REFUSED) | set(ACCEPTED)))
def test_elyra_gives_the_same_verdict(name: str, tmp_path: Path) -> None:
    errors = _elyra_errors(name, tmp_path)
    if name in ACCEPTED:
        assert errors == [], errors
    elif name in _ELYRA_LOCAL_SKIPS:
        assert errors == []  # the documented difference: cube-lab refuses, Elyra local does not
    else:
        assert errors, f"Elyra accepted {name}"


@pytest.mark.skipif(
    not ELYRA_BIN.exists(),
    reason="Elyra peer venv absent: python benchmarks/pipelines/setup_peers.py elyra",
)
@pytest.mark.parametrize("version", [4, 7])
def test_elyra_validator_wants_old_versions_migrated(version: int, tmp_path: Path) -> None:
    """Elyra's server refuses versions < 8 until its editor migrates them; cube-lab migrates
    on load, so the migrated file is what both must accept."""
    name = {4: "v4.pipeline", 7: "v7_defaults.pipeline"}[version]
    errors = _elyra_errors(name, tmp_path)
    assert any("needs to be migrated" in e for e in errors), errors
    migrated = tmp_path / "root" / "migrated.pipeline"
    migrated.write_text(elyra_format.dumps(elyra_format.load(DATA / name)))
    assert _elyra_errors("migrated.pipeline", tmp_path) == []


# -- supernodes: Elyra's sub-pipelines, flattened into one DAG ------------------------------

SUPER = DATA / "supernode"
FLOW_DAG = {
    "prepare": [],
    "train": ["prepare"],
    "evaluate": ["train"],
    "report": ["evaluate"],
    "publish": ["report"],
}


def _dag(pipeline: Any) -> dict[str, list[str]]:
    return {n.id: n.upstream for n in pipeline.nodes}


def _structure(doc: dict[str, Any]) -> list[Any]:
    """What a save must keep: every entry of pipelines[], its nodes, ports, links, bindings."""
    keep = ("id", "type", "subflow_ref", "inputs", "outputs")
    return [(p["id"], [{k: n.get(k) for k in keep} for n in p["nodes"]]) for p in doc["pipelines"]]


def test_nested_supernodes_flatten_into_one_dag() -> None:
    """Links into a supernode reach the inner nodes its port's binding feeds; links from it
    leave from the inner nodes behind its exit binding, through two levels of supernodes."""
    pipeline = elyra_format.load(SUPER / "flow.pipeline")
    assert _dag(pipeline) == FLOW_DAG
    assert validation.check(pipeline, NodeContext(SUPER, DATA, None)) == []


def test_supernode_ports_without_bindings_read_as_elyras_parser_reads_them() -> None:
    """``<inner id>_inPort`` / ``<inner id>_outPort`` port ids and no binding nodes."""
    pipeline = elyra_format.load(SUPER / "port_ids.pipeline")
    assert _dag(pipeline) == {"prepare": [], "publish": ["train"], "train": ["prepare"]}
    doc = elyra_format.to_document(pipeline)
    assert _structure(doc) == _structure(json.loads((SUPER / "port_ids.pipeline").read_text()))


def test_saving_keeps_the_supernodes_as_written() -> None:
    raw = json.loads((SUPER / "flow.pipeline").read_text())
    pipeline = elyra_format.load(SUPER / "flow.pipeline")
    doc = elyra_format.to_document(pipeline)
    assert _structure(doc) == _structure(raw)
    assert _dag(elyra_format.loads(elyra_format.dumps(pipeline))) == FLOW_DAG

    # An edit to an inner node lands in its own entry of pipelines[]; nothing else moves.
    pipeline.node("evaluate").params["env_vars"] = [{"env_var": "SEED", "value": "7"}]
    pipeline.node("publish").upstream.append("prepare")  # a new link at the same level
    doc = elyra_format.to_document(pipeline)
    inner = next(n for n in doc["pipelines"][2]["nodes"] if n["id"] == "evaluate")
    assert inner["app_data"]["component_parameters"]["env_vars"] == [
        {"env_var": "SEED", "value": "7"}
    ]
    assert [p["id"] for p in doc["pipelines"]] == ["main", "sub-train", "sub-eval"]
    assert _structure(doc)[1:] == _structure(raw)[1:]
    reread = elyra_format.from_document(doc)
    assert _dag(reread) == {**FLOW_DAG, "publish": ["report", "prepare"]}

    # A removed inner node leaves its entry; the supernode and its bindings stay.
    del reread.nodes[[n.id for n in reread.nodes].index("report")]
    doc = elyra_format.to_document(reread)
    assert [n["id"] for n in doc["pipelines"][2]["nodes"]] == [
        "bind-eval-in",
        "evaluate",
        "bind-eval-out",
    ]


def test_a_new_link_across_a_supernode_boundary_is_refused_on_save() -> None:
    pipeline = elyra_format.load(SUPER / "flow.pipeline")
    pipeline.node("evaluate").upstream.append("prepare")
    with pytest.raises(elyra_format.PipelineFormatError, match="crosses a supernode boundary"):
        elyra_format.to_document(pipeline)


def test_inner_ids_stay_unique() -> None:
    """An inner node whose id an outer node already has is known as <supernode>.<id>."""
    doc = json.loads((SUPER / "flow.pipeline").read_text())
    main = doc["pipelines"][0]["nodes"]
    main[0]["id"] = "train"  # the outer "prepare" now shares the inner "train"'s id
    main[1]["inputs"][0]["links"][0]["node_id_ref"] = "train"
    pipeline = elyra_format.from_document(doc)
    assert _dag(pipeline) == {
        "train": [],
        "publish": ["report"],
        "group-train.train": ["train"],
        "evaluate": ["group-train.train"],
        "report": ["evaluate"],
    }
    assert validation.check(pipeline, NodeContext(SUPER, DATA, None)) == []
    assert _structure(elyra_format.to_document(pipeline)) == _structure(doc)


def test_a_problem_inside_a_supernode_names_the_inner_node() -> None:
    path = SUPER / "invalid_inner_env.pipeline"
    problems = validation.check(elyra_format.load(path), NodeContext(SUPER, DATA, None))
    assert [(p.node_id, p.field) for p in problems] == [("evaluate", "env_vars[0]")]
    assert problems[0].node_label == "Train group > Evaluate group > evaluate"
    with pytest.raises(validation.PipelineInvalid, match="Train group > Evaluate group > evaluate"):
        validation.validate(elyra_format.load(path), NodeContext(SUPER, DATA, None))


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["pipelines"].pop(2), "refers to pipeline 'sub-eval'"),
        (
            lambda d: d["pipelines"][2]["nodes"][1].update(
                type="super_node", subflow_ref={"pipeline_id_ref": "sub-train"}
            ),
            "contains itself",
        ),
    ],
)
def test_broken_supernodes_are_named(edit: Any, message: str) -> None:
    doc = json.loads((SUPER / "flow.pipeline").read_text())
    edit(doc)
    with pytest.raises(elyra_format.PipelineFormatError, match=message):
        elyra_format.from_document(doc)


def test_a_pipeline_with_supernodes_runs_locally_in_order(ws: Any, tmp_path: Path) -> None:
    """A real run: each node runs after its upstream, and files cross the supernode ports."""
    from cube_lab.identity import Caller

    folder = tmp_path / "project"
    shutil.copytree(SUPER, folder)
    alice = Caller("alice")
    runner, recorder = ws.pipelines.prepare(alice, folder / "flow.pipeline", folder)
    status = ws.pipelines.run_foreground(runner, recorder)
    view = ws.pipelines.get_run(alice, runner.plan.run_id)
    assert status == "succeeded", view.error
    assert {n.id: n.status for n in view.nodes} == dict.fromkeys(FLOW_DAG, "succeeded")
    assert (folder / "order.txt").read_text().split() == [
        "prepare",
        "train",
        "evaluate",
        "report",
        "publish",
    ]
    log = ws.pipelines.tail_log(alice, view.id, "publish").text
    assert "published report: accuracy=0.9 for model trained on rows=3" in log


def test_a_pipeline_with_supernodes_compiles_to_kfp(tmp_path: Path) -> None:
    pytest.importorskip("kfp", reason="install cube-lab[kfp] to test KFP compilation")
    import yaml

    from cube_lab.pipelines.kfp_compiler import compile_pipeline

    out = compile_pipeline(elyra_format.load(SUPER / "flow.pipeline"), None, tmp_path / "p.yaml")
    spec = next(yaml.safe_load_all(out.read_text()))
    tasks = spec["root"]["dag"]["tasks"]
    label = {name: t["taskInfo"]["name"] for name, t in tasks.items()}
    edges = {
        label[n]: sorted(label[d] for d in t.get("dependentTasks", [])) for n, t in tasks.items()
    }
    assert edges == FLOW_DAG


# The differential: Elyra's validator checks supernode pipelines only for a runtime (KFP here;
# its local runtime refuses every node without a generic op, supernodes and bindings too).


@pytest.fixture(scope="module")
def elyra_kfp_root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    base = tmp_path_factory.mktemp("elyra-kfp")
    shutil.copytree(DATA, base / "root")
    env = {
        **os.environ,
        "JUPYTER_DATA_DIR": str(base / "data"),
        "JUPYTER_CONFIG_DIR": str(base / "config"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "HOME": str(base),
    }
    (base / "runtime").mkdir()
    (base / "data" / "metadata" / "component-catalogs").mkdir(parents=True)
    subprocess.run(
        [
            str(ELYRA_BIN.with_name("elyra-metadata")),
            "create",
            "runtimes",
            "--schema_name=kfp",
            "--name=kfp_test",
            "--display_name=kfp_test",
            "--api_endpoint=http://127.0.0.1:9",
            "--cos_endpoint=http://127.0.0.1:9",
            "--cos_bucket=bucket",
            "--cos_username=user",
            "--cos_password=password",
        ],
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return base / "root", env


def _elyra_kfp_messages(name: str, root: tuple[Path, dict[str, str]]) -> tuple[bool, list[str]]:
    folder, env = root
    out = subprocess.run(
        [str(ELYRA_BIN), "validate", "--runtime-config", "kfp_test", name],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    text = out.stdout + out.stderr
    assert "validation SUCCEEDED" in text or "validation FAILED" in text, text[-2000:]
    return "validation SUCCEEDED" in text, [ln for ln in text.splitlines() if "[Error]" in ln]


@pytest.mark.skipif(
    not ELYRA_BIN.exists(),
    reason="Elyra peer venv absent: python benchmarks/pipelines/setup_peers.py elyra",
)
@pytest.mark.parametrize(
    "name, refused",
    [
        ("flow.pipeline", None),
        ("port_ids.pipeline", None),
        ("invalid_inner_env.pipeline", ("evaluate", "env_vars")),
    ],
)
def test_elyra_gives_the_same_verdict_on_supernodes(
    name: str, refused: tuple[str, str] | None, elyra_kfp_root: tuple[Path, dict[str, str]]
) -> None:
    ok, errors = _elyra_kfp_messages(f"supernode/{name}", elyra_kfp_root)
    mine = [
        (p.node_id, p.field)
        for p in validation.check(elyra_format.load(SUPER / name), NodeContext(SUPER, DATA, None))
    ]
    if refused is None:
        assert ok and errors == [] and mine == []
    else:
        node_id, field = refused
        assert not ok and any(f"[{node_id}][{field}]" in e for e in errors), errors
        assert [(n, f.split("[")[0]) for n, f in mine] == [refused]
