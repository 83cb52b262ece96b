"""Chat templates chosen by name (a fine-tune config's ``template:``, as LLaMA-Factory users
write it), instead of the one saved with the tokenizer.

Each template is a Jinja source for ``tokenizer.chat_template`` and the text that ends an
answer (``stop``). A named template replaces the tokenizer's; when its ``stop`` is one token of
the tokenizer's vocabulary it also becomes the tokenizer's ``eos_token``, so generation ends
where the template ends a turn. The tokenizer saved with the adapter carries both, so serving,
evaluation and merging render prompts the way training did. ``template`` left out (or
``auto``) keeps the tokenizer's own.

The names follow the model families' published chat formats; the templates are written here.
A system message is its own block where the family has one, else it is put before the first
user turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t

OWN = ("auto", "tokenizer")  # the tokenizer's own template


@dataclass(frozen=True)
class ChatTemplate:
    source: str
    stop: str | None  # None: the tokenizer's eos_token ends an answer


def _system_first(
    user: str, assistant: str, system: str = "{{ ns.system }}\n\n", end: str = ""
) -> str:
    """A family without a system role: the system text (``system``, where ``<SYSTEM>`` stands
    in ``user``) goes into the first user turn after it."""
    held = "{% if ns.system %}" + system + "{% endif %}"
    return (
        "{% set ns = namespace(system='') %}{% for m in messages %}"
        "{% if m['role'] == 'system' %}{% set ns.system = m['content'] %}"
        "{% elif m['role'] == 'user' %}"
        + user.replace("<SYSTEM>", held)
        + "{% set ns.system = '' %}"
        "{% else %}" + assistant + "{% endif %}{% endfor %}" + end
    )


_EOS = "{{ eos_token or '' }}"
_BOS = "{{ bos_token or '' }}"

TEMPLATES: dict[str, ChatTemplate] = {
    "chatml": ChatTemplate(
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
        "<|im_end|>",
    ),
    "qwen": ChatTemplate(
        "{% if messages and messages[0]['role'] != 'system' %}"
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
        "<|im_end|>",
    ),
    "llama3": ChatTemplate(
        _BOS + "{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
        "{{ m['content'] }}<|eot_id|>{% endfor %}"
        "{% if add_generation_prompt %}"
        "<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}",
        "<|eot_id|>",
    ),
    "llama2": ChatTemplate(
        _system_first(
            _BOS + "[INST] <SYSTEM>{{ m['content'] }} [/INST]",
            " {{ m['content'] }} " + _EOS,
            system="<<SYS>>\n{{ ns.system }}\n<</SYS>>\n\n",
        ),
        None,
    ),
    "mistral": ChatTemplate(
        _BOS
        + _system_first(
            "[INST] <SYSTEM>{{ m['content'] }} [/INST]",
            "{{ m['content'] }}" + _EOS,
        ),
        None,
    ),
    "gemma": ChatTemplate(
        _BOS
        + _system_first(
            "<start_of_turn>user\n<SYSTEM>{{ m['content'] }}<end_of_turn>\n",
            "<start_of_turn>model\n{{ m['content'] }}<end_of_turn>\n",
            end="{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}",
        ),
        "<end_of_turn>",
    ),
    "phi": ChatTemplate(
        "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>\n{% endif %}",
        "<|end|>",
    ),
    "alpaca": ChatTemplate(
        _system_first(
            "<SYSTEM>### Instruction:\n{{ m['content'] }}\n\n### Response:\n",
            "{{ m['content'] }}" + _EOS + "\n\n",
        ),
        None,
    ),
    "vicuna": ChatTemplate(
        _system_first(
            "<SYSTEM>USER: {{ m['content'] }} ASSISTANT:",
            " {{ m['content'] }}" + _EOS + " ",
            system="{{ ns.system }} ",
        ),
        None,
    ),
    "default": ChatTemplate(
        "{% for m in messages %}"
        "{% if m['role'] == 'system' %}System: {{ m['content'] }}\n"
        "{% elif m['role'] == 'user' %}Human: {{ m['content'] }}\nAssistant:"
        "{% else %} {{ m['content'] }}" + _EOS + "\n{% endif %}{% endfor %}",
        None,
    ),
    "empty": ChatTemplate(
        "{% for m in messages %}{% if m['role'] == 'assistant' %}{{ m['content'] }}"
        + _EOS
        + "{% else %}{{ m['content'] }}{% endif %}{% endfor %}",
        None,
    ),
}


def names() -> list[str]:
    return sorted(TEMPLATES)


def check(name: str | None) -> str | None:
    """The name as given, or an error naming the known ones (``None`` and ``auto``: the
    tokenizer's own)."""
    if name is None or name in OWN or name in TEMPLATES:
        return name
    raise InvalidInput(
        _t("unknown chat template {name!r}", name=name),
        _t(
            "Known: {known}. Leave template out (or write auto) to use the tokenizer's own.",
            known=", ".join(names()),
        ),
    )


def is_named(name: str | None) -> bool:
    return name is not None and name not in OWN


def apply(tokenizer: Any, name: str | None) -> Any:
    """Give ``tokenizer`` the named template (and its end-of-turn token as eos); no name or
    ``auto``: the tokenizer as it is."""
    if not is_named(name):
        return tokenizer
    assert name is not None
    template = TEMPLATES[check(name) or name]
    tokenizer.chat_template = template.source
    if template.stop and template.stop != tokenizer.eos_token:
        ids = tokenizer.convert_tokens_to_ids(template.stop)
        if isinstance(ids, int) and ids != tokenizer.unk_token_id:
            tokenizer.eos_token = template.stop
    return tokenizer
