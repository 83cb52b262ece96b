"""The model registry. ``register`` is the notebook-facing call::

from cube_lab.registry import register
register(model, name="iris-rf", metrics={"accuracy": 0.95}, params={"n_estimators": 100})
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from .views import ModelView, VersionView

__all__ = ["ModelView", "VersionView", "register"]


def _current_source() -> str | None:
    """The notebook (jupyter-server tells kernels its path) or the script that is running."""
    notebook = os.environ.get("JPY_SESSION_NAME")
    if notebook:
        root = os.environ.get("CUBE_LAB_ROOT_DIR")  # shown relative to the server root
        path = Path(notebook)
        if root and path.is_absolute() and path.is_relative_to(root):
            return path.relative_to(root).as_posix()
        return notebook
    script = sys.argv[0] if sys.argv else ""
    if Path(script).name == "ipykernel_launcher.py":
        return None  # a kernel outside jupyter-server (nbconvert, nbclient): no notebook path
    return script if script.endswith((".py", ".ipynb")) else None


def register(
    obj_or_path: Any,
    name: str,
    *,
    metrics: dict[str, float] | None = None,
    params: dict[str, Any] | None = None,
    tags: dict[str, str] | None = None,
    description: str = "",
    project: str | None = None,
    flavor: str | None = None,
    aliases: list[str] | None = None,
    source: str | None = None,
    pipeline_run_id: str | None = None,
    training_job_id: str | None = None,
    datasets: list[dict[str, Any]] | None = None,
) -> VersionView:
    """Register a model object (scikit-learn, PyTorch, transformers, ONNX) or a file/folder.

    Lineage is filled in from where it runs: the notebook or script, the training job
    (``$CUBE_TRAINING_JOB_ID``), and the dataset versions it used: those that
    ``cube_lab.datasets.path`` / ``load`` resolved in this process, the job's
    ``$CUBE_LAB_DATASET``, and any given in ``datasets``."""
    from .. import containment
    from .. import datasets as dataset_helper
    from ..config import local_username
    from ..identity import Caller
    from ..training.local import ENV_JOB_ID
    from ..workspace import default_workspace

    is_path = isinstance(obj_or_path, str | os.PathLike)
    path = (
        containment.real(Path(containment.check_text(obj_or_path)).expanduser())
        if is_path
        else None
    )
    return default_workspace().registry.register(
        Caller(local_username()),
        name=name,
        path=path,
        obj=None if is_path else obj_or_path,
        project=project,
        flavor=flavor,
        description=description,
        params=params,
        metrics=metrics,
        tags=tags,
        aliases=aliases,
        source=source or _current_source(),
        pipeline_run_id=pipeline_run_id,
        training_job_id=training_job_id or os.environ.get(ENV_JOB_ID) or None,
        datasets=dataset_helper.lineage_for_register(datasets),
    )
