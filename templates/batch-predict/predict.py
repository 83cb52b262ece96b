"""batch-predict: predictions (and optionally class probabilities) for every row of a CSV."""

from __future__ import annotations

import json
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


def main() -> None:
    params = load_params()
    model_path, source = Path(params["model_path"]), Path(params["input_path"])
    if not source.is_file():
        fail(f"input file {str(source)!r} does not exist (paths are relative to {Path.cwd()})")
    try:
        frame = pd.read_csv(source)
    except (ValueError, OSError) as exc:
        fail(f"cannot read {source} as CSV: {exc}")
    model = load_model(model_path)
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        missing = [c for c in names if c not in frame.columns]
        if missing:
            fail(f"{source} lacks the model's feature columns {missing}")
    x = frame if names is None else frame[list(names)]
    want_proba = bool(params.get("probabilities"))
    if want_proba and not hasattr(model, "predict_proba"):
        fail(
            f"{type(model).__name__} gives no class probabilities: set probabilities to false "
            "(for svc, train with the hyperparameter probability: true)"
        )
    print(f"predicting {len(x)} rows from {source}", flush=True)
    try:
        predictions = model.predict(x)
        proba = model.predict_proba(x) if want_proba else None
    except (TypeError, ValueError) as exc:
        fail(f"the model cannot predict on {source}: {exc}")
    out = frame.copy() if params.get("keep_columns", True) else pd.DataFrame(index=frame.index)
    column = params.get("prediction_column", "prediction")
    out[column] = predictions
    if proba is not None:
        for i, label in enumerate(model.classes_):
            out[f"proba_{label}"] = proba[:, i]
    output = Path(params["output_path"])
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(f".{output.name}.tmp")
    out.to_csv(tmp, index=False)
    tmp.replace(output)
    print(f"wrote {len(out)} predictions to {output}", flush=True)
    publish({"rows": len(out), "columns": [str(c) for c in out.columns]})


if __name__ == "__main__":
    main()
