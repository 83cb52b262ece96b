"""Which tokens of a conversation SFT trains on, for the trainer and for the preview alike.

LLaMA-Factory's default (``train_on_prompt: false``) trains on the assistant's turns only: the
system and user turns, and the chat template's header before each answer, are context, not
targets. ``spans`` renders a conversation through the tokenizer's chat template and finds the
characters of each assistant turn (its content and the template's end-of-turn marks) by
rendering the conversation up to each turn; ``tokenize`` turns that into ``input_ids`` and
``labels`` (-100 outside the trained characters), the pre-tokenized rows TRL's SFTTrainer
takes as they are; ``preview`` gives the same split as text segments, so what a user sees
marked is what is trained.
"""

from __future__ import annotations

from typing import Any

Message = dict[str, Any]
IGNORE = -100


def _render(tokenizer: Any, messages: list[Message], prompt: bool) -> str:
    return str(
        tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=prompt)
    )


def spans(tokenizer: Any, messages: list[Message]) -> tuple[str, list[tuple[int, int]]]:
    """The rendered conversation and the (start, end) characters of each assistant turn."""
    full = _render(tokenizer, messages, False)
    found: list[tuple[int, int]] = []
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        before = _render(tokenizer, messages[:i], True) if i else ""
        upto = _render(tokenizer, messages[: i + 1], False)
        if full.startswith(before) and full.startswith(upto) and len(upto) > len(before):
            found.append((len(before), len(upto)))
            continue
        # a template that rewrites earlier turns (e.g. drops old reasoning): the answer's text
        content = str(message.get("content") or "")
        start = full.find(content, found[-1][1] if found else 0) if content else -1
        if start >= 0:
            found.append((start, start + len(content)))
    return full, found


def _trained(offsets: list[tuple[int, int]], ranges: list[tuple[int, int]]) -> list[bool]:
    """Per token: whether its characters start inside a trained range (a token with no
    characters, a special one, counts where it sits)."""
    return [any(a <= start < b for a, b in ranges) for start, _ in offsets]


def tokenize(tokenizer: Any, messages: list[Message], train_on_prompt: bool = False) -> dict:
    """``{"input_ids", "labels"}`` of one conversation: labels are the ids on trained tokens
    (every token with ``train_on_prompt``), -100 elsewhere."""
    text, ranges = spans(tokenizer, messages)
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids = list(encoded["input_ids"])
    if train_on_prompt:
        return {"input_ids": ids, "labels": list(ids)}
    keep = _trained([tuple(o) for o in encoded["offset_mapping"]], ranges)
    return {
        "input_ids": ids,
        "labels": [i if k else IGNORE for i, k in zip(ids, keep, strict=True)],
    }


def preview(tokenizer: Any, messages: list[Message], train_on_prompt: bool = False) -> dict:
    """The conversation as the model reads it, in segments marked trained or not, with the
    token counts: ``{"text", "segments": [{"text", "trained"}], "tokens", "trained_tokens"}``."""
    text, _ = spans(tokenizer, messages)
    rows = tokenize(tokenizer, messages, train_on_prompt)
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    segments: list[dict[str, Any]] = []
    cursor = 0
    for (_, end), label in zip(encoded["offset_mapping"], rows["labels"], strict=True):
        trained = label != IGNORE
        piece = text[cursor:end] if end > cursor else ""
        cursor = max(cursor, end)
        if not piece:
            continue
        if segments and segments[-1]["trained"] == trained:
            segments[-1]["text"] += piece
        else:
            segments.append({"text": piece, "trained": trained})
    if cursor < len(text):
        segments.append({"text": text[cursor:], "trained": False})
    trained_count = sum(1 for label in rows["labels"] if label != IGNORE)
    return {
        "text": text,
        "segments": segments,
        "tokens": len(rows["input_ids"]),
        "trained_tokens": trained_count,
    }
