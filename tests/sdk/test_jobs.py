"""The SDK's training jobs, tuning experiments and deployments (``cl.train``, ``cl.tune``,
``cl.deploy``), in this process and through ``cl.connect`` against a real second server with
the same answers; and their live ipywidgets views, driven by real work to its end."""

from __future__ import annotations

import json
import re
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_util import REPO, run_in_kernel
from pipeline_util import node, script, write_pipeline
from serving_util import stop_serving

import cube_lab as cl
from cube_lab import sdk
from cube_lab.errors import Conflict, CubeError, InvalidInput, NotFound
from cube_lab.identity import Caller
from cube_lab.sdk.handle import WaitTimeout
from cube_lab.sdk.serving import Deployment
from cube_lab.sdk.training import Job
from cube_lab.sdk.tuning import Experiment
from cube_lab.sdk.views import LiveView
from cube_lab.workspace import default_workspace
from tests.sdk.test_sdk import _connect, _model, _same_everywhere, local, server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

REPORTER = textwrap.dedent(
    """
    import os, sys, time
    import cube_lab
    for step in range(4):
        cube_lab.report(step=step, loss=4.0 - step, total_steps=4)
        time.sleep(0.05)
    print("rank", os.environ["RANK"], "of", os.environ["WORLD_SIZE"], "args", sys.argv[1:])
    if os.environ["RANK"] == "0":
        with open(os.path.join(os.environ["CUBE_OUTPUT_DIR"], "model.txt"), "w") as fh:
            fh.write("weights")
    """
)

TRIAL = textwrap.dedent(
    """
    import os, nni
    x = nni.get_next_parameter()["x"]
    nni.report_intermediate_result(-(x - 1) ** 2)
    with open(os.path.join(os.environ["NNI_OUTPUT_DIR"], "x.txt"), "w") as fh:
        fh.write(str(x))
    print("x is", x)
    nni.report_final_result(-(x - 1) ** 2)
    """
)


@pytest.fixture
def here(local: Path) -> Iterator[Path]:  # noqa: F811
    """The embedded shape; no model server outlives the test."""
    yield local
    if sdk.current().kind == "local":
        stop_serving(default_workspace(), Caller("alice"))


def _view_checked(view: LiveView, handle: Any) -> dict[str, Any]:
    """The view refreshed itself to the end: its thread stops, and what it shows."""
    assert view.thread is not None
    view.thread.join(30)
    assert not view.thread.is_alive() and handle.done
    return {
        "status": view.status.value,
        "bar": [view.bar.value, view.bar.max, view.bar.bar_style],
        "count": view.count.value,
        "table": view.table.value,
        "footer": view.footer.value,
    }


def _jobs_roundtrip(root: Path) -> dict[str, Any]:
    (root / "report.py").write_text(REPORTER)
    job = cl.train("report.py", framework="plain", workers=2, args=["--lr", "0.1"])
    assert isinstance(job, Job) and job.status in ("queued", "running")
    view = LiveView(job, refresh_s=0.1).start()  # before the job ends: it follows it
    assert view.footer.value.startswith("Refreshing")
    assert job.wait(timeout=120) is job and job.status == "succeeded", job.data
    shown = _view_checked(view, job)
    assert shown["bar"] == [4.0, 4.0, "success"] and shown["count"] == "4 of 4 steps"
    assert "<b>succeeded</b>" in shown["status"] and shown["footer"] == "Finished"
    assert "<td style='padding:0 8px'>loss</td>" in shown["table"], shown["table"]

    frame = job.metrics()
    assert list(frame.columns) == ["loss", "total_steps"] and frame.index.name == "step"
    assert frame["loss"].tolist() == [4.0, 3.0, 2.0, 1.0]
    assert frame.index.tolist() == [0, 1, 2, 3]
    log = job.logs()
    assert "[rank 0] rank 0 of 2 args ['--lr', '0.1']" in log and "[rank 1] rank 1 of 2" in log
    assert "loss=1" in repr(job) and "succeeded" in repr(job)
    version = job.register("trained")
    assert (version.name, version.version) == ("trained", 1)
    assert version.lineage.get("training_job_id") == job.id and version.metrics["loss"] == 1.0
    assert job.url is None
    ranks, box = view.parts  # the log tail with its rank filter; the register button
    assert [label for label, _ in ranks.ranks.options] == ["All ranks", "Rank 0", "Rank 1"]
    assert "[rank 0] rank 0 of 2" in ranks.text.value and "[rank 1] rank 1" in ranks.text.value
    ranks.ranks.value = 1  # one rank's lines, without its prefix
    assert "rank 1 of 2" in ranks.text.value and "rank 0 of 2" not in ranks.text.value
    assert box.widget.layout.display is None and box.name.value == "report"
    box.name.value = "trained"
    box.button.click()  # what a click in the notebook does: registers through the SDK
    assert box.result.value == "Registered trained:2", box.result.value
    box.name.value = "bad name!"
    box.button.click()
    assert "var(--jp-error-color1" in box.result.value

    (root / "sleep.py").write_text("import time\nprint('up', flush=True)\ntime.sleep(300)\n")
    sleeper = cl.train("sleep.py", framework="plain")
    with pytest.raises(WaitTimeout):
        sleeper.wait(timeout=0.3)
    assert sleeper.stop().wait(timeout=60).status == "cancelled"

    assert [j.id for j in cl.training.jobs()] == [sleeper.id, job.id]
    assert cl.training.get(job.id).status == "succeeded"
    with pytest.raises(InvalidInput) as missing_script:
        cl.train("nope.py", framework="plain")
    with pytest.raises(NotFound) as missing_job:
        cl.training.get("no-such-job")
    with pytest.raises(Conflict) as ended:
        job.stop()
    with pytest.raises(InvalidInput):
        cl.train("report.py", args="--lr 0.1")  # type: ignore[arg-type]
    return {
        "job": {k: job.data[k] for k in ("status", "framework", "workers", "exit_code")},
        "metrics": frame.to_dict(),
        "version": {k: version.data[k] for k in ("model", "version", "flavor", "metrics")},
        "view": shown,
        "rank_1_lines": ranks.lines(),
        "errors": [
            json.loads(json.dumps(e.value.to_json()).replace(str(root), "ROOT"))
            for e in (missing_job, ended)
        ]
        + [missing_script.value.error],
    }


def test_jobs_here_and_over_rest_answer_the_same(
    here: Path,
    server: tuple[str, Path],  # noqa: F811  (the fixture of test_sdk)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mine = _jobs_roundtrip(here)
    assert mine["errors"][2] == "script 'nope.py' not found"
    theirs = _jobs_roundtrip(_connect(server, monkeypatch))
    for result in (mine, theirs):  # the job ids differ; what was said about them does not
        result["errors"][1]["error"] = result["errors"][1]["error"].split(" already")[1]
    _same_everywhere(mine, theirs)


def _config() -> dict[str, Any]:
    return {
        "searchSpace": {"x": {"_type": "choice", "_value": [0.5, 1.0, 2.0]}},
        "trialCommand": "python3 trial.py",
        "trialCodeDirectory": ".",
        "trialConcurrency": 1,
        "maxTrialNumber": 2,
        "tuner": {"name": "GridSearch"},
    }


def _tuning_roundtrip(root: Path) -> dict[str, Any]:
    (root / "hpo").mkdir()
    (root / "hpo" / "trial.py").write_text(TRIAL)
    (root / "hpo" / "config.yml").write_text(json.dumps(_config()))
    exp = cl.tune("hpo/config.yml")
    assert isinstance(exp, Experiment) and exp.status in ("queued", "running")
    view = LiveView(exp, refresh_s=0.1).start()
    assert exp.wait(timeout=120).status == "done", exp.data
    shown = _view_checked(view, exp)
    assert shown["count"] == "2 of 2 trials" and shown["bar"][2] == "success"
    best_row = f"<td style='padding:0 8px'>★ {exp.best['id']}</td>"  # the best, first
    assert shown["table"].index(best_row) < shown["table"].index("x=0.5")
    trials = exp.trials
    assert len(trials) == 2 and set(trials["status"]) == {"succeeded"}
    assert sorted(trials["x"]) == [0.5, 1.0] and trials.index.name == "trial"
    best = exp.best
    assert best is not None and best["parameters"] == {"x": 1.0} and best["final"] == 0
    assert f"x is {best['parameters']['x']}" in exp.logs(best["id"])
    version = exp.register("tuned")
    assert version.params == {"x": 1.0} and version.tags["trial"] == best["id"]
    listed = cl.tuning.experiments()
    assert [e.id for e in listed] == [exp.id] and len(listed[0].trials) == 2
    with pytest.raises(InvalidInput) as bad:
        cl.tune({**_config(), "tuner": {"name": "Magic"}}, base_dir=root / "hpo")
    with pytest.raises(InvalidInput) as no_file:
        cl.tune("nope.yml")
    return {
        "trials": trials.drop(columns=["duration_s"]).reset_index(drop=True).to_dict(),
        "best": {k: best[k] for k in ("seq", "parameters", "final", "status")},
        "version": {k: version.data[k] for k in ("model", "version", "params", "metrics")},
        "view": {**shown, "table": shown["table"].replace(exp.id, "EXP")},
        "errors": [bad.value.to_json(), no_file.value.error],
    }


def test_tuning_here_and_over_rest_answer_the_same(
    here: Path,
    server: tuple[str, Path],  # noqa: F811  (the fixture of test_sdk)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mine = _tuning_roundtrip(here)
    assert mine["errors"][0]["error"] == "tuner: unknown tuner 'Magic'"
    _same_everywhere(mine, _tuning_roundtrip(_connect(server, monkeypatch)))


def _serving_roundtrip(root: Path) -> dict[str, Any]:
    model = _model()
    cl.models.register(model, "iris")
    dep = cl.deploy("iris:1", name="iris-dep")
    assert isinstance(dep, Deployment) and dep.ready and dep.endpoint
    assert dep.wait(timeout=30) is dep and dep.status == "running"
    rows = [[0, 0], [1, 1], [0, 1]]
    assert dep.predict(rows) == model.predict(rows).tolist()
    got = dep.predict(rows, outputs=["predict", "predict_proba"])
    assert got["predict"] == model.predict(rows).tolist()
    assert got["predict_proba"] == model.predict_proba(rows).tolist()
    import pandas as pd

    frame = pd.DataFrame(rows, columns=["a", "b"])
    assert dep.predict(frame) == got["predict"]
    assert dep.predict([1, 1]) == model.predict([[1, 1]]).tolist()  # one row
    raw = dep.infer(
        {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP64", "data": [1, 1]}]}
    )
    assert raw["model_name"] == "iris" and raw["model_version"] == "1"
    with pytest.raises(CubeError) as refused:
        dep.infer({"inputs": [{"name": "x", "shape": [1, 2], "datatype": "NOPE", "data": [1]}]})
    assert [d.name for d in cl.deployments.list()] == ["iris-dep"]
    assert cl.deployments.get("iris-dep").version == 1
    assert "iris-dep" in repr(dep) and dep.url is None
    stats = dep.stats()  # 6 answered above (one refused), none in flight now
    assert (stats["requests"], stats["errors"], stats["in_flight"]) == (6, 1, 0), stats
    assert 0 < stats["p50_ms"] <= stats["p95_ms"] and stats["mean_ms"] > 0, stats
    view = LiveView(dep, refresh_s=0.1).start()  # running: it follows the traffic
    assert view.thread is not None and view.footer.value.startswith("Refreshing")
    assert "<td style='padding:0 8px'>100%</td>" in view.table.value
    # no progress, charts, error or log for a deployment: those rows take no room
    assert view.progress.layout.display == "none" and view.table.layout.display is None
    assert [x.layout.display for x in (view.charts, view.problem, view.log)] == ["none"] * 3
    traffic, box = view.parts
    box.input.value = "[[1, 1], [5, 5]]"
    box.button.click()  # the test box: rows as JSON, the answer shown
    assert json.dumps(model.predict([[1, 1], [5, 5]]).tolist()) in box.answer.value
    box.input.value = "not json"
    box.button.click()
    assert "The test input is not JSON" in box.answer.value
    deadline = time.monotonic() + 10
    while "Requests: 7 " not in traffic.widget.value and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "Requests: 7 · errors: 1 · " in traffic.widget.value, traffic.widget.value
    assert " ms, p95 " in traffic.widget.value and "in flight: 0" in traffic.widget.value
    stopped = dep.undeploy()
    assert stopped.status == "stopped" and stopped.endpoint is None
    assert view.thread is not None
    view.thread.join(10)  # stopped: the view ends with it
    assert not view.thread.is_alive() and view.footer.value == "Finished"
    assert traffic.widget.value == "" and box.widget.layout.display == "none"
    assert "stopped" in dep.refresh().status
    with pytest.raises(Conflict) as not_running:
        dep.predict(rows)
    with pytest.raises(NotFound) as missing:
        cl.deploy("nothing:1")
    with pytest.raises(InvalidInput):
        cl.deploy("iris:")
    return {
        "predict": got,
        "raw": raw,
        "refused": type(refused.value).__name__,
        "errors": [not_running.value.to_json(), missing.value.to_json()],
        "removed": dep.undeploy().status,  # a stopped deployment is removed
    }


def test_deployments_here_and_over_rest_answer_the_same(
    here: Path,
    server: tuple[str, Path],  # noqa: F811  (the fixture of test_sdk)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mine = _serving_roundtrip(here)
    assert mine["removed"] == "removed"
    _same_everywhere(mine, _serving_roundtrip(_connect(server, monkeypatch)))


def test_a_runs_view_follows_it_to_the_end(here: Path) -> None:
    a = script(here, "a.py", "import time\ntime.sleep(0.3)\n")
    bad = script(here, "bad.py", "raise SystemExit('boom')\n")
    path = write_pipeline(here, [node("a", filename=a), node("bad", upstream=("a",), filename=bad)])
    run = cl.pipelines.run(path)
    view = LiveView(run, refresh_s=0.1).start()
    assert run.wait(timeout=120).status == "failed"
    shown = _view_checked(view, run)
    assert shown["count"] == "2 of 2 nodes" and shown["bar"] == [2.0, 2.0, "danger"]
    assert (
        "<td style='padding:0 8px'>a</td><td style='padding:0 8px'>succeeded</td>"
        in (shown["table"])
    )
    assert "Error: 1 node(s) failed: bad" in view.problem.value
    assert "Log of bad (last lines)" in view.log.value and "boom" in view.log.value


def test_a_job_displays_as_a_live_widget_in_a_kernel(here: Path, isolated_env: Path) -> None:
    """The cell that shows the job returns while it runs; the widget models the notebook
    kept end with the job; the text stays beside them for where widgets cannot render."""
    (here / "report.py").write_text(REPORTER)
    env = {
        "JUPYTER_PATH": str(REPO),
        "CUBE_LAB_DATA_DIR": str(isolated_env / "cube-data"),
        "CUBE_LAB_USER": "alice",
    }
    started = time.monotonic()
    nb = run_in_kernel(
        [
            "import cube_lab as cl\njob = cl.train('report.py', framework='plain')\njob",
            "print('SEEN', job.status)",
            # the view's thread ends with its last refresh (the job's end): wait for that
            "job.wait(timeout=120)\njob._live_view.thread.join(30)\n"
            "print('DONE', job.status, job._live_view.thread.is_alive())",
            # the stop button (SIGINT) during wait(): the cell stops, the job goes on
            "import os, signal, threading\n"
            "open('sleep.py', 'w').write('import time\\ntime.sleep(300)\\n')\n"
            "slow = cl.train('sleep.py', framework='plain')\n"
            "threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()\n"
            "slow.wait()",
            "print('AFTER', slow.refresh().status, slow.stop().wait(60).status)",
        ],
        here,
        env,
    )
    assert time.monotonic() - started < 120
    shown, seen, done, interrupted, after = nb.cells
    (error,) = [o for o in interrupted.outputs if o.get("output_type") == "error"]
    assert error["ename"] == "KeyboardInterrupt", error
    note = "".join(o.get("text", "") for o in interrupted.outputs if o.get("name") == "stderr")
    assert "Stopped waiting; job" in note and "goes on (running)" in note, note
    assert "AFTER running cancelled" in after.outputs[0]["text"], after.outputs
    (bundle,) = [o for o in shown.outputs if o.get("output_type") == "display_data"]
    assert bundle["data"]["text/plain"].startswith("<Job ")
    assert "application/vnd.jupyter.widget-view+json" in bundle["data"]
    assert "SEEN queued" in seen.outputs[0]["text"] or "SEEN running" in seen.outputs[0]["text"]
    assert "DONE succeeded False" in done.outputs[0]["text"], done.outputs
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    models = [m["state"] for m in state.values()]
    (bar,) = [m for m in models if m.get("_model_name") == "FloatProgressModel"]
    assert (bar["value"], bar["max"], bar["bar_style"]) == (4.0, 4.0, "success")
    labels = {m.get("value") for m in models if m.get("_model_name") == "LabelModel"}
    assert {"4 of 4 steps", "Finished"} <= labels, labels
    # the loss chart: 4 points, the last value 1 (REPORTER reports 4, 3, 2, 1)
    (chart,) = [m["value"] for m in models if "aria-label='loss'" in str(m.get("value"))]
    (line,) = re.findall(r"points='([^']*)'", chart)
    assert "<b>loss</b> 1 " in chart and len(line.split()) == 4, chart


def test_handles_show_as_text_outside_a_kernel(here: Path, capsys: Any) -> None:
    (here / "report.py").write_text(REPORTER)
    job = cl.train("report.py", framework="plain")
    followed = job.logs(follow=True)  # prints as it grows, returns when the job ends
    assert "[rank 0] rank 0 of 1" in followed and capsys.readouterr().out == followed
    job.wait(timeout=120)._ipython_display_()
    assert capsys.readouterr().out.startswith(f"<Job {job.id} report: succeeded")

    (here / "bad.py").write_text("print('about to fail')\nraise SystemExit(3)\n")
    bad = cl.train("bad.py", framework="plain")
    view = LiveView(bad, refresh_s=0.1).start()
    assert bad.wait(timeout=120).status == "failed" and bad.exit_code == 3
    shown = _view_checked(view, bad)
    ranks, box = view.parts
    assert shown["bar"][2] == "danger" and "Log of bad (last lines)" in ranks.text.value
    assert "about to fail" in ranks.text.value and ranks.ranks.layout.display == "none"
    assert box.widget.layout.display == "none"  # nothing to register from a failed job


def _finetune_roundtrip(root: Path) -> dict[str, Any]:
    """A LoRA SFT of a tiny random model, from a YAML beside its files."""
    import yaml

    from cube_lab.finetune import tiny

    rows = tiny.alpaca_rows()
    (root / "alpaca.json").write_text(json.dumps(rows))
    tiny.build(root / "base", [json.dumps(r) for r in rows])
    settings = {"model": "base", "data": "alpaca.json", "logging_steps": 2, "cutoff_len": 128}
    settings |= {"learning_rate": 0.01, "per_device_train_batch_size": 4}
    (root / "sft.yaml").write_text(yaml.safe_dump(settings))
    job = cl.finetune("sft.yaml", max_steps=4)  # returns at once
    assert isinstance(job, Job) and job.status in ("queued", "running")
    assert job.wait(timeout=300).status == "succeeded", job.logs()[-3000:]
    frame = job.metrics()
    assert frame.index.tolist() == [2, 4] and (frame["loss"] > 0).all()
    version = job.register("tiny-sft")
    with pytest.raises(InvalidInput) as refused:
        cl.finetune({**settings, "model": "no-such-folder"})
    memory = cl.finetune.estimate("sft.yaml")
    merged = cl.finetune.merge("tiny-sft:1").wait(timeout=300).register("tiny-merged")
    prompts = [{"prompt": r["instruction"], "expected": r["output"]} for r in rows[:3]]
    (root / "p.jsonl").write_text("\n".join(json.dumps(p) for p in prompts))
    evaluation = cl.finetune.evaluate({"model": "tiny-sft:1", "prompts": "p.jsonl"},
                                      max_new_tokens=4)  # fmt: skip
    table = evaluation.table(timeout=300)
    return {
        "job": {k: job.data[k] for k in ("status", "framework", "name")},
        "steps": frame.index.tolist(),
        "version": (version.name, version.version, version.flavor),
        "refused": refused.value.error.replace(str(root), "ROOT"),
        "memory": (memory["parameters"], memory["trainable_parameters"]),
        "merged": (merged.name, merged.flavor),
        "evaluation": (list(table.columns), sorted(table.index)),
    }


def test_finetune_here_and_over_rest_answer_the_same(
    here: Path,
    server: tuple[str, Path],  # noqa: F811  (the fixture of test_sdk)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mine = _finetune_roundtrip(here)
    assert mine["job"] == {"status": "succeeded", "framework": "pytorch", "name": "finetune-sft"}
    assert mine["version"] == ("tiny-sft", 1, "peft")
    assert mine["merged"] == ("tiny-merged", "transformers") and mine["memory"][1] > 0
    assert mine["evaluation"] == (["before", "after"], ["exact_match", "rouge_l", "seconds"])
    theirs = _finetune_roundtrip(_connect(server, monkeypatch))
    assert theirs == mine
