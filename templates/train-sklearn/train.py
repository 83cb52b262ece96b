"""train-sklearn: fit an allow-listed scikit-learn estimator on a CSV table, save it with joblib."""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import pandas as pd

# name -> {task: "module.Class"}; the template's 'estimator' enum lists the same names.
ESTIMATORS: dict[str, dict[str, str]] = {
    "logistic_regression": {"classification": "sklearn.linear_model.LogisticRegression"},
    "linear_regression": {"regression": "sklearn.linear_model.LinearRegression"},
    "ridge": {
        "classification": "sklearn.linear_model.RidgeClassifier",
        "regression": "sklearn.linear_model.Ridge",
    },
    "lasso": {"regression": "sklearn.linear_model.Lasso"},
    "random_forest": {
        "classification": "sklearn.ensemble.RandomForestClassifier",
        "regression": "sklearn.ensemble.RandomForestRegressor",
    },
    "gradient_boosting": {
        "classification": "sklearn.ensemble.GradientBoostingClassifier",
        "regression": "sklearn.ensemble.GradientBoostingRegressor",
    },
    "hist_gradient_boosting": {
        "classification": "sklearn.ensemble.HistGradientBoostingClassifier",
        "regression": "sklearn.ensemble.HistGradientBoostingRegressor",
    },
    "svc": {"classification": "sklearn.svm.SVC"},
    "svr": {"regression": "sklearn.svm.SVR"},
    "knn": {
        "classification": "sklearn.neighbors.KNeighborsClassifier",
        "regression": "sklearn.neighbors.KNeighborsRegressor",
    },
    "decision_tree": {
        "classification": "sklearn.tree.DecisionTreeClassifier",
        "regression": "sklearn.tree.DecisionTreeRegressor",
    },
    "naive_bayes": {"classification": "sklearn.naive_bayes.GaussianNB"},
}
MAX_CLASSES_FOR_INTEGERS = 20


def fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(2)


def load_params() -> dict[str, Any]:
    try:
        params = json.loads(os.environ["CUBE_PARAMS"])
    except (KeyError, ValueError):
        fail("CUBE_PARAMS must hold the parameters as a JSON object (run through cube-lab)")
    if not isinstance(params, dict):
        fail("CUBE_PARAMS must be a JSON object")
    return params


def publish(values: dict[str, Any]) -> None:
    target = os.environ.get("CUBE_VALUES_FILE")
    if target:
        tmp = Path(f"{target}.tmp")
        tmp.write_text(json.dumps(values), encoding="utf-8")
        tmp.replace(target)


def read_csv(path: Path) -> pd.DataFrame:
    if not path.is_file():
        fail(f"input file {str(path)!r} does not exist (paths are relative to {Path.cwd()})")
    try:
        return pd.read_csv(path)
    except (ValueError, OSError) as exc:
        fail(f"cannot read {path} as CSV: {exc}")


def choose_task(requested: str, estimator: str, y: pd.Series) -> str:
    supported = ESTIMATORS[estimator]
    if requested != "auto":
        if requested not in supported:
            fail(f"estimator {estimator!r} does not do {requested}; it does {list(supported)}")
        return requested
    if len(supported) == 1:
        return next(iter(supported))
    numeric = pd.api.types.is_numeric_dtype(y) and not pd.api.types.is_bool_dtype(y)
    few_integers = pd.api.types.is_integer_dtype(y) and y.nunique() <= MAX_CLASSES_FOR_INTEGERS
    return "classification" if not numeric or few_integers else "regression"


def make_estimator(estimator: str, task: str, hyperparameters: dict[str, Any]) -> Any:
    module_name, _, class_name = ESTIMATORS[estimator][task].rpartition(".")
    cls = getattr(importlib.import_module(module_name), class_name)
    known = cls().get_params(deep=False)
    unknown = sorted(set(hyperparameters) - set(known))
    if unknown:
        fail(f"{class_name} has no hyperparameters {unknown}; it has {sorted(known)}")
    try:
        return cls(**hyperparameters)
    except (TypeError, ValueError) as exc:
        fail(f"bad hyperparameters for {class_name}: {exc}")


def make_model(frame: pd.DataFrame, estimator: Any) -> Any:
    """A Pipeline that prepares raw columns, so predictions need no preprocessing step."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import Pipeline, make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    numeric = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])]
    other = [c for c in frame.columns if c not in numeric]
    prepare = ColumnTransformer(
        [
            ("numeric", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), numeric),
            (
                "categorical",
                make_pipeline(
                    SimpleImputer(strategy="most_frequent"),
                    OneHotEncoder(handle_unknown="ignore"),
                ),
                other,
            ),
        ]
    )
    return Pipeline([("prepare", prepare), ("estimator", estimator)])


def save(model: Any, path: Path) -> None:
    import joblib

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    joblib.dump(model, tmp)
    tmp.replace(path)


def main() -> None:
    params = load_params()
    source, target = Path(params["train_path"]), params["target"]
    estimator_name = params.get("estimator", "random_forest")
    if estimator_name not in ESTIMATORS:
        fail(f"unknown estimator {estimator_name!r}; choose one of {list(ESTIMATORS)}")
    hyperparameters = params.get("hyperparameters") or {}
    if not isinstance(hyperparameters, dict):
        fail("hyperparameters must be an object of name -> value")
    frame = read_csv(source)
    if target not in frame.columns:
        fail(f"target column {target!r} is not in {source}; it has {list(frame.columns)}")
    features = params.get("features") or [c for c in frame.columns if c != target]
    missing = [c for c in features if c not in frame.columns]
    if missing:
        fail(f"feature columns {missing} are not in {source}; it has {list(frame.columns)}")
    if target in features:
        fail(f"the target {target!r} cannot also be a feature")
    unlabelled = int(frame[target].isna().sum())
    if unlabelled:
        print(f"skipping {unlabelled} rows with no {target!r} value", flush=True)
        frame = frame[frame[target].notna()]
    if len(frame) < 2:
        fail(f"{source} has {len(frame)} labelled rows; training needs at least 2")
    x, y = frame[features], frame[target]
    task = choose_task(params.get("task", "auto"), estimator_name, y)
    print(f"task: {task} (target {target!r}); estimator: {estimator_name}", flush=True)
    if task == "regression" and not pd.api.types.is_numeric_dtype(y):
        fail(f"regression needs a numeric target; {target!r} holds {y.dtype} values")

    model = make_model(x, make_estimator(estimator_name, task, hyperparameters))
    print(f"fitting on {len(x)} rows x {len(features)} features", flush=True)
    try:
        model.fit(x, y)
    except (TypeError, ValueError) as exc:  # includes sklearn's InvalidParameterError
        fail(f"training failed: {exc}")
    score = float(model.score(x, y))
    print(f"train {'accuracy' if task == 'classification' else 'R^2'}: {score:.4f}", flush=True)
    # Remembered on the model, so evaluate can find the target without being told again.
    model.cube_target_ = target
    model.cube_task_ = task
    output = Path(params["model_path"])
    save(model, output)
    print(f"saved model to {output}", flush=True)
    values: dict[str, Any] = {
        "train_score": score,
        "task": task,
        "estimator": estimator_name,
        "target": target,
        "n_features": len(features),
        "rows": len(x),
    }
    if task == "classification":
        values["classes"] = [str(c) for c in model.classes_]
    publish(values)


if __name__ == "__main__":
    main()
