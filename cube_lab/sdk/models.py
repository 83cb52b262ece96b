"""``cl.models``: list, get and register model versions; ``ModelVersion`` handles."""

from __future__ import annotations

import builtins
import os
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from . import current

Json = dict[str, Any]


def parse_ref(ref: str) -> tuple[str, str]:
    """``iris`` -> (iris, latest); ``iris:3`` -> (iris, 3); ``iris@prod`` -> (iris, prod)."""
    if not isinstance(ref, str) or not ref.strip():
        raise InvalidInput(
            f"a model reference must be a non-empty string, got {ref!r}",
            'e.g. "iris" (the latest version), "iris:3" or "iris@production".',
        )
    text = ref.strip()
    for sep in ("@", ":"):
        name, found, version = text.partition(sep)
        if found:
            if not name or not version:
                raise InvalidInput(
                    f"model reference {ref!r} lacks a name or a version",
                    'e.g. "iris:3" or "iris@production".',
                )
            return name, version
    return text, "latest"


class ModelVersion:
    """One registered version, as the registry answered (``.data`` is its REST JSON)."""

    def __init__(self, data: Json) -> None:
        self.data = data

    name = property(lambda self: str(self.data["model"]))
    version = property(lambda self: int(self.data["version"]))
    project = property(lambda self: str(self.data["project"]))
    flavor = property(lambda self: str(self.data["flavor"]))
    metrics = property(lambda self: dict(self.data.get("metrics") or {}))
    params = property(lambda self: dict(self.data.get("params") or {}))
    tags = property(lambda self: dict(self.data.get("tags") or {}))
    aliases = property(lambda self: builtins.list(self.data.get("aliases") or []))
    lineage = property(lambda self: dict(self.data.get("lineage") or {}))
    created_at = property(lambda self: self.data.get("created_at"))

    @property
    def ref(self) -> str:
        return f"{self.name}:{self.version}"

    def download(self, to: str | os.PathLike[str] = ".") -> Path:
        """Write the artifact (a file, or a folder as a folder) into the folder ``to``, or
        as ``to`` when that is not an existing folder; the path written."""
        target = Path(to).expanduser()
        return current().download(self.project, self.name, str(self.version), target)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ModelVersion) and self.data == other.data

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        metrics = ", ".join(f"{k}={v}" for k, v in sorted(self.metrics.items()))
        aliases = f" @{','.join(self.aliases)}" if self.aliases else ""
        return (
            f"<ModelVersion {self.project}/{self.ref}{aliases} {self.flavor}"
            + (f" {metrics}" if metrics else "")
            + ">"
        )


class Models:
    """``cl.models.list(...)``, ``.get("iris:3")``, ``.register(model, "iris")``."""

    def list(self, project: str | None = None, q: str | None = None) -> builtins.list[Json]:
        """The models you can see (each a dict: name, project, latest_version, flavor...)."""
        return current().list_models(project, q)

    def get(self, ref: str, project: str | None = None) -> ModelVersion:
        """A version: ``"iris"`` (latest), ``"iris:3"``, ``"iris@production"``."""
        name, version = parse_ref(ref)
        transport = current()
        return ModelVersion(
            transport.get_version(project or transport.personal_project(), name, version)
        )

    def register(
        self,
        obj_or_path: Any,
        name: str,
        project: str | None = None,
        *,
        metrics: dict[str, float] | None = None,
        params: dict[str, Any] | None = None,
        tags: dict[str, str] | None = None,
        description: str = "",
        flavor: str | None = None,
        aliases: builtins.list[str] | None = None,
        source: str | None = None,
        pipeline_run_id: str | None = None,
        training_job_id: str | None = None,
        datasets: builtins.list[dict[str, Any]] | None = None,
    ) -> ModelVersion:
        """Register a model object (scikit-learn, PyTorch, transformers, ONNX) or a file or
        folder as a new version of ``name``; lineage (notebook, job, datasets) is recorded."""
        fields = {
            "name": name,
            "project": project,
            "flavor": flavor,
            "description": description,
            "params": params,
            "metrics": metrics,
            "tags": tags,
            "aliases": aliases,
            "source": source,
            "pipeline_run_id": pipeline_run_id,
            "training_job_id": training_job_id,
            "datasets": datasets,
        }
        return ModelVersion(current().register(obj_or_path, fields))

    def __repr__(self) -> str:
        return "<cube-lab models: list(), get(ref), register(obj_or_path, name)>"


models = Models()
