"""QLoRA (``quantization_bit``): read from cube-lab's and LLaMA-Factory's keys, checked against
the other fields, and refused before a job is recorded where it cannot run (no CUDA GPU, no
bitsandbytes), with the fix. The 4-bit training itself needs a CUDA GPU: not run here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cube_lab.errors import InvalidInput
from cube_lab.finetune import tiny
from cube_lab.finetune.config import FinetuneConfig
from cube_lab.finetune.service import check_before_launch
from cube_lab.finetune.trainer import check_quantization


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("qlora")
    (root / "alpaca.json").write_text(json.dumps(tiny.alpaca_rows()))
    (root / "dataset_info.json").write_text(json.dumps({"alpaca": {"file_name": "alpaca.json"}}))
    tiny.build(root / "base", [json.dumps(r) for r in tiny.alpaca_rows()])
    return root


def ours(base: Path, **extra: object) -> FinetuneConfig:
    raw = {"model": str(base / "base"), "data": {"path": str(base / "alpaca.json")}, **extra}
    return FinetuneConfig.from_dict(raw)


def test_quantization_is_read_from_both_config_shapes(base: Path) -> None:
    made = ours(base, quantization_bit=4, double_quantization=False)
    assert (made.quantization_bit, made.double_quantization) == (4, False)
    assert made.hyperparameters()["quantization_bit"] == 4
    theirs = FinetuneConfig.from_dict(
        {
            "model_name_or_path": str(base / "base"),
            "stage": "sft",
            "finetuning_type": "lora",
            "quantization_bit": 8,
            "dataset": "alpaca",
            "dataset_dir": str(base),
        }
    )
    assert theirs.quantization_bit == 8 and theirs.double_quantization is True
    assert ours(base).quantization_bit is None


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"quantization_bit": 3}, "quantization_bit 3 is not supported"),
        ({"quantization_bit": True}, "quantization_bit True is not supported"),
        ({"quantization_bit": 4, "finetuning_type": "full"}, "needs finetuning_type lora"),
    ],
)
def test_what_qlora_cannot_be_is_refused(base: Path, extra: dict, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        ours(base, **extra)


def test_no_cuda_or_no_bitsandbytes_is_said_with_the_fix(base: Path) -> None:
    config = ours(base, quantization_bit=4)
    with pytest.raises(InvalidInput, match="needs a CUDA GPU; this machine has none") as no_gpu:
        check_quantization(config, cuda=False, has_bitsandbytes=True)
    assert "Leave quantization_bit out" in str(no_gpu.value.detail)
    with pytest.raises(InvalidInput, match="needs bitsandbytes") as no_bnb:
        check_quantization(config, cuda=True, has_bitsandbytes=False)
    assert no_bnb.value.detail == "pip install bitsandbytes (in the environment the job runs in)."
    check_quantization(config, cuda=True, has_bitsandbytes=True)  # where it can run: no error


def test_this_machine_refuses_qlora_before_the_job(base: Path) -> None:
    """No GPU here (nvidia-smi absent): the check before launch says so; nothing starts."""
    from cube_lab.training import gpus

    if gpus.inventory()[0]:
        pytest.skip("this machine has a GPU")
    with pytest.raises(InvalidInput, match="needs a CUDA GPU"):
        check_before_launch(ours(base, quantization_bit=4))
    check_before_launch(ours(base))  # the same config without quantization is fine
