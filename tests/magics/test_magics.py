"""The magics over the SDK, in notebooks executed by nbclient (and papermill) in the real
"Python 3 (cube-lab)" kernel: each displays its handle's live ipywidgets view plus a text
fallback; ``--wait`` blocks to the end and fails the cell when the work failed, so "Run All"
and papermill stop there; without it the cell returns while the work goes on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from kernel_util import REPO, run_in_kernel
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from pipeline_util import node, script, write_pipeline
from serving_util import stop_serving

from cube_lab.identity import Caller

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

WIDGET = "application/vnd.jupyter.widget-view+json"
TUNE = (
    "searchSpace: {x: {_type: uniform, _value: [-2, 2]}}\n"
    "trialCommand: python3 trial.py\n"
    "trialConcurrency: 2\nmaxTrialNumber: 3\n"
    "tuner: {name: Random, classArgs: {seed: 1}}\n"
)
TRIAL = "import nni\nx = nni.get_next_parameter()['x']\nnni.report_final_result(-(x - 1) ** 2)\n"


def _env(settings: Any) -> dict[str, str]:
    return {
        "JUPYTER_PATH": str(REPO),
        "CUBE_LAB_DATA_DIR": str(settings.data_dir),
        "CUBE_LAB_USER": "alice",
    }


def _files(root: Path) -> None:
    ok_a = script(root, "a.py", "print('a ran')\n")
    ok_b = script(root, "b.py", "print('b ran')\n")
    write_pipeline(
        root, [node("a", filename=ok_a), node("b", upstream=("a",), filename=ok_b)], "ok",
        filename="ok.pipeline",
    )  # fmt: skip
    bad = script(root, "bad.py", "print('about to fail')\nraise SystemExit('boom')\n")
    write_pipeline(root, [node("bad", filename=bad)], "bad", filename="bad.pipeline")
    slow = script(root, "slow.py", "import time\ntime.sleep(2)\n")
    write_pipeline(root, [node("slow", filename=slow)], "slow", filename="slow.pipeline")
    (root / "crash.py").write_text("print('crashing now')\nraise SystemExit(4)\n")
    (root / "trial.py").write_text(TRIAL)
    (root / "config.yml").write_text(TUNE)


def _stderr(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stderr")


def _error(cell: Any) -> str:
    """The cell's error as shown: its name, message and the lines shown for a traceback."""
    (out,) = [o for o in cell.outputs if o.get("output_type") == "error"]
    return f"{out['ename']}: {out['evalue']}\n" + "\n".join(out["traceback"])


def _stdout(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")


def _shown(cell: Any) -> Any:
    (out,) = [o for o in cell.outputs if o.get("output_type") == "display_data"]
    return out["data"]


def _view(nb: Any, cell: Any) -> dict[str, Any]:
    """The widget state of the cell's live view: each widget's model name and its value."""
    states = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    found: dict[str, Any] = {"html": [], "progress": []}

    def walk(model_id: str) -> None:
        model = states[model_id]
        state = model["state"]
        if model["model_name"] == "HTMLModel":
            found["html"].append(state.get("value", ""))
        if model["model_name"] == "FloatProgressModel":
            found["progress"].append((state.get("value"), state.get("max"), state.get("bar_style")))
        for child in state.get("children", []):
            walk(child.removeprefix("IPY_MODEL_"))

    walk(_shown(cell)[WIDGET]["model_id"])
    found["text"] = " ".join(found["html"])
    return found


def test_magics_show_live_views_and_wait_fails_the_cell(
    tmp_path: Path, settings: Any, ws: Any
) -> None:
    _files(tmp_path)
    cells = [
        "%cube_pipeline run ok.pipeline --wait",
        "%cube_pipeline run bad.pipeline --wait",
        "%%cube_train --wait --framework plain\n"
        "import os\nprint('cell trained in', os.path.basename(os.getcwd()))",
        "%cube_train --wait --framework plain crash.py",
        "%cube_tune config.yml --max-trials 2 --wait",
        "%cube_pipeline run slow.pipeline",
        "import cube_lab as cl\nrun = cl.pipelines.runs()[0]\n"
        "print('LATER', run.data['pipeline'], run.wait(timeout=120).status)\n"
        "print('CELL LOG', [j.logs() for j in cl.training.jobs() if j.status == 'succeeded'])",
        "from sklearn.tree import DecisionTreeClassifier\n"
        "clf = DecisionTreeClassifier().fit([[0, 0], [1, 1]], [0, 1])",
        "%cube_register tree clf --metric acc=1",
        "%cube_deploy tree --wait",
        "print('PREDICT', cl.deployments.get('tree').predict([[1, 1]]))\n"
        "cl.deployments.get('tree').undeploy()",
        "%cube_pipeline run",
        "%cube_train --wait --nproc nope x.py",
    ]
    try:
        nb = run_in_kernel(cells, tmp_path, _env(settings))
    finally:
        stop_serving(ws, Caller("alice"))
    c = nb.cells

    ok = _shown(c[0])  # the widget and the text, the text the final one
    assert WIDGET in ok and ok["text/plain"].startswith("<Run "), ok
    assert ": succeeded" in ok["text/plain"], ok["text/plain"]
    view = _view(nb, c[0])
    assert "Pipeline run ok" in view["text"] and "<b>succeeded</b>" in view["text"], view
    assert view["progress"] == [(2.0, 2.0, "success")], view
    assert "a</td>" in view["text"] and "b</td>" in view["text"]  # the node table
    assert _stderr(c[0]) == "", _stderr(c[0])

    failed = _error(c[1])  # the cell failed: the message, the failing node's last lines
    assert failed.startswith("CubeFailed: cube-lab: run ") and "failed" in failed, failed
    assert "last lines of bad" in failed and "boom" in failed, failed
    assert "Traceback" not in failed and "magics.py" not in failed, failed
    assert ": failed" in _shown(c[1])["text/plain"]
    bad_view = _view(nb, c[1])
    assert "<b>failed</b>" in bad_view["text"] and "about to fail" in bad_view["text"]
    assert bad_view["progress"][0][2] == "danger"

    trained = _shown(c[2])
    assert WIDGET in trained and trained["text/plain"].startswith("<Job "), trained
    assert ": succeeded" in trained["text/plain"] and _stderr(c[2]) == ""
    crashed = _error(c[3])
    assert crashed.startswith("CubeFailed: cube-lab: job ") and "exit code 4" in crashed
    assert "[rank 0] crashing now" in crashed, crashed
    assert "<b>failed</b>" in _view(nb, c[3])["text"]

    tuned = _shown(c[4])
    assert (
        tuned["text/plain"].startswith("<Experiment ") and ": done, 2 trials" in tuned["text/plain"]
    ), tuned
    assert "★" in _view(nb, c[4])["text"] and _stderr(c[4]) == ""

    started = _shown(c[5])["text/plain"]  # no --wait: the cell returned while it ran
    assert ": queued" in started or ": running" in started, started
    assert "LATER slow succeeded" in _stdout(c[6]), _stdout(c[6])
    assert f"cell trained in {tmp_path.name}" in _stdout(c[6]), _stdout(c[6])

    assert "Registered tree v1 (sklearn" in _stdout(c[8]), c[8].outputs
    deployed = _shown(c[9])
    assert WIDGET in deployed and deployed["text/plain"].startswith("<Deployment "), deployed
    assert ": running at http" in deployed["text/plain"], deployed
    assert "PREDICT [1]" in _stdout(c[10]), c[10].outputs

    assert "usage" in _stderr(c[11]).lower() and "path" in _stderr(c[11]), c[11].outputs
    assert "nope" in _stderr(c[12]) and "Traceback" not in _stderr(c[12]), c[12].outputs


def _notebook(path: Path, cells: list[str]) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "cube-lab", "display_name": "cube-lab", "language": "py"}
    nbformat.write(nb, path)
    return path


@pytest.mark.parametrize("good", [True, False], ids=["succeeds", "fails"])
def test_run_all_and_papermill_stop_at_a_failed_wait(
    tmp_path: Path, settings: Any, good: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As "Run All" (nbclient without allow_errors) and papermill run a notebook: a failed job
    behind ``--wait`` raises there and the cells after it never run; a good one goes on."""
    import papermill

    (tmp_path / "job.py").write_text("raise SystemExit(0)\n" if good else "raise SystemExit(3)\n")
    cells = ["%cube_train --wait --framework plain job.py", "print('after the job')"]
    for key, value in _env(settings).items():
        monkeypatch.setenv(key, value)

    nb = nbformat.read(_notebook(tmp_path / "run-all.ipynb", cells), as_version=4)
    client = NotebookClient(nb, kernel_name="cube-lab", timeout=180)
    client.resources = {"metadata": {"path": str(tmp_path)}}
    if good:
        client.execute()
        assert "after the job" in _stdout(nb.cells[1])
    else:
        with pytest.raises(CellExecutionError) as stopped:
            client.execute()
        assert "CubeFailed" in str(stopped.value) and nb.cells[1].outputs == []

    source = _notebook(tmp_path / "paper.ipynb", cells)
    out = tmp_path / "paper-out.ipynb"
    monkeypatch.chdir(tmp_path)
    if good:
        papermill.execute_notebook(str(source), str(out), cwd=str(tmp_path), progress_bar=False)
        assert "after the job" in _stdout(nbformat.read(out, as_version=4).cells[1])
    else:
        with pytest.raises(papermill.PapermillExecutionError) as failed:
            papermill.execute_notebook(str(source), str(out), cwd=str(tmp_path), progress_bar=False)
        assert "CubeFailed" in str(failed.value)
        executed = [c for c in nbformat.read(out, as_version=4).cells if c.cell_type == "code"]
        assert "exit code 3" in _error(executed[0]) and executed[1].outputs == []
