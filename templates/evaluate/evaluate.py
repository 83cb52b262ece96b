"""evaluate: metrics JSON and a PNG plot for a scikit-learn model on a test CSV."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import pandas as pd


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


def staged(path: Path) -> Path:
    """A temporary name next to ``path``; renamed into place once fully written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.with_name(f".{path.name}.tmp{path.suffix}")


def load_model(path: Path) -> Any:
    if not path.is_file():
        fail(f"model file {str(path)!r} does not exist (paths are relative to {Path.cwd()})")
    import joblib

    try:
        model = joblib.load(path)
    except Exception as exc:  # unpickling can raise nearly anything
        fail(f"cannot load a model from {path}: {type(exc).__name__}: {exc}")
    if not hasattr(model, "predict"):
        fail(f"{path} holds a {type(model).__name__}, not a model with predict()")
    return model


def features_of(model: Any, frame: pd.DataFrame, source: Path) -> pd.DataFrame:
    names = getattr(model, "feature_names_in_", None)
    if names is None:
        return frame
    missing = [c for c in names if c not in frame.columns]
    if missing:
        fail(f"{source} lacks the model's feature columns {missing}")
    return frame[list(names)]


def classification_metrics(y: pd.Series, pred: Any) -> dict[str, float]:
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    precision, recall, f1, _ = precision_recall_fscore_support(
        y, pred, average="macro", zero_division=0
    )
    return {
        "accuracy": float(accuracy_score(y, pred)),
        "precision_macro": float(precision),
        "recall_macro": float(recall),
        "f1_macro": float(f1),
    }


def regression_metrics(y: pd.Series, pred: Any) -> dict[str, float]:
    from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score

    return {
        "r2": float(r2_score(y, pred)),
        "mae": float(mean_absolute_error(y, pred)),
        "rmse": math.sqrt(float(mean_squared_error(y, pred))),
    }


def plot(model: Any, y: pd.Series, pred: Any, task: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # no display on servers and cluster pods
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 5), dpi=100)
    if task == "classification":
        from sklearn.metrics import ConfusionMatrixDisplay

        labels = list(getattr(model, "classes_", sorted(set(y) | set(pred))))
        ConfusionMatrixDisplay.from_predictions(
            y, pred, labels=labels, ax=ax, colorbar=False, cmap="Blues"
        )
        ax.set_title("Confusion matrix")
    else:
        ax.scatter(y, pred, s=12, alpha=0.7)
        low, high = float(min(y.min(), pred.min())), float(max(y.max(), pred.max()))
        ax.plot([low, high], [low, high], color="grey", linestyle="--", linewidth=1)
        ax.set_xlabel("actual")
        ax.set_ylabel("predicted")
        ax.set_title("Predicted against actual")
    fig.tight_layout()
    tmp = staged(path)
    fig.savefig(tmp, format="png")
    plt.close(fig)
    tmp.replace(path)


def main() -> None:
    params = load_params()
    model_path, source = Path(params["model_path"]), Path(params["test_path"])
    if not source.is_file():
        fail(f"test file {str(source)!r} does not exist (paths are relative to {Path.cwd()})")
    model = load_model(model_path)
    target = params.get("target") or getattr(model, "cube_target_", "")
    if not target:
        fail("set the 'target' parameter: the model does not say which column it predicts")
    try:
        frame = pd.read_csv(source)
    except (ValueError, OSError) as exc:
        fail(f"cannot read {source} as CSV: {exc}")
    if target not in frame.columns:
        fail(f"target column {target!r} is not in {source}; it has {list(frame.columns)}")
    frame = frame[frame[target].notna()]
    if frame.empty:
        fail(f"{source} has no rows with a {target!r} value to evaluate on")

    from sklearn.base import is_classifier

    task = "classification" if is_classifier(model) else "regression"
    y = frame[target]
    try:
        pred = model.predict(features_of(model, frame, source))
    except (TypeError, ValueError) as exc:
        fail(f"the model cannot predict on {source}: {exc}")
    metrics = (
        classification_metrics(y, pred) if task == "classification" else regression_metrics(y, pred)
    )
    for name, value in metrics.items():
        print(f"{name}: {value:.4f}", flush=True)
    metrics_path, plot_path = Path(params["metrics_path"]), Path(params["plot_path"])
    plot(model, y, pred, task, plot_path)
    tmp = staged(metrics_path)
    tmp.write_text(json.dumps(metrics, indent=2), encoding="utf-8")
    tmp.replace(metrics_path)
    print(f"wrote {metrics_path} and {plot_path}", flush=True)
    publish({**metrics, "task": task, "rows": len(frame)})


if __name__ == "__main__":
    main()
