"""A successful action prints nothing a user must read past; real errors still show.

Each test runs the real thing: the magic in a real "Python 3 (cube-lab)" kernel, a notebook
node through the pipeline runner and papermill, deployments through the warm host."""

from __future__ import annotations

import http.client
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from kernel_util import REPO, run_in_kernel
from pipeline_util import node, write_pipeline
from serving_util import stop_serving, wait_for_warm_host, warm_capable_workspace

from cube_lab.identity import Caller

ALICE = Caller("alice")


def stderr_of(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stderr")


def test_cube_register_prints_no_stderr_on_success(tmp_path: Path, settings: Any) -> None:
    """tqdm's "IProgress not found" (MLflow imports tqdm.auto; no ipywidgets here) and MLflow's
    pickle caution printed a red block under every registration."""
    env = {
        "JUPYTER_PATH": str(REPO),
        "CUBE_LAB_DATA_DIR": str(settings.data_dir),
        "CUBE_LAB_USER": "alice",
        "JPY_SESSION_NAME": "quiet.ipynb",
    }
    nb = run_in_kernel(
        [
            "from sklearn.datasets import load_iris\n"
            "from sklearn.ensemble import RandomForestClassifier\n"
            "X, y = load_iris(return_X_y=True)\n"
            "clf = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, y)",
            "%cube_register iris-rf clf --metric accuracy=0.97",
            "%cube_register iris-rf clf",
            "import torch\nnet = torch.nn.Linear(4, 3)",
            "%cube_register net net",
            "%cube_register 'bad name' clf",
            "%cube_register iris-rf no_such_variable_or_file",
        ],
        tmp_path,
        env,
    )
    cells = nb.cells
    for cell in cells[1:3] + cells[4:5]:
        assert stderr_of(cell) == "", cell.source + " printed on stderr:\n" + stderr_of(cell)
        out = "".join(o.get("text", "") for o in cell.outputs)
        assert out.startswith("Registered "), out
    assert "Registered iris-rf v2 (sklearn" in cells[2].outputs[-1]["text"]
    assert "Registered net v1 (pytorch" in cells[4].outputs[-1]["text"]
    for cell, wanted in ((cells[5], "invalid model name"), (cells[6], "no_such_variable_or_file")):
        shown = stderr_of(cell) + "".join(o.get("evalue", "") for o in cell.outputs)
        assert wanted in shown and "Traceback" not in shown, cell.outputs  # still red, says why


def test_only_the_known_mlflow_save_warnings_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    from cube_lab.registry.flavors import _known_harmless_quiet

    logger = logging.getLogger("mlflow.sklearn")
    with caplog.at_level(logging.WARNING), _known_harmless_quiet():
        logger.warning("Saving scikit-learn models in the pickle or cloudpickle format requires")
        logger.warning("Model was missing function: predict. Not logging python_function flavor!")
        with pytest.warns(UserWarning, match="a real one"):
            import warnings

            warnings.warn("a real one", UserWarning, stacklevel=1)
    messages = [r.getMessage() for r in caplog.records]
    assert messages == ["Model was missing function: predict. Not logging python_function flavor!"]
    assert not logger.filters  # nothing stays installed afterwards


def _notebook(path: Path, cells: list[str], kernel: str = "python3") -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {
        "name": kernel,
        "display_name": kernel,
        "language": "python",
    }
    nbformat.write(nb, path)


def _run_node(ws: Any, folder: Path, notebook: str) -> tuple[str, str]:
    path = write_pipeline(folder, [node("nb", "execute-notebook-node", filename=notebook)])
    runner, recorder = ws.pipelines.prepare(ALICE, path, folder)
    status = ws.pipelines.run_foreground(runner, recorder)
    return status, ws.pipelines.tail_log(ALICE, runner.plan.run_id, "nb").text


def test_a_succeeded_notebook_node_log_holds_only_its_output(ws: Any, tmp_path: Path) -> None:
    """The kernel said "running over TCP without encryption" on every node, and jupyter_client's
    SIGINT before shutdown showed as "[IPKernelApp] ERROR | KeyboardInterrupt caught in kernel"
    whenever it found the kernel in a handler (a race, seen with matplotlib). The last cell
    makes any such SIGINT visible the way ipykernel reports it, once the cell is done."""
    _notebook(
        tmp_path / "report.ipynb",
        [
            "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3]); plt.show()\nprint('plotted')",
            "import asyncio, signal\n"
            "def caught(*_):\n"
            "    get_ipython().kernel.log.error('KeyboardInterrupt caught in kernel')\n"
            "asyncio.get_event_loop().call_later(0.05, signal.signal, signal.SIGINT, caught)\n"
            "print('done')",
            "import time; time.sleep(0.3)",
        ],
    )
    status, log = _run_node(ws, tmp_path, "report.ipynb")
    assert status == "succeeded", log
    lines = log.splitlines()
    assert lines[0].startswith("executing report.ipynb into "), log
    assert lines[1:] == ["plotted", "done"], log
    assert "KeyboardInterrupt" not in log and "without encryption" not in log
    assert not list(Path(ws.settings.data_dir).glob("**/kernel-*-ipc-*")), "sockets left behind"


def test_a_failed_notebook_node_log_keeps_the_traceback(ws: Any, tmp_path: Path) -> None:
    _notebook(tmp_path / "bad.ipynb", ["print('before')", "values = {}\nvalues['missing']"])
    status, log = _run_node(ws, tmp_path, "bad.ipynb")
    assert status == "failed", log
    assert "before" in log and "----> 2 values['missing']" in log, log
    assert log.rstrip().endswith("cell 2 failed: KeyError: 'missing'"), log
    assert "without encryption" not in log and "\x1b[" not in log

    _notebook(tmp_path / "other.ipynb", ["print(1)"], kernel="julia-1.10")
    status, log = _run_node(ws, tmp_path, "other.ipynb")
    assert status == "failed" and "Traceback" not in log, log
    assert "asks for the kernel 'julia-1.10', which is not installed here" in log, log
    assert "python3" in log  # what is installed


def _post(endpoint: str, body: Any) -> tuple[int, Any]:
    port = int(endpoint.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/v2/models/custom/infer", json.dumps(body).encode())
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


@pytest.fixture
def warm_ws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A workspace whose warm host can listen: under pytest-xdist ``tmp_path`` makes its
    socket path too long, and every deploy would start cold (serving_util)."""
    with warm_capable_workspace(monkeypatch) as ws:
        yield ws


def test_serving_errors_say_what_is_wrong_without_warning_text(
    warm_ws: Any, tmp_path: Path
) -> None:
    """Processes forked by the warm host wrote runpy's "RuntimeWarning: ... found in
    sys.modules ... unpredictable behaviour" first in their log, so a failed deploy's message
    opened with it; a model's own exception answered a bare "internal error" with no trace."""
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    ws = warm_ws
    x, y = load_iris(return_X_y=True)
    ws.registry.register(ALICE, name="iris", obj=LogisticRegression(max_iter=300).fit(x, y))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "weights.bin").write_bytes(b"\0" * 10)
    ws.registry.register(ALICE, name="broken", path=broken)
    custom = tmp_path / "custom"
    custom.mkdir()
    (custom / "predictor.py").write_text(
        "class Predictor:\n"
        "    def __init__(self, path):\n"
        "        self.table = {}\n"
        "    def predict(self, inputs):\n"
        "        return self.table['weights']\n"
    )
    ws.registry.register(ALICE, name="custom", path=custom)
    try:
        ws.serving.deploy(ALICE, "iris:1", name="first")  # cold; it starts the warm host
        wait_for_warm_host(ws)
        warm = ws.serving.deploy(ALICE, "iris:1", name="warm")
        log = ws.serving.tail_log(ALICE, "warm").text
        assert "Warning" not in log and "listening on http://" in log, log

        with pytest.raises(Exception) as failed:
            ws.serving.deploy(ALICE, "broken:1")
        detail = getattr(failed.value, "detail", "") or ""
        assert "cannot serve flavor 'generic'" in detail, detail
        assert "RuntimeWarning" not in detail and "runpy" not in detail, detail
        assert "RuntimeWarning" not in (ws.serving.get(ALICE, "broken").error or "")

        dep = ws.serving.deploy(ALICE, "custom:1")
        assert dep.endpoint and warm.endpoint
        data = {"inputs": [{"name": "x", "shape": [1], "datatype": "FP64", "data": [1.0]}]}
        status, body = _post(dep.endpoint, data)
        assert status == 500, body
        assert body["error"] == "the server failed on this request: KeyError: 'weights'", body
        assert "cube-lab deployment logs" in body["detail"], body
        log = ws.serving.tail_log(ALICE, "custom").text
        assert "Traceback" in log and "self.table['weights']" in log, log
    finally:
        stop_serving(ws, ALICE)


def test_the_tune_api_prints_no_tuner_log_lines(tmp_path: Path, settings: Any) -> None:
    """``cube_lab.tune()`` in a notebook printed NNI's coloured "Using random seed" line."""
    import subprocess
    import sys

    (tmp_path / "trial.py").write_text(
        "import nni\np = nni.get_next_parameter()\nnni.report_final_result(-(p['x'] - 1) ** 2)\n"
    )
    (tmp_path / "config.yml").write_text(
        "searchSpace: {x: {_type: uniform, _value: [0, 2]}}\ntrialCommand: python3 trial.py\n"
        "trialConcurrency: 1\nmaxTrialNumber: 2\n"
        "tuner: {name: TPE, classArgs: {optimize_mode: maximize}}\n"
    )
    env = {**os.environ, "CUBE_LAB_DATA_DIR": str(settings.data_dir), "CUBE_LAB_USER": "alice"}
    code = "import cube_lab as cl; e = cl.tune('config.yml').wait(); print('best', len(e.trials))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "best 2\n", done.stdout
