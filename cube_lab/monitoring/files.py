"""Where an object's resource series lives, and reading / writing it safely.

A training job's file is ``<job folder>/resources.json``; a pipeline run keeps one file per
node in ``<run folder>/resources/<node folder>.json``; a tuning trial's is
``<experiment folder>/trials/<trial id>/resources.json``; a local deployment keeps one file per
replica in ``<deployment folder>/resources/<replica>.json``; a notebook kernel of the lab server
has ``<data dir>/monitoring/kernels/<kernel id>.json``. A job folder may be writable by the
job's own OS account (``accounts.job_folder``), so the file is written to a fresh name (``O_EXCL``,
``O_NOFOLLOW``) and renamed over, and read without following a link, at most ``MAX_BYTES``.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

MAX_BYTES = 4 * 1024 * 1024
TRAINING_FILE = "resources.json"
PIPELINE_FOLDER = "resources"
DEPLOYMENT_FOLDER = "resources"
KERNELS_FOLDER = ("monitoring", "kernels")


def training_file(job_dir: Path) -> Path:
    return job_dir / TRAINING_FILE


def trial_file(trial_dir: Path) -> Path:
    """In the trial's own folder (``<experiment folder>/trials/<trial id>``)."""
    return trial_dir / TRAINING_FILE


def pipeline_file(run_dir: Path, node_folder: str) -> Path:
    return run_dir / PIPELINE_FOLDER / f"{node_folder}.json"


def deployment_file(dep_dir: Path, replica: str) -> Path:
    return dep_dir / DEPLOYMENT_FOLDER / f"{replica}.json"


def kernels_folder(data_dir: Path) -> Path:
    return data_dir.joinpath(*KERNELS_FOLDER)


def kernel_file(data_dir: Path, kernel_id: str) -> Path:
    return kernels_folder(data_dir) / f"{kernel_id}.json"


def write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.urandom(6).hex()}")
    body = json.dumps(data, separators=(",", ":"), allow_nan=False).encode()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(body)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def read(path: Path) -> dict[str, Any] | None:
    """The saved series, or None (no file, a link, too big, not ours to parse)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        raw = fh.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def read_folder(folder: Path) -> list[dict[str, Any]]:
    """Every series saved in a run's ``resources`` folder."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found = []
    for name in names:
        if name.endswith(".json") and not name.startswith("."):
            data = read(folder / name)
            if data is not None:
                found.append(data)
    return found
