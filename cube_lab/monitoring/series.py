"""A bounded series of samples: the last ``recent`` points at full rate, and the older ones
merged into at most ``coarse`` points (each the mean CPU / GPU utilisation and the peak
memory of the points it covers). When the coarse part fills up, neighbours merge in pairs and
each later coarse point covers twice as many samples: a job of any length keeps its whole
history in at most ``recent + coarse`` points.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

# a point: [t (start, unix s), dt (seconds it covers), cpu %, rss bytes, processes,
#           gpu util % (sum over the object's GPUs; None without), gpu memory bytes (None)]
FIELDS = ["t", "dt", "cpu_percent", "rss_bytes", "procs", "gpu_util_percent", "gpu_memory_bytes"]
Point = list[Any]
_MEAN = (2, 5)  # indexes averaged when points merge; the others but t/dt take the peak


def merge(points: list[Point]) -> Point:
    """One point covering ``points`` (in time order)."""
    first, last = points[0], points[-1]
    out: Point = [first[0], round(last[0] + last[1] - first[0], 3)]
    weight = sum(p[1] for p in points) or float(len(points))
    for i in range(2, len(FIELDS)):
        values = [(p[i], p[1] or 1.0) for p in points if p[i] is not None]
        if not values:
            out.append(None)
        elif i in _MEAN:
            out.append(
                round(sum(v * w for v, w in values) / (sum(w for _, w in values) or weight), 2)
            )
        else:
            out.append(max(v for v, _ in values))
    return out


@dataclass
class BoundedSeries:
    recent: int = 300
    coarse: int = 300
    span: int = 10  # samples per coarse point now

    def __post_init__(self) -> None:
        self._recent: deque[Point] = deque()
        self._coarse: list[Point] = []
        self._pending: list[Point] = []  # left the recent part, not yet a coarse point

    def append(self, point: Point) -> None:
        self._recent.append(point)
        if len(self._recent) > self.recent:
            self._pending.append(self._recent.popleft())
            if len(self._pending) >= self.span:
                self._coarse.append(merge(self._pending))
                self._pending = []
                if len(self._coarse) > self.coarse:
                    self._coarse = [
                        merge(self._coarse[i : i + 2]) for i in range(0, len(self._coarse), 2)
                    ]
                    self.span *= 2

    def points(self) -> list[Point]:
        """Every point, oldest first (the coarse ones, then the full-rate ones)."""
        pending = [merge(self._pending)] if self._pending else []
        return [*self._coarse, *pending, *self._recent]

    def __len__(self) -> int:
        return len(self._coarse) + (1 if self._pending else 0) + len(self._recent)

    def to_json(self) -> dict[str, Any]:
        return {
            "fields": FIELDS,
            "span": self.span,
            "coarse": self._coarse,
            "pending": self._pending,
            "recent": list(self._recent),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], recent: int = 300, coarse: int = 300) -> BoundedSeries:
        """The series saved by ``to_json`` (an earlier attempt's), to go on with."""
        span = data.get("span")
        out = cls(recent, coarse, span if isinstance(span, int) and 1 <= span <= 2**40 else 10)
        if data.get("fields") != FIELDS:
            return out
        out._coarse = _points(data.get("coarse"), coarse)
        out._pending = _points(data.get("pending"), out.span)
        out._recent = deque(_points(data.get("recent"), recent))
        return out


def _is_point(p: object) -> bool:
    return (
        isinstance(p, list)
        and len(p) == len(FIELDS)
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in p[:2])
        and all(v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in p)
    )


def _points(raw: object, limit: int) -> list[Point]:
    """The well-formed points of a saved list, the newest ``limit`` (the file may lie in a
    folder the job's own account writes: take nothing from it on trust)."""
    if not isinstance(raw, list):
        return []
    return [list(p) for p in raw if _is_point(p)][-limit:]
