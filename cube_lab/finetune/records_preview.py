"""The first records of a fine-tune's data as the model will read them, the trained part marked.

``preview(config, n)`` reads the tokenizer of the config's base model (a local folder), converts
the first ``n`` records the way the trainer does (``data.convert``) and, per record, gives
``masking.preview``'s segments: for SFT on conversations the answers are trained (all of it
with ``train_on_prompt``), for continued pre-training the whole text. ``Preview`` shows them in
a notebook (trained text highlighted) and as text elsewhere (trained text in ⟦ ⟧).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t
from . import chat_templates, masking
from .config import FinetuneConfig
from .data import load_records

MAX_RECORDS = 50


class Preview(list[dict[str, Any]]):
    """A list of ``{"text", "segments", "tokens", "trained_tokens"}``, one per record."""

    def __repr__(self) -> str:
        blocks = []
        for i, record in enumerate(self):
            marked = "".join(
                f"⟦{s['text']}⟧" if s["trained"] else s["text"] for s in record["segments"]
            )
            blocks.append(
                f"--- record {i + 1}: {record['trained_tokens']} of {record['tokens']} tokens "
                f"trained\n{marked}"
            )
        return "\n".join(blocks) or "(no records)"

    def _repr_html_(self) -> str:
        out = []
        for i, record in enumerate(self):
            body = "".join(
                "<mark style='background:var(--jp-success-color3, #c8e6c9);color:inherit'>"
                f"{html.escape(s['text'])}</mark>"
                if s["trained"]
                else html.escape(s["text"])
                for s in record["segments"]
            )
            out.append(
                f"<div><b>{i + 1}</b> · {record['trained_tokens']} / {record['tokens']} tokens"
                f"<pre style='white-space:pre-wrap;margin:2px 0 8px'>{body}</pre></div>"
            )
        return "".join(out)


def preview(config: FinetuneConfig, n: int = 3) -> Preview:
    """The first ``n`` records (1 to ``MAX_RECORDS``) rendered and marked."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_RECORDS:
        raise InvalidInput(
            _t("n must be a whole number from 1 to {most}", most=MAX_RECORDS), _t("got {n!r}", n=n)
        )
    if config.method not in ("sft", "pt"):
        raise InvalidInput(
            _t("the preview shows SFT and pre-training data, not {method}", method=config.method),
            _t("Preview the prompts with method: sft, or read the pairs from the data file."),
        )
    if not Path(config.model).is_dir():
        raise InvalidInput(
            _t(
                "the preview reads the tokenizer from a folder; {model!r} is not one here",
                model=config.model,
            ),
            _t(
                "Give model: a Hugging Face folder, or download the registered version first: "
                "cl.models.get(ref).download('base')."
            ),
        )
    from transformers import AutoTokenizer

    tokenizer = chat_templates.apply(AutoTokenizer.from_pretrained(config.model), config.template)
    out = Preview()
    for record in load_records(config.data)[:n]:
        if "messages" in record:
            if not tokenizer.chat_template:
                raise InvalidInput(
                    _t("the tokenizer of {model} has no chat template", model=config.model),
                    _t("Save one with the tokenizer, or use plain text data."),
                )
            out.append(masking.preview(tokenizer, record["messages"], config.train_on_prompt))
        else:
            text = str(record.get("text", ""))
            count = len(tokenizer(text, add_special_tokens=False)["input_ids"])
            segments = [{"text": text, "trained": True}] if text else []
            out.append(
                {"text": text, "segments": segments, "tokens": count, "trained_tokens": count}
            )
    return out
