"""What a crash leaves running is ended by the next server: a real ``jupyter server`` is
killed with SIGKILL while a pipeline node (or a training job) sleeps; after the restart the
run is ``interrupted`` and the sleeping process is gone. A record whose pid now belongs to
another process is left alone."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import nbformat
from pipeline_util import node, script, write_pipeline
from server_util import call, free_port, start_server, wait_up
from sqlalchemy import select

from cube_lab import processes
from cube_lab.identity import Caller
from cube_lab.store.models import PipelineRun, ProcessGroup


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie waits for init to reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _pid_from(path: Path, timeout: float = 30) -> int:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.is_file() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.1)
    raise AssertionError(f"{path} was not written")


def _gone(pid: int, timeout: float = 15) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not _running(pid):
            return True
        time.sleep(0.1)
    return False


SLEEPER = (
    "import os\n"
    "open('sleeper.pid', 'w').write(str(os.getpid()))\n"
    "os.execvp('sleep', ['sleep', '60'])\n"
)


def _crash_and_restart(
    server: subprocess.Popen[bytes], root: Path, data: Path, port: int, tmp: Path
) -> subprocess.Popen[bytes]:
    server.send_signal(signal.SIGKILL)  # the crash
    server.wait()
    server = start_server(root, data, port, tmp)
    wait_up(port)
    return server


def test_crash_during_a_node_ends_the_node_process(tmp_path: Path) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    root.mkdir()
    script(root, "sleeper.py", SLEEPER)
    write_pipeline(root, [node("sleeper", filename="sleeper.py")])
    port = free_port()
    server = start_server(root, data, port, tmp_path)
    pid = 0
    try:
        wait_up(port)
        run = call(port, "POST", "pipelines/runs", {"path": "p.pipeline"})
        pid = _pid_from(root / "sleeper.pid")
        time.sleep(0.5)  # the recorder writes within its batch window (0.1 s)
        assert _running(pid)
        server = _crash_and_restart(server, root, data, port, tmp_path)
        after = call(port, "GET", f"pipelines/runs/{run['id']}")
        assert after["status"] == "interrupted"
        assert after["nodes"][0]["status"] == "interrupted"
        assert _gone(pid), "the node's `sleep 60` still runs after the restart"
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
        if pid and _running(pid):
            os.kill(pid, signal.SIGKILL)


def test_crash_during_a_training_job_ends_its_processes(tmp_path: Path) -> None:
    """``env -i`` drops the job's marker from the environment: only the recorded process
    group tells that this `sleep` belongs to the job."""
    root, data = tmp_path / "root", tmp_path / "data"
    root.mkdir()
    (root / "start.sh").write_text("echo $$ > sleeper.pid\nexec env -i sleep 60\n")
    port = free_port()
    server = start_server(root, data, port, tmp_path)
    pid = 0
    try:
        wait_up(port)
        job = call(
            port, "POST", "training/jobs", {"framework": "plain", "command": ["sh", "start.sh"]}
        )
        pid = _pid_from(root / "sleeper.pid")
        deadline = time.time() + 15
        while call(port, "GET", f"training/jobs/{job['id']}")["status"] != "running":
            assert time.time() < deadline
            time.sleep(0.2)
        time.sleep(0.5)
        assert _running(pid)
        server = _crash_and_restart(server, root, data, port, tmp_path)
        assert call(port, "GET", f"training/jobs/{job['id']}")["status"] == "interrupted"
        assert _gone(pid), "the job's `sleep 60` still runs after the restart"
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
        if pid and _running(pid):
            os.kill(pid, signal.SIGKILL)


def test_crash_during_a_tuning_trial_ends_the_trial(tmp_path: Path) -> None:
    """A trial that is not a Python script runs as a plain process in a session of its own."""
    root, data = tmp_path / "root", tmp_path / "data"
    (root / "hpo").mkdir(parents=True)
    (root / "hpo" / "trial.sh").write_text("echo $$ > sleeper.pid\nexec sleep 60\n")
    config = {
        "searchSpace": {"x": {"_type": "uniform", "_value": [0, 1]}},
        "trialCommand": "sh trial.sh",
        "trialCodeDirectory": ".",
        "trialConcurrency": 1,
        "maxTrialNumber": 1,
        "tuner": {"name": "Random", "classArgs": {"seed": 1}},
    }
    port = free_port()
    server = start_server(root, data, port, tmp_path)
    pid = 0
    try:
        wait_up(port)
        exp = call(port, "POST", "tuning/experiments", {"config": config, "folder": "hpo"})
        pid = _pid_from(root / "hpo" / "sleeper.pid", timeout=60)
        time.sleep(0.5)  # the trial writer's window (0.1 s)
        assert _running(pid)
        server = _crash_and_restart(server, root, data, port, tmp_path)
        assert call(port, "GET", f"tuning/experiments/{exp['id']}")["status"] == "interrupted"
        assert _gone(pid), "the trial's `sleep 60` still runs after the restart"
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
        if pid and _running(pid):
            os.kill(pid, signal.SIGKILL)


def _orphaned_run(ws: Any, tmp_path: Path) -> str:
    """A run record as a crashed runner leaves it: running, its runner pid gone."""
    path = write_pipeline(tmp_path, [node("n", filename=script(tmp_path, "n.py", "pass\n"))])
    runner, _ = ws.pipelines.prepare(Caller("alice"), path, tmp_path)
    dead = subprocess.Popen(["true"])
    dead.wait()
    with ws.store.write() as s:
        row = s.get(PipelineRun, runner.plan.run_id)
        row.status, row.runner_pid = "running", dead.pid
    return runner.plan.run_id


def _record(ws: Any, run_id: str, group: processes.Group) -> None:
    processes.record_groups(ws.store, "pipeline", run_id, "n", [("node", group)])


def test_a_reused_pid_is_not_killed(ws: Any, tmp_path: Path) -> None:
    stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        actual = processes.group_of(stranger.pid)
        assert actual is not None and actual.pgid == stranger.pid
        run_id = _orphaned_run(ws, tmp_path)
        # the record says this pid started one tick earlier: another process that had it
        _record(ws, run_id, processes.Group(**{**actual.as_dict(), "start_ticks": 1}))
        assert ws.pipelines.recover() == [run_id]
        assert ws.pipelines.get_run(Caller("alice"), run_id).status == "interrupted"
        time.sleep(0.3)
        assert stranger.poll() is None, "a process that only shares the recorded pid was killed"
        with ws.store.read() as s:  # the record is forgotten either way
            assert not s.scalars(select(ProcessGroup)).all()
    finally:
        stranger.kill()
        stranger.wait()


def test_another_boot_or_host_is_not_ours(tmp_path: Path) -> None:
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        group = processes.group_of(proc.pid)
        assert group is not None and processes.still_ours(group)
        for change in ({"boot_id": "another-boot"}, {"host": "another-host"}, {"pgid": 0}):
            assert not processes.still_ours(processes.Group(**{**group.as_dict(), **change}))
        assert processes.end_groups([processes.Group(**{**group.as_dict(), "boot_id": "x"})]) == []
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_a_recorded_group_that_ignores_sigterm_is_killed(ws: Any, tmp_path: Path) -> None:
    """SIGTERM, a short grace, then SIGKILL; the whole group, not just its leader."""
    code = (
        "import signal, subprocess, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "child = subprocess.Popen(['sleep', '60'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    leader = subprocess.Popen(
        [sys.executable, "-c", code], start_new_session=True, stdout=subprocess.PIPE, text=True
    )
    try:
        assert leader.stdout is not None
        child = int(leader.stdout.readline())
        group = processes.group_of(leader.pid)
        assert group is not None
        run_id = _orphaned_run(ws, tmp_path)
        _record(ws, run_id, group)
        started = time.monotonic()
        assert ws.pipelines.recover() == [run_id]
        assert time.monotonic() - started < processes.END_GRACE_S + 2
        leader.wait(timeout=5)
        assert leader.returncode == -signal.SIGKILL
        assert _gone(child, timeout=5)
    finally:
        if leader.poll() is None:
            leader.kill()
            leader.wait()


def _rows_while_running(ws: Any, flag: Path) -> tuple[threading.Thread, list[Any]]:
    """A thread that reads the process-group rows once ``flag`` exists (and a moment more)."""
    seen: list[list[tuple[Any, ...]]] = []

    def watch() -> None:
        deadline = time.time() + 60
        while not flag.exists() and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.4)  # the recorder writes within its batch window (0.1 s)
        with ws.store.read() as s:
            rows = s.scalars(select(ProcessGroup).order_by(ProcessGroup.id))
            seen.append(
                [(r.owner_kind, r.owner_id, r.part, r.role, r.pgid, r.pid, r.boot_id) for r in rows]
            )

    watcher = threading.Thread(target=watch)
    watcher.start()
    return watcher, seen


def test_a_node_records_its_group_while_it_runs_and_forgets_it_after(
    ws: Any, tmp_path: Path
) -> None:
    code = "import time\nopen('running', 'w').close()\ntime.sleep(1.0)\n"
    path = write_pipeline(tmp_path, [node("n", filename=script(tmp_path, "n.py", code))])
    runner, recorder = ws.pipelines.prepare(Caller("alice"), path, tmp_path)
    watcher, seen = _rows_while_running(ws, tmp_path / "running")
    assert ws.pipelines.run_foreground(runner, recorder) == "succeeded"
    watcher.join()
    (rows,) = seen
    assert [r[:4] for r in rows] == [("pipeline", runner.plan.run_id, "n", "node")]
    assert rows[0][4] == rows[0][5] and rows[0][6] == processes.boot_id()
    with ws.store.read() as s:
        assert not s.scalars(select(ProcessGroup)).all()


def test_a_notebook_node_records_its_kernel(ws: Any, tmp_path: Path) -> None:
    """The kernel runs in a session of its own: the node reports it, the runner records it
    (so recovery can end it) and kills it with the node."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import os, time\nopen('kernel.pid', 'w').write(str(os.getpid()))\ntime.sleep(1.5)"
        )
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(nb, tmp_path / "nb.ipynb")
    path = write_pipeline(tmp_path, [node("nb", "execute-notebook-node", filename="nb.ipynb")])
    runner, recorder = ws.pipelines.prepare(Caller("alice"), path, tmp_path)
    watcher, seen = _rows_while_running(ws, tmp_path / "kernel.pid")
    status = ws.pipelines.run_foreground(runner, recorder)
    assert status == "succeeded", ws.pipelines.tail_log(Caller("alice"), runner.plan.run_id, "nb")
    watcher.join()
    (rows,) = seen
    assert [r[2:4] for r in rows] == [("nb", "node"), ("nb", "kernel")]
    kernel_pid = int((tmp_path / "kernel.pid").read_text())
    assert rows[1][5] == kernel_pid and rows[1][4] == kernel_pid != rows[0][4]
    assert _gone(kernel_pid, timeout=5)
    with ws.store.read() as s:
        assert not s.scalars(select(ProcessGroup)).all()


def test_a_dead_deployment_only_ends_processes_still_its_own() -> None:
    """Recovery of a deployment whose router stopped answering: the recorded router and model
    servers are killed only while their start time matches (serving/service.py)."""
    from cube_lab.serving.service import _identity, _still_ours

    ours = subprocess.Popen(["sleep", "60"], start_new_session=True)
    stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        info = {
            "router": {"pid": ours.pid, "port": 1, **_identity(ours.pid)},
            "servers": [
                {"version": 1, "pid": ours.pid, **_identity(ours.pid)},
                {"version": 1, "pid": stranger.pid, **_identity(stranger.pid), "start_ticks": 1},
                {"version": 1, "pid": stranger.pid},  # recorded before start times were kept
            ],
        }
        kept = _still_ours(info, socket.gethostname())
        assert kept["router"]["pid"] == ours.pid
        assert [s["pid"] for s in kept["servers"]] == [ours.pid]
        assert _still_ours(info, "another-host") == {"router": None, "servers": []}
    finally:
        for proc in (ours, stranger):
            proc.kill()
            proc.wait()
