"""A chat's messages as the model's prompt tokens.

With a chat template in the tokenizer (``tokenizer_config.json`` / ``chat_template.jinja``)
that template is applied, with the generation prompt added. Without one (a base model that
was never chat-tuned) the fallback is plain text, one line per message and an open turn for
the assistant::

    system: You are terse.
    user: Hi
    assistant:
"""

from __future__ import annotations

from typing import Any

from .protocol import OpenAIError


def fallback_prompt(messages: list[dict[str, str]]) -> str:
    lines = [f"{m['role']}: {m['content']}" for m in messages]
    return "\n".join([*lines, "assistant:"])


def chat_ids(tokenizer: Any, messages: list[dict[str, str]]) -> list[int]:
    if getattr(tokenizer, "chat_template", None):
        try:
            text = tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
        except Exception as exc:
            raise OpenAIError(
                f"the model's chat template refused the messages: {exc}", "messages"
            ) from None
        return tokenizer(text, add_special_tokens=False)["input_ids"]
    return tokenizer(fallback_prompt(messages))["input_ids"]


def text_ids(tokenizer: Any, prompt: str | list[int]) -> list[int]:
    if isinstance(prompt, list):
        vocab = len(tokenizer)
        bad = [t for t in prompt if not 0 <= t < vocab]
        if bad:
            raise OpenAIError(
                f"token ids out of the vocabulary (0..{vocab - 1}): {bad[:5]}", "prompt"
            )
        return prompt
    return tokenizer(prompt)["input_ids"]
