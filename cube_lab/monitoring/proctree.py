"""CPU and memory of a process tree: a root pid and every descendant, children that come and
go included.

On Linux everything is read from ``/proc`` (``stat`` of each process of the tree, and the
``children`` lists of their threads to find the tree): the cost grows with the tree, not with
the machine. Elsewhere psutil does the same work.

CPU is the time the tree spent between two samples, as a percentage of one core. A process's
time counts its own user + system time and the time of the children it reaped, so a child
born and gone between two samples still counts (when a process of the tree reaped it); a
child seen before and reaped since is not counted twice (its last seen time is taken off what
its parent gained).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

PROC = Path("/proc")
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class ProcStat:
    pid: int
    start: float  # start time (ticks since boot on Linux): pid + start names one process
    own_s: float  # user + system CPU seconds of the process itself
    reaped_s: float  # user + system CPU seconds of the children it reaped
    rss: int  # bytes


@dataclass
class TreeSample:
    t: float  # time.time()
    cpu_percent: float | None  # of one core, since the previous sample (None on the first)
    rss_bytes: int
    pids: list[int] = field(default_factory=list)
    busy_s: float = 0.0  # CPU seconds the tree spent since the previous sample


def _read_stat(pid: int) -> ProcStat | None:
    try:
        raw = (PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    rest = raw[raw.rfind(b")") + 2 :].split()
    try:  # field n of proc(5) is rest[n - 3]
        utime, stime, cutime, cstime = (int(x) for x in rest[11:15])
        return ProcStat(
            pid, float(rest[19]), (utime + stime) / _TICK, (cutime + cstime) / _TICK,
            int(rest[21]) * _PAGE,
        )  # fmt: skip
    except (IndexError, ValueError):
        return None


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(PROC / str(pid) / "task")
    except OSError:
        return found
    for tid in tasks:
        try:
            found += [
                int(c) for c in (PROC / str(pid) / "task" / tid / "children").read_bytes().split()
            ]
        except (OSError, ValueError):
            continue
    return found


def _linux_tree(roots: list[int]) -> dict[int, ProcStat]:
    seen: dict[int, ProcStat] = {}
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        stat = _read_stat(pid)
        if stat is None:
            continue
        seen[pid] = stat
        todo += _children(pid)
    return seen


def _psutil_tree(roots: list[int]) -> dict[int, ProcStat]:
    import psutil  # only where there is no /proc to read (its import costs a CLI start 25 ms)

    seen: dict[int, ProcStat] = {}
    for root in roots:
        try:
            top = psutil.Process(root)
            procs = [top, *top.children(recursive=True)]
        except psutil.Error:
            continue
        for proc in procs:
            if proc.pid in seen:
                continue
            try:
                with proc.oneshot():
                    times = proc.cpu_times()
                    seen[proc.pid] = ProcStat(
                        proc.pid,
                        proc.create_time(),
                        times.user + times.system,
                        getattr(times, "children_user", 0.0)
                        + getattr(times, "children_system", 0.0),
                        proc.memory_info().rss,
                    )
            except psutil.Error:
                continue
    return seen


def _has_children_files() -> bool:
    return (PROC / str(os.getpid()) / "task" / str(os.getpid()) / "children").exists()


USE_PROC = _has_children_files()


def read_tree(roots: list[int]) -> dict[int, ProcStat]:
    """The processes of the trees under ``roots`` now, by pid."""
    return _linux_tree(roots) if USE_PROC else _psutil_tree(roots)


class TreeSampler:
    """Samples one object's process trees; ``sample()`` once per interval."""

    def __init__(self, roots: list[int]) -> None:
        self.roots = list(roots)
        self._last: dict[int, ProcStat] = {}
        self._last_t: float | None = None

    def add_roots(self, roots: list[int]) -> None:
        self.roots += [r for r in roots if r not in self.roots]

    def sample(self, now: float | None = None) -> TreeSample:
        t = time.time() if now is None else now
        wall = time.monotonic()
        tree = read_tree(self.roots)
        return self._account(tree, t, wall)

    def _account(self, tree: dict[int, ProcStat], t: float, wall: float) -> TreeSample:
        own = reaped = gone = 0.0
        for pid, stat in tree.items():
            before = self._last.get(pid)
            if before is not None and before.start != stat.start:
                gone += before.own_s + before.reaped_s  # the pid is another process now
                before = None
            own += stat.own_s - (before.own_s if before else 0.0)
            reaped += stat.reaped_s - (before.reaped_s if before else 0.0)
        for pid, before in self._last.items():
            if pid not in tree:
                gone += before.own_s + before.reaped_s
        # what the tree reaped includes the full time of children seen before: count only
        # their time since they were last seen (at most what was reaped: a process reaped by
        # one outside the tree moved nothing into the tree)
        busy = max(0.0, own + reaped - min(gone, reaped))
        cpu: float | None = None
        if self._last_t is None:
            busy = 0.0  # the first sample is the baseline
        elif wall > self._last_t:
            cpu = 100.0 * busy / (wall - self._last_t)
        self._last, self._last_t = tree, wall
        return TreeSample(t, cpu, sum(s.rss for s in tree.values()), sorted(tree), busy)
