"""Compiling pipelines to KFP v2 IR: the IR loads back with the kfp SDK and keeps the DAG
and every node's settings; what the IR cannot hold is written down; bad input names the node.
"""

# No "from __future__ import annotations" here: kfp reads the real annotations of the
# pipeline function defined in a test below.
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pipeline_util import node, script, write_pipeline

from cube_lab.errors import CubeError, InvalidInput
from cube_lab.jobtemplates import TemplateCatalog
from cube_lab.pipelines import elyra_format
from cube_lab.pipelines.kfp_compiler import compile_pipeline, plan_pipeline, submit

kfp = pytest.importorskip("kfp", reason="install cube-lab[kfp] to test KFP compilation")
from google.protobuf import json_format  # noqa: E402  (kfp brings protobuf)
from kfp import compiler, components, dsl  # noqa: E402

PARAMETERS = [
    {"name": "lr", "default_value": {"type": "Float", "value": 0.1}},
    {"name": "epochs", "default_value": {"type": "Integer", "value": 3}},
    {"name": "dataset", "default_value": {"type": "String", "value": "iris"}},
    {"name": "verbose", "default_value": {"type": "Bool", "value": True}},
]


def diamond(folder: Path) -> list[dict[str, Any]]:
    """prep -> (explore notebook on NPUs, shell on a MIG slice) -> train template."""
    script(folder, "prep.py", "print('prep')")
    (folder / "nb").mkdir(exist_ok=True)
    (folder / "nb" / "explore.ipynb").write_text("{}")
    return [
        node(
            "n-prep",
            filename="prep.py",
            label="Prepare data",
            cpu=2,
            memory=4,
            gpu=1,
            gpu_vendor="nvidia.com/gpu",
            runtime_image="python:3.12-slim",
            env_vars=[{"env_var": "STAGE", "value": "prep"}],
            pipeline_parameters=["lr"],
            cube={"retries": 3, "retry_backoff_s": 5, "timeout_s": 89.5},
        ),
        node(
            "n-explore",
            "execute-notebook-node",
            upstream=("n-prep",),
            label="Explore",
            filename="nb/explore.ipynb",
            pipeline_parameters=["epochs"],
            cube={
                "accelerator": "huawei.com/Ascend910",
                "accelerator_count": 2,
                "cache": False,
                "parameters": {"alpha": 0.5, "tag": "{{ params.dataset }}-v1"},
            },
        ),
        node(
            "n-shell",
            "cube-lab:shell",
            upstream=("n-prep",),
            label="Count rows",
            command='wc -l "data/$dataset.csv"',
            pipeline_parameters=["dataset"],
            cube={"accelerator": "nvidia-mig-1g.10gb"},
        ),
        node(
            "n-train",
            "cube-lab:template",
            upstream=("n-explore", "n-shell"),
            label="Train",
            template="train-sklearn",
            parameters={"train_path": "data/{{ params.dataset }}.csv", "target": "species"},
        ),
    ]


def load(path: Path) -> Any:
    return elyra_format.load(path)


def compile_nodes(
    folder: Path,
    nodes: list[dict[str, Any]],
    parameters: list[dict[str, Any]] | None = None,
    out: str = "p.yaml",
    **kwargs: Any,
) -> Path:
    path = write_pipeline(folder, nodes, name="Iris flow", parameters=parameters)
    return compile_pipeline(load(path), TemplateCatalog(), folder / out, **kwargs)


class IR:
    """The compiled file as the kfp SDK loads it, with dict views for assertions."""

    def __init__(self, path: Path) -> None:
        self.component = components.load_component_from_file(str(path))
        self.spec = json_format.MessageToDict(self.component.pipeline_spec)
        self.platform = json_format.MessageToDict(self.component.platform_spec)
        tasks = self.spec["root"]["dag"]["tasks"]
        self.names = {t["taskInfo"]["name"]: name for name, t in tasks.items()}  # label -> task

    def task(self, label: str) -> dict[str, Any]:
        return self.spec["root"]["dag"]["tasks"][self.names[label]]

    def executor_label(self, label: str) -> str:
        ref = self.task(label)["componentRef"]["name"]
        return self.spec["components"][ref]["executorLabel"]

    def container(self, label: str) -> dict[str, Any]:
        executors = self.spec["deploymentSpec"]["executors"]
        return executors[self.executor_label(label)]["container"]

    def kubernetes(self, label: str) -> dict[str, Any]:
        executors = self.platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"]
        return executors.get(self.executor_label(label), {})

    def upstream(self, label: str) -> set[str]:
        by_task = {task: lbl for lbl, task in self.names.items()}
        return {by_task[t] for t in self.task(label).get("dependentTasks", [])}


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", [])}


def test_dag_and_node_settings_survive_loading_back(tmp_path: Path) -> None:
    ir = IR(compile_nodes(tmp_path, diamond(tmp_path), PARAMETERS))
    assert ir.component.name == "iris-flow"
    assert ir.spec["pipelineInfo"]["displayName"] == "Iris flow"

    assert set(ir.names) == {"Prepare data", "Explore", "Count rows", "Train"}
    assert ir.upstream("Prepare data") == set()
    assert ir.upstream("Explore") == {"Prepare data"}
    assert ir.upstream("Count rows") == {"Prepare data"}
    assert ir.upstream("Train") == {"Explore", "Count rows"}

    prep = ir.container("Prepare data")
    assert prep["image"] == "python:3.12-slim"
    assert prep["command"][:4] == ["sh", "-c", 'cd "$0" && exec "$@"', "/workspace"]
    assert prep["command"][-2:] == ["python", "prep.py"]
    assert env_of(prep) == {"STAGE": "prep", "CUBE_NODE_ID": "n-prep"}
    resources = prep["resources"]
    assert resources["resourceCpuRequest"] == resources["resourceCpuLimit"] == "2"
    assert resources["resourceMemoryRequest"] == resources["resourceMemoryLimit"] == "4G"
    assert resources["accelerator"]["resourceType"] == "nvidia.com/gpu"
    assert resources["accelerator"]["resourceCount"] == "1"
    retry = ir.task("Prepare data")["retryPolicy"]
    assert retry["maxRetryCount"] == 3 and retry["backoffDuration"] == "5s"
    assert ir.task("Prepare data")["cachingOptions"] == {"enableCache": True}
    k8s = ir.kubernetes("Prepare data")
    assert k8s["activeDeadlineSeconds"] == "90"  # whole seconds, rounded up
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in k8s[
        "tolerations"
    ]
    assert k8s["podMetadata"]["annotations"]["cube-lab.io/node-id"] == "n-prep"

    explore = ir.container("Explore")
    assert explore["command"][3] == "/workspace/nb"  # runs next to the notebook, as locally
    assert explore["resources"]["accelerator"]["resourceType"] == "huawei.com/Ascend910"
    assert explore["resources"]["accelerator"]["resourceCount"] == "2"
    assert "cpuLimit" not in explore["resources"]
    assert ir.task("Explore").get("cachingOptions", {}).get("enableCache") is not True
    assert ir.kubernetes("Explore")["nodeSelector"] == {
        "labels": {"accelerator": "huawei-Ascend910"}
    }
    assert "retryPolicy" not in ir.task("Explore")

    shell = ir.container("Count rows")
    assert shell["command"][-3:] == ["sh", "-c", 'wc -l "data/$dataset.csv"']
    assert shell["resources"]["accelerator"]["resourceType"] == "nvidia.com/mig-1g.10gb"

    train = ir.container("Train")
    assert train["image"] == "quay.io/jupyter/scipy-notebook:python-3.11"  # the template's
    assert train["command"][-2:] == ["python", "/opt/cube-lab/templates/train-sklearn/train.py"]


def test_pipeline_parameters_become_typed_inputs_passed_to_the_nodes_using_them(
    tmp_path: Path,
) -> None:
    ir = IR(compile_nodes(tmp_path, diamond(tmp_path), PARAMETERS))
    inputs = ir.spec["root"]["inputDefinitions"]["parameters"]
    assert inputs["lr"] == {
        "parameterType": "NUMBER_DOUBLE",
        "defaultValue": 0.1,
        "isOptional": True,
    }
    assert inputs["epochs"]["parameterType"] == "NUMBER_INTEGER"
    assert inputs["epochs"]["defaultValue"] == 3
    assert inputs["dataset"]["parameterType"] == "STRING"
    assert inputs["verbose"] == {
        "parameterType": "BOOLEAN",
        "defaultValue": True,
        "isOptional": True,
    }
    # the SDK's own view of the loaded pipeline's interface
    assert {n: i.type for n, i in ir.component.component_spec.inputs.items()} == {
        "lr": "Float",
        "epochs": "Integer",
        "dataset": "String",
        "verbose": "Boolean",
    }

    wired = {
        label: {
            n: p["componentInputParameter"]
            for n, p in ir.task(label).get("inputs", {}).get("parameters", {}).items()
        }
        for label in ir.names
    }
    assert wired == {
        "Prepare data": {"lr": "lr"},
        "Explore": {"epochs": "epochs", "dataset": "dataset"},
        "Count rows": {"dataset": "dataset"},
        "Train": {"dataset": "dataset"},
    }
    # Elyra hands parameters over as environment variables; KFP fills them in at run time.
    assert "lr={{$.inputs.parameters['lr']}}" in ir.container("Prepare data")["command"]
    assert "dataset={{$.inputs.parameters['dataset']}}" in ir.container("Count rows")["command"]
    notebook = ir.container("Explore")["command"]
    at = notebook.index("papermill")
    assert notebook[at : at + 3] == [
        "papermill",
        "explore.ipynb",
        "{{$.outputs.artifacts['executed_notebook'].path}}",
    ]
    assert notebook[at + 3 :] == [
        "-p",
        "epochs",
        "{{$.inputs.parameters['epochs']}}",
        "-p",
        "tag",
        "{{$.inputs.parameters['dataset']}}-v1",
        "-y",
        '{"alpha": 0.5}',
    ]
    outputs = ir.spec["components"][ir.task("Explore")["componentRef"]["name"]]
    assert "executed_notebook" in outputs["outputDefinitions"]["artifacts"]


def test_template_parameters_json_is_valid_once_kfp_fills_it_in(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    nodes = [
        node(
            "split",
            "cube-lab:template",
            template="split-data",
            parameters={
                "input_path": "data/{{ params.dataset }}.csv",
                "test_size": "{{ params.frac }}",
                "random_state": "{{ params.seed }}",
            },
        ),
    ]
    params = [
        *PARAMETERS,
        {"name": "frac", "default_value": {"type": "Float", "value": 0.3}},
        {"name": "seed", "default_value": {"type": "Integer", "value": 7}},
    ]
    ir = IR(compile_nodes(tmp_path, nodes, params))
    command = ir.container("split")["command"]
    raw = next(a for a in command if a.startswith("CUBE_PARAMS="))[len("CUBE_PARAMS=") :]
    filled = (
        raw.replace("{{$.inputs.parameters['dataset']}}", "iris")
        .replace("{{$.inputs.parameters['frac']}}", "0.25")
        .replace("{{$.inputs.parameters['seed']}}", "11")
    )
    values = json.loads(filled)
    assert values["input_path"] == "data/iris.csv"
    assert values["test_size"] == 0.25 and values["random_state"] == 11  # numbers, not strings


def test_compiled_commands_really_run(tmp_path: Path) -> None:
    """Run each container command here the way the pod would: KFP's placeholders filled in,
    the container's env set. Proves the cd/env wrapper, and that a parameter value reaches
    the node intact, quotes and all, without passing through a shell."""
    project = tmp_path / "project"
    (project / "jobs").mkdir(parents=True)
    script(
        project / "jobs",
        "show.py",
        "import os, json\nprint(json.dumps({'cwd': os.getcwd(), "
        "'dataset': os.environ['dataset'], 'stage': os.environ['STAGE'], "
        "'run': os.environ['CUBE_RUN_ID'], 'node': os.environ['CUBE_NODE_ID']}))\n",
    )
    nodes = [
        node(
            "py",
            filename="jobs/show.py",
            pipeline_parameters=["dataset"],
            env_vars=[{"env_var": "STAGE", "value": "{{ params.dataset }}!"}],
        ),
        node(
            "sh",
            "cube-lab:shell",
            upstream=("py",),
            pipeline_parameters=["dataset"],
            command='printf "%s|%s" "$dataset" "$(pwd)"',
        ),
    ]
    path = write_pipeline(project, nodes, parameters=PARAMETERS)
    ir = IR(compile_pipeline(load(path), None, tmp_path / "p.yaml", project_dir=str(project)))
    canary = tmp_path / "expanded"
    value = f'it\'s a "test"; $(touch {canary}) `touch {canary}`'
    fills = {"{{$.inputs.parameters['dataset']}}": value, "{{$.pipeline_job_uuid}}": "run-42"}
    outputs = {}
    for label in ("py", "sh"):
        container = ir.container(label)
        argv = container["command"]
        for placeholder, text in fills.items():
            argv = [a.replace(placeholder, text) for a in argv]
        env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        env.update(env_of(container))
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        outputs[label] = done.stdout
    shown = json.loads(outputs["py"])
    assert shown == {
        "cwd": str(project / "jobs"),
        "dataset": value,
        "stage": f"{value}!",
        "run": "run-42",
        "node": "py",
    }
    assert outputs["sh"] == f"{value}|{project}"
    assert not canary.exists()  # the value was never run through a shell


def test_compiling_twice_gives_identical_yaml(tmp_path: Path) -> None:
    nodes = diamond(tmp_path)
    first = compile_nodes(tmp_path, nodes, PARAMETERS, out="a.yaml").read_text()
    second = compile_nodes(tmp_path, nodes, PARAMETERS, out="b.yaml").read_text()
    assert first == second
    # and through an Elyra save/load round trip of the pipeline itself
    pipeline = load(tmp_path / "p.pipeline")
    elyra_format.save(pipeline, tmp_path / "again.pipeline")
    third = compile_pipeline(
        load(tmp_path / "again.pipeline"), TemplateCatalog(), tmp_path / "c.yaml"
    )
    assert third.read_text() == first
    # and from another interpreter with another hash seed (no set or dict order leaks in)
    code = (
        "import sys; from pathlib import Path; from cube_lab.jobtemplates import TemplateCatalog;"
        "from cube_lab.pipelines import elyra_format, kfp_compiler as k;"
        "k.compile_pipeline(elyra_format.load(Path(sys.argv[1])), TemplateCatalog(), "
        "Path(sys.argv[2]))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    args = [sys.executable, "-c", code, str(tmp_path / "p.pipeline"), str(tmp_path / "d.yaml")]
    subprocess.run(args, env=env, check=True, capture_output=True, timeout=60)
    assert (tmp_path / "d.yaml").read_text() == first


def test_loaded_ir_is_usable_as_a_component_of_another_pipeline(tmp_path: Path) -> None:
    ir = IR(compile_nodes(tmp_path, diamond(tmp_path), PARAMETERS))

    @dsl.pipeline(name="outer")
    def outer(lr: float = 0.01) -> None:
        ir.component(lr=lr, dataset="wine")

    compiler.Compiler().compile(outer, package_path=str(tmp_path / "outer.yaml"))
    nested = IR(tmp_path / "outer.yaml").spec
    inner = next(c for name, c in nested["components"].items() if "dag" in c)
    assert len(inner["dag"]["tasks"]) == 4


def test_hami_shares_the_ir_cannot_hold_are_recorded_not_dropped(tmp_path: Path) -> None:
    nodes = [
        node(
            "v",
            filename="v.py",
            label="vgpu",
            gpu=1,
            cube={
                "accelerator": "hami-vgpu",
                "accelerator_memory_mib": 4096,
                "accelerator_cores_percent": 30,
            },
        ),
    ]
    script(tmp_path, "v.py", "")
    ir = IR(compile_nodes(tmp_path, nodes))
    accelerator = ir.container("vgpu")["resources"]["accelerator"]
    assert (accelerator["resourceType"], accelerator["resourceCount"]) == ("nvidia.com/gpu", "1")
    annotations = ir.kubernetes("vgpu")["podMetadata"]["annotations"]
    assert json.loads(annotations["cube-lab.io/extra-limits"]) == {
        "nvidia.com/gpumem": "4096",
        "nvidia.com/gpucores": "30",
    }
    assert "nvidia.com/gpumem" in ir.spec["pipelineInfo"]["description"]
    plan = plan_pipeline(load(tmp_path / "p.pipeline"), None)
    assert any("nvidia.com/gpucores" in note for note in plan.notes)


def test_elyra_kubernetes_fields_reach_the_pod(tmp_path: Path) -> None:
    script(tmp_path, "k.py", "")
    nodes = [
        node(
            "k",
            filename="k.py",
            kubernetes_tolerations=[
                {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
            ],
            kubernetes_pod_labels=[{"key": "team", "value": "vision"}],
            kubernetes_pod_annotations=[{"key": "owner", "value": "alice"}],
            mounted_volumes=[{"path": "/data", "pvc_name": "data"}],
        ),
    ]
    ir = IR(compile_nodes(tmp_path, nodes))
    k8s = ir.kubernetes("k")
    assert k8s["tolerations"] == [
        {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
    ]
    assert k8s["podMetadata"]["labels"] == {"team": "vision"}
    assert k8s["podMetadata"]["annotations"]["owner"] == "alice"
    assert "mounted_volumes is not compiled" in ir.spec["pipelineInfo"]["description"]


def test_every_step_pod_carries_the_pod_labels(tmp_path: Path) -> None:
    script(tmp_path, "k.py", "")
    nodes = [
        node(
            "n-1",
            filename="k.py",
            label="Step one",
            # a node cannot claim another project: cube-lab's labels win
            kubernetes_pod_labels=[
                {"key": "team", "value": "vision"},
                {"key": "cube-lab.io/project", "value": "someone-elses"},
            ],
        ),
        node("n 2/weird id", filename="k.py", label="Step two", upstream=("n-1",)),
    ]
    ir = IR(compile_nodes(tmp_path, nodes, identity=("Vision Team", "alice")))
    one = ir.kubernetes("Step one")["podMetadata"]["labels"]
    assert one == {
        "team": "vision",
        "cube-lab.io/project": "x---56ision-20-54eam",
        "cube-lab.io/owner": "alice",
        "cube-lab.io/kind": "run-node",
        "cube-lab.io/pipeline": "iris-flow",
        "cube-lab.io/node-id": "n-1",
    }
    two = ir.kubernetes("Step two")["podMetadata"]["labels"]
    assert two["cube-lab.io/node-id"].startswith("n-2-weird-id-")  # a label value, hashed
    assert ir.kubernetes("Step two")["podMetadata"]["annotations"]["cube-lab.io/node-id"] == (
        "n 2/weird id"
    )
    # without an identity (a library call) nothing is claimed
    bare = IR(compile_nodes(tmp_path, nodes, out="bare.yaml"))
    assert "cube-lab.io/kind" not in bare.kubernetes("Step one")["podMetadata"]["labels"]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (
            node("x", filename="x.py", label="Fit", gpu=1, gpu_vendor="tpu.example.com/v4"),
            "node 'Fit' (x): unknown accelerator type 'tpu.example.com/v4'",
        ),
        (
            node(
                "x",
                filename="x.py",
                label="Fit",
                cube={"accelerator": "nvidia-gpu", "accelerator_count": -2},
            ),
            "node 'Fit' (x): the NVIDIA GPU count must be a whole number",
        ),
        (
            node("x", "cube-lab:pytorchjob", label="Fit"),
            "node 'Fit' (x): node type 'cube-lab:pytorchjob' cannot be compiled",
        ),
        (node("x", filename="/etc/passwd.py", label="Fit"), "node 'Fit' (x): filename"),
        (node("x", filename="../up.py", label="Fit"), "leaves the pipeline's folder"),
        (node("x", "execute-notebook-node", label="Fit"), "node 'Fit' (x): no filename given"),
        (node("x", "cube-lab:shell", label="Fit"), "node 'Fit' (x): no command given"),
        (node("x", filename="x.py", label="Fit", cpu="lots"), "node 'Fit' (x): KFP refused"),
        (
            node("x", filename="x.py", label="Fit", pipeline_parameters=["nope"]),
            "node 'Fit' (x): it uses unknown pipeline parameter 'nope'",
        ),
        (
            node(
                "x",
                filename="x.py",
                label="Fit",
                env_vars=[{"env_var": "A", "value": "{{ nodes.prep.values.n }}"}],
            ),
            "node 'Fit' (x): env var 'A' uses a value published by another node",
        ),
        (
            node("x", "cube-lab:template", label="Fit", template="no-such-template"),
            "node 'Fit' (x): no job template named 'no-such-template'",
        ),
        (
            node(
                "x",
                "cube-lab:template",
                label="Fit",
                template="split-data",
                parameters={"test_size": 2},
            ),
            "node 'Fit' (x): ",
        ),
    ],
)
def test_bad_input_names_the_node(tmp_path: Path, bad: dict[str, Any], message: str) -> None:
    path = write_pipeline(tmp_path, [bad], parameters=PARAMETERS)
    with pytest.raises(InvalidInput) as info:
        compile_pipeline(load(path), TemplateCatalog(), tmp_path / "out.yaml")
    assert message in info.value.error
    assert not (tmp_path / "out.yaml").exists()  # nothing half-written
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".yaml"] == []


def test_a_cycle_is_refused(tmp_path: Path) -> None:
    nodes = [
        node("a", filename="a.py", upstream=("b",)),
        node("b", filename="b.py", upstream=("a",)),
    ]
    with pytest.raises(InvalidInput, match="cycle"):
        compile_pipeline(load(write_pipeline(tmp_path, nodes)), None, tmp_path / "o.yaml")


def test_missing_kfp_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_pipeline(tmp_path, [node("a", filename="a.py")])
    for name in [m for m in sys.modules if m == "kfp" or m.startswith("kfp.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "kfp", None)  # "import kfp" now raises ImportError
    with pytest.raises(InvalidInput) as info:
        compile_pipeline(load(path), None, tmp_path / "o.yaml")
    assert info.value.error == "the kfp package is not installed"
    assert info.value.detail == "pip install 'cube-lab[kfp]'"


# -- submit: no KFP server can be reached here, so only what we hand the client is checked.


class FakeClient:
    calls: list[dict[str, Any]] = []

    def __init__(self, host: str) -> None:
        self.host = host

    def create_run_from_pipeline_package(self, pipeline_file: str, **kwargs: Any) -> Any:
        FakeClient.calls.append({"host": self.host, "file": pipeline_file, **kwargs})
        if self.host.endswith("down"):
            raise ConnectionError("connection refused")
        return type("Result", (), {"run_id": "run-123"})()


def test_submit_hands_the_package_and_arguments_to_the_kfp_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ir_path = compile_nodes(tmp_path, diamond(tmp_path), PARAMETERS)
    monkeypatch.setattr(kfp, "Client", FakeClient)
    FakeClient.calls = []
    run_id = submit(ir_path, "http://kfp.example", run_name="try-1", params={"lr": 0.5})
    assert run_id == "run-123"
    assert FakeClient.calls == [
        {
            "host": "http://kfp.example",
            "file": str(ir_path),
            "arguments": {"lr": 0.5},
            "run_name": "try-1",
            "experiment_name": None,
            "namespace": None,
        }
    ]

    with pytest.raises(InvalidInput, match="unknown pipeline parameters: depth") as info:
        submit(ir_path, "http://kfp.example", params={"depth": 3})
    assert "dataset, epochs, lr, verbose" in info.value.detail
    with pytest.raises(CubeError, match="did not accept the run"):
        submit(ir_path, "http://kfp.down")
    with pytest.raises(InvalidInput, match="not found"):
        submit(tmp_path / "missing.yaml", "http://kfp.example")
