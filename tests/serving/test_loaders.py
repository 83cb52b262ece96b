"""Model loaders other than scikit-learn: PyTorch (TorchScript and pickled modules), MLflow
pyfunc, a custom predictor class, and a clear error for a flavor whose library is missing;
plus a PyTorch model deployed and called over HTTP."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path
from typing import Any

import mlflow.pyfunc
import numpy as np
import pytest
import torch

from cube_lab.identity import Caller
from cube_lab.serving.loaders import LoadError, load
from cube_lab.serving.protocol import InferError


class TwoHeads(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.linear = torch.nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.linear(x)
        return logits, logits.softmax(dim=1)


X = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)


def test_torchscript_and_pickled_modules(tmp_path: Path) -> None:
    model = TwoHeads().eval()
    expected = [t.detach().numpy() for t in model(torch.from_numpy(X))]
    scripted = tmp_path / "model.pt"
    torch.jit.script(model).save(str(scripted))
    pickled = tmp_path / "module.pth"
    torch.save(model, pickled)
    for path in (scripted, pickled):
        predictor = load(path, "pytorch")
        out = predictor.infer([("input-0", X)])
        assert [n for n, _ in out] == ["output-0", "output-1"]
        for (_, got), want in zip(out, expected, strict=True):
            assert np.allclose(got, want, atol=1e-6)
    with pytest.raises(InferError, match="rejected the input"):
        load(scripted, "pytorch").infer([("input-0", np.ones((2, 7), np.float32))])
    with pytest.raises(InferError, match="not BYTES"):
        load(scripted, "pytorch").infer([("input-0", np.array([["a"]], dtype=object))])


class Doubler(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):  # type: ignore[no-untyped-def]
        # no type hints: MLflow would read them as a (list-typed) input schema
        return np.asarray(model_input).sum(axis=1) * 2


def test_mlflow_pyfunc(tmp_path: Path) -> None:
    mlflow.pyfunc.save_model(str(tmp_path / "pyfunc"), python_model=Doubler())
    predictor = load(tmp_path / "pyfunc", "pyfunc")
    ((name, got),) = predictor.infer([("input-0", X.astype(np.float64))])
    assert name == "output-0" and np.allclose(got, X.sum(axis=1) * 2)
    assert predictor.predict_rows([[1, 2], [3, 4]]) == [6, 14]


def test_a_custom_predictor_class(tmp_path: Path) -> None:
    folder = tmp_path / "custom"
    folder.mkdir()
    (folder / "scale.txt").write_text("3")
    (folder / "predictor.py").write_text(
        textwrap.dedent(
            """
            from pathlib import Path
            import numpy as np

            class Predictor:
                inputs = [{"name": "x", "datatype": "FP64", "shape": [-1, 2]}]
                outputs = [{"name": "scaled", "datatype": "FP64", "shape": [-1, 2]}]

                def __init__(self, path):
                    self.scale = float(Path(path, "scale.txt").read_text())

                def predict(self, inputs):
                    return {"scaled": inputs["x"] * self.scale}
            """
        )
    )
    predictor = load(folder, "custom")
    assert predictor.inputs()[0]["name"] == "x"
    ((name, got),) = predictor.infer([("x", np.array([[1.0, 2.0]]))])
    assert name == "scaled" and got.tolist() == [[3.0, 6.0]]
    assert load(folder, "generic").platform == "custom"  # a predictor.py makes it custom
    with pytest.raises(LoadError, match="defines no class 'Model'"):
        load(folder, "custom", "Model")
    with pytest.raises(LoadError, match=r"needs .*predictor\.py"):
        load(tmp_path, "custom")


@pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime") is not None, reason="onnxruntime is installed here"
)
def test_a_missing_library_is_named_with_what_to_install(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"\0")
    with pytest.raises(LoadError, match="pip install onnxruntime"):
        load(tmp_path / "model.onnx", "onnx")


def test_a_deployed_torchscript_model_answers_over_http(ws: Any, tmp_path: Path) -> None:
    import json
    import urllib.request

    model = TwoHeads().eval()
    path = tmp_path / "model.pt"
    torch.jit.script(model).save(str(path))
    alice = Caller("alice")
    version = ws.registry.register(alice, name="heads", path=path, flavor="pytorch")
    assert version.flavor == "pytorch"
    dep = ws.serving.deploy(alice, "heads:1")
    try:
        tensor = {"name": "input-0", "shape": [5, 4], "datatype": "FP32"}
        body = {"inputs": [{**tensor, "data": X.ravel().tolist()}]}
        req = urllib.request.Request(
            f"{dep.endpoint}/v2/models/heads/infer",
            json.dumps(body).encode(),
            {"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            answer = json.loads(resp.read())
        logits = np.array(answer["outputs"][0]["data"]).reshape(answer["outputs"][0]["shape"])
        assert answer["outputs"][0]["datatype"] == "FP32"
        assert np.allclose(logits, model(torch.from_numpy(X))[0].detach().numpy(), atol=1e-5)
    finally:
        ws.serving.undeploy(alice, "heads")
