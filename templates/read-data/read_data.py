"""read-data: read a CSV or Parquet file, select columns, drop incomplete rows, write CSV."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import pandas as pd

PARQUET_SUFFIXES = (".parquet", ".pq")


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


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Write via a temporary name, so a failure leaves no half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    frame.to_csv(tmp, index=False)
    tmp.replace(path)


def read_parquet(path: Path) -> pd.DataFrame:
    try:
        import pyarrow  # noqa: F401  (pandas' Parquet engine)
    except ImportError:
        fail(
            f"{path} is a Parquet file and reading Parquet needs the pyarrow package: "
            "install it (pip install pyarrow) or convert the file to CSV"
        )
    return pd.read_parquet(path, engine="pyarrow")


def read_table(path: Path, file_format: str, separator: str) -> pd.DataFrame:
    if not path.is_file():
        fail(f"input file {str(path)!r} does not exist (paths are relative to {Path.cwd()})")
    if file_format == "auto":
        file_format = "parquet" if path.suffix.lower() in PARQUET_SUFFIXES else "csv"
    try:
        if file_format == "parquet":
            return read_parquet(path)
        return pd.read_csv(path, sep=separator)
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        fail(f"cannot read {path} as {file_format}: {exc}")


def main() -> None:
    params = load_params()
    source = Path(params["input_path"])
    frame = read_table(source, params.get("file_format", "auto"), params.get("separator", ","))
    print(f"read {len(frame)} rows x {frame.shape[1]} columns from {source}", flush=True)
    columns = params.get("columns") or []
    if columns:
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            fail(f"columns {missing} are not in {source}; it has {list(frame.columns)}")
        frame = frame[columns]
    dropped = 0
    if params.get("dropna"):
        before = len(frame)
        frame = frame.dropna()
        dropped = before - len(frame)
        print(f"dropped {dropped} rows with missing values", flush=True)
    output = Path(params["output_path"])
    write_csv(frame, output)
    print(f"wrote {len(frame)} rows to {output}", flush=True)
    publish(
        {
            "rows": len(frame),
            "columns": int(frame.shape[1]),
            "column_names": [str(c) for c in frame.columns],
            "dropped_rows": int(dropped),
        }
    )


if __name__ == "__main__":
    main()
