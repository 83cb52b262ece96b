"""Run code cells in a real "Python 3 (cube-lab)" kernel (nbclient), as a notebook user would."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]


def run_in_kernel(cells: list[str], cwd: Path, env: dict[str, str]) -> Any:
    """The executed notebook; ``env`` is set for the kernel only, errors stay in the outputs."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = NotebookClient(
        nb,
        kernel_name="cube-lab",
        timeout=180,
        allow_errors=True,
        resources={"metadata": {"path": str(cwd)}},
    )
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return nb
