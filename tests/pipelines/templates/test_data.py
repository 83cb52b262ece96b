"""read-data and split-data run as real processes on small tables made here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_iris

import cube_lab
from cube_lab.jobtemplates import TemplateCatalog, TemplateRun, run_template

CATALOG = TemplateCatalog([Path(cube_lab.__file__).resolve().parents[1] / "templates"])


def run_node(name: str, params: dict, cwd: Path, env: dict[str, str] | None = None) -> TemplateRun:
    return run_template(CATALOG.get(name), params, cwd, env=env, timeout=120)


def iris_frame() -> pd.DataFrame:
    iris = load_iris(as_frame=True)
    frame = iris.frame.drop(columns="target")
    frame["species"] = iris.target_names[iris.target]
    return frame


def leftovers(folder: Path) -> list[str]:
    """Files a failed or finished node should not leave: temporary names."""
    return [p.name for p in folder.rglob("*.tmp*")]


# -- read-data --------------------------------------------------------------------------------


def test_read_csv_selects_columns_and_drops_incomplete_rows(tmp_path: Path) -> None:
    frame = iris_frame()
    frame.loc[[3, 50, 99], "petal length (cm)"] = np.nan
    frame.loc[7, "sepal width (cm)"] = np.nan  # not selected: must not drop its row
    frame.to_csv(tmp_path / "iris.csv", sep=";", index=False)
    result = run_node(
        "read-data",
        {
            "input_path": "iris.csv",
            "separator": ";",
            "columns": ["species", "petal length (cm)"],
            "dropna": True,
            "output_path": "clean/iris.csv",
        },
        tmp_path,
    )
    assert result.ok, result.stderr
    out = pd.read_csv(tmp_path / "clean" / "iris.csv")
    assert list(out.columns) == ["species", "petal length (cm)"]
    assert len(out) == 147 and out.notna().all().all()
    assert result.values == {
        "rows": 147,
        "columns": 2,
        "column_names": ["species", "petal length (cm)"],
        "dropped_rows": 3,
    }
    assert "dropped 3 rows" in result.stdout
    assert leftovers(tmp_path) == []


def test_read_parquet(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    frame = iris_frame()
    frame.to_parquet(tmp_path / "iris.parquet")
    result = run_node("read-data", {"input_path": "iris.parquet"}, tmp_path)
    assert result.ok, result.stderr
    out = pd.read_csv(tmp_path / "data" / "data.csv")
    pd.testing.assert_frame_equal(out, frame, check_dtype=False)
    assert result.values["rows"] == 150 and result.values["columns"] == 5


def test_read_parquet_without_pyarrow_says_what_to_install(tmp_path: Path) -> None:
    blocker = tmp_path / "no-pyarrow" / "pyarrow"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('pyarrow is blocked in this test')\n")
    (tmp_path / "iris.pq").write_bytes(b"PAR1 not really parquet")
    result = run_node(
        "read-data", {"input_path": "iris.pq"}, tmp_path, env={"PYTHONPATH": str(blocker.parent)}
    )
    assert result.returncode == 2
    assert "needs the pyarrow package" in result.stderr and "pip install pyarrow" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "data").exists()


def test_read_reports_missing_file_and_columns(tmp_path: Path) -> None:
    result = run_node("read-data", {"input_path": "nope.csv"}, tmp_path)
    assert result.returncode == 2 and "'nope.csv' does not exist" in result.stderr
    iris_frame().to_csv(tmp_path / "iris.csv", index=False)
    result = run_node("read-data", {"input_path": "iris.csv", "columns": ["petals"]}, tmp_path)
    assert result.returncode == 2
    assert "columns ['petals'] are not in iris.csv" in result.stderr
    assert "'species'" in result.stderr  # lists what the file has
    assert result.values == {} and not (tmp_path / "data").exists()


# -- split-data -------------------------------------------------------------------------------


def test_split_stratified_keeps_class_shares(tmp_path: Path) -> None:
    frame = iris_frame()
    frame.to_csv(tmp_path / "iris.csv", index=False)
    result = run_node(
        "split-data",
        {"input_path": "iris.csv", "stratify": "species", "test_size": 0.2, "random_state": 7},
        tmp_path,
    )
    assert result.ok, result.stderr
    assert result.values == {"train_rows": 120, "test_rows": 30}
    train = pd.read_csv(tmp_path / "data" / "train.csv")
    test = pd.read_csv(tmp_path / "data" / "test.csv")
    assert test["species"].value_counts().to_dict() == {
        "setosa": 10,
        "versicolor": 10,
        "virginica": 10,
    }
    # Together the two sets are the input again, row for row.
    both = pd.concat([train, test]).sort_values(list(frame.columns)).reset_index(drop=True)
    expected = frame.sort_values(list(frame.columns)).reset_index(drop=True)
    pd.testing.assert_frame_equal(both, expected, check_dtype=False)
    assert leftovers(tmp_path) == []


def test_split_without_shuffle_takes_the_last_rows(tmp_path: Path) -> None:
    iris_frame().to_csv(tmp_path / "iris.csv", index=False)
    params = {
        "input_path": "iris.csv",
        "test_size": 0.25,
        "shuffle": False,
        "train_path": "a/train.csv",
        "test_path": "b/test.csv",
    }
    result = run_node("split-data", params, tmp_path)
    assert result.ok, result.stderr
    test = pd.read_csv(tmp_path / "b" / "test.csv")
    assert len(test) == 38  # ceil(0.25 * 150)
    assert (test["species"] == "virginica").all()  # iris is sorted by species


def test_split_rejects_bad_stratify_column(tmp_path: Path) -> None:
    iris_frame().to_csv(tmp_path / "iris.csv", index=False)
    result = run_node("split-data", {"input_path": "iris.csv", "stratify": "kind"}, tmp_path)
    assert result.returncode == 2
    assert "stratify column 'kind' is not in iris.csv" in result.stderr
    assert not (tmp_path / "data").exists()
