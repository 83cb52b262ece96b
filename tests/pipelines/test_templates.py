"""A pipeline made of the shipped job templates, run end to end on iris by the runner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pipeline_util import node, write_pipeline
from sklearn.datasets import load_iris

from cube_lab.identity import Caller
from cube_lab.pipelines.validation import PipelineInvalid

ALICE = Caller("alice")
T = "cube-lab:template"


def test_iris_pipeline_from_templates(ws: Any, tmp_path: Path) -> None:
    (tmp_path / "raw").mkdir()
    load_iris(as_frame=True).frame.to_csv(tmp_path / "raw" / "iris.csv", index=False)
    nodes = [
        node(
            "read",
            T,
            template="read-data",
            label="read",
            parameters={"input_path": "raw/iris.csv", "output_path": "data/iris.csv"},
        ),
        node(
            "split",
            T,
            upstream=("read",),
            template="split-data",
            label="split",
            parameters={"input_path": "data/iris.csv", "stratify": "target"},
        ),
        node(
            "train",
            T,
            upstream=("split",),
            template="train-sklearn",
            label="train",
            parameters={
                "train_path": "data/train.csv",
                "target": "target",
                "estimator": "random_forest",
                "hyperparameters": {"n_estimators": 20, "random_state": 0},
            },
        ),
        node(
            "evaluate",
            T,
            upstream=("train",),
            template="evaluate",
            label="evaluate",
            parameters={"model_path": "models/model.joblib", "test_path": "data/test.csv"},
        ),
        node(
            "register",
            T,
            upstream=("evaluate",),
            template="register-model",
            label="register",
            parameters={
                "model_path": "models/model.joblib",
                "name": "iris-pipeline",
                "metrics_path": "metrics/metrics.json",
            },
        ),
        node(
            "predict",
            T,
            upstream=("train",),
            template="batch-predict",
            label="predict",
            parameters={"model_path": "models/model.joblib", "input_path": "data/test.csv"},
        ),
        node(
            "report",
            "cube-lab:shell",
            upstream=("evaluate", "register"),
            label="report",
            command="echo accuracy=$ACC version=$VERSION",
            env_vars=[
                {"env_var": "ACC", "value": "{{ nodes.evaluate.values.accuracy }}"},
                {"env_var": "VERSION", "value": "{{ nodes.register.values.version }}"},
            ],
        ),
    ]
    path = write_pipeline(tmp_path, nodes, name="iris")
    runner, recorder = ws.pipelines.prepare(ALICE, path, tmp_path, parallelism=2)
    status = ws.pipelines.run_foreground(runner, recorder)
    run = ws.pipelines.get_run(ALICE, runner.plan.run_id)
    logs = {n.id: ws.pipelines.tail_log(ALICE, run.id, n.id).text for n in run.nodes}
    assert status == "succeeded", logs
    values = {n.id: n.values for n in run.nodes}
    assert values["evaluate"]["accuracy"] > 0.8
    assert f"accuracy={values['evaluate']['accuracy']} version=1" in logs["report"]
    kinds = {r.kind for r in ws.pipelines.results(ALICE, run.id, "evaluate")}
    assert {"image", "json"} <= kinds  # the confusion matrix and the metrics
    model = ws.registry.get_model(ALICE, "alice", "iris-pipeline")
    assert model.versions[0].lineage.pipeline_run_id == run.id
    assert (tmp_path / "predictions" / "predictions.csv").exists()


@pytest.mark.parametrize(
    "parameters, fragment",
    [
        ({"input_path": "x.csv", "test_size": 3}, "test_size"),
        ({"input_path": "x.csv", "train_path": "../../escape.csv"}, "points outside the project"),
        ({}, "input_path"),
    ],
)
def test_template_parameters_are_checked_before_running(
    ws: Any, tmp_path: Path, parameters: dict[str, Any], fragment: str
) -> None:
    path = write_pipeline(tmp_path, [node("s", T, template="split-data", parameters=parameters)])
    with pytest.raises(PipelineInvalid) as err:
        ws.pipelines.prepare(ALICE, path, tmp_path)
    problem = err.value.problems[0]
    assert problem.node_id == "s" and problem.field.startswith("parameters")
    assert fragment in problem.message or fragment in problem.field
