"""The local launcher for real: a 2-process DDP job with gloo, stopping, metrics, recovery."""

from __future__ import annotations

import asyncio
import os
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from cube_lab.errors import CubeError, InvalidInput
from cube_lab.identity import Caller
from cube_lab.training import gpus, local, metrics
from cube_lab.training.service import TrainingService

DDP = textwrap.dedent(
    """
    import os, torch, torch.distributed as dist
    import cube_lab
    dist.init_process_group(os.environ["CUBE_DIST_BACKEND"])
    rank = dist.get_rank()
    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value)
    print(f"all_reduce={value.item():g} world={dist.get_world_size()}")
    for step in range(3):
        cube_lab.report(step=step, loss=1.0 / (step + 1), acc=0.5 + 0.1 * step)
    if rank == 0:
        ckpt = os.path.join(os.environ["CUBE_OUTPUT_DIR"], "model.pt")
        torch.save({"w": value}, ckpt)
    dist.destroy_process_group()
    """
)

SLEEPER = textwrap.dedent(
    """
    import os, sys, time, pathlib
    rank = os.environ["RANK"]
    pathlib.Path(sys.argv[1], f"pid{rank}").write_text(str(os.getpid()))
    print("ready", flush=True)
    time.sleep(300)
    """
)


def test_ddp_all_reduce_metrics_checkpoint_and_register(
    ws: Any, alice: Caller, tmp_path: Path
) -> None:
    (tmp_path / "ddp.py").write_text(DDP)
    job = ws.training.prepare(alice, {"script": "ddp.py", "nproc_per_worker": 2}, cwd=tmp_path)
    assert ws.training.run_foreground(job) == "succeeded"
    view = ws.training.get(alice, job.plan.job_id)
    assert (view.status, view.exit_code, view.attempts) == ("succeeded", 0, 1)
    log = ws.training.tail_log(alice, view.id).text
    # both ranks saw 1 + 2 = 3, each line carries its rank
    assert "[rank 0] all_reduce=3 world=2" in log and "[rank 1] all_reduce=3 world=2" in log
    assert "Setting OMP_NUM_THREADS" not in log  # torchrun's banner: the CPUs are shared out
    found = ws.training.metrics(alice, view.id)
    assert found.source == "report"
    assert found.series["loss"] == [[0, 1.0], [1, 0.5], [2, 1 / 3]]
    assert view.last_checkpoint and view.last_checkpoint.endswith("model.pt")
    version = ws.training.register_model(alice, view.id, "ddp-model")
    assert version.lineage.training_job_id == view.id
    assert version.metrics["loss"] == pytest.approx(1 / 3)


def test_one_process_runs_without_torchrun_and_is_still_a_rank(
    ws: Any, alice: Caller, tmp_path: Path
) -> None:
    """One process: no torchrun agent (an interpreter that imports torch for nothing); the
    script still makes its process group from torchrun's environment and its lines carry its
    rank."""
    (tmp_path / "ddp.py").write_text(DDP)
    job = ws.training.prepare(alice, {"script": "ddp.py"}, cwd=tmp_path)
    (proc,) = job.plan.procs
    assert "torch.distributed.run" not in proc.argv and proc.argv[-1] == "ddp.py"
    assert [proc.env[k] for k in ("RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE")] == ["0", "1", "1"]
    assert ws.training.run_foreground(job) == "succeeded"
    log = ws.training.tail_log(alice, job.plan.job_id).text
    assert "[rank 0] all_reduce=1 world=1" in log
    assert ws.training.metrics(alice, job.plan.job_id).series["loss"][-1] == [2, 1 / 3]


async def test_stop_mid_run_leaves_no_process(ws: Any, alice: Caller, tmp_path: Path) -> None:
    (tmp_path / "sleep.py").write_text(SLEEPER)
    spec = {"framework": "plain", "script": "sleep.py", "args": [str(tmp_path)], "workers": 2}
    job = ws.training.prepare(alice, spec, cwd=tmp_path)
    ws.training.start(job)
    deadline = time.monotonic() + 60
    while ws.training.tail_log(alice, job.plan.job_id).text.count("ready") < 2:
        assert time.monotonic() < deadline, "ranks never started"
        await asyncio.sleep(0.1)
    pids = [int((tmp_path / f"pid{r}").read_text()) for r in (0, 1)]
    assert ws.training.get(alice, job.plan.job_id).status == "running"
    ws.training.stop(alice, job.plan.job_id)
    assert await ws.training.wait(job.plan.job_id) == "cancelled"
    view = ws.training.get(alice, job.plan.job_id)
    assert view.status == "cancelled"
    assert local.marked_pids(job.plan.job_id) == []
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    with pytest.raises(CubeError, match="already ended"):
        ws.training.stop(alice, job.plan.job_id)


def test_failure_retries_and_exit_code(ws: Any, alice: Caller, tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("print('step=1 loss=2.5')\nraise SystemExit(3)\n")
    job = ws.training.prepare(
        alice, {"framework": "plain", "script": "bad.py", "retries": 1}, cwd=tmp_path
    )
    assert ws.training.run_foreground(job) == "failed"
    view = ws.training.get(alice, job.plan.job_id)
    assert (view.attempts, view.exit_code, view.error) == (2, 3, "exit code 3")
    assert "--- attempt 2 ---" in ws.training.tail_log(alice, view.id).text
    found = ws.training.metrics(alice, view.id)  # nothing reported: parsed from the log
    assert found.source == "log" and found.series["loss"][-1] == [1, 2.5]


def test_a_job_whose_launcher_died_is_interrupted(ws: Any, alice: Caller, tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("pass\n")
    job = ws.training.prepare(alice, {"framework": "plain", "script": "t.py"}, cwd=tmp_path)
    restarted = TrainingService(ws.store, ws.projects, ws.settings, ws.registry)
    assert restarted.recover() == [job.plan.job_id]
    view = restarted.get(alice, job.plan.job_id)
    assert view.status == "interrupted" and "stopped before it finished" in view.error


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ({"script": "missing.py"}, "script 'missing.py' not found"),
        ({}, "script is required"),
        ({"script": "t.py", "workers": 0}, "workers must be a whole number of at least 1"),
        ({"script": "t.py", "nproc_per_worker": -1}, "nproc_per_worker must be"),
        ({"script": "t.py", "framework": "jax"}, "framework 'jax' is not supported"),
        ({"script": "t.py", "resources": {"gpus": 1, "gpu_type": "nvdia"}}, "unknown accelerator"),
        ({"script": "t.py", "resources": {"gpus": 1}}, "this machine has no NVIDIA GPU"),
        (
            {"script": "t.py", "resources": {"gpus": 1, "gpu_type": "ascend-910"}},
            "cannot allocate Huawei Ascend 910",
        ),
        ({"script": "t.py", "framework": "mpi"}, "needs mpirun"),
        ({"script": "t.py", "colour": "red"}, "unknown job spec fields"),
        ({"script": "t.py", "env": {"1BAD": "x"}}, "not a valid variable name"),
    ],
)
def test_bad_input_gets_a_clear_error(
    ws: Any,
    alice: Caller,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    spec: dict[str, Any],
    fragment: str,
) -> None:
    monkeypatch.setattr(gpus, "inventory", lambda: ([], set()))  # as on a machine with no GPU
    monkeypatch.setattr(local.shutil, "which", lambda _name: None)
    (tmp_path / "t.py").write_text("pass\n")
    with pytest.raises(InvalidInput, match=fragment.replace("(", r"\(")):
        ws.training.prepare(alice, spec, cwd=tmp_path)
    assert ws.training.list(alice) == []  # nothing half-written


def test_gpus_are_assigned_from_the_free_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpus, "inventory", lambda: ([0, 1, 2, 3], {1}))
    assert gpus.assign("a", 2) == [0, 2]
    with pytest.raises(CubeError, match="only 1 of 4 are free"):
        gpus.assign("b", 2)
    gpus.release("a")
    assert gpus.assign("b", 3) == [0, 2, 3]
    gpus.release("b")


def test_gpu_plan_uses_nccl_and_cuda_visible_devices(ws: Any, tmp_path: Path) -> None:
    from cube_lab.training.spec import JobSpec

    spec = JobSpec.from_dict({"script": "t.py", "nproc_per_worker": 2, "resources": {"gpus": 2}})
    plan = local.build_plan(spec, "j", tmp_path, tmp_path, {}, [2, 3])
    (proc,) = plan.procs
    assert proc.env["CUDA_VISIBLE_DEVICES"] == "2,3" and proc.env["CUBE_DIST_BACKEND"] == "nccl"
    assert "torch.distributed.run" in proc.argv and "--nproc-per-node=2" in proc.argv
    tf = JobSpec.from_dict({"framework": "tensorflow", "script": "t.py", "workers": 2})
    plan = local.build_plan(tf, "j", tmp_path, tmp_path, {}, [])
    configs = [p.env["TF_CONFIG"] for p in plan.procs]
    assert '"index": 0' in configs[0] and '"index": 1' in configs[1]


def test_log_line_metrics_parsing() -> None:
    assert metrics.parse_log_line("[rank 0] epoch=1 step=3 loss=0.12 acc: 0.9") == (
        0,
        {"epoch": 1.0, "step": 3.0, "loss": 0.12, "acc": 0.9},
    )
    assert metrics.parse_log_line("loading 3 files, lr=0.1") is None
    records = metrics.parse_log(["[rank 1] step=1 loss=2", "[rank 0] step=1 loss=1"])
    assert metrics.series(records) == {"loss": [[1, 1.0]]}
