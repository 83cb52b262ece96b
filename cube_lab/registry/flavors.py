"""Which kind of model an artifact is, and how in-memory models are saved.

In-memory scikit-learn, PyTorch and transformers objects are saved as MLflow
model folders (so the serving capability can load them with MLflow); existing
MLflow folders keep their flavor; plain files and folders are stored as they are.
"""

from __future__ import annotations

import importlib.metadata
import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from ..errors import InvalidInput
from ..locale.messages import _t

FLAVORS = ("sklearn", "pytorch", "transformers", "peft", "onnx", "pyfunc", "generic")
_MLFLOW_FLAVORS = {
    "sklearn": "sklearn",
    "pytorch": "pytorch",
    "transformers": "transformers",
    "onnx": "onnx",
}
_FILE_FLAVORS = {
    ".onnx": "onnx",
    ".pt": "pytorch",
    ".pth": "pytorch",
    ".joblib": "sklearn",
    ".skops": "sklearn",
}
_TRANSFORMERS_WEIGHTS = ("pytorch_model.bin", "model.safetensors", "tf_model.h5")


def check_flavor(flavor: object) -> str | None:
    if flavor is None or flavor == "":
        return None
    if flavor not in FLAVORS:
        raise InvalidInput(
            _t("unknown flavor {flavor!r}", flavor=flavor),
            _t("Use one of {value}.", value=list(FLAVORS)),
        )
    return str(flavor)


def detect_path(path: Path) -> tuple[str, str]:
    """(flavor, format) of a file or folder on disk."""
    if path.is_dir():
        mlmodel = path / "MLmodel"
        if mlmodel.is_file():
            try:
                flavors = (yaml.safe_load(mlmodel.read_text()) or {}).get("flavors") or {}
            except yaml.YAMLError as exc:
                raise InvalidInput(
                    _t("{name}/MLmodel is not valid YAML", name=path.name), str(exc)
                ) from exc
            for key, flavor in _MLFLOW_FLAVORS.items():
                if key in flavors:
                    return flavor, "mlflow"
            return ("pyfunc" if "python_function" in flavors else "generic"), "mlflow"
        if (path / "adapter_config.json").is_file():  # a PEFT adapter: loads onto its base
            return "peft", "directory"
        if (path / "config.json").is_file() and any(
            (path / w).is_file() for w in _TRANSFORMERS_WEIGHTS
        ):
            return "transformers", "directory"
        return "generic", "directory"
    return _FILE_FLAVORS.get(path.suffix.lower(), "generic"), "file"


def _class_names(obj: Any) -> set[str]:
    return {f"{cls.__module__}.{cls.__qualname__}" for cls in type(obj).__mro__}


def _pin(*packages: str) -> list[str]:
    pins = []
    for package in packages:
        try:
            pins.append(f"{package}=={importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    return pins


def object_flavor(obj: Any) -> str:
    names = _class_names(obj)
    modules = {name.split(".", 1)[0] for name in names}
    if "torch.nn.modules.module.Module" in names:
        return "pytorch"
    if "sklearn" in modules:
        return "sklearn"
    if any(name.startswith("transformers.pipelines") for name in names):
        return "transformers"
    if "onnx.onnx_ml_pb2.ModelProto" in names or "onnx.onnx_pb.ModelProto" in names:
        return "onnx"
    raise InvalidInput(
        _t(
            "cannot register an object of type {module__}.{qualname__}",
            module__=type(obj).__module__,
            qualname__=type(obj).__qualname__,
        ),
        _t(
            "Pass a scikit-learn estimator, a torch.nn.Module, a transformers pipeline or"
            " an ONNX ModelProto, or save the model to a file or folder and register that"
            " path."
        ),
    )


# What MLflow says on every save that cube-lab has already decided (see save_object): a user
# cannot act on it, and a red block after every registration teaches them to ignore red.
_KNOWN_SAVE_WARNINGS = {
    # cube-lab saves with cloudpickle on purpose (skops needs a list of trusted types per model)
    "mlflow.sklearn": "Saving scikit-learn models in the pickle or cloudpickle format",
    # and torch with pickle (the "pt2" default needs an input example to trace the graph)
    "mlflow.pytorch": "Saving pytorch model by Pickle or CloudPickle format",
}


class _DropMessage(logging.Filter):
    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.prefix)


@contextmanager
def _known_harmless_quiet() -> Iterator[None]:
    """Drop exactly the warnings above while cube-lab imports MLflow and saves with it; every
    other warning and log line still shows."""
    filters = [
        (logging.getLogger(name), _DropMessage(p)) for name, p in _KNOWN_SAVE_WARNINGS.items()
    ]
    for logger, filt in filters:
        logger.addFilter(filt)
    try:
        with warnings.catch_warnings():
            # Importing MLflow imports tqdm.auto; in a kernel without ipywidgets tqdm warns
            # "IProgress not found" and falls back to its text bar, which is what we want.
            warnings.filterwarnings("ignore", message="IProgress not found")
            yield
    finally:
        for logger, filt in filters:
            logger.removeFilter(filt)


def save_object(obj: Any, folder: Path) -> tuple[str, str, str]:
    """Save ``obj`` inside ``folder``; returns (artifact name, flavor, format)."""
    flavor = object_flavor(obj)
    with _known_harmless_quiet():
        return _save_object(obj, flavor, folder)


def _save_object(obj: Any, flavor: str, folder: Path) -> tuple[str, str, str]:
    target = folder / "model"
    # Explicit requirements: MLflow would otherwise spawn a process to infer them.
    if flavor == "sklearn":
        import mlflow.sklearn

        # cloudpickle: loads with no list of trusted types (skops needs one per model).
        mlflow.sklearn.save_model(
            obj,
            str(target),
            serialization_format="cloudpickle",
            pip_requirements=_pin("scikit-learn", "cloudpickle"),
        )
    elif flavor == "pytorch":
        import mlflow.pytorch

        # "pickle": the "pt2" default would need an input example to trace the graph.
        mlflow.pytorch.save_model(
            obj,
            str(target),
            serialization_format="pickle",
            pip_requirements=_pin("torch", "cloudpickle"),
        )
    elif flavor == "transformers":
        import mlflow.transformers

        mlflow.transformers.save_model(
            obj, str(target), pip_requirements=_pin("transformers", "torch")
        )
    else:  # onnx
        target = folder / "model.onnx"
        target.write_bytes(obj.SerializeToString())
        return target.name, "onnx", "file"
    return target.name, flavor, "mlflow"


def peft_base(folder: Path, base_resolver: Any = None) -> str:
    """The folder of the base a ``peft`` version's adapter was trained on:
    ``cube_finetune.json``'s registered ``base_ref`` (turned into a folder by
    ``base_resolver``), else its base folder (``base_model_name_or_path`` of
    ``adapter_config.json``)."""
    import json

    meta_path, adapter = folder / "cube_finetune.json", folder / "adapter_config.json"
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    base = meta.get("base_model") or json.loads(adapter.read_text()).get("base_model_name_or_path")
    if meta.get("base_ref") and base_resolver is not None:
        base = base_resolver(meta["base_ref"])
    if not base or not Path(base).is_dir():
        raise InvalidInput(
            _t(
                "the base model of the adapter in {folder} is not available ({base!r})",
                folder=folder,
                base=base,
            ),
            _t("Register or restore the base model folder the adapter was trained on."),
        )
    return str(base)


def load_peft(folder: Path, base_resolver: Any = None) -> tuple[Any, Any]:
    """A ``peft`` version's folder loaded onto its base (``peft_base``): (model, tokenizer)."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = peft_base(folder, base_resolver)
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), str(folder))
    model.eval()
    tokenizer_dir = folder if (folder / "tokenizer_config.json").is_file() else Path(base)
    return model, AutoTokenizer.from_pretrained(tokenizer_dir)
