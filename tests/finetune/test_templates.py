"""Chat templates chosen by name (``template:``, as in LLaMA-Factory configs): each renders a
conversation that SFT trains on the answers of only, a tokenizer's end-of-turn token becomes
its eos, the preview renders with the named template, unknown names are refused with the
known ones, and the form offers the same names. On a tiny tokenizer trained here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")

from cube_lab.errors import InvalidInput
from cube_lab.finetune import chat_templates, tiny
from cube_lab.finetune.config import FinetuneConfig
from cube_lab.finetune.masking import IGNORE, tokenize
from cube_lab.finetune.records_preview import preview

ROOT = Path(__file__).resolve().parents[2]
TALK = [
    {"role": "system", "content": "be kind"},
    {"role": "user", "content": "hello there"},
    {"role": "assistant", "content": "fine thanks"},
    {"role": "user", "content": "and you"},
    {"role": "assistant", "content": "how are you"},
]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("templates")
    tiny.build(root / "base", [json.dumps(r) for r in tiny.alpaca_rows()] + ["hello there"] * 5)
    (root / "talk.jsonl").write_text(json.dumps({"messages": TALK}) + "\n")
    return root


def fresh(base: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(base / "base")


@pytest.mark.parametrize("name", chat_templates.names())
def test_each_template_trains_on_the_answers_only(base: Path, name: str) -> None:
    tokenizer = chat_templates.apply(fresh(base), name)
    assert tokenizer.chat_template == chat_templates.TEMPLATES[name].source
    rows = tokenize(tokenizer, TALK)
    ids = [i for i, label in zip(rows["input_ids"], rows["labels"], strict=True) if label != IGNORE]
    trained = str(tokenizer.decode(ids))
    assert "fine thanks" in trained and "how are you" in trained
    for context in ("be kind", "hello there", "and you"):
        assert context not in trained, (name, trained)
    rendered = tokenizer.apply_chat_template(TALK, tokenize=False)
    assert "be kind" in rendered  # the system text is kept, in its block or the first turn
    prompt = tokenizer.apply_chat_template(TALK[:2], tokenize=False, add_generation_prompt=True)
    assert rendered.startswith(prompt)  # the prompt for an answer is where the answer starts


def test_the_end_of_turn_token_becomes_eos_where_the_vocabulary_has_it(base: Path) -> None:
    plain = chat_templates.apply(fresh(base), "chatml")
    assert plain.eos_token == "<|end|>"  # no <|im_end|> token here: eos stays
    tokenizer = fresh(base)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_end|>"]})
    chat_templates.apply(tokenizer, "chatml")
    assert tokenizer.eos_token == "<|im_end|>"
    assert chat_templates.apply(fresh(base), "auto").chat_template == tiny.CHAT_TEMPLATE


def test_a_config_names_a_template_and_the_preview_renders_with_it(base: Path) -> None:
    lf = {
        "model_name_or_path": str(base / "base"),
        "stage": "sft",
        "finetuning_type": "lora",
        "template": "qwen",
        "dataset": str(base / "talk.jsonl"),
    }
    config = FinetuneConfig.from_dict(lf, base)
    assert config.template == "qwen"
    assert config.hyperparameters()["template"] == "qwen"
    shown = preview(config, 1)[0]
    assert shown["text"].startswith("<|im_start|>system\nbe kind<|im_end|>")
    trained = "".join(s["text"] for s in shown["segments"] if s["trained"])
    assert trained == "fine thanks<|im_end|>\nhow are you<|im_end|>\n"


def test_an_unknown_template_is_refused_with_the_known_names(base: Path) -> None:
    raw = {"model": str(base / "base"), "data": str(base / "talk.jsonl"), "template": "qwen9"}
    with pytest.raises(InvalidInput) as caught:
        FinetuneConfig.from_dict(raw, base)
    assert "qwen9" in str(caught.value)
    assert "llama3" in str(caught.value.detail) and "auto" in str(caught.value.detail)


def test_the_form_offers_the_same_names() -> None:
    source = (ROOT / "src/panels/training/finetune-logic.ts").read_text()
    listed = re.search(r"export const TEMPLATES = \[(.*?)\] as const", source, re.S)
    assert listed is not None
    assert re.findall(r"'([\w-]+)'", listed.group(1)) == ["auto", *chat_templates.names()]
