"""Training over REST: submit, follow the log, metrics, stop, tenancy, errors; and the CLI."""

from __future__ import annotations

import asyncio
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from cube_lab.cli import main

REPORTER = textwrap.dedent(
    """
    import os, sys
    import cube_lab
    for step in range(4):
        cube_lab.report(step=step, loss=4.0 - step)
    print("rank", os.environ["RANK"], "of", os.environ["WORLD_SIZE"], "args", sys.argv[1:])
    """
)


async def _until_done(api: Any, job_id: str) -> dict[str, Any]:
    for _ in range(300):
        status, job = await api("alice", "GET", f"training/jobs/{job_id}")
        assert status == 200
        if job["status"] not in ("queued", "running"):
            return job
        await asyncio.sleep(0.1)
    raise AssertionError("the job did not finish")


async def test_submit_follow_metrics_and_tenancy(api: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "work").mkdir()
    (jp_root_dir / "work" / "report.py").write_text(REPORTER)
    body = {
        "framework": "plain",
        "script": "report.py",
        "working_dir": "work",
        "workers": 2,
        "args": ["--lr", "0.1"],
    }
    status, job = await api("alice", "POST", "training/jobs", body)
    assert status == 201, job
    assert job["status"] in ("queued", "running") and job["project"] == "alice"
    job = await _until_done(api, job["id"])
    assert job["status"] == "succeeded" and job["exit_code"] == 0
    status, log = await api("alice", "GET", f"training/jobs/{job['id']}/log")
    assert status == 200 and log["done"]
    assert "[rank 0] rank 0 of 2 args ['--lr', '0.1']" in log["text"]
    assert "[rank 1] rank 1 of 2" in log["text"]
    status, later = await api(
        "alice", "GET", f"training/jobs/{job['id']}/log", params={"offset": log["offset"]}
    )
    assert later["text"] == "" and later["offset"] == log["offset"]
    status, found = await api("alice", "GET", f"training/jobs/{job['id']}/metrics")
    assert status == 200 and found["source"] == "report"
    assert found["series"]["loss"] == [[0, 4.0], [1, 3.0], [2, 2.0], [3, 1.0]]
    status, jobs = await api("alice", "GET", "training/jobs")
    assert [j["id"] for j in jobs["jobs"]] == [job["id"]]
    # bob sees nothing of alice's
    assert (await api("bob", "GET", "training/jobs"))[1]["jobs"] == []
    for method, route in [
        ("GET", f"training/jobs/{job['id']}"),
        ("GET", f"training/jobs/{job['id']}/log"),
        ("GET", f"training/jobs/{job['id']}/metrics"),
        ("POST", f"training/jobs/{job['id']}/stop"),
        ("POST", f"training/jobs/{job['id']}/rerun"),
        ("POST", f"training/jobs/{job['id']}/register"),
    ]:
        status, err = await api("bob", method, route)
        assert status == 404 and "not found" in err["error"], (method, route)
    status, err = await api("alice", "POST", f"training/jobs/{job['id']}/stop")
    assert status == 409 and "already ended" in err["error"]
    status, again = await api("alice", "POST", f"training/jobs/{job['id']}/rerun")
    assert status == 201 and again["id"] != job["id"]
    assert (await _until_done(api, again["id"]))["status"] == "succeeded"


async def test_stop_over_rest(api: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "sleep.py").write_text("import time\nprint('up', flush=True)\ntime.sleep(300)\n")
    status, job = await api(
        "alice", "POST", "training/jobs", {"framework": "plain", "script": "sleep.py"}
    )
    assert status == 201
    for _ in range(300):
        if "up" in (await api("alice", "GET", f"training/jobs/{job['id']}/log"))[1]["text"]:
            break
        await asyncio.sleep(0.1)
    status, _ = await api("alice", "POST", f"training/jobs/{job['id']}/stop")
    assert status == 200
    assert (await _until_done(api, job["id"]))["status"] == "cancelled"


@pytest.mark.parametrize(
    "body, fragment",
    [
        ({"script": "nope.py"}, "script 'nope.py' not found"),
        ({"script": "t.py", "workers": 0}, "workers must be"),
        ({"script": "t.py", "resources": {"gpus": 1, "gpu_type": "tpu"}}, "unknown accelerator"),
        ({"script": "../t.py"}, "outside"),
        ({"script": "t.py", "backend": "kubernetes"}, "image is required on Kubernetes"),
    ],
)
async def test_bad_submissions(api: Any, jp_root_dir: Path, body: Any, fragment: str) -> None:
    (jp_root_dir / "t.py").write_text("pass\n")
    (jp_root_dir.parent / "t.py").write_text("pass\n")
    status, err = await api("alice", "POST", "training/jobs", body)
    assert status == 400 and fragment in err["error"], err
    assert (await api("alice", "GET", "training/jobs"))[1]["jobs"] == []


def test_cli_train_streams_ranks_and_exits_with_the_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.py").write_text(REPORTER)
    (tmp_path / "bad.py").write_text("print('oops')\nraise SystemExit(4)\n")
    assert main(["train", "--framework", "plain", "--nproc", "2", "ok.py", "--x", "1"]) == 0
    out = capfd.readouterr()
    assert "[rank 1] rank 1 of 2 args ['--x', '1']" in out.out and "succeeded" in out.err
    assert main(["train", "--framework", "plain", "bad.py"]) == 1
    out = capfd.readouterr()
    assert "[rank 0] oops" in out.out and "exit code 4" in out.err
    assert main(["train", "--workers", "0", "ok.py"]) == 2
    assert "workers must be" in capfd.readouterr().err
    assert main(["train", "--dry-run", "--nproc", "2", "ok.py"]) == 0
    assert "torch.distributed.run" in capfd.readouterr().out


def test_magics_call_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    """``%cube_train`` / ``%%cube_train`` start ``cl.train`` (options mapped to its arguments,
    the cell saved as a script run in the current folder); an option only the CLI takes
    (``--dry-run``) runs ``cube-lab train`` instead."""
    from cube_lab import magics
    from cube_lab.sdk import training, views

    calls: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(training, "train", lambda script, **kw: calls.append((script, kw)))
    monkeypatch.setattr(views, "show", lambda handle: None)
    streamed: list[list[str]] = []
    monkeypatch.setattr(magics, "_stream_cli", lambda args, _what: streamed.append(args) or 0)
    m = magics.CubeMagics(shell=None)
    m.cube_train_line("--nproc 2 train.py --epochs 3")
    m.cube_train_cell("--nproc 2 -- --epochs 3", "print('hi')\n")
    m.cube_train_line("--dry-run --nproc 2 --wait train.py")
    assert calls[0] == ("train.py", {"nproc": 2, "args": ["--epochs", "3"]})
    cell, options = calls[1]
    assert options == {"nproc": 2, "args": ["--epochs", "3"], "working_dir": os.getcwd()}
    assert Path(cell).read_text() == "print('hi')\n"
    assert streamed == [["train", "--dry-run", "--nproc", "2", "train.py"]]
