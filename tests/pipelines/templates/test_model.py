"""train-sklearn, evaluate and batch-predict run as real processes on bundled toy data."""

from __future__ import annotations

import json
import struct
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_diabetes, load_iris
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC

import cube_lab
from cube_lab.jobtemplates import TemplateCatalog, TemplateRun, run_template

CATALOG = TemplateCatalog([Path(cube_lab.__file__).resolve().parents[1] / "templates"])
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def node_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Module-scoped runs start before the per-test isolation: keep HOME and caches here."""
    home = tmp_path_factory.mktemp("home")
    return {"HOME": str(home), "MPLCONFIGDIR": str(home / "mpl")}


def run_node(name: str, params: dict, cwd: Path, env: dict[str, str]) -> TemplateRun:
    return run_template(CATALOG.get(name), params, cwd, env=env, timeout=120)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    return struct.unpack(">II", data[16:24])  # IHDR width, height


def iris_tables(folder: Path) -> dict:
    """Iris with text labels, a text feature and a few gaps, split in two."""
    iris = load_iris(as_frame=True)
    frame = iris.frame.drop(columns="target")
    frame["site"] = np.where(np.arange(150) % 3 == 0, "north", "south")
    frame.loc[[5, 60, 110], "sepal width (cm)"] = np.nan
    frame["species"] = iris.target_names[iris.target]
    train, test = train_test_split(frame, test_size=0.3, random_state=0, stratify=frame["species"])
    train.to_csv(folder / "train.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    return {
        "train_path": "train.csv",
        "target": "species",
        "estimator": "random_forest",
        "hyperparameters": {"n_estimators": 25, "max_depth": 4, "random_state": 0},
    }


def diabetes_tables(folder: Path) -> dict:
    """Diabetes: a numeric target, so a regression."""
    frame = load_diabetes(as_frame=True).frame
    train, test = train_test_split(frame, test_size=0.25, random_state=0)
    train.to_csv(folder / "train.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    return {
        "train_path": "train.csv",
        "target": "target",
        "estimator": "ridge",
        "hyperparameters": {"alpha": 0.5},
        "model_path": "out/ridge.joblib",
    }


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, node_env: dict[str, str]) -> dict[str, Path]:
    """Both models, trained once for the module and side by side (the runs are independent)."""
    folders = {name: tmp_path_factory.mktemp(name) for name in ("iris", "diabetes")}
    params = {
        "iris": iris_tables(folders["iris"]),
        "diabetes": diabetes_tables(folders["diabetes"]),
    }
    with ThreadPoolExecutor(2) as pool:
        futures = {
            name: pool.submit(run_node, "train-sklearn", params[name], folders[name], node_env)
            for name in folders
        }
    for name, future in futures.items():
        result = future.result()
        assert result.ok, result.stderr
        (folders[name] / "train-values.json").write_text(json.dumps(result.values))
    return folders


@pytest.fixture
def iris_dir(trained: dict[str, Path]) -> Path:
    return trained["iris"]


@pytest.fixture
def diabetes_dir(trained: dict[str, Path]) -> Path:
    return trained["diabetes"]


# -- train-sklearn ------------------------------------------------------------------------------


def test_train_classifier_with_hyperparameters(iris_dir: Path) -> None:
    values = json.loads((iris_dir / "train-values.json").read_text())
    assert values["task"] == "classification" and values["estimator"] == "random_forest"
    assert values["classes"] == ["setosa", "versicolor", "virginica"]
    assert values["n_features"] == 5 and values["rows"] == 105
    assert 0.9 <= values["train_score"] <= 1.0
    model = joblib.load(iris_dir / "models" / "model.joblib")
    forest = model.named_steps["estimator"]
    assert (forest.n_estimators, forest.max_depth) == (25, 4)
    assert model.cube_target_ == "species"
    # The saved pipeline takes raw rows, text feature and gaps included.
    raw = pd.read_csv(iris_dir / "test.csv").drop(columns="species")
    assert set(model.predict(raw)) <= {"setosa", "versicolor", "virginica"}


def test_train_regressor(diabetes_dir: Path) -> None:
    values = json.loads((diabetes_dir / "train-values.json").read_text())
    assert values["task"] == "regression" and "classes" not in values
    assert 0.3 < values["train_score"] < 0.8  # R² of a linear model on diabetes
    model = joblib.load(diabetes_dir / "out" / "ridge.joblib")
    assert model.named_steps["estimator"].alpha == 0.5


def test_train_rejects_unknown_hyperparameter(iris_dir: Path, node_env: dict[str, str]) -> None:
    params = {
        "train_path": "train.csv",
        "target": "species",
        "hyperparameters": {"n_estimatorz": 5},
        "model_path": "bad/model.joblib",
    }
    result = run_node("train-sklearn", params, iris_dir, node_env)
    assert result.returncode == 2
    assert "RandomForestClassifier has no hyperparameters ['n_estimatorz']" in result.stderr
    assert "'n_estimators'" in result.stderr  # lists the real ones
    assert not (iris_dir / "bad").exists()


def test_train_rejects_estimator_that_cannot_do_the_task(
    iris_dir: Path, node_env: dict[str, str]
) -> None:
    params = {
        "train_path": "train.csv",
        "target": "species",
        "estimator": "logistic_regression",
        "task": "regression",
    }
    result = run_node("train-sklearn", params, iris_dir, node_env)
    assert result.returncode == 2
    assert "'logistic_regression' does not do regression" in result.stderr


# -- evaluate -----------------------------------------------------------------------------------


def test_evaluate_classifier(iris_dir: Path, node_env: dict[str, str]) -> None:
    params = {"model_path": "models/model.joblib", "test_path": "test.csv"}  # target from model
    result = run_node("evaluate", params, iris_dir, node_env)
    assert result.ok, result.stderr
    metrics = json.loads((iris_dir / "metrics" / "metrics.json").read_text())
    assert set(metrics) == {"accuracy", "precision_macro", "recall_macro", "f1_macro"}
    assert all(0.8 <= v <= 1.0 for v in metrics.values()), metrics
    assert result.values == {**metrics, "task": "classification", "rows": 45}
    assert png_size(iris_dir / "metrics" / "confusion_matrix.png") == (600, 500)


def test_evaluate_regressor(diabetes_dir: Path, node_env: dict[str, str]) -> None:
    params = {
        "model_path": "out/ridge.joblib",
        "test_path": "test.csv",
        "target": "target",
        "metrics_path": "eval/m.json",
        "plot_path": "eval/fit.png",
    }
    result = run_node("evaluate", params, diabetes_dir, node_env)
    assert result.ok, result.stderr
    metrics = json.loads((diabetes_dir / "eval" / "m.json").read_text())
    assert set(metrics) == {"r2", "mae", "rmse"}
    assert 0.2 < metrics["r2"] < 0.8
    assert 20 < metrics["mae"] < metrics["rmse"] < 80  # diabetes targets span 25..346
    assert result.values["task"] == "regression"
    assert png_size(diabetes_dir / "eval" / "fit.png") == (600, 500)


def test_evaluate_names_missing_feature_columns(iris_dir: Path, node_env: dict[str, str]) -> None:
    pd.read_csv(iris_dir / "test.csv").drop(columns="site").to_csv(
        iris_dir / "no-site.csv", index=False
    )
    params = {"model_path": "models/model.joblib", "test_path": "no-site.csv"}
    params["metrics_path"] = "never/metrics.json"
    result = run_node("evaluate", params, iris_dir, node_env)
    assert result.returncode == 2
    assert "lacks the model's feature columns ['site']" in result.stderr
    assert not (iris_dir / "never").exists()


# -- batch-predict ------------------------------------------------------------------------------


def test_batch_predict_with_probabilities(iris_dir: Path, node_env: dict[str, str]) -> None:
    params = {
        "model_path": "models/model.joblib",
        "input_path": "test.csv",
        "probabilities": True,
        "keep_columns": False,
        "prediction_column": "predicted_species",
    }
    result = run_node("batch-predict", params, iris_dir, node_env)
    assert result.ok, result.stderr
    out = pd.read_csv(iris_dir / "predictions" / "predictions.csv")
    probas = ["proba_setosa", "proba_versicolor", "proba_virginica"]
    assert list(out.columns) == ["predicted_species", *probas]
    assert result.values == {"rows": 45, "columns": list(out.columns)}
    np.testing.assert_allclose(out[probas].sum(axis=1), 1.0)
    model = joblib.load(iris_dir / "models" / "model.joblib")
    expected = model.predict(pd.read_csv(iris_dir / "test.csv").drop(columns="species"))
    assert list(out["predicted_species"]) == list(expected)


def test_batch_predict_refuses_probabilities_the_model_lacks(
    tmp_path: Path, node_env: dict[str, str]
) -> None:
    iris = load_iris(as_frame=True)
    joblib.dump(SVC().fit(iris.data, iris.target), tmp_path / "svc.joblib")  # no probability=True
    iris.data.to_csv(tmp_path / "rows.csv", index=False)
    params = {"model_path": "svc.joblib", "input_path": "rows.csv", "probabilities": True}
    result = run_node("batch-predict", params, tmp_path, node_env)
    assert result.returncode == 2
    assert "SVC gives no class probabilities" in result.stderr
    assert "probability: true" in result.stderr
    assert not (tmp_path / "predictions").exists()
