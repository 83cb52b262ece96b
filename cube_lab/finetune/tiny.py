"""A tiny random-init causal LM and a tokenizer trained on the spot, in the Hugging Face layout.

For tests, benchmarks and smoke runs on a machine that downloads nothing: a Llama-shaped
model (hidden size 64, 2 layers) and a byte-level BPE tokenizer trained on the given texts,
with a simple chat template, saved with ``save_pretrained`` into ``folder``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
SPECIAL = ["<pad>", "<|end|>", "<|user|>", "<|assistant|>", "<|system|>", "<|tool|>", "<unk>"]


def build(
    folder: Path,
    texts: Iterable[str],
    *,
    vocab_size: int = 500,
    hidden_size: int = 64,
    layers: int = 2,
    seed: int = 0,
    init_range: float = 0.2,
) -> Path:
    """``init_range``: weights' std; larger than transformers' 0.02, so that a LoRA adapter
    can make the output sharp enough to memorise a small set (the output head is frozen)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(list(texts), trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, pad_token="<pad>", eos_token="<|end|>", unk_token="<unk>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(folder)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=False,
        initializer_range=init_range,
    )
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


# what the tests and the benchmark fine-tune on: 20 Alpaca rows a tiny model can memorize
WORDS = "red blue green cat dog bird sun moon tree river stone fire".split()  # noqa: SIM905


def alpaca_rows() -> list[dict[str, str]]:
    """20 Alpaca-format rows (instruction, input, output), the same every time."""
    import random

    rng = random.Random(0)
    rows = []
    for i in range(20):
        a, b = rng.sample(WORDS, 2)
        rows.append({"instruction": f"Say the pair {i}", "input": a, "output": f"{a} and {b} {i}"})
    return rows
