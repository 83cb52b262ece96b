"""Run one job template once, in the foreground: for trying a template and for tests.

Pipelines use their own runner (parallel, streamed logs, retries); this is the same
contract without the pipeline around it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .contract import node_env, read_values
from .model import JobTemplate


@dataclass(frozen=True)
class TemplateRun:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    values: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run_template(
    template: JobTemplate,
    params: dict[str, Any] | None,
    cwd: Path,
    *,
    env: dict[str, str] | None = None,
    run_id: str | None = None,
    timeout: float | None = None,
    python: str = sys.executable,
    root: Path | None = None,
) -> TemplateRun:
    """Validate ``params``, run the command in ``cwd`` and collect what it published.
    With ``root``, every path parameter must lie inside it, as in a pipeline run."""
    values_params = template.validate_params(params)
    if root is not None:
        template.check_paths(values_params, cwd, root)
    argv = template.command(values_params, python=python)
    with tempfile.TemporaryDirectory(prefix="cube-node-") as scratch:
        values_file = Path(scratch) / "values.json"
        full_env = {**os.environ, **(env or {}), **node_env(values_params, values_file, run_id)}
        proc = subprocess.run(
            argv,
            cwd=cwd,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        values = read_values(values_file) if proc.returncode == 0 else {}
    return TemplateRun(argv, proc.returncode, proc.stdout, proc.stderr, values)
