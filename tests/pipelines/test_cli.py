"""`cube-lab pipeline ...` and `%cube_pipeline` as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pipeline_util import node, script, write_pipeline


def cli(*args: str, cwd: Path, db_url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CUBE_LAB_USER": "alice"}
    if db_url:
        env["CUBE_LAB_DB_URL"] = db_url
    return subprocess.run(
        [sys.executable, "-m", "cube_lab.cli", "pipeline", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_run_prints_progress_and_exit_codes(tmp_path: Path) -> None:
    script(tmp_path, "a.py", "print('a')\n")
    script(tmp_path, "b.py", "import os; print('lr', os.environ['lr'])\n")
    params = [{"name": "lr", "default_value": {"type": "Float", "value": 0.1}}]
    write_pipeline(
        tmp_path,
        [
            node("a", filename="a.py", label="prepare"),
            node("b", upstream=("a",), filename="b.py", label="train", pipeline_parameters=["lr"]),
        ],
        parameters=params,
    )
    out = cli("run", "p.pipeline", "--param", "lr=0.3", "--parallel", "2", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].endswith("test, 2 node(s), parallelism 2")
    assert any("ok prepare" in line for line in lines)
    assert any(" 2/2     ok train" in line for line in lines), out.stdout
    assert "succeeded in" in lines[-1]
    run_id = lines[-1].split()[1]
    log = cli("logs", run_id, "train", cwd=tmp_path)
    assert log.returncode == 0 and "lr 0.3" in log.stdout
    runs = json.loads(cli("runs", "--json", cwd=tmp_path).stdout)
    assert runs[0]["id"] == run_id and runs[0]["trigger"] == "cli"

    script(tmp_path, "b.py", "raise SystemExit('bad data')\n")
    failed = cli("run", "p.pipeline", cwd=tmp_path)
    assert failed.returncode == 1 and "FAIL train" in failed.stdout
    assert "bad data" in failed.stderr  # the failed node's log tail


def test_validate_and_bad_input(tmp_path: Path) -> None:
    write_pipeline(tmp_path, [node("a", filename="nope.py")])
    out = cli("validate", "p.pipeline", cwd=tmp_path)
    assert out.returncode == 1 and "node 'a': filename: file 'nope.py' not found" in out.stderr
    out = cli("run", "missing.pipeline", cwd=tmp_path)
    assert out.returncode == 2 and "not found" in out.stderr and "Traceback" not in out.stderr
    script(tmp_path, "nope.py", "pass\n")
    out = cli("run", "p.pipeline", "--only", "ghost", cwd=tmp_path)
    assert out.returncode == 1 and "no node 'ghost'" in out.stderr


def test_schedule_commands(tmp_path: Path) -> None:
    script(tmp_path, "a.py", "pass\n")
    write_pipeline(tmp_path, [node("a", filename="a.py")])
    out = cli("schedule", "p.pipeline", "--cron", "30 2 * * *", "--max-active", "2", cwd=tmp_path)
    assert out.returncode == 0 and "schedule 1 (p): 30 2 * * *" in out.stdout, out.stderr
    listed = json.loads(cli("schedules", "--json", cwd=tmp_path).stdout)
    assert listed[0]["max_active_runs"] == 2 and listed[0]["next_fire_at"].endswith(
        "02:30:00+00:00"
    )
    assert cli("schedule", "p.pipeline", "--cron", "nightly", cwd=tmp_path).returncode == 2
    assert cli("unschedule", "1", cwd=tmp_path).returncode == 0
    assert json.loads(cli("schedules", "--json", cwd=tmp_path).stdout) == []


def test_compile_for_kubeflow(tmp_path: Path) -> None:
    import yaml

    script(tmp_path, "prep.py", "pass\n")
    script(tmp_path, "train.py", "pass\n")
    write_pipeline(
        tmp_path,
        [
            node("prep", filename="prep.py", label="prep"),
            node(
                "train",
                upstream=("prep",),
                filename="train.py",
                label="train",
                cpu=2,
                memory=4,
                gpu=1,
            ),
        ],
    )
    out = cli("compile", "p.pipeline", "--target", "kfp", "-o", "p.yaml", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    ir = next(yaml.safe_load_all((tmp_path / "p.yaml").read_text()))
    tasks = ir["root"]["dag"]["tasks"]
    assert len(tasks) == 2
    train = next(t for name, t in tasks.items() if "train" in name)
    assert len(train["dependentTasks"]) == 1 and "prep" in train["dependentTasks"][0]
    bad = cli("compile", "missing.pipeline", cwd=tmp_path)
    assert bad.returncode == 2 and "not found" in bad.stderr


def test_a_run_that_cannot_be_recorded_is_cancelled_with_a_clear_error(tmp_path: Path) -> None:
    # A plain run starts nodes before the store is open; if the store then cannot be
    # opened, the run stops and the user is told why (no traceback, non-zero exit).
    script(tmp_path, "a.py", "print('a')\n")
    script(tmp_path, "b.py", "import time; time.sleep(30)\n")
    write_pipeline(
        tmp_path, [node("a", filename="a.py"), node("b", upstream=("a",), filename="b.py")]
    )
    (tmp_path / "not-a-folder").write_text("")
    out = cli(
        "run", "p.pipeline", cwd=tmp_path, db_url=f"sqlite:///{tmp_path}/not-a-folder/cube.db"
    )
    assert out.returncode == 1
    assert "cube-lab: error: cannot open the cube-lab database" in out.stderr
    assert "Traceback" not in out.stderr
