"""What an evaluation job runs: each model (before and after fine-tuning) on the same
held-out records and prompt set, side by side.

- perplexity: ``exp`` of the mean loss per predicted token over ``data`` (plain text: every
  token; conversations: the assistant's turns only, the tokens SFT trains on), each record
  cut at ``cutoff_len``;
- a prompt set: each prompt's answer generated greedily (``max_new_tokens``), scored against
  the expected answer by exact match, ROUGE-L and the user's scorer; the mean of each.

The job writes ``evaluation.json`` to its output folder (``{"models", "metrics": {label:
{...}}, "rows": [...]}``; each row holds every model's answer and scores) and reports the
figures as the job's metrics (``before/perplexity``, ``after/rouge_l``...). Log lines show the
progress."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import CubeError, InvalidInput
from ..locale.messages import _t
from ..training import metrics as job_metrics
from . import chat_templates
from .data import load_prompt_set, load_records
from .evaluation_config import EvaluationConfig
from .masking import IGNORE, tokenize
from .scores import exact_match, load_scorer, rouge_l

RESULT = "evaluation.json"
SCORES = {"exact_match": exact_match, "rouge_l": rouge_l}


def load(entry: dict[str, Any]) -> tuple[Any, Any]:
    """(model, tokenizer) of one resolved entry: a folder, or a LoRA adapter over one."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(entry["path"])
    tokenizer_dir = entry["path"]
    if entry.get("adapter"):
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, entry["adapter"])
        if (Path(entry["adapter"]) / "tokenizer_config.json").is_file():
            tokenizer_dir = entry["adapter"]
    model.eval()
    return model, AutoTokenizer.from_pretrained(tokenizer_dir)


def _ids_and_labels(tokenizer: Any, record: dict[str, Any]) -> tuple[list[int], list[int]]:
    if "text" in record:
        ids = list(tokenizer(record["text"])["input_ids"])
        return ids, list(ids)
    if "messages" in record:
        rows = tokenize(tokenizer, record["messages"])
        return rows["input_ids"], rows["labels"]
    raise InvalidInput(
        _t("data: preference pairs have no perplexity"),
        _t("Give plain text or conversations (alpaca, sharegpt, OpenAI messages) as data."),
    )


def perplexity(
    model: Any, tokenizer: Any, records: list[dict[str, Any]], cutoff_len: int, label: str
) -> dict[str, float]:
    """Token-weighted mean loss over the records' predicted tokens, and its exp."""
    import torch

    total, counted = 0.0, 0
    for i, record in enumerate(records, 1):
        ids, labels = _ids_and_labels(tokenizer, record)
        ids, labels = ids[:cutoff_len], labels[:cutoff_len]
        predicted = sum(1 for x in labels[1:] if x != IGNORE)  # the model shifts by one
        if predicted:
            with torch.no_grad():
                out = model(input_ids=torch.tensor([ids]), labels=torch.tensor([labels]))
            total += float(out.loss) * predicted
            counted += predicted
        if i % 50 == 0 or i == len(records):
            print(f"{label}: perplexity {i}/{len(records)} records", flush=True)
    if not counted:
        raise InvalidInput(_t("data: no record has a token to predict within cutoff_len"))
    loss = total / counted
    return {"loss": loss, "perplexity": math.exp(min(loss, 700.0)), "tokens": float(counted)}


def answer(model: Any, tokenizer: Any, messages: list[dict[str, Any]], max_new: int) -> str:
    """The model's greedy answer to the conversation so far."""
    import torch

    if tokenizer.chat_template:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        encoded = tokenizer(text, return_tensors="pt", add_special_tokens=False)
    else:
        encoded = tokenizer("\n".join(str(m["content"]) for m in messages), return_tensors="pt")
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    with torch.no_grad():
        out = model.generate(
            **encoded, max_new_tokens=max_new, do_sample=False, pad_token_id=pad, eos_token_id=eos
        )
    new = out[0, encoded["input_ids"].shape[1] :]
    return str(tokenizer.decode(new, skip_special_tokens=True)).strip()


def run(config: EvaluationConfig, out_dir: Path) -> dict[str, Any]:
    import torch

    from .trainer import quiet_libraries

    quiet_libraries()
    torch.manual_seed(0)
    records = load_records(config.data) if config.data else []
    if config.max_samples:
        records = records[: config.max_samples]
    prompts = load_prompt_set(Path(config.prompts), config.max_samples) if config.prompts else []
    scorer = load_scorer(config.scorer_file) if config.scorer_file else None
    scores = {name: SCORES[name] for name in config.metrics}
    if scorer is not None:
        scores["score"] = scorer
    rows: list[dict[str, Any]] = [
        {"messages": p["messages"], "expected": p["expected"]} for p in prompts
    ]
    figures: dict[str, dict[str, float]] = {}
    for entry in config.models:
        label, started = entry["label"], time.monotonic()
        print(f"{label}: loading {entry['ref']}", flush=True)
        model, tokenizer = load(entry)
        chat_templates.apply(tokenizer, config.template)
        found: dict[str, float] = {}
        if records:
            found.update(perplexity(model, tokenizer, records, config.cutoff_len, label))
        for i, (row, prompt) in enumerate(zip(rows, prompts, strict=True), 1):
            prediction = answer(model, tokenizer, prompt["messages"], config.max_new_tokens)
            extra = {k: v for k, v in prompt["row"].items() if k != "expected"}
            row[label] = {"prediction": prediction} | {
                name: fn(prediction, prompt["expected"], **extra)
                if name == "score"
                else fn(prediction, prompt["expected"])
                for name, fn in scores.items()
            }
            if i % 10 == 0 or i == len(rows):
                print(f"{label}: answered {i}/{len(rows)} prompts", flush=True)
        for name in scores if rows else ():
            found[name] = sum(r[label][name] for r in rows) / len(rows)
        found["seconds"] = time.monotonic() - started
        figures[label] = found
        job_metrics.report(step=0, **{f"{label}/{k}": v for k, v in found.items()})
        print(f"{label}: " + ", ".join(f"{k} {v:.4g}" for k, v in found.items()), flush=True)
        del model
    result = {
        "models": [{k: e[k] for k in ("label", "ref")} for e in config.models],
        "metrics": figures,
        "rows": rows,
        "records": len(records),
        "prompts": len(prompts),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / RESULT).write_text(json.dumps(result, indent=2, ensure_ascii=False))
    print(f"wrote {out_dir / RESULT}", flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cube-lab evaluate (job)")
    parser.add_argument("--config-json", required=True, help="the resolved evaluation config")
    a = parser.parse_args(argv)
    out_dir = Path(os.environ.get("CUBE_OUTPUT_DIR") or "output").resolve()
    try:
        config = EvaluationConfig.from_json(a.config_json)
        run(config, Path(config.output_dir) if config.output_dir else out_dir)
    except CubeError as exc:
        print(f"cube-lab evaluate: error: {exc.error}", file=sys.stderr)
        if exc.detail:
            print(f"  {exc.detail}", file=sys.stderr)
        return 2
    return 0
