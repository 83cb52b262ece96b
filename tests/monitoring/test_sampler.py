"""The resource sampler: a process tree's CPU and memory (children included), GPU rows through
a fake NVML for the job's own pids only, none without NVML, the bounded series, the files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from cube_lab.monitoring import fake_nvml, files, nvml
from cube_lab.monitoring.fake_nvml import FakeDevice, FakeProcess
from cube_lab.monitoring.gpu import GpuReader
from cube_lab.monitoring.monitor import Monitor, Watch
from cube_lab.monitoring.proctree import TreeSampler
from cube_lab.monitoring.series import FIELDS, BoundedSeries

MB = 2**20

# The root starts a child that waits for "go", then holds 50 MB and burns CPU until "stop".
CHILD = textwrap.dedent(
    """
    import os, sys, time
    folder = sys.argv[1]
    with open(os.path.join(folder, "child.tmp"), "w") as fh:
        fh.write(str(os.getpid()))
    os.replace(os.path.join(folder, "child.tmp"), os.path.join(folder, "child.pid"))
    while not os.path.exists(os.path.join(folder, "go")):
        time.sleep(0.01)
    held = b"\\x01" * (50 * 2**20)
    open(os.path.join(folder, "allocated"), "w").close()
    n = 0
    while not os.path.exists(os.path.join(folder, "stop")):
        for _ in range(20000):
            n += 1
    """
)
ROOT = textwrap.dedent(
    """
    import subprocess, sys
    subprocess.run([sys.executable, "-c", sys.argv[1], sys.argv[2]])
    """
)


def wait_for(path: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.01)


@pytest.fixture
def busy_job(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    folder = tmp_path / "job"
    folder.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", ROOT, CHILD, str(folder)])
    try:
        wait_for(folder / "child.pid")
        yield proc, folder
    finally:
        (folder / "stop").touch()
        proc.kill()
        proc.wait()
        child = int((folder / "child.pid").read_text())
        with __import__("contextlib").suppress(ProcessLookupError):
            os.kill(child, 9)


def test_a_childs_cpu_and_memory_count_for_its_job(busy_job: tuple) -> None:
    proc, folder = busy_job
    child = int((folder / "child.pid").read_text())
    sampler = TreeSampler([proc.pid])
    before = sampler.sample()
    assert before.cpu_percent is None  # the baseline
    assert proc.pid in before.pids and child in before.pids
    (folder / "go").touch()
    wait_for(folder / "allocated")
    watched = psutil.Process(child)
    sampler.sample()
    start, wall = watched.cpu_times(), time.monotonic()
    # a window in which the child burnt at least half a CPU second (about 0.5 s on an idle
    # machine; longer on a shared one)
    while sum(watched.cpu_times()[:2]) - sum(start[:2]) < 0.5:
        time.sleep(0.05)
    busy = sampler.sample()
    end, wall = watched.cpu_times(), time.monotonic() - wall
    grown = busy.rss_bytes - before.rss_bytes
    assert 45 * MB <= grown <= 60 * MB, grown / MB
    truth = sum(end[:2]) - sum(start[:2])  # what psutil says the child used meanwhile
    assert busy.busy_s >= 0.45 and abs(busy.busy_s - truth) <= 0.05 + 0.05 * truth
    assert busy.cpu_percent == pytest.approx(100 * busy.busy_s / wall, rel=0.1)


def test_children_that_come_and_go_count_once(tmp_path: Path) -> None:
    """Ten children of 0.15 s CPU each, sampled every 50 ms: each is seen, then reaped into
    its parent's times; the tree's CPU is their sum, not twice it, not nothing."""
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.15: pass\n"
    code = textwrap.dedent(
        f"""
        import subprocess, sys, os, time
        open(sys.argv[1] + "/ready", "w").close()
        while not os.path.exists(sys.argv[1] + "/go"):
            time.sleep(0.01)
        for _ in range(10):
            subprocess.run([sys.executable, "-S", "-c", {burn!r}])
        open(sys.argv[1] + "/done", "w").close()
        time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)])
    try:
        wait_for(tmp_path / "ready")
        sampler = TreeSampler([proc.pid])
        sampler.sample()
        (tmp_path / "go").touch()
        total = 0.0
        while not (tmp_path / "done").exists():
            time.sleep(0.05)
            total += sampler.sample().busy_s
        total += sampler.sample().busy_s
    finally:
        proc.kill()
        proc.wait()
    # 1.5 s of burning plus ten interpreter start-ups (about 10-30 ms each)
    assert 1.4 <= total <= 2.3, total


def test_sampling_a_gone_process_gives_an_empty_tree() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    sample = TreeSampler([proc.pid]).sample()
    assert sample.pids == [] and sample.rss_bytes == 0


@pytest.fixture
def fake_gpus(busy_job: tuple) -> Iterator[tuple[int, int]]:
    proc, folder = busy_job
    child = int((folder / "child.pid").read_text())
    stranger = os.getppid()  # runs, but is nobody's job here
    fake_nvml.install(
        [
            FakeDevice(
                "GPU-aaaa",
                "NVIDIA H100",
                [FakeProcess(child, 2 * 2**30, sm_util=40), FakeProcess(stranger, 2**30, 90)],
            ),
            FakeDevice(
                "GPU-bbbb",
                "NVIDIA A100 (MIG)",
                mig=[
                    FakeDevice("MIG-1111", "1g.10gb", [FakeProcess(child, 512 * MB)]),
                    FakeDevice("MIG-2222", "1g.10gb", [FakeProcess(stranger, 256 * MB)]),
                ],
            ),
            FakeDevice("GPU-cccc", "NVIDIA L4", [FakeProcess(stranger, 3 * 2**30, 70)]),
        ]
    )
    nvml.use(fake_nvml)
    try:
        yield proc.pid, child
    finally:
        nvml.use(None)
        fake_nvml.install([])


def test_fake_nvml_gives_gpu_rows_for_the_jobs_pids_only(
    fake_gpus: tuple[int, int], tmp_path: Path
) -> None:
    root, child = fake_gpus
    monitor = Monitor(interval_s=1.0, write_s=0.0)  # the default reader: nvml.load() -> fake
    path = tmp_path / "resources.json"
    w = Watch(path, [root], "training", "job1", None, 1.0)
    w.monitor = monitor
    monitor._watches.append(w)  # sampled by hand here, not in the thread
    monitor.tick()
    monitor.tick()
    rows = {g["uuid"]: g for g in w.latest["gpus"]}
    assert set(rows) == {"GPU-aaaa", "MIG-1111"}
    assert rows["GPU-aaaa"]["memory_bytes"] == 2 * 2**30
    assert rows["GPU-aaaa"]["util_percent"] == 40.0 and rows["GPU-aaaa"]["pids"] == [child]
    assert rows["MIG-1111"]["parent"] == "GPU-bbbb"
    assert rows["MIG-1111"]["memory_bytes"] == 512 * MB
    assert rows["MIG-1111"]["util_percent"] is None  # NVML has no per-process MIG utilisation
    saved = files.read(path)
    assert saved is not None and saved["gpu"] is True and saved["running"] is True
    last = dict(zip(FIELDS, saved["series"]["recent"][-1], strict=True))
    assert last["gpu_memory_bytes"] == 2 * 2**30 + 512 * MB and last["gpu_util_percent"] == 40.0
    w.stop()
    assert files.read(path)["running"] is False  # type: ignore[index]


def test_the_fake_is_chosen_by_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(nvml.ENV_NVML, "cube_lab.monitoring.fake_nvml")
    assert nvml.load() is fake_nvml
    monkeypatch.setenv(nvml.ENV_NVML, "off")
    assert nvml.load() is None
    monkeypatch.setenv(nvml.ENV_NVML, "no_such_nvml_module")
    assert nvml.load() is None


def test_no_nvml_gives_no_gpu_rows(
    busy_job: tuple, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(nvml.ENV_NVML, "off")
    proc, _ = busy_job
    monitor = Monitor(interval_s=1.0, write_s=0.0)
    assert monitor.gpu.module is None and monitor.gpu.snapshot({proc.pid}) == {}
    w = Watch(tmp_path / "r.json", [proc.pid], "pipeline", "run1", "a", 1.0)
    w.monitor = monitor
    monitor._watches.append(w)
    monitor.tick()
    monitor.tick()
    assert w.latest is not None and w.latest["gpus"] == [] and w.latest["rss_bytes"] > 0
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["gpu"] is False
    assert all(p[5] is None and p[6] is None for p in saved["series"]["recent"])


def test_a_gpu_without_nvml_library_is_not_an_error() -> None:
    class Broken:
        class NVMLError(Exception):
            pass

        @staticmethod
        def nvmlDeviceGetCount() -> int:
            raise Broken.NVMLError("driver gone")

    assert GpuReader(Broken).snapshot({1}) == {}  # type: ignore[arg-type]


def test_the_monitor_thread_samples_and_writes_until_stopped(
    busy_job: tuple, tmp_path: Path
) -> None:
    proc, folder = busy_job
    monitor = Monitor(interval_s=0.1, write_s=0.2, gpu=GpuReader(None))
    nvml.use(None)
    path = tmp_path / "node.json"
    w = Watch(path, [proc.pid], "pipeline", "run1", "a", 0.1)
    monitor.add(w)
    (folder / "go").touch()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        saved = files.read(path)
        if saved and len(saved["series"]["recent"]) >= 5:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the monitor wrote no series")
    w.stop()
    assert monitor.watching() == []
    saved = files.read(path)
    assert saved is not None and saved["running"] is False and saved["node"] == "a"
    assert saved["peak"]["rss_bytes"] > 0
    # a retry goes on with the same series
    again = Watch(path, [proc.pid], "pipeline", "run1", "a", 0.1)
    assert len(again.series) == len(saved["series"]["recent"])


def test_the_series_stays_bounded_and_keeps_its_whole_history() -> None:
    series = BoundedSeries(recent=50, coarse=20)
    for i in range(10_000):
        series.append([float(i), 1.0, float(i % 100), 1000 + i, 1, None, None])
    points = series.points()
    assert len(points) <= 50 + 20 + 1
    assert points[0][0] == 0.0 and points[-1][0] == 9999.0  # from the start to now
    assert sum(p[1] for p in points) == pytest.approx(10_000)  # every second covered once
    assert [p[0] for p in points[-50:]] == [float(i) for i in range(9950, 10_000)]
    coarse = points[0]
    assert coarse[2] == pytest.approx(49.5, abs=1)  # the mean of 0..99 over whole cycles
    assert coarse[3] == 1000 + coarse[1] - 1  # the peak memory of what it covers
    back = BoundedSeries.from_json(json.loads(json.dumps(series.to_json())), 50, 20)
    assert back.points() == points


def test_a_link_in_place_of_the_file_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"secret": 1}')
    (tmp_path / "resources.json").symlink_to(secret)
    assert files.read(tmp_path / "resources.json") is None
    files.write(tmp_path / "resources.json", {"ok": True})
    assert json.loads(secret.read_text()) == {"secret": 1}
    assert files.read(tmp_path / "resources.json") == {"ok": True}


def test_a_forged_series_file_is_not_taken_on_trust(tmp_path: Path) -> None:
    """The job's own account may write its job folder: a retry that goes on with the saved
    series keeps only well-formed points, at most the bounds, and samples on."""
    good = [1.0, 1.0, 50.0, 1000, 1, None, None]
    forged = {
        "series": {
            "fields": FIELDS,
            "span": "many",
            "recent": [good] * 5000 + [["x"] * 7, [1, 2], None, [True] * 7],
            "coarse": "nope",
        },
        "peak": {"rss_bytes": "huge", "cpu_percent": 12.0, "other": 1},
        "started_at": "yesterday",
    }
    path = tmp_path / "resources.json"
    path.write_text(json.dumps(forged))
    w = Watch(path, [os.getpid()], "training", "job", None, 1.0)
    assert w.series.points() == [good] * 300 and w.peak == {"cpu_percent": 12.0}
    monitor = Monitor(interval_s=1.0, write_s=0.0, gpu=GpuReader(None))
    w.monitor = monitor
    monitor._watches.append(w)
    monitor.tick()
    monitor.tick()
    assert files.read(path)["series"]["recent"][-1][4] >= 1  # type: ignore[index]
