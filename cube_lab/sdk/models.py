"""``cl.models``: list, get and register model versions; ``ModelVersion`` handles."""

from __future__ import annotations

import builtins
import os
from pathlib import Path
from typing import Any

from .. import lab_links
from ..errors import InvalidInput
from ..locale.messages import _t
from . import current

Json = dict[str, Any]


def parse_ref(ref: str) -> tuple[str, str]:
    """``iris`` -> (iris, latest); ``iris:3`` -> (iris, 3); ``iris@prod`` -> (iris, prod)."""
    if not isinstance(ref, str) or not ref.strip():
        raise InvalidInput(
            _t("a model reference must be a non-empty string, got {ref!r}", ref=ref),
            _t('e.g. "iris" (the latest version), "iris:3" or "iris@production".'),
        )
    text = ref.strip()
    for sep in ("@", ":"):
        name, found, version = text.partition(sep)
        if found:
            if not name or not version:
                raise InvalidInput(
                    _t("model reference {ref!r} lacks a name or a version", ref=ref),
                    _t('e.g. "iris:3" or "iris@production".'),
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

    @property
    def url(self) -> str | None:
        """The link that opens this version in JupyterLab's model view (None outside a lab)."""
        return lab_links.link("model", project=self.project, name=self.name, version=self.version)

    def download(self, to: str | os.PathLike[str] = ".") -> Path:
        """Write the artifact (a file, or a folder as a folder) into the folder ``to``, or
        as ``to`` when that is not an existing folder; the path written."""
        target = Path(to).expanduser()
        return current().download(self.project, self.name, str(self.version), target)

    def load(self) -> Any:
        """The version back in memory, by its flavor: a scikit-learn estimator, a
        ``torch.nn.Module``, a transformers pipeline, an MLflow pyfunc model, an ONNX Runtime
        session, a ``peft`` adapter on its base as ``(model, tokenizer)``, a ``generic`` folder's
        ``predictor.py`` class; over REST the artifact is downloaded once into a cache."""
        transport = current()
        return load_artifact(transport.artifact(self.data), self.flavor, self.project)

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


def load_artifact(path: Path, flavor: str, project: str) -> Any:
    """A model from its artifact ``path``: what the serving loaders load (the object inside
    their predictor), a ``peft`` adapter on its base (the registered base version when the
    adapter names one, fetched like this one)."""
    from ..registry.flavors import load_peft

    if flavor == "peft":

        def base_folder(ref: str) -> str:  # "project/name:version", or "name:version"
            base_project, _, rest = ref.rpartition("/")
            return str(current().artifact(models.get(rest, base_project or project).data))

        return load_peft(path, base_resolver=base_folder)
    from ..serving import loaders

    if flavor == "transformers" and path.is_dir() and not (path / "MLmodel").is_file():
        return _hf_pipeline(path)
    if flavor == "generic" and not (path / "predictor.py").is_file():
        raise InvalidInput(
            _t("a generic artifact ({name}) has no loader", name=path.name),
            _t(
                "Fetch its files with cl.models.get(ref).download(folder) and read them, or "
                "register it with a flavor (sklearn, pytorch, transformers, pyfunc, onnx) or "
                "with a predictor.py that defines a class Predictor(path)."
            ),
        )
    try:
        predictor = loaders.load(path, flavor)
    except loaders.LoadError as exc:
        raise InvalidInput(
            _t("cannot load this {flavor} model: {exc}", flavor=flavor, exc=str(exc))
        ) from None
    for attr in ("model", "pipeline", "session", "obj"):  # each Predictor keeps one of these
        if hasattr(predictor, attr):
            return getattr(predictor, attr)
    return predictor


# A Hugging Face folder's task, from the class its config.json names: ``pipeline(model=path)``
# alone asks the Hub for the task (transformers 5), which fails offline and for a local folder.
_TASKS = (
    ("ForCausalLM", "text-generation"),
    ("ForSequenceClassification", "text-classification"),
    ("ForTokenClassification", "token-classification"),
    ("ForQuestionAnswering", "question-answering"),
    ("ForMaskedLM", "fill-mask"),
    ("ForConditionalGeneration", "text2text-generation"),
    ("ForImageClassification", "image-classification"),
)


def _hf_pipeline(path: Path) -> Any:
    """A transformers pipeline of a Hugging Face model folder, its task read from its config."""
    import json

    import transformers

    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, ValueError) as exc:
        raise InvalidInput(
            _t("{name}/config.json cannot be read: {exc}", name=path.name, exc=str(exc))
        ) from None
    names = [str(a) for a in config.get("architectures") or []]
    task = next((t for n in names for suffix, t in _TASKS if n.endswith(suffix)), None)
    if task is None:
        raise InvalidInput(
            _t(
                "cannot tell the task of the transformers model {name} (architectures {names})",
                name=path.name,
                names=names or _t("not given"),
            ),
            _t(
                "Load its files yourself: cl.models.get(ref).download(folder), then "
                "transformers.pipeline(TASK, model=folder)."
            ),
        )
    return transformers.pipeline(task, model=str(path))


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

    def load(self, ref: str, project: str | None = None) -> Any:
        """A version back in memory by its flavor: ``cl.models.load("iris:3")`` (see
        ``ModelVersion.load``)."""
        return self.get(ref, project).load()

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
        return "<cube-lab models: list(), get(ref), load(ref), register(obj_or_path, name)>"


models = Models()
