"""SFT trains on the assistant's turns only (LLaMA-Factory's ``train_on_prompt: false``), the
preview marks exactly those tokens, and ``train_on_prompt: true`` trains on everything; on a
tiny tokenizer trained here (nothing downloaded)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")

from cube_lab.finetune import tiny
from cube_lab.finetune.config import FinetuneConfig
from cube_lab.finetune.masking import IGNORE, preview, tokenize

TALK = [
    {"role": "system", "content": "be kind"},
    {"role": "user", "content": "hello there"},
    {"role": "assistant", "content": "fine thanks"},
    {"role": "user", "content": "and you"},
    {"role": "assistant", "content": "how are you"},
]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("masking")
    (root / "alpaca.json").write_text(json.dumps(tiny.alpaca_rows()))
    tiny.build(root / "base", [json.dumps(r) for r in tiny.alpaca_rows()] + ["hello there"] * 5)
    return root


@pytest.fixture(scope="module")
def tokenizer(base: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(base / "base")


def trained_text(tokenizer: Any, rows: dict[str, list[int]]) -> str:
    ids = [i for i, label in zip(rows["input_ids"], rows["labels"], strict=True) if label != IGNORE]
    return str(tokenizer.decode(ids))


def test_only_the_answers_are_trained_and_the_preview_shows_it(tokenizer: Any) -> None:
    rows = tokenize(tokenizer, TALK)
    assert trained_text(tokenizer, rows) == "fine thanks<|end|>\nhow are you<|end|>\n"
    shown = preview(tokenizer, TALK)
    assert [(s["text"], s["trained"]) for s in shown["segments"]] == [
        ("<|system|>be kind<|end|>\n<|user|>hello there<|end|>\n<|assistant|>", False),
        ("fine thanks<|end|>\n", True),
        ("<|user|>and you<|end|>\n<|assistant|>", False),
        ("how are you<|end|>\n", True),
    ]
    assert "".join(s["text"] for s in shown["segments"]) == shown["text"]
    assert shown["tokens"] == len(rows["input_ids"])
    assert shown["trained_tokens"] == sum(1 for label in rows["labels"] if label != IGNORE)
    assert 0 < shown["trained_tokens"] < shown["tokens"]


def test_train_on_prompt_trains_on_every_token(tokenizer: Any) -> None:
    rows = tokenize(tokenizer, TALK, train_on_prompt=True)
    assert rows["labels"] == rows["input_ids"]
    assert [s["trained"] for s in preview(tokenizer, TALK, True)["segments"]] == [True]


def test_the_llamafactory_key_is_read_as_it_is(base: Path) -> None:
    (base / "dataset_info.json").write_text(json.dumps({"alpaca": {"file_name": "alpaca.json"}}))
    made = FinetuneConfig.from_dict(
        {
            "model_name_or_path": str(base / "base"),
            "stage": "sft",
            "finetuning_type": "lora",
            "dataset": "alpaca",
            "dataset_dir": str(base),
            "train_on_prompt": True,
        }
    )
    assert made.train_on_prompt is True and made.hyperparameters()["train_on_prompt"] is True
    plain = FinetuneConfig.from_dict(
        {"model": str(base / "base"), "data": {"path": str(base / "alpaca.json")}}
    )
    assert plain.train_on_prompt is False


def test_the_trainer_hands_trl_the_masked_rows(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real (two-step) LoRA SFT run; the dataset TRL prepared keeps our labels: the
    answers and their end marks, no instruction text."""
    import trl

    from cube_lab.finetune.trainer import train

    seen: list[Any] = []

    class Watched(trl.SFTTrainer):  # the real trainer; it only keeps what it was given
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            seen.append(self.train_dataset)

    monkeypatch.setattr(trl, "SFTTrainer", Watched)
    config = FinetuneConfig.from_dict(
        {
            "model": str(base / "base"),
            "data": {"path": str(base / "alpaca.json")},
            "max_steps": 2,
            "cutoff_len": 256,
            "output_dir": str(tmp_path / "out"),
        }
    )
    meta = train(config)
    assert meta["steps"] == 2
    (dataset,) = seen
    first = dataset[0]
    answer = tiny.alpaca_rows()[0]["output"]
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(base / "base")
    assert trained_text(tok, first) == f"{answer}<|end|>\n"
    assert tiny.alpaca_rows()[0]["instruction"] not in trained_text(tok, first)


def test_the_sdk_previews_the_first_records(base: Path) -> None:
    import cube_lab as cl
    from cube_lab.errors import InvalidInput

    config = {"model": str(base / "base"), "data": {"path": str(base / "alpaca.json")}}
    shown = cl.finetune.preview(config, n=2)
    assert len(shown) == 2
    first = tiny.alpaca_rows()[0]
    trained = "".join(s["text"] for s in shown[0]["segments"] if s["trained"])
    assert trained == f"{first['output']}<|end|>\n"
    assert first["instruction"] in shown[0]["text"]
    assert f"⟦{first['output']}<|end|>\n⟧" in repr(shown)
    assert "<mark " in shown._repr_html_() and "&lt;|user|&gt;" in shown._repr_html_()
    everything = cl.finetune.preview({**config, "train_on_prompt": True}, n=1)
    assert [s["trained"] for s in everything[0]["segments"]] == [True]
    with pytest.raises(InvalidInput, match="n must be"):
        cl.finetune.preview(config, n=0)
    with pytest.raises(InvalidInput, match="reads the tokenizer from a folder"):
        cl.finetune.preview({**config, "model": "base-llm:3"}, n=1)


def test_the_finetune_magic_previews_and_starts_the_job(base: Path, tmp_path: Path) -> None:
    """``%cube_finetune`` in the cube-lab kernel: ``--preview`` marks the answers; the plain
    form starts the job, shows its view, and ``--wait`` blocks until it succeeded."""
    from kernel_util import REPO, run_in_kernel

    (tmp_path / "sft.yaml").write_text(
        f"model: {base / 'base'}\ndata: {{path: {base / 'alpaca.json'}}}\nmax_steps: 50\n"
    )
    nb = run_in_kernel(
        [
            "%cube_finetune sft.yaml --preview 1",
            "%cube_finetune sft.yaml --set max_steps=2 --wait",
            "%cube_finetune sft.yaml --preview 0",
        ],
        tmp_path,
        {
            "JUPYTER_PATH": str(REPO),
            "CUBE_LAB_DATA_DIR": str(tmp_path / "data"),
            "CUBE_LAB_USER": "alice",
        },
    )
    shown, trained, bad = nb.cells
    (out,) = [o for o in shown.outputs if o.get("output_type") == "display_data"]
    assert "<mark " in out["data"]["text/html"], out
    assert f"⟦{tiny.alpaca_rows()[0]['output']}" in out["data"]["text/plain"]
    (view,) = [o for o in trained.outputs if o.get("output_type") == "display_data"]
    assert "succeeded" in view["data"]["text/plain"], trained.outputs
    assert not [o for o in trained.outputs if o.get("output_type") == "error"], trained.outputs
    assert "n must be a whole number" in "".join(o.get("text", "") for o in bad.outputs)
