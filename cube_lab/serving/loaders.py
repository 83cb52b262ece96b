"""Load a registered model artifact for serving, one loader per flavor.

Each loader imports only what its flavor needs (a scikit-learn server never imports torch,
and never MLflow: ``import mlflow`` alone costs seconds here, most of a deploy's budget).
Every loaded model is a ``Predictor``: OIP v2 tensors in, tensors out, plus the plain
``predict`` route's JSON rows.
"""

from __future__ import annotations

import importlib.util
import pickle
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..locale.messages import _t
from .protocol import InferError, Tensor, datatype_of, tensor_meta

FLAVORS = ("sklearn", "pyfunc", "pytorch", "onnx", "transformers", "custom")


class LoadError(Exception):
    """The artifact cannot be served; the message says why and what to install or change."""


class Predictor:
    """The interface the server calls. Subclasses set ``platform`` and implement ``infer``."""

    platform = "python"

    def inputs(self) -> list[dict[str, Any]]:
        return []

    def outputs(self) -> list[dict[str, Any]]:
        return []

    def infer(self, inputs: list[Tensor], wanted: list[str] | None = None) -> list[Tensor]:
        """``wanted``: the output names the request asked for (None: the default ones)."""
        raise NotImplementedError

    def infer_native(self, value: Any, wanted: list[str] | None = None) -> list[Tensor]:
        """A request decoded by an MLServer content type (``codecs.Native``): a list of strings
        goes in as one BYTES tensor; a DataFrame only to predictors that take one."""
        if value.content_type == "pd":
            raise InferError(
                _t("a {platform} model does not take content_type 'pd'", platform=self.platform),
                _t("Send tensors (no content_type, or 'np')."),
            )
        name = self.inputs()[0]["name"] if self.inputs() else "input-0"
        array = np.empty(len(value.value), dtype=object)
        array[:] = value.value
        return self.infer([(name, array)], wanted)

    def predict_rows(self, rows: Any) -> Any:
        """The plain ``POST /predict`` route: ``instances`` in, ``predictions`` out."""
        array = np.asarray(rows)
        name = self.inputs()[0]["name"] if self.inputs() else "input-0"
        outputs = self.infer([(name, array)])
        return outputs[0][1].tolist() if len(outputs) == 1 else {n: a.tolist() for n, a in outputs}


def _mlmodel(path: Path) -> dict[str, Any]:
    import yaml

    return yaml.safe_load((path / "MLmodel").read_text()) or {}


def _single(inputs: list[Tensor], what: str) -> np.ndarray:
    if len(inputs) != 1:
        raise InferError(
            _t("{what} takes one input tensor, got {n}", what=what, n=len(inputs)),
            _t("Send the feature rows as one 2-D tensor, e.g. shape [n_rows, n_features]."),
        )
    return inputs[0][1]


# -- scikit-learn ----------------------------------------------------------------------------------


class SklearnPredictor(Predictor):
    platform = "sklearn"

    def __init__(self, model: Any) -> None:
        self.model = model
        self.n_features = getattr(model, "n_features_in_", None)
        # predict_proba is what callers ask for by output name; predict is the default
        self.has_proba = hasattr(model, "predict_proba")
        from .forest import ForestRunner

        self.fast = ForestRunner(model) if ForestRunner.supports(model) else model
        self.predict_type = _predict_type(model, self.n_features)

    def inputs(self) -> list[dict[str, Any]]:
        return [tensor_meta("input-0", "FP64", [-1, self.n_features or -1])]

    def outputs(self) -> list[dict[str, Any]]:
        out = [tensor_meta("predict", self.predict_type, [-1])]
        if self.has_proba:
            out.append(tensor_meta("predict_proba", "FP64", [-1, -1]))
        return out

    def infer_native(self, value: Any, wanted: list[str] | None = None) -> list[Tensor]:
        """A DataFrame (``pd``) or a list of strings (``str``) goes to the model as it is,
        as MLServer's scikit-learn runtime gives it (a text pipeline takes the strings)."""
        return self._run(value.value, wanted)

    def infer(self, inputs: list[Tensor], wanted: list[str] | None = None) -> list[Tensor]:
        x = _single(inputs, _t("a scikit-learn model"))
        if x.ndim == 1:
            x = x.reshape(1, -1)
        if x.ndim != 2:
            raise InferError(
                _t(
                    "a scikit-learn model takes a 2-D input, got shape {shape}",
                    shape=str(list(x.shape)),
                )
            )
        if self.n_features is not None and x.shape[1] != self.n_features:
            raise InferError(
                _t(
                    "the model expects {n} features per row, got {got}",
                    n=self.n_features,
                    got=x.shape[1],
                ),
                _t("Send shape [n_rows, {n}].", n=self.n_features),
            )
        return self._run(x, wanted)

    def _run(self, x: Any, wanted: list[str] | None) -> list[Tensor]:
        fast = self.fast if isinstance(x, np.ndarray) else self.model
        try:
            out: list[Tensor] = []
            for name in wanted or ["predict"]:
                if name == "predict":
                    out.append(("predict", np.asarray(fast.predict(x))))
                elif name == "predict_proba" and self.has_proba:
                    out.append(("predict_proba", np.asarray(fast.predict_proba(x))))
                else:
                    raise InferError(
                        _t("unknown output {name!r}", name=name),
                        _t(
                            "Outputs: {value}.",
                            value=", ".join(o["name"] for o in self.outputs()),
                        ),
                    )
            return out
        except (ValueError, TypeError) as exc:  # bad values for this model: the caller's fault
            raise InferError(_t("the model rejected the input: {error}", error=str(exc))) from None


def _predict_type(model: Any, n_features: int | None) -> str:
    """The datatype ``predict`` answers with, for the metadata: a classifier's labels'
    (``classes_``), else what one row of zeros predicts, else FP64."""
    classes = getattr(model, "classes_", None)
    if isinstance(classes, np.ndarray) and classes.ndim == 1:
        return datatype_of(classes)
    if n_features:
        try:
            return datatype_of(np.asarray(model.predict(np.zeros((1, n_features)))))
        except Exception:  # a model that needs other input than zeros: fall back
            pass
    return "FP64"


def load_sklearn(path: Path) -> Predictor:
    if path.is_dir():
        spec = (_mlmodel(path).get("flavors") or {}).get("sklearn") or {}
        file = path / spec.get("pickled_model", "model.pkl")
        fmt = spec.get("serialization_format", "cloudpickle")
        if fmt == "skops":
            import skops.io

            model = skops.io.load(file, trusted=spec.get("skops_trusted_types") or None)
        else:
            with open(file, "rb") as fh:
                model = pickle.load(fh)  # cloudpickle files load with plain pickle
        return SklearnPredictor(model)
    if path.suffix == ".skops":
        import skops.io

        return SklearnPredictor(
            skops.io.load(path, trusted=skops.io.get_untrusted_types(file=path))
        )
    if path.suffix == ".joblib":
        import joblib

        return SklearnPredictor(joblib.load(path))
    with open(path, "rb") as fh:
        return SklearnPredictor(pickle.load(fh))


# -- MLflow pyfunc ---------------------------------------------------------------------------------


class PyfuncPredictor(Predictor):
    platform = "mlflow"

    def __init__(self, model: Any) -> None:
        self.model = model

    def inputs(self) -> list[dict[str, Any]]:
        return [tensor_meta("input-0", "FP64", [-1, -1])]

    def outputs(self) -> list[dict[str, Any]]:
        return [tensor_meta("output-0", "FP64", [-1])]

    def infer(self, inputs: list[Tensor], wanted: list[str] | None = None) -> list[Tensor]:
        if len(inputs) == 1:
            data: Any = inputs[0][1]
        else:  # named columns, one tensor each
            import pandas as pd

            data = pd.DataFrame({n: a.reshape(-1) for n, a in inputs})
        result = self.model.predict(data)
        if hasattr(result, "to_numpy"):
            result = result.to_numpy()
        return [("output-0", np.asarray(result))]

    def infer_native(self, value: Any, wanted: list[str] | None = None) -> list[Tensor]:
        result = self.model.predict(value.value)
        if hasattr(result, "to_numpy"):
            result = result.to_numpy()
        return [("output-0", np.asarray(result))]


def load_pyfunc(path: Path) -> Predictor:
    import mlflow.pyfunc

    return PyfuncPredictor(mlflow.pyfunc.load_model(str(path)))


# -- PyTorch ---------------------------------------------------------------------------------------


class TorchPredictor(Predictor):
    platform = "pytorch"

    def __init__(self, model: Any) -> None:
        import torch

        self.torch = torch
        self.model = model.eval()

    def inputs(self) -> list[dict[str, Any]]:
        return [tensor_meta("input-0", "FP32", [-1, -1])]

    def outputs(self) -> list[dict[str, Any]]:
        return [tensor_meta("output-0", "FP32", [-1, -1])]

    def infer(self, inputs: list[Tensor], wanted: list[str] | None = None) -> list[Tensor]:
        torch = self.torch
        tensors = []
        for _, a in inputs:
            if a.dtype == object:
                raise InferError(_t("a PyTorch model takes numeric tensors, not BYTES"))
            tensors.append(torch.from_numpy(np.ascontiguousarray(a)))
        try:
            with torch.inference_mode():
                result = self.model(*tensors)
        except (RuntimeError, TypeError, ValueError) as exc:
            raise InferError(_t("the model rejected the input: {error}", error=str(exc))) from None
        results = result if isinstance(result, tuple | list) else (result,)
        return [(f"output-{i}", r.detach().cpu().numpy()) for i, r in enumerate(results)]


def load_pytorch(path: Path) -> Predictor:
    import torch

    if path.is_dir():
        spec = (_mlmodel(path).get("flavors") or {}).get("pytorch") or {}
        data = path / spec.get("model_data", "data")
        file = data / "model.pth" if data.is_dir() else data
        return TorchPredictor(torch.load(file, weights_only=False, map_location="cpu"))
    try:
        return TorchPredictor(torch.jit.load(str(path), map_location="cpu"))
    except RuntimeError:  # not TorchScript: a pickled module
        return TorchPredictor(torch.load(path, weights_only=False, map_location="cpu"))


# -- ONNX ------------------------------------------------------------------------------------------

_ONNX_TYPES = {
    "tensor(float)": "FP32",
    "tensor(double)": "FP64",
    "tensor(int64)": "INT64",
    "tensor(int32)": "INT32",
    "tensor(bool)": "BOOL",
    "tensor(string)": "BYTES",
}


class OnnxPredictor(Predictor):
    platform = "onnxruntime"

    def __init__(self, session: Any) -> None:
        self.session = session

    @staticmethod
    def _meta(args: Any) -> list[dict[str, Any]]:
        return [
            tensor_meta(
                a.name,
                _ONNX_TYPES.get(a.type, "FP32"),
                [d if isinstance(d, int) else -1 for d in a.shape],
            )
            for a in args
        ]

    def inputs(self) -> list[dict[str, Any]]:
        return self._meta(self.session.get_inputs())

    def outputs(self) -> list[dict[str, Any]]:
        return self._meta(self.session.get_outputs())

    def infer(self, inputs: list[Tensor], wanted: list[str] | None = None) -> list[Tensor]:
        declared = self.session.get_inputs()
        feeds = dict(inputs)
        if len(inputs) == 1 and len(declared) == 1:
            feeds = {declared[0].name: inputs[0][1]}
        try:
            results = self.session.run(wanted or None, feeds)
        except Exception as exc:  # onnxruntime raises its own exception types
            raise InferError(_t("the model rejected the input: {error}", error=str(exc))) from None
        names = wanted or [o.name for o in self.session.get_outputs()]
        return list(zip(names, [np.asarray(r) for r in results], strict=True))


def load_onnx(path: Path) -> Predictor:
    if importlib.util.find_spec("onnxruntime") is None:
        raise LoadError(_t("serving an ONNX model needs onnxruntime: pip install onnxruntime"))
    import onnxruntime

    file = path
    if path.is_dir():
        spec = (_mlmodel(path).get("flavors") or {}).get("onnx") or {}
        file = path / spec.get("data", "model.onnx")
    return OnnxPredictor(
        onnxruntime.InferenceSession(str(file), providers=["CPUExecutionProvider"])
    )


# -- transformers ----------------------------------------------------------------------------------


class TextPipelinePredictor(Predictor):
    platform = "transformers"

    def __init__(self, pipeline: Any) -> None:
        self.pipeline = pipeline

    def inputs(self) -> list[dict[str, Any]]:
        return [tensor_meta("text", "BYTES", [-1])]

    def outputs(self) -> list[dict[str, Any]]:
        return [tensor_meta("output", "BYTES", [-1])]

    def infer(self, inputs: list[Tensor], wanted: list[str] | None = None) -> list[Tensor]:
        import json

        texts = [str(t) for t in _single(inputs, _t("a text pipeline")).reshape(-1)]
        results = self.pipeline(texts)
        return [("output", np.array([json.dumps(r) for r in results], dtype=object))]

    def predict_rows(self, rows: Any) -> Any:
        return self.pipeline([str(r) for r in rows])


def load_transformers(path: Path) -> Predictor:
    if importlib.util.find_spec("transformers") is None:
        raise LoadError(
            _t("serving a transformers model needs transformers: pip install transformers")
        )
    if (path / "MLmodel").is_file():
        import mlflow.transformers

        return TextPipelinePredictor(mlflow.transformers.load_model(str(path)))
    import transformers

    return TextPipelinePredictor(transformers.pipeline(model=str(path)))


# -- a custom predictor class ----------------------------------------------------------------------


class CustomPredictor(Predictor):
    """Wraps a user class with ``predict(inputs: dict[str, np.ndarray])``."""

    platform = "custom"

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def inputs(self) -> list[dict[str, Any]]:
        return list(getattr(self.obj, "inputs", []) or [])

    def outputs(self) -> list[dict[str, Any]]:
        return list(getattr(self.obj, "outputs", []) or [])

    def infer(self, inputs: list[Tensor], wanted: list[str] | None = None) -> list[Tensor]:
        result = self.obj.predict(dict(inputs))
        if isinstance(result, dict):
            return [(str(k), np.asarray(v)) for k, v in result.items()]
        return [("output-0", np.asarray(result))]


def load_custom(path: Path, class_name: str = "Predictor") -> Predictor:
    """``predictor.py`` in the artifact folder (or the artifact file itself) defines the class;
    it is built with the artifact folder as its only argument."""
    folder = path if path.is_dir() else path.parent
    file = path / "predictor.py" if path.is_dir() else path
    if not file.is_file():
        raise LoadError(
            _t(
                "a custom predictor needs {file}: a class {cls}(path) with predict()",
                file=str(file),
                cls=class_name,
            )
        )
    module_name = f"cube_predictor_{abs(hash(str(file)))}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(folder))  # helpers next to predictor.py import as usual
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    cls = getattr(module, class_name, None)
    if cls is None:
        raise LoadError(_t("{file} defines no class {cls!r}", file=str(file), cls=class_name))
    return CustomPredictor(cls(str(folder)))


def load(path: Path, flavor: str, predictor_class: str = "Predictor") -> Predictor:
    if not path.exists():
        raise LoadError(_t("the model artifact {path} does not exist", path=str(path)))
    if flavor == "generic" and (path / "predictor.py").is_file():
        flavor = "custom"
    loaders = {
        "sklearn": load_sklearn,
        "pyfunc": load_pyfunc,
        "pytorch": load_pytorch,
        "onnx": load_onnx,
        "transformers": load_transformers,
    }
    if flavor == "custom":
        return load_custom(path, predictor_class)
    loader = loaders.get(flavor)
    if loader is None:
        raise LoadError(
            _t(
                "cannot serve flavor {flavor!r}: add a predictor.py with a class Predictor(path) "
                "that has predict(inputs) to the artifact folder, or register a supported flavor "
                "({value})",
                flavor=flavor,
                value=", ".join(FLAVORS),
            )
        )
    try:
        return loader(path)
    except ImportError as exc:  # the flavor's library is not installed where the server runs
        package = _PACKAGES.get(flavor, exc.name or flavor)
        raise LoadError(
            _t(
                "serving a {flavor} model needs {module}: pip install {package}",
                flavor=flavor,
                module=exc.name or package,
                package=package,
            )
        ) from exc


_PACKAGES = {
    "onnx": "onnxruntime",
    "transformers": "transformers",
    "pytorch": "torch",
    "pyfunc": "mlflow",
    "sklearn": "scikit-learn",
}

__all__ = ["FLAVORS", "LoadError", "Predictor", "datatype_of", "load"]
