"""The memory estimate before a fine-tune: the parameter count is the model's own (a tiny
Llama and a Qwen2 with biases, and the shape of Qwen2.5-7B on the meta device), the LoRA
part is PEFT's count, the weights' bytes are accelerate's; the CLI and REST say it without
starting a job."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("peft")

from cube_lab.cli import main
from cube_lab.finetune import tiny
from cube_lab.finetune.config import FinetuneConfig
from cube_lab.finetune.memory import GIB, OVERHEAD, estimate


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    root = tmp_path_factory.mktemp("estimate")
    tiny.build(root / "llama", ["hello world, the cat sat"] * 4)
    qwen = Qwen2Config(hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, vocab_size=300)  # fmt: skip
    Qwen2ForCausalLM(qwen).save_pretrained(root / "qwen")
    big = Qwen2Config(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                      num_attention_heads=28, num_key_value_heads=4, vocab_size=152064,
                      tie_word_embeddings=False, dtype="bfloat16")  # fmt: skip
    big.save_pretrained(root / "qwen-7b-shape")  # config.json only: nothing is allocated
    (root / "t.jsonl").write_text('{"text": "hello"}\n')
    return root


def config(models: Path, name: str, **extra: Any) -> FinetuneConfig:
    raw = {"model": str(models / name), "data": str(models / "t.jsonl"), "cutoff_len": 128}
    return FinetuneConfig.from_dict({**raw, **extra})


@pytest.mark.parametrize("name", ["llama", "qwen"])
@pytest.mark.parametrize("target", ["all", ["q_proj", "v_proj"]])
def test_counts_are_the_models_and_peft_s(models: Path, name: str, target: Any) -> None:
    from accelerate.utils import calculate_maximum_sizes
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    found = estimate(config(models, name, lora={"rank": 4, "target": target}))
    model = AutoModelForCausalLM.from_pretrained(models / name)
    params = model.num_parameters()
    assert found["parameters"] == params
    buffers = sum(b.numel() * b.element_size() for b in model.buffers())  # rotary tables
    assert found["bytes"]["weights"] == calculate_maximum_sizes(model)[0] - buffers
    peft = get_peft_model(
        model, LoraConfig(r=4, target_modules="all-linear" if target == "all" else target)
    )
    assert found["trainable_parameters"] == peft.get_nb_trainable_parameters()[0]
    full = estimate(config(models, name, finetuning_type="full"))
    assert full["trainable_parameters"] == full["parameters"]
    assert full["bytes"]["optimizer"] == 2 * full["bytes"]["gradients"] == 8 * params


def test_a_7b_shape_is_estimated_without_its_weights(models: Path) -> None:
    lora = estimate(config(models, "qwen-7b-shape", cutoff_len=1024))
    assert lora["parameters"] == 7_615_616_512  # Qwen2.5-7B's published count
    assert lora["dtype"] == "bfloat16" and lora["bytes"]["weights"] == 2 * lora["parameters"]
    assert lora["trainable_parameters"] == 20_185_088  # rank 8 on every linear layer
    full = estimate(config(models, "qwen-7b-shape", cutoff_len=1024, finetuning_type="full"))
    qlora = estimate(config(models, "qwen-7b-shape", cutoff_len=1024, quantization_bit=4))
    assert qlora["total_bytes"] < lora["total_bytes"] < full["total_bytes"]
    assert 55 * GIB < full["total_bytes"] < 70 * GIB  # 16-bit weights + grads + AdamW: ~8 B/param
    longer = estimate(config(models, "qwen-7b-shape", cutoff_len=4096))
    assert longer["bytes"]["activations"] == 4 * lora["bytes"]["activations"]
    assert lora["bytes"]["overhead"] == OVERHEAD


def test_cli_and_rest_estimate_without_a_job(models: Path, tmp_path: Path, capsys: Any) -> None:
    import yaml

    path = tmp_path / "ft.yaml"
    path.write_text(yaml.safe_dump({"model": str(models / "qwen-7b-shape"),
                                    "data": str(models / "t.jsonl")}))  # fmt: skip
    data_dir = tmp_path / "d"
    assert main(["--data-dir", str(data_dir), "finetune", str(path), "--estimate"]) == 0
    out = capsys.readouterr().out
    assert "parameters 7,615,616,512 (bfloat16), trainable 20,185,088" in out
    assert "GiB per process" in out.splitlines()[-1]
    assert main(["--data-dir", str(data_dir), "finetune", str(path), "--estimate", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["parameters"] == 7_615_616_512


async def test_rest_estimate(api: Any, jp_root_dir: Path, models: Path) -> None:
    import shutil

    shutil.copytree(models / "qwen", jp_root_dir / "qwen")
    (jp_root_dir / "t.jsonl").write_text('{"text": "hello"}\n')
    body = {"config": {"model": "qwen", "data": "t.jsonl", "finetuning_type": "full"}}
    status, found = await api("alice", "POST", "finetune/estimate", body)
    assert status == 200 and found["trainable_parameters"] == found["parameters"], found
    status, jobs = await api("alice", "GET", "training/jobs")
    assert status == 200 and jobs["jobs"] == []  # no job was made
    status, err = await api("alice", "POST", "finetune/estimate", {"config": {"model": "qwen"}})
    assert status == 400 and "data" in err["error"], err
