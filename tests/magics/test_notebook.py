"""A notebook run in the "Python 3 (cube-lab)" kernel registers models with the magic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel_util import REPO, run_in_kernel

from cube_lab.identity import Caller


def outputs(cell: Any) -> str:
    return "\n".join(o.get("text", "") or o.get("evalue", "") for o in cell.outputs)


def test_cube_register_magic_in_the_cube_lab_kernel(tmp_path: Path, settings: Any, ws: Any) -> None:
    (tmp_path / "weights.bin").write_bytes(b"w" * 10)
    env = {
        "JUPYTER_PATH": str(REPO),
        "CUBE_LAB_DATA_DIR": str(settings.data_dir),
        "CUBE_LAB_USER": "alice",
        "JPY_SESSION_NAME": "experiments/iris.ipynb",
    }
    nb = run_in_kernel(
        [
            "from sklearn.datasets import load_iris\n"
            "from sklearn.linear_model import LogisticRegression\n"
            "X, y = load_iris(return_X_y=True)\n"
            "clf = LogisticRegression(max_iter=500).fit(X, y)",
            "%cube_register iris clf --metric accuracy=0.97 --param max_iter=500 --alias staging",
            "%cube_register iris weights.bin --flavor generic",
            "%cube_register 'bad name' weights.bin",
            "from cube_lab.registry import register\n"
            "v = register('weights.bin', name='raw', tags={'k': 'v'})\n"
            "print(v.model, v.version, v.lineage.source)",
        ],
        tmp_path,
        env,
    )
    texts = [outputs(c) for c in nb.cells]
    assert "Registered iris v1 (sklearn" in texts[1], texts[1]
    assert "Registered iris v2 (generic" in texts[2], texts[2]
    assert "invalid model name" in texts[3] and "Traceback" not in texts[3]
    assert "raw 1 experiments/iris.ipynb" in texts[4], texts[4]
    detail = ws.registry.get_model(Caller("alice"), "alice", "iris")
    v1 = detail.versions[1]
    assert (v1.flavor, v1.format, v1.metrics, v1.params) == (
        "sklearn",
        "mlflow",
        {"accuracy": 0.97},
        {"max_iter": 500},
    )
    assert v1.lineage.source == "experiments/iris.ipynb" and detail.aliases == {"staging": 1}


def shown(cell: Any) -> str:
    """The text a cell displayed (a live view's text fallback)."""
    return "\n".join(
        o["data"].get("text/plain", "") for o in cell.outputs if o["output_type"] == "display_data"
    )


def test_cube_pipeline_magic_runs_to_the_end_with_wait(tmp_path: Path, settings: Any) -> None:
    import json

    (tmp_path / "step.py").write_text("print('step ran')\n")
    doc = {
        "doc_type": "pipeline",
        "version": "3.0",
        "primary_pipeline": "primary",
        "pipelines": [
            {
                "id": "primary",
                "app_data": {"version": 8, "properties": {}},
                "nodes": [
                    {
                        "id": "s",
                        "type": "execution_node",
                        "op": "execute-python-node",
                        "app_data": {
                            "label": "step",
                            "component_parameters": {"filename": "step.py"},
                        },
                        "inputs": [],
                        "outputs": [],
                    }
                ],
            }
        ],
    }
    (tmp_path / "flow.pipeline").write_text(json.dumps(doc))
    env = {
        "JUPYTER_PATH": str(REPO),
        "CUBE_LAB_DATA_DIR": str(settings.data_dir),
        "CUBE_LAB_USER": "alice",
    }
    nb = run_in_kernel(
        ["%cube_pipeline run flow.pipeline --wait", "%cube_pipeline explode"], tmp_path, env
    )
    first, second = shown(nb.cells[0]), outputs(nb.cells[1])
    assert first.startswith("<Run ") and ": succeeded" in first, nb.cells[0].outputs
    assert "usage: %cube_pipeline" in second


def test_cube_tune_magic_and_the_python_api_in_a_notebook(tmp_path: Path, settings: Any) -> None:
    (tmp_path / "trial.py").write_text(
        "import nni\nx = nni.get_next_parameter()['x']\nnni.report_final_result(-(x - 1) ** 2)\n"
    )
    (tmp_path / "config.yml").write_text(
        "searchSpace: {x: {_type: uniform, _value: [-2, 2]}}\n"
        "trialCommand: python3 trial.py\n"
        "trialConcurrency: 2\nmaxTrialNumber: 3\n"
        "tuner: {name: Random, classArgs: {seed: 1}}\n"
    )
    env = {
        "JUPYTER_PATH": str(REPO),
        "CUBE_LAB_DATA_DIR": str(settings.data_dir),
        "CUBE_LAB_USER": "alice",
    }
    cells = [
        "%cube_tune config.yml --wait",
        "import cube_lab\nexp = cube_lab.tune('config.yml', maxTrialNumber=2).wait()\n"
        "print('BEST', len(exp.trials), sorted(exp.best['parameters']), exp.status)",
    ]
    nb = run_in_kernel(cells, tmp_path, env)
    first, second = shown(nb.cells[0]), outputs(nb.cells[1])
    assert ": done, 3 trials" in first and "best" in first, nb.cells[0].outputs
    assert "BEST 2 ['x'] done" in second, second
