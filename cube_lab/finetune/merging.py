"""What a merge job runs: a LoRA adapter folded into its base's weights
(``merge_and_unload``), saved as a full model in the Hugging Face layout that loads and
serves without PEFT and gives the same outputs as base + adapter.

The merged folder (the job's ``OUTPUT/model``) carries the tokenizer and a
``cube_finetune.json`` that is the adapter's with ``finetuning_type: merged`` and
``merged_from`` (the adapter version), so registering it keeps the lineage."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..training import metrics as job_metrics
from .trainer import METADATA, MODEL_DIR


def merge(adapter: Path, base: Path, target: Path, merged_from: str | None) -> dict[str, Any]:
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from .trainer import quiet_libraries

    quiet_libraries()
    print(f"loading the base {base}", flush=True)
    model = AutoModelForCausalLM.from_pretrained(base, dtype="auto")
    print(f"loading the adapter {merged_from or adapter}", flush=True)
    merged = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    target.mkdir(parents=True, exist_ok=True)
    merged.save_pretrained(target)
    has_tokenizer = (adapter / "tokenizer_config.json").is_file()
    AutoTokenizer.from_pretrained(adapter if has_tokenizer else base).save_pretrained(target)
    meta_path = adapter / METADATA
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    meta.update(
        kind="cube-lab-merge",
        finetuning_type="merged",
        merged_from=merged_from or str(adapter),
        job_id=os.environ.get("CUBE_TRAINING_JOB_ID"),
    )
    meta.setdefault("method", "sft")
    meta.setdefault("base_model", str(base))
    meta.setdefault("dataset", "")
    meta.setdefault("hyperparameters", {"base_model": meta["base_model"]})
    meta.setdefault("metrics", {})
    (target / METADATA).write_text(json.dumps(meta, indent=2, sort_keys=True))
    job_metrics.report(step=0, checkpoint=str(target), parameters=float(merged.num_parameters()))
    print(f"saved the merged model to {target}", flush=True)
    return meta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cube-lab merge (job)")
    parser.add_argument("--adapter", required=True, help="the LoRA adapter's folder")
    parser.add_argument("--base", required=True, help="its base model's folder")
    parser.add_argument("--merged-from", help="the adapter version, as recorded")
    a = parser.parse_args(argv)
    out = Path(os.environ.get("CUBE_OUTPUT_DIR") or "output").resolve()
    merge(Path(a.adapter), Path(a.base), out / MODEL_DIR, a.merged_from)
    return 0


if __name__ == "__main__":
    sys.exit(main())
