"""The "training" node kind: found through its entry point, validated, run as a real job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline_util import node, script, write_pipeline

from cube_lab.identity import Caller
from cube_lab.pipelines.nodekinds import node_kinds
from cube_lab.pipelines.validation import PipelineInvalid
from cube_lab.training.nodekind import OP_TRAINING

ALICE = Caller("alice")

TRAIN = """\
import os
import cube_lab
for step in range(1, 4):
    cube_lab.report(step=step, loss=1.0 / step)
    print(f"step={step}", flush=True)
out = os.environ["CUBE_OUTPUT_DIR"]
os.makedirs(out, exist_ok=True)
open(os.path.join(out, "model.txt"), "w").write("weights")
"""


def test_the_kind_is_registered_through_its_entry_point() -> None:
    kind = node_kinds()[OP_TRAINING]
    assert kind.name == "training"
    assert "filename" in kind.schema["required"]


def test_bad_training_parameters_name_the_node_and_the_field(ws: Any, tmp_path: Path) -> None:
    script(tmp_path, "train.py", TRAIN)
    path = write_pipeline(
        tmp_path,
        [
            node("nofile", OP_TRAINING, filename="missing.py"),
            node("zero", OP_TRAINING, filename="train.py", workers=0),
            node("fw", OP_TRAINING, filename="train.py", framework="caffe"),
        ],
    )
    try:
        ws.pipelines.prepare(ALICE, path, tmp_path)
    except PipelineInvalid as exc:
        found = {(p.node_id, p.field) for p in exc.problems}
    else:
        raise AssertionError("an invalid training node was accepted")
    assert ("nofile", "filename") in found
    assert ("zero", "workers") in found
    assert ("fw", "framework") in found


def test_a_training_node_runs_a_recorded_job_and_publishes_its_id(ws: Any, tmp_path: Path) -> None:
    script(tmp_path, "train.py", TRAIN)
    script(tmp_path, "after.py", "import os; print('trained by', os.environ['JOB'])\n")
    path = write_pipeline(
        tmp_path,
        [
            node("train", OP_TRAINING, filename="train.py", framework="plain", arguments="--x 1"),
            node(
                "after",
                upstream=("train",),
                filename="after.py",
                env_vars=[{"env_var": "JOB", "value": "{{ nodes.train.values.job_id }}"}],
            ),
        ],
    )
    runner, recorder = ws.pipelines.prepare(ALICE, path, tmp_path)
    assert ws.pipelines.run_foreground(runner, recorder) == "succeeded"
    view = ws.pipelines.get_run(ALICE, runner.plan.run_id)
    train = next(n for n in view.nodes if n.id == "train")
    assert train.kind == "training"
    job_id = train.values["job_id"]
    assert train.values["status"] == "succeeded"
    assert train.values["metric_loss"] == 1.0 / 3
    job = ws.training.get(ALICE, job_id)  # the job is in the Training panel's list too
    assert job.status == "succeeded" and job.framework == "plain"
    assert Path(job.output_dir, "model.txt").read_text() == "weights"
    log = ws.pipelines.tail_log(ALICE, view.id, "after", 0).text
    assert f"trained by {job_id}" in log
    train_log = ws.pipelines.tail_log(ALICE, view.id, "train", 0).text
    assert "step=3" in train_log  # the ranks' output streams into the node's log
