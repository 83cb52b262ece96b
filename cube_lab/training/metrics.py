"""Training metrics: ``cube_lab.report(step=..., **metrics)`` in the job, series for charts.

A job gets ``$CUBE_METRICS_FILE``; ``report`` appends one JSON line per call (an
append of one short line is atomic, so every rank may report). Jobs that only print
``step=3 loss=0.12`` lines get the same series parsed from their log. Pure stdlib:
importing this in a training script costs nothing.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ENV_METRICS_FILE = "CUBE_METRICS_FILE"
STEP_KEYS = ("step", "global_step", "iteration", "iter", "epoch")
_PAIR = re.compile(r"(?<![\w.])([A-Za-z_][\w./-]*)\s*[=:]\s*(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")
_RANK_PREFIX = re.compile(r"^\[rank ?(\d+)\]:?\s?")
MAX_POINTS = 5000  # per series: charts do not need more, and the API stays small


def report(step: int | None = None, *, checkpoint: str | None = None, **metrics: Any) -> None:
    """Record metrics of a training step (and optionally the newest checkpoint path).

    Outside a cube-lab job (no ``$CUBE_METRICS_FILE``) this does nothing, so a script
    runs unchanged anywhere."""
    path = os.environ.get(ENV_METRICS_FILE)
    if not path:
        return
    values = {}
    for key, value in metrics.items():
        if hasattr(value, "item"):  # a 0-d tensor or numpy scalar
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"metric {key!r} must be a number, got {type(value).__name__}")
        values[key] = value
    record: dict[str, Any] = {"time": time.time(), "metrics": values}
    if step is not None:
        record["step"] = int(step)
    rank = os.environ.get("RANK")
    if rank is not None and rank.isdigit():
        record["rank"] = int(rank)
    if checkpoint:
        record["checkpoint"] = os.path.abspath(checkpoint)
    line = json.dumps(record, allow_nan=True) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def read_reports(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    out = []
    with open(path) as fh:
        for line in fh:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line being written right now
            if isinstance(record, dict) and isinstance(record.get("metrics"), dict):
                out.append(record)
    return out


def split_rank(line: str) -> tuple[int | None, str]:
    """``[rank 1] loss=0.3`` -> (1, "loss=0.3"); a line of no rank -> (None, line)."""
    found = _RANK_PREFIX.match(line)
    if found:
        return int(found.group(1)), line[found.end() :]
    return None, line


def parse_log_line(line: str) -> tuple[int | None, dict[str, float]] | None:
    """``[rank 0] epoch=1 step=3 loss=0.12`` -> (rank, {...}); None when it has no step."""
    rank, line = split_rank(line)
    pairs = {k: float(v) for k, v in _PAIR.findall(line)}
    if len(pairs) < 2 or not any(k in pairs for k in STEP_KEYS):
        return None
    return rank, pairs


def parse_log(lines: Iterable[str]) -> list[dict[str, Any]]:
    out = []
    for line in lines:
        parsed = parse_log_line(line)
        if parsed is None:
            continue
        rank, pairs = parsed
        step_key = next(k for k in STEP_KEYS if k in pairs)
        record: dict[str, Any] = {
            "step": int(pairs.pop(step_key)),
            "metrics": {k: v for k, v in pairs.items() if k not in STEP_KEYS},
        }
        if rank is not None:
            record["rank"] = rank
        out.append(record)
    return out


def series(records: list[dict[str, Any]]) -> dict[str, list[list[float]]]:
    """``{"loss": [[step, value], ...]}`` from the lowest rank that reported (rank 0 as a
    rule: every rank printing the same loss would draw each point N times)."""
    if not records:
        return {}
    ranks = [r.get("rank", 0) for r in records]
    lead = min(ranks)
    out: dict[str, list[list[float]]] = {}
    for i, (record, rank) in enumerate(zip(records, ranks, strict=True)):
        if rank != lead:
            continue
        step = record.get("step", i)
        for key, value in record["metrics"].items():
            if isinstance(value, int | float) and math.isfinite(value):
                out.setdefault(key, []).append([step, value])
    return {k: v[-MAX_POINTS:] for k, v in out.items()}


def last_checkpoint(records: list[dict[str, Any]]) -> str | None:
    for record in reversed(records):
        if record.get("checkpoint"):
            return str(record["checkpoint"])
    return None
