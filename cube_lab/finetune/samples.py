"""Sample generations while a fine-tune trains: every ``sample_every`` steps rank 0 answers a
few prompts greedily with the model as it is, so the job's log shows what it learns
(``sample step=N [i/n]: PROMPT => ANSWER``) and ``OUTPUT/samples.jsonl`` keeps them
(``{"step", "prompt", "completion"}``).

The prompts are ``sample_prompts`` (texts, asked as a user's turn), else the first
``SAMPLE_COUNT`` records of the eval split (or of the training data) without their answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SAMPLE_COUNT = 2
Prompt = list[dict[str, Any]] | str  # a conversation so far, or the start of a plain text


def prompts(given: list[str] | None, records: list[dict[str, Any]]) -> list[Prompt]:
    """What is asked at each sampling: the given texts, else the records' prompts."""
    if given:
        return [[{"role": "user", "content": text}] for text in given]
    out: list[Prompt] = []
    for record in records[:SAMPLE_COUNT]:
        if "text" in record:  # continued pre-training: the text's first words, continued
            out.append(" ".join(str(record["text"]).split()[:8]))
        elif "prompt" in record:  # preference pairs and GRPO prompts
            prompt = record["prompt"]
            out.append(
                prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
            )
        elif record.get("messages"):
            turns = record["messages"]
            out.append(turns[:-1] if turns[-1]["role"] == "assistant" else turns)
    return out


def _shown(prompt: Prompt) -> str:
    text = prompt if isinstance(prompt, str) else str(prompt[-1].get("content", ""))
    return " ".join(text.split())[:80]


def callback(tokenizer: Any, asked: list[Prompt], every: int, max_new: int, out: Path) -> Any:
    from transformers import TrainerCallback

    class Samples(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            model = kw.get("model")
            if model is None or state.global_step % every or not state.is_world_process_zero:
                return
            import torch

            was_training = model.training
            model.eval()
            rows = []
            try:
                for i, prompt in enumerate(asked, 1):
                    if isinstance(prompt, str):
                        encoded = tokenizer(prompt, return_tensors="pt")
                    else:
                        text = tokenizer.apply_chat_template(
                            prompt, tokenize=False, add_generation_prompt=True
                        )
                        encoded = tokenizer(text, return_tensors="pt", add_special_tokens=False)
                    encoded = {k: v.to(model.device) for k, v in encoded.items()}
                    with torch.no_grad():
                        generated = model.generate(
                            **encoded,
                            max_new_tokens=max_new,
                            do_sample=False,
                            pad_token_id=tokenizer.pad_token_id,
                            eos_token_id=tokenizer.eos_token_id,
                        )
                    new = generated[0, encoded["input_ids"].shape[1] :]
                    completion = " ".join(tokenizer.decode(new, skip_special_tokens=True).split())
                    print(
                        f"sample step={state.global_step} [{i}/{len(asked)}]: "
                        f"{_shown(prompt)} => {completion[:200]}",
                        flush=True,
                    )
                    rows.append(
                        {"step": state.global_step, "prompt": prompt, "completion": completion}
                    )
            finally:
                if was_training:
                    model.train()
            out.parent.mkdir(parents=True, exist_ok=True)
            with out.open("a") as fh:
                fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)

    return Samples()
