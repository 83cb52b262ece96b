"""``cl.models.load``: a registered version back in memory by its flavor (scikit-learn, PyTorch,
pyfunc, transformers, peft on its registered base, a generic predictor.py), in this process
and through ``cl.connect`` against a real second server (the artifact downloaded once into a
cache), with the same answers in both."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import cube_lab as cl
from cube_lab import sdk
from cube_lab.errors import InvalidInput, NotFound
from cube_lab.sdk.transport import model_cache_root
from tests.sdk.test_sdk import _connect, _model, _same_everywhere, local, server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

PREDICTOR = """
class Predictor:
    def __init__(self, folder):
        self.scale = float(open(folder + "/scale.txt").read())

    def predict(self, inputs):
        return {k: v * self.scale for k, v in inputs.items()}
"""

PYFUNC = """
import mlflow.models
import mlflow.pyfunc


class Doubler(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        return model_input * 2


mlflow.models.set_model(Doubler())
"""


def _torch_module() -> Any:
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh())


def _pyfunc_folder(root: Path) -> Path:
    """An MLflow pyfunc folder whose model class lives in a file saved with it."""
    import mlflow.pyfunc

    (root / "doubler.py").write_text(PYFUNC)
    target = root / "doubler"
    mlflow.pyfunc.save_model(
        str(target),
        python_model=str(root / "doubler.py"),  # models-from-code: no pickled class
        pip_requirements=[],
    )
    return target


def _peft_adapter(root: Path, base: Path) -> Path:
    """A LoRA adapter (random, untrained B != 0) that records its registered base."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(1)
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(base),
        LoraConfig(r=2, target_modules=["q_proj", "v_proj"], init_lora_weights=False),
    )
    folder = root / "adapter"
    model.save_pretrained(folder)
    (folder / "cube_finetune.json").write_text(
        json.dumps({"base_model": "gone-by-now", "base_ref": "tiny-base:1"})
    )
    return folder


def _loads(root: Path) -> dict[str, Any]:
    import numpy as np
    import pandas as pd
    import torch

    from cube_lab.finetune import tiny

    x = [[0, 0], [1, 1], [0, 1], [1, 0]]
    cl.models.register(_model(), "tree")
    tree = cl.models.load("tree:1")
    assert type(tree).__name__ == "DecisionTreeClassifier"
    assert tree.predict(x).tolist() == [0, 1, 0, 1]

    module = _torch_module()
    cl.models.register(module, "net")
    net = cl.models.load("net")
    assert isinstance(net, torch.nn.Module) and net is not module
    probe = torch.tensor([[0.5, -1.0, 2.0]])
    assert torch.equal(net(probe), module(probe))

    cl.models.register(_pyfunc_folder(root), "doubler")
    doubler = cl.models.load("doubler")
    assert cl.models.get("doubler").flavor == "pyfunc"
    doubled = doubler.predict(pd.DataFrame({"a": [1.0, 2.5]}))
    assert doubled["a"].tolist() == [2.0, 5.0]

    base = tiny.build(root / "tiny", ["hello there", "general kenobi"] * 20)
    cl.models.register(base, "tiny-base")
    assert cl.models.get("tiny-base").flavor == "transformers"
    generator = cl.models.load("tiny-base:1")
    assert generator.task == "text-generation"
    out = generator("hello", max_new_tokens=3, do_sample=False)
    assert out[0]["generated_text"].startswith("hello")

    cl.models.register(_peft_adapter(root, base), "tiny-lora")
    assert cl.models.get("tiny-lora").flavor == "peft"
    peft_model, tokenizer = cl.models.load("tiny-lora")
    assert type(peft_model).__name__.startswith("Peft")
    ids = tokenizer("hello there", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        with_adapter = peft_model(ids).logits
        with peft_model.disable_adapter():
            without = peft_model(ids).logits
    assert not torch.allclose(with_adapter, without)  # the adapter is on, and changes things

    scaled = root / "scaled"
    scaled.mkdir()
    (scaled / "predictor.py").write_text(PREDICTOR)
    (scaled / "scale.txt").write_text("3")
    cl.models.register(scaled, "scaled", flavor="generic")
    custom = cl.models.load("scaled")
    assert type(custom).__name__ == "Predictor"
    assert custom.predict({"x": np.array([1.0, 2.0])})["x"].tolist() == [3.0, 6.0]

    (root / "notes.txt").write_text("just words")
    cl.models.register(root / "notes.txt", "notes")
    with pytest.raises(InvalidInput) as generic:
        cl.models.load("notes")
    with pytest.raises(NotFound) as missing:
        cl.models.load("tree:9")
    return {
        "tree": tree.predict(x).tolist(),
        "net": net(probe).tolist(),
        "doubled": doubled["a"].tolist(),
        "generated": out[0]["generated_text"],
        "adapter_delta": float((with_adapter - without).abs().max()),
        "errors": [generic.value.to_json(), missing.value.to_json()],
    }


def test_load_here_and_over_rest_answer_the_same(
    local: Path,  # noqa: F811  (the fixture of test_sdk)
    server: tuple[str, Path],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    here = _loads(local)
    assert sdk.current().kind == "local"
    assert not model_cache_root().exists()  # in this process it reads the store's own files
    assert "generic" in here["errors"][0]["error"] and "download" in here["errors"][0]["detail"]
    assert here["errors"][1]["error"] == "model 'tree' has no version '9'"

    monkeypatch.setenv("XDG_CACHE_HOME", str(local.parent / "cache"))
    theirs = _loads(_connect(server, monkeypatch))
    _same_everywhere(here, theirs)

    cached = model_cache_root()
    assert cached == local.parent / "cache" / "cube-lab" / "models"
    assert sorted(p.name for p in (cached / "alice").iterdir()) == [
        "doubler",
        "net",
        "notes",  # fetched to look for a predictor.py
        "scaled",
        "tiny-base",
        "tiny-lora",
        "tree",
    ]
    assert (cached / "alice" / "tiny-lora" / "1" / "adapter" / "adapter_config.json").is_file()

    def no_download(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("downloaded again")

    monkeypatch.setattr(sdk.current().client, "stream", no_download)  # type: ignore[attr-defined]
    assert cl.models.load("tree:1").predict([[1, 1]]).tolist() == [1]  # from the cache
