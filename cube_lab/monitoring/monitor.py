"""One background thread per process samples every watched object once per interval.

``watch(path, roots, kind=..., object_id=...)`` starts watching the process trees under
``roots`` (the node's process, the job's rank launchers) and returns a ``Watch``; its
``stop()`` (when the processes ended) writes the series one last time. Each tick reads every
tree from ``/proc``, NVML once for all of them (GPU rows for each object's own pids), appends a
point to each object's bounded series, and writes an object's file every ``write_s``.

A watch made with ``ends_itself`` (a deployment replica, a notebook kernel: nobody waits on
their processes) stops on the first tick that finds its tree empty. ``meta`` (who owns it,
its project, a kernel's notebook) is written into the file as it is. Each tick also adds the
GPUs the object holds (distinct devices, MIG instances each one) times the interval to
``gpu_seconds`` of the tick's calendar month (UTC): ``gpu_hours`` sums them per project.

``$CUBE_LAB_RESOURCE_INTERVAL_S`` (default 1; 0 turns sampling off) and
``$CUBE_LAB_RESOURCE_WRITE_S`` (default 5) set the rates.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import files
from .gpu import GpuReader, GpuUse
from .proctree import TreeSample, TreeSampler
from .series import BoundedSeries

ENV_INTERVAL = "CUBE_LAB_RESOURCE_INTERVAL_S"
ENV_WRITE = "CUBE_LAB_RESOURCE_WRITE_S"
VERSION = 1
PEAKS = ("cpu_percent", "rss_bytes", "gpu_memory_bytes")
log = logging.getLogger(__name__)


def _env_float(name: str, default: float) -> float:
    try:
        return max(0.0, float(os.environ.get(name, default)))
    except ValueError:
        log.warning("%s=%r is not a number; using %g", name, os.environ.get(name), default)
        return default


def month_of(t: float) -> str:
    """``"2026-12"``: the calendar month (UTC) of the unix time ``t``."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m")


def gpu_rows(uses: list[GpuUse]) -> list[dict[str, Any]]:
    """Per device: the memory and utilisation of the object's processes on it."""
    rows: dict[str, dict[str, Any]] = {}
    for use in uses:
        row = rows.setdefault(
            use.uuid,
            {"uuid": use.uuid, "name": use.name, "parent": use.parent,
             "memory_bytes": None, "util_percent": None, "pids": []},
        )  # fmt: skip
        row["pids"].append(use.pid)
        if use.memory_bytes is not None:
            row["memory_bytes"] = (row["memory_bytes"] or 0) + use.memory_bytes
        if use.util_percent is not None:
            row["util_percent"] = min(100.0, (row["util_percent"] or 0.0) + use.util_percent)
    return list(rows.values())


class Watch:
    """One object's sampler and series."""

    def __init__(
        self, path: Path, roots: list[int], kind: str, object_id: str, node: str | None,
        interval_s: float, meta: dict[str, Any] | None = None, ends_itself: bool = False,
    ) -> None:  # fmt: skip
        self.path = path
        self.kind, self.object_id, self.node = kind, object_id, node
        self.interval_s = interval_s
        self.meta: dict[str, Any] = dict(meta or {})
        self.ends_itself = ends_itself
        self.sampler = TreeSampler(roots)
        self.lock = threading.Lock()
        old = files.read(path)  # an earlier attempt's series goes on
        saved = (old or {}).get("series")
        self.series = BoundedSeries.from_json(saved) if isinstance(saved, dict) else BoundedSeries()
        started = (old or {}).get("started_at")
        self.started_at = float(started) if isinstance(started, int | float) else time.time()
        peak = (old or {}).get("peak")
        self.peak: dict[str, Any] = {
            k: v for k, v in (peak.items() if isinstance(peak, dict) else ())
            if k in PEAKS and isinstance(v, int | float)
        }  # fmt: skip
        saved_gpu_s = (old or {}).get("gpu_seconds")
        self.gpu_seconds: dict[str, float] = {
            k: float(v) for k, v in (saved_gpu_s.items() if isinstance(saved_gpu_s, dict) else ())
            if isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool)
            and v >= 0
        }  # fmt: skip
        self.latest: dict[str, Any] | None = None
        self.gpu = bool((old or {}).get("gpu"))
        self.running = True
        self.written_at = 0.0
        self.monitor: Monitor | None = None

    def add_roots(self, roots: list[int]) -> None:
        with self.lock:
            self.sampler.add_roots(roots)

    def record(self, sample: TreeSample, gpus: list[dict[str, Any]] | None) -> None:
        """Add a tick's sample (``gpus`` None: no NVML)."""
        if not sample.pids:
            return  # the processes ended; stop() comes
        self.gpu = self.gpu or gpus is not None
        util = mem = None
        if gpus:
            utils = [g["util_percent"] for g in gpus if g["util_percent"] is not None]
            mems = [g["memory_bytes"] for g in gpus if g["memory_bytes"] is not None]
            util = round(sum(utils), 2) if utils else None
            mem = sum(mems) if mems else None
            month = month_of(sample.t)
            held = len(gpus) * self.interval_s
            self.gpu_seconds[month] = round(self.gpu_seconds.get(month, 0.0) + held, 3)
        cpu = None if sample.cpu_percent is None else round(sample.cpu_percent, 2)
        point = [
            round(sample.t, 3),
            self.interval_s,
            cpu,
            sample.rss_bytes,
            len(sample.pids),
            util,
            mem,
        ]
        self.series.append(point)
        self.latest = {
            "t": point[0], "cpu_percent": cpu, "rss_bytes": sample.rss_bytes,
            "procs": len(sample.pids), "pids": sample.pids[:64], "gpus": gpus or [],
        }  # fmt: skip
        for key, value in (
            ("cpu_percent", cpu),
            ("rss_bytes", sample.rss_bytes),
            ("gpu_memory_bytes", mem),
        ):
            if value is not None and value > (self.peak.get(key) or 0):
                self.peak[key] = value

    def to_json(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "kind": self.kind,
            "id": self.object_id,
            "node": self.node,
            "running": self.running,
            "interval_s": self.interval_s,
            "started_at": self.started_at,
            "updated_at": time.time(),
            "gpu": self.gpu,
            "latest": self.latest,
            "peak": self.peak,
            "series": self.series.to_json(),
            "gpu_seconds": self.gpu_seconds,
            "meta": self.meta,
        }

    def save(self) -> None:
        try:
            files.write(self.path, self.to_json())
            self.written_at = time.monotonic()
        except OSError as exc:
            log.warning("cannot write the resource series %s: %s", self.path, exc)

    def stop(self) -> None:
        """The processes ended: stop sampling, write the series as finished."""
        monitor = self.monitor
        if monitor is not None:
            monitor.remove(self)
        with self.lock:
            if not self.running:
                return
            self.running = False
            if len(self.series):  # a process gone before its first sample leaves no file
                self.save()


class Monitor:
    def __init__(
        self, interval_s: float = 1.0, write_s: float = 5.0, gpu: GpuReader | None = None
    ) -> None:
        self.interval_s = interval_s
        self.write_s = write_s
        self.gpu = gpu or GpuReader()
        self._watches: list[Watch] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.ticks = 0
        self.busy_s = 0.0  # the thread's own CPU time spent sampling (thread_time)

    def add(self, w: Watch) -> None:
        with self._lock:
            self._watches.append(w)
            w.monitor = self
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="cube-lab-resources", daemon=True
                )
                self._thread.start()

    def remove(self, w: Watch) -> None:
        with self._lock:
            if w in self._watches:
                self._watches.remove(w)

    def watching(self) -> list[Watch]:
        with self._lock:
            return list(self._watches)

    def _loop(self) -> None:
        next_at = time.monotonic()
        while True:
            with self._lock:
                if not self._watches:
                    self._thread = None
                    return
            try:
                self.tick()
            except Exception:  # never take the job down with the sampler
                log.exception("resource sampling failed")
            next_at = max(next_at + self.interval_s, time.monotonic())
            time.sleep(max(0.0, next_at - time.monotonic()))

    def tick(self, now: float | None = None) -> None:
        """One sample of every watched object; ``now`` (unix s) stamps it instead of the
        clock (tests drive a simulated clock through it)."""
        started = time.thread_time()
        watches = self.watching()
        samples = []
        for w in watches:
            with w.lock:
                samples.append((w, w.sampler.sample(now)))
        uses: dict[int, list[GpuUse]] | None = None
        if self.gpu.module is not None:
            pids = {pid for _, s in samples for pid in s.pids}
            uses = self.gpu.snapshot(pids) if pids else {}
        now = time.monotonic()
        ended: list[Watch] = []
        for w, sample in samples:
            with w.lock:
                if not w.running:
                    continue
                if not sample.pids and w.ends_itself:
                    ended.append(w)
                    continue
                gpus = (
                    None
                    if uses is None
                    else gpu_rows([u for pid in sample.pids for u in uses.get(pid, [])])
                )
                try:
                    w.record(sample, gpus)
                except Exception:  # one object's trouble is not the others'
                    log.exception("resource sampling of %s %s failed", w.kind, w.object_id)
                    continue
                if len(w.series) and now - w.written_at >= self.write_s:
                    w.save()
        for w in ended:  # their processes are gone: written as finished, no longer sampled
            w.stop()
        self.ticks += 1
        self.busy_s += time.thread_time() - started


_monitor: Monitor | None = None
_monitor_lock = threading.Lock()


def monitor() -> Monitor:
    """This process's monitor, at the rates the environment sets (a change of them takes
    effect once nothing is watched)."""
    global _monitor
    with _monitor_lock:
        rates = (_env_float(ENV_INTERVAL, 1.0) or 1.0, _env_float(ENV_WRITE, 5.0))
        if _monitor is None or (
            (_monitor.interval_s, _monitor.write_s) != rates and not _monitor.watching()
        ):
            _monitor = Monitor(*rates)
        return _monitor


def watch(
    path: Path,
    roots: list[int],
    *,
    kind: str,
    object_id: str,
    node: str | None = None,
    meta: dict[str, Any] | None = None,
    ends_itself: bool = False,
) -> Watch:
    """Sample the trees under ``roots`` until ``stop()`` (or, ``ends_itself``, until they are
    gone); a no-op watch when sampling is off."""
    interval = _env_float(ENV_INTERVAL, 1.0)
    m = monitor() if interval > 0 else None
    w = Watch(path, roots, kind, object_id, node, m.interval_s if m else 0.0, meta, ends_itself)
    if m is not None:
        m.add(w)
    return w
