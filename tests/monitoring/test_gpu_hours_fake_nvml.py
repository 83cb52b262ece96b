"""GPU-hours accounting end to end on a simulated clock: a real process holds two fake NVML
GPUs (cube_lab.monitoring.fake_nvml), the monitor's ticks are stamped by the test's clock, and
the object's file counts GPU-seconds per UTC month the way gpu_hours reads them."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cube_lab.monitoring import fake_nvml, files, gpu_hours
from cube_lab.monitoring.fake_nvml import FakeDevice, FakeProcess
from cube_lab.monitoring.gpu import GpuReader
from cube_lab.monitoring.monitor import Monitor, Watch

MINUTE = 60.0


@pytest.fixture
def proc() -> Iterator[subprocess.Popen[bytes]]:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        yield p
    finally:
        p.kill()
        p.wait()


def _held_for(
    tmp: Path, pid: int, start: datetime, minutes: int, gpus: int = 2
) -> tuple[Watch, dict[str, object]]:
    """Tick once a simulated minute for ``minutes`` while ``pid`` holds ``gpus`` fake GPUs
    (and a third GPU is busy with someone else's process); the object's file as saved."""
    devices = [FakeDevice(f"GPU-{i}", processes=[FakeProcess(pid, 2**30, 50)]) for i in range(gpus)]
    devices.append(FakeDevice("GPU-other", processes=[FakeProcess(999_999_999, 2**30, 90)]))
    fake_nvml.install(devices)
    fake_nvml.nvmlInit()
    monitor = Monitor(interval_s=MINUTE, write_s=1e9, gpu=GpuReader(fake_nvml))
    w = Watch(tmp / "resources.json", [pid], "training", "j1", None, MINUTE,
              meta={"project": "team-a"})  # fmt: skip
    with monitor._lock:  # watched without the background thread: the test drives the ticks
        monitor._watches.append(w)
        w.monitor = monitor
    t0 = start.timestamp()
    try:
        for i in range(minutes):
            monitor.tick(now=t0 + i * MINUTE)
    finally:
        fake_nvml.install([])
        fake_nvml.nvmlShutdown()
    w.stop()  # writes the file
    data = files.read(w.path)
    assert data is not None
    return w, data


def test_two_gpus_for_90_minutes_are_three_gpu_hours(
    tmp_path: Path, proc: subprocess.Popen[bytes]
) -> None:
    w, data = _held_for(tmp_path, proc.pid, datetime(2026, 3, 10, 8, 0, tzinfo=UTC), 90)
    assert monitor_ticks_saw_both(w)
    assert gpu_hours.seconds_in_month(data, "2026-03") / 3600 == pytest.approx(3.0)
    assert gpu_hours.seconds_in_month(data, "2026-02") == 0.0
    assert data["gpu_seconds"] == {"2026-03": pytest.approx(3.0 * 3600)}


def test_one_gpu_counts_half(tmp_path: Path, proc: subprocess.Popen[bytes]) -> None:
    _, data = _held_for(tmp_path, proc.pid, datetime(2026, 3, 10, 8, 0, tzinfo=UTC), 90, gpus=1)
    assert gpu_hours.seconds_in_month(data, "2026-03") / 3600 == pytest.approx(1.5)


def test_the_month_boundary_splits_the_hours(tmp_path: Path, proc: subprocess.Popen[bytes]) -> None:
    # 23:30 to 01:00 UTC: ticks 23:30 .. 23:59 are March's (30 minutes, 2 GPUs: 1 GPU-hour),
    # 00:00 .. 00:59 April's (2 GPU-hours)
    _, data = _held_for(tmp_path, proc.pid, datetime(2026, 3, 31, 23, 30, tzinfo=UTC), 90)
    assert gpu_hours.seconds_in_month(data, "2026-03") / 3600 == pytest.approx(1.0)
    assert gpu_hours.seconds_in_month(data, "2026-04") / 3600 == pytest.approx(2.0)


def test_a_file_without_the_month_map_is_counted_from_its_points(
    tmp_path: Path, proc: subprocess.Popen[bytes]
) -> None:
    _, data = _held_for(tmp_path, proc.pid, datetime(2026, 3, 31, 23, 30, tzinfo=UTC), 90)
    del data["gpu_seconds"]  # an older file: one GPU per point with GPU figures
    assert gpu_hours.seconds_in_month(data, "2026-03") / 3600 == pytest.approx(0.5)
    assert gpu_hours.seconds_in_month(data, "2026-04") / 3600 == pytest.approx(1.0)


def monitor_ticks_saw_both(w: Watch) -> bool:
    latest = w.latest or {}
    return sorted(g["uuid"] for g in latest.get("gpus", [])) == ["GPU-0", "GPU-1"]
