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
    from ..rest_client import ServiceClient
    from ..training.local import ENV_JOB_ID

    remote = ServiceClient.from_env()
    if remote is not None:  # under the hub: the cube-lab service's registry, as this user
        return _register_remote(
            remote,
            obj_or_path,
            {
                "name": name,
                "project": project,
                "flavor": flavor,
                "description": description,
                "params": params,
                "metrics": metrics,
                "tags": tags,
                "aliases": aliases,
                "source": source or _current_source(),
                "pipeline_run_id": pipeline_run_id,
                "training_job_id": training_job_id or os.environ.get(ENV_JOB_ID) or None,
                # those given and those this process resolved ($CUBE_LAB_DATASET is a job's)
                "datasets": [*(datasets or []), *dataset_helper.used()] or None,
            },
        )
    from ..config import local_username
    from ..identity import Caller
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


def _register_remote(client: Any, obj_or_path: Any, fields: dict[str, Any]) -> VersionView:
    """Register through the cube-lab service: a path as it is (relative to the home), an
    object saved first into a scratch folder of the home, which the service copies from."""
    import shutil
    import tempfile

    from ..rest_client import home, relative
    from .flavors import save_object

    body = {k: v for k, v in fields.items() if v is not None}
    job_file = _in_job_folder(obj_or_path, home())
    if isinstance(obj_or_path, str | os.PathLike) and job_file is None:
        return _version(client.post("models", {**body, "path": relative(obj_or_path)}))
    scratch = home() / ".cube-lab" / "uploads"
    scratch.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="model-", dir=scratch))
    try:
        if job_file is not None:  # a job's own file: copied (as the job) into the home
            artifact = job_file.name
            copy = shutil.copytree if job_file.is_dir() else shutil.copy2
            copy(job_file, folder / artifact)
            path = (folder / artifact).relative_to(home()).as_posix()
            return _version(client.post("models", {**body, "path": path}))
        artifact, flavor, _ = save_object(obj_or_path, folder)
        body.setdefault("flavor", flavor)
        path = (folder / artifact).relative_to(home()).as_posix()
        return _version(client.post("models", {**body, "path": path}))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _in_job_folder(obj_or_path: Any, root: Path) -> Path | None:
    """A path outside the home ``root`` but in this job's own folder (``$CUBE_LAB_JOB_DIR``,
    under the service's data dir: a training job's checkpoints, a node's files), resolved;
    else None. The service reads only the home, so such a file is copied there first."""
    from ..job_credentials import ENV_JOB_DIR

    job_dir = os.environ.get(ENV_JOB_DIR)
    if not job_dir or not isinstance(obj_or_path, str | os.PathLike):
        return None
    given = Path(os.path.abspath(Path(obj_or_path).expanduser()))
    if given.is_relative_to(root) or given.resolve().is_relative_to(root.resolve()):
        return None
    real = given.resolve()
    return real if real.is_relative_to(Path(job_dir).resolve()) and real.exists() else None


def _version(data: dict[str, Any]) -> VersionView:
    """A ``VersionView`` from its REST JSON (what ``register`` returns in both shapes)."""
    from datetime import datetime

    from .views import Lineage

    return VersionView(
        **{
            **data,
            "lineage": Lineage(**data["lineage"]),
            "created_at": datetime.fromisoformat(data["created_at"]),
        }
    )
