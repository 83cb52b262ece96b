"""The six shipped templates chained on iris, ending in the model registry, as a pipeline would."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from sklearn.datasets import load_iris

import cube_lab
from cube_lab.config import Settings
from cube_lab.identity import Caller
from cube_lab.jobtemplates import TemplateCatalog, TemplateRun, run_template
from cube_lab.workspace import Workspace

CATALOG = TemplateCatalog([Path(cube_lab.__file__).resolve().parents[1] / "templates"])


def run_node(
    name: str,
    params: dict,
    cwd: Path,
    env: dict[str, str] | None = None,
    run_id: str | None = None,
) -> TemplateRun:
    result = run_template(CATALOG.get(name), params, cwd, env=env, run_id=run_id, timeout=120)
    assert result.ok, f"{name} failed:\n{result.stdout}\n{result.stderr}"
    return result


def test_read_split_train_evaluate_register_predict(tmp_path: Path) -> None:
    pipeline = tmp_path / "pipeline"
    (pipeline / "raw").mkdir(parents=True)
    iris = load_iris(as_frame=True)
    frame = iris.frame.drop(columns="target")
    frame["species"] = iris.target_names[iris.target]
    frame["note"] = "unused"
    frame.to_csv(pipeline / "raw" / "iris.csv", index=False)
    env = {"CUBE_LAB_USER": "carol", "MPLCONFIGDIR": str(tmp_path / "mpl")}
    features = [c for c in frame.columns if c.endswith("(cm)")]

    read = run_node(
        "read-data", {"input_path": "raw/iris.csv", "columns": [*features, "species"]}, pipeline
    )
    assert read.values["rows"] == 150 and "note" not in read.values["column_names"]
    split = run_node("split-data", {"input_path": "data/data.csv", "stratify": "species"}, pipeline)
    assert split.values == {"train_rows": 120, "test_rows": 30}
    train = run_node(
        "train-sklearn",
        {
            "train_path": "data/train.csv",
            "target": "species",
            "estimator": "logistic_regression",
            "hyperparameters": {"C": 2.0, "max_iter": 500},
        },
        pipeline,
    )
    assert train.values["train_score"] > 0.9
    evaluate = run_node(
        "evaluate", {"model_path": "models/model.joblib", "test_path": "data/test.csv"}, pipeline
    )
    assert evaluate.values["accuracy"] > 0.85
    register = run_node(
        "register-model",
        {
            "model_path": "models/model.joblib",
            "name": "iris-classifier",
            "metrics_path": "metrics/metrics.json",
            "metrics": {"train_score": train.values["train_score"]},
            "params": {"estimator": "logistic_regression", "C": 2.0},
            "aliases": ["staging"],
        },
        pipeline,
        env=env,
        run_id="run-42",
    )
    assert register.values == {
        "name": "iris-classifier",
        "project": "carol",
        "version": 1,
        "flavor": "sklearn",
    }

    # The registry (same data dir, from the test's isolated environment) has it.
    ws = Workspace.open(Settings.resolve())
    try:
        carol = Caller("carol")
        page = ws.registry.list_models(carol)
        assert [m.name for m in page.models] == ["iris-classifier"]
        assert page.models[0].latest_version == 1 and page.models[0].aliases == {"staging": 1}
        version = ws.registry.get_version(carol, "carol", "iris-classifier", 1)
        metrics = json.loads((pipeline / "metrics" / "metrics.json").read_text())
        assert version.metrics == {**metrics, "train_score": train.values["train_score"]}
        assert version.params == {"estimator": "logistic_regression", "C": 2.0}
        assert version.lineage.pipeline_run_id == "run-42"
        assert version.created_by == "carol"
        stored = ws.registry.download(carol, "carol", "iris-classifier", 1).path
    finally:
        ws.close()

    # Predict with the registered copy of the model, not the pipeline's file.
    predict = run_node(
        "batch-predict",
        {"model_path": str(stored), "input_path": "data/test.csv", "probabilities": True},
        pipeline,
    )
    out = pd.read_csv(pipeline / "predictions" / "predictions.csv")
    assert predict.values["rows"] == len(out) == 30
    assert (out["prediction"] == out["species"]).mean() == evaluate.values["accuracy"]
    assert {"proba_setosa", "proba_versicolor", "proba_virginica"} <= set(out.columns)


def test_register_reports_registry_errors(tmp_path: Path) -> None:
    (tmp_path / "model.joblib").write_bytes(b"not really a model")
    template = CATALOG.get("register-model")
    missing = run_template(
        template, {"model_path": "model.joblib", "name": "m", "metrics_path": "no.json"}, tmp_path
    )
    assert missing.returncode == 2 and "metrics file 'no.json' does not exist" in missing.stderr
    refused = run_template(
        template,
        {"model_path": "model.joblib", "name": "m", "project": "nobody-has-this"},
        tmp_path,
        env={"CUBE_LAB_USER": "carol"},
    )
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith("error: ") and "nobody-has-this" in refused.stderr
    assert "Traceback" not in refused.stderr
