"""split-data: random (optionally stratified) train/test split of a CSV table."""

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


def read_csv(path: Path) -> pd.DataFrame:
    if not path.is_file():
        fail(f"input file {str(path)!r} does not exist (paths are relative to {Path.cwd()})")
    try:
        return pd.read_csv(path)
    except (ValueError, OSError) as exc:
        fail(f"cannot read {path} as CSV: {exc}")


def write_csvs(frames: dict[Path, pd.DataFrame]) -> None:
    """Write every file under a temporary name first: both appear, or neither does."""
    staged = []
    for path, frame in frames.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        frame.to_csv(tmp, index=False)
        staged.append((tmp, path))
    for tmp, path in staged:
        tmp.replace(path)


def main() -> None:
    params = load_params()
    source = Path(params["input_path"])
    frame = read_csv(source)
    stratify_col = params.get("stratify") or ""
    shuffle = bool(params.get("shuffle", True))
    labels = None
    if stratify_col:
        if stratify_col not in frame.columns:
            fail(
                f"stratify column {stratify_col!r} is not in {source}; it has {list(frame.columns)}"
            )
        if not shuffle:
            fail("a stratified split needs shuffle: set shuffle to true or stratify to ''")
        labels = frame[stratify_col]
    if len(frame) < 2:
        fail(f"{source} has {len(frame)} rows; a split needs at least 2")
    train_path, test_path = Path(params["train_path"]), Path(params["test_path"])
    if train_path.resolve() == test_path.resolve():
        fail("train_path and test_path must be different files")

    from sklearn.model_selection import train_test_split  # slow import: after the input checks

    try:
        train, test = train_test_split(
            frame,
            test_size=params.get("test_size", 0.2),
            random_state=params.get("random_state"),
            shuffle=shuffle,
            stratify=labels,
        )
    except ValueError as exc:  # e.g. a class with one member, or a set that would be empty
        fail(f"cannot split {len(frame)} rows: {exc}")
    write_csvs({train_path: train, test_path: test})
    print(f"split {len(frame)} rows: {len(train)} to {train_path}, {len(test)} to {test_path}")
    publish({"train_rows": len(train), "test_rows": len(test)})


if __name__ == "__main__":
    main()
