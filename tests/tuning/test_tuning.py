"""Tuning: NNI search spaces checked, real NNI tuners and assessors, NNI trial code unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from cube_lab.errors import InvalidInput, NotFound
from cube_lab.identity import Caller
from cube_lab.processes import pid_alive
from cube_lab.tuning import searchspace

ALICE, BOB = Caller("alice"), Caller("bob")

# An NNI example trial, written as NNI's docs write them: it never heard of cube-lab.
QUADRATIC = """\
import nni

params = nni.get_next_parameter()
x = params["x"]
for step in range(3):
    nni.report_intermediate_result(-(x - 2) ** 2 - (2 - step) * 0.1)
nni.report_final_result(-(x - 2) ** 2)
print("trial", nni.get_trial_id(), "x", x)
"""


def config(folder: Path, trial: str, **overrides: Any) -> dict[str, Any]:
    (folder / "trial.py").write_text(trial)
    base: dict[str, Any] = {
        "searchSpace": {"x": {"_type": "uniform", "_value": [-5, 5]}},
        "trialCommand": "python3 trial.py",
        "trialCodeDirectory": ".",
        "trialConcurrency": 2,
        "maxTrialNumber": 10,
        "tuner": {"name": "TPE", "classArgs": {"optimize_mode": "maximize", "seed": 7}},
    }
    base.update(overrides)
    return base


def run(ws: Any, folder: Path, cfg: dict[str, Any]) -> Any:
    spec = ws.tuning.parse(cfg, folder)
    engine = ws.tuning.prepare(ALICE, spec)
    status = ws.tuning.run_foreground(engine)
    return status, ws.tuning.get(ALICE, engine.experiment_id)


@pytest.mark.parametrize(
    ("space", "names"),
    [
        ({"lr": {"_type": "loguniform", "_value": [0, 0.1]}}, "searchSpace.lr: loguniform"),
        ({"lr": {"_type": "uniformm", "_value": [0, 1]}}, "searchSpace.lr: unknown _type"),
        ({"n": {"_type": "randint", "_value": [5, 1]}}, "searchSpace.n: randint"),
        ({"b": {"_type": "choice", "_value": []}}, "searchSpace.b: choice"),
        ({"q": {"_type": "quniform", "_value": [0, 1]}}, "searchSpace.q: quniform"),
        ({"x": [1, 2]}, "searchSpace.x must be an object"),
        ({}, "searchSpace must be a non-empty mapping"),
    ],
)
def test_a_bad_search_space_entry_is_named(space: Any, names: str) -> None:
    with pytest.raises(InvalidInput) as exc:
        searchspace.check(space)
    assert exc.value.error.startswith(names)


def test_tpe_finds_the_optimum_with_unchanged_nni_trial_code(ws: Any, tmp_path: Path) -> None:
    status, view = run(ws, tmp_path, config(tmp_path, QUADRATIC, maxTrialNumber=12))
    assert status == "done"
    assert view.trial_count == 12
    assert all(t.status == "succeeded" for t in view.trials)
    assert all(len(t.intermediate) == 3 for t in view.trials)
    assert view.best is not None and view.best.final > -1.0  # x within 1 of the optimum, 2
    assert abs(view.best.parameters["x"] - 2) < 1.0
    log = ws.tuning.trial_log(ALICE, view.id, view.trials[0].id).read_text()
    assert f"trial {view.trials[0].id} x" in log  # nni.get_trial_id() is this trial's id
    assert "NNISDK" not in log  # metric lines go to the record, not the log


def test_medianstop_stops_trials_that_fall_behind(ws: Any, tmp_path: Path) -> None:
    trial = """\
import nni, time
x = nni.get_next_parameter()["x"]
for step in range(6):
    nni.report_intermediate_result(-x)
    time.sleep(0.15)
nni.report_final_result(-x)
"""
    cfg = config(
        tmp_path,
        trial,
        searchSpace={"x": {"_type": "choice", "_value": [1, 2, 3, 4, 5]}},
        tuner={"name": "GridSearch"},
        assessor={"name": "Medianstop", "classArgs": {"start_step": 1}},
        objective={"mode": "maximize"},
        trialConcurrency=1,
        maxTrialNumber=5,
    )
    status, view = run(ws, tmp_path, cfg)
    assert status == "done"
    by_x = {t.parameters["x"]: t for t in view.trials}
    assert by_x[1].status == "succeeded"
    stopped = [t for t in view.trials if t.status == "early_stopped"]
    assert stopped, [t.status for t in view.trials]
    assert all(len(t.intermediate) < 6 and t.final is None for t in stopped)


def test_stopping_kills_every_trial_process(ws: Any, tmp_path: Path) -> None:
    trial = """\
import nni, os, time, subprocess, sys
nni.get_next_parameter()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
open(f"pids-{os.getpid()}", "w").write(f"{os.getpid()} {child.pid}")
time.sleep(60)
"""
    spec = ws.tuning.parse(config(tmp_path, trial, maxTrialNumber=4), tmp_path)
    engine = ws.tuning.prepare(ALICE, spec)
    result: dict[str, str] = {}
    thread = threading.Thread(target=lambda: result.update(s=ws.tuning.run_foreground(engine)))
    thread.start()
    deadline = time.time() + 60
    while len(list(tmp_path.glob("pids-*"))) < 2 and time.time() < deadline:
        time.sleep(0.1)
    pids = [int(p) for f in tmp_path.glob("pids-*") for p in f.read_text().split()]
    assert len(pids) == 4
    ws.tuning.stop(ALICE, engine.experiment_id)
    thread.join(30)
    assert result["s"] == "stopped"
    deadline = time.time() + 10  # killed grandchildren are reaped by init, a moment later
    while [p for p in pids if pid_alive(p)] and time.time() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if pid_alive(p)]
    view = ws.tuning.get(ALICE, engine.experiment_id)
    assert view.status == "stopped"
    assert {t.status for t in view.trials} == {"cancelled"}


def test_others_cannot_see_an_experiment(ws: Any, tmp_path: Path) -> None:
    cfg = config(tmp_path, QUADRATIC, maxTrialNumber=2)
    _, view = run(ws, tmp_path, cfg)
    with pytest.raises(NotFound):
        ws.tuning.get(BOB, view.id)
    assert ws.tuning.list(BOB) == []


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CUBE_LAB_USER": "alice"}
    return subprocess.run(
        [sys.executable, "-m", "cube_lab.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_cli_tune_json_and_errors(tmp_path: Path) -> None:
    cfg = config(tmp_path, QUADRATIC, maxTrialNumber=4)
    (tmp_path / "config.yml").write_text(yaml.safe_dump(cfg))
    out = cli("tune", "config.yml", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)  # one document, nothing before it
    assert result["trials"] == 4 and result["status"] == "done"
    assert set(result["best"]) == {"trial", "parameters", "metric"}
    assert "x" in result["best"]["parameters"]
    listed = cli("tuning", "list", cwd=tmp_path)
    assert result["experiment"] in listed.stdout

    bad = dict(cfg, searchSpace={"lr": {"_type": "loguniform", "_value": [-1, 1]}})
    (tmp_path / "bad.yml").write_text(yaml.safe_dump(bad))
    out = cli("tune", "bad.yml", cwd=tmp_path)
    assert out.returncode == 2
    assert "searchSpace.lr: loguniform needs _value" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_tuning_node_publishes_the_best_parameters(ws: Any, tmp_path: Path) -> None:
    from pipeline_util import node, write_pipeline

    from cube_lab.tuning.nodekind import OP_TUNING

    cfg = config(tmp_path, QUADRATIC, maxTrialNumber=6)
    (tmp_path / "search.yml").write_text(yaml.safe_dump(cfg))
    (tmp_path / "use.py").write_text("import os; print('best x', os.environ['BEST_X'])\n")
    (tmp_path / "broken.yml").write_text(yaml.safe_dump({**cfg, "trialConcurrency": 0}))
    path = write_pipeline(
        tmp_path,
        [
            node("tune", OP_TUNING, filename="search.yml", max_trials=3),
            node(
                "use",
                upstream=("tune",),
                filename="use.py",
                env_vars=[{"env_var": "BEST_X", "value": "{{ nodes.tune.values.param_x }}"}],
            ),
        ],
    )
    runner, recorder = ws.pipelines.prepare(ALICE, path, tmp_path)
    status = ws.pipelines.run_foreground(runner, recorder)
    view = ws.pipelines.get_run(ALICE, runner.plan.run_id)
    logs = {n.id: ws.pipelines.tail_log(ALICE, view.id, n.id, 0).text[-3000:] for n in view.nodes}
    assert status == "succeeded", logs  # a node's log says why
    tune = next(n for n in view.nodes if n.id == "tune")
    assert tune.kind == "tuning" and tune.values["trials"] == 3
    experiment = ws.tuning.get(ALICE, tune.values["experiment"])
    assert experiment.best.parameters["x"] == tune.values["param_x"]
    log = ws.pipelines.tail_log(ALICE, view.id, "use", 0).text
    assert f"best x {tune.values['param_x']}" in log

    bad = write_pipeline(
        tmp_path, [node("t", OP_TUNING, filename="broken.yml")], filename="b.pipeline"
    )
    _, problems = ws.pipelines.check(bad, tmp_path)
    assert [(p.node_id, p.field) for p in problems] == [("t", "filename")]
    assert "trialConcurrency must be a whole number" in problems[0].message


def test_the_best_trials_model_is_registered_with_its_parameters(ws: Any, tmp_path: Path) -> None:
    save = 'import os\nout = os.path.join(os.environ["NNI_OUTPUT_DIR"], "model.txt")\n'
    trial = QUADRATIC.replace('print("trial"', save + 'open(out, "w").write(str(x))\nprint("trial"')
    _, view = run(ws, tmp_path, config(tmp_path, trial, maxTrialNumber=3))
    version = ws.tuning.register_trial(ALICE, view.id, "quadratic")
    assert version.model == "quadratic" and version.version == 1
    assert version.params == view.best.parameters
    assert version.metrics == {"default": view.best.final}
    assert view.best.id in version.lineage.source
    with pytest.raises(InvalidInput, match="outside the trial code folder"):
        ws.tuning.register_trial(ALICE, view.id, "quadratic", path="../../etc")
    with pytest.raises(NotFound):
        ws.tuning.register_trial(BOB, view.id, "quadratic")


def test_a_stopped_experiment_resumes_and_keeps_what_it_found(ws: Any, tmp_path: Path) -> None:
    trial = QUADRATIC.replace("import nni\n", "import nni, time\ntime.sleep(0.3)\n")
    spec = ws.tuning.parse(config(tmp_path, trial, maxTrialNumber=6, trialConcurrency=1), tmp_path)
    engine = ws.tuning.prepare(ALICE, spec)
    original = engine.on_change

    def stop_after_two(t: Any) -> None:  # the user presses Stop once two trials are done
        original(t)
        if t is not None and sum(x.final is not None for x in engine.trials) == 2:
            engine.stop()

    engine.on_change = stop_after_two
    result: dict[str, str] = {}

    def go() -> None:
        result["s"] = ws.tuning.run_foreground(engine, stop_after_two)

    thread = threading.Thread(target=go)
    thread.start()
    thread.join(120)
    assert result["s"] == "stopped"
    before = ws.tuning.get(ALICE, engine.experiment_id)
    done_before = {t.id: t.final for t in before.trials if t.final is not None}
    assert len(done_before) == 2
    status = ws.tuning.run_foreground(ws.tuning.resume(ALICE, engine.experiment_id))
    assert status == "done"
    after = ws.tuning.get(ALICE, engine.experiment_id)
    assert after.trial_count == 6 and after.status == "done"
    assert all(after_t.final is not None for after_t in after.trials)
    kept = {t.id: t.final for t in after.trials if t.id in done_before}
    assert kept == done_before  # earlier results are kept, not run again
