"""LoRA SFT on CPU: a bare TRL script vs the same fine-tune through `cube-lab finetune`.

Both train the same tiny random-init Llama-shaped model (``cube_lab.finetune.tiny``) on
the same 20 alpaca records converted to chats, with the same LoRA (rank 16, all linear
layers), batch, sequence length, learning rate, seed and step count, logging every step.
The bare script is ``python bare.py`` with TRL's ``SFTTrainer``, run twice: as a user
writes it, and "quiet" with the library settings cube-lab's job makes (progress bars off,
the libraries' Future/DeprecationWarnings filtered; measured here to change steps/s on
these shared cores, so the two are told apart); cube-lab is
``python -m cube_lab.cli finetune CONFIG.yaml`` (the training service: a recorded job under
torchrun, its metrics reported each step, its log streamed back). Runs alternate (bare,
cube-lab, bare, ...). Each side stamps every logged step with the wall clock inside the
training process, in the trainer's ``on_log`` (the bare script prints ``time=``; cube-lab's
job reports each step to its ``metrics.jsonl`` with its time, which is what its charts
read). Stamps taken as the lines reach this process would not do: cube-lab's log comes
through torchrun's tee and the training service's log file, in bursts.

- time to first step: step 1's stamp minus the moment the command was started;
- steps/s: (last step - step WARM) / (its stamp - step WARM's stamp), past the warm-up.

    python benchmarks/finetune.py [--runs 3] [--steps 80] [--threads 1]

Target (issue 19): median cube-lab steps/s >= 0.97 x median bare steps/s (both bare
variants are compared).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

WARM = 5  # steps left out of steps/s (the first ones carry one-time costs)
STAMP = re.compile(r"\bstep=(\d+) loss=\S+ time=([\d.]+)")

BARE = """
import json, sys, time
from datasets import Dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
from trl import SFTConfig, SFTTrainer

model_dir, data, out, steps, batch, cutoff, quiet = sys.argv[1:8]
if quiet == "1":  # the library settings cube-lab's job makes (trainer.quiet_libraries)
    import warnings
    import datasets, transformers
    datasets.disable_progress_bars()
    transformers.utils.logging.disable_progress_bar()
    for module in ("transformers", "trl", "peft", "accelerate"):
        warnings.filterwarnings("ignore", category=FutureWarning, module=module)
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=module)
rows = json.load(open(data))
records = [
    {"messages": [
        {"role": "user", "content": f"{r['instruction']}\\n{r['input']}"},
        {"role": "assistant", "content": r["output"]},
    ]}
    for r in rows
]
tokenizer = AutoTokenizer.from_pretrained(model_dir)
model = AutoModelForCausalLM.from_pretrained(model_dir)


class Print(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kw):
        if logs and "loss" in logs:
            print(f"step={state.global_step} loss={logs['loss']:.6g} time={time.time()!r}",
                  flush=True)


args = SFTConfig(
    output_dir=out, learning_rate=0.01, max_steps=int(steps),
    per_device_train_batch_size=int(batch), logging_steps=1, save_strategy="no", seed=42,
    max_length=int(cutoff), report_to="none", disable_tqdm=True, use_cpu=True,
    dataloader_num_workers=0, dataset_num_proc=None,
)
peft = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear",
                  task_type="CAUSAL_LM")
trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(records),
                     processing_class=tokenizer, peft_config=peft, callbacks=[Print()])
trainer.train()
trainer.save_model(out + "/model")
"""


def once(argv: list[str], env: dict[str, str], stamps: Any) -> tuple[float, float, int]:
    """(time to first step s, steps/s past WARM, last step) of one run; ``stamps(output)``
    gives {step: wall-clock time} once it has finished."""
    started = time.time()
    done = subprocess.run(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    seen = stamps(done.stdout) if done.returncode == 0 else {}
    if 1 not in seen or WARM not in seen:
        tail = "".join(done.stdout.splitlines(keepends=True)[-30:])
        raise SystemExit(
            f"{argv[:4]} failed (exit {done.returncode}, steps {sorted(seen)}):\n{tail}"
        )
    last = max(seen)
    rate = (last - WARM) / (seen[last] - seen[WARM])
    return seen[1] - started, rate, last


def printed_stamps(output: str) -> dict[int, float]:
    return {int(m.group(1)): float(m.group(2)) for m in STAMP.finditer(output)}


def reported_stamps(data_dir: Path) -> Any:
    """The newest cube-lab job's per-step reports (its ``metrics.jsonl``)."""

    def read(output: str) -> dict[int, float]:
        newest = max(
            (data_dir / "training").glob("*/metrics.jsonl"), key=lambda p: p.stat().st_mtime
        )
        out: dict[int, float] = {}
        for line in newest.read_text().splitlines():
            record = json.loads(line)
            if "loss" in record["metrics"] and "step" in record:
                out.setdefault(record["step"], record["time"])
        return out

    return read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each, alternating")
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--cutoff", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=64, help="the tiny model's hidden size")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="OMP_NUM_THREADS for both (torchrun sets 1 when it is unset; the bare script "
        "would use every core: same threads on both sides, or the figures compare them)",
    )
    a = parser.parse_args()
    from cube_lab.finetune import tiny

    with tempfile.TemporaryDirectory(prefix="cube-finetune-bench-") as tmp:
        root = Path(tmp)
        rows = tiny.alpaca_rows()
        (root / "alpaca.json").write_text(json.dumps(rows))
        tiny.build(
            root / "base", [json.dumps(r) for r in rows], hidden_size=a.hidden, layers=a.layers
        )
        (root / "bare.py").write_text(BARE)
        config = {
            "model": str(root / "base"),
            "data": {"path": str(root / "alpaca.json"), "format": "alpaca"},
            "lora": {"rank": 16, "alpha": 32, "target": "all"},
            "learning_rate": 0.01,
            "max_steps": a.steps,
            "per_device_train_batch_size": a.batch,
            "logging_steps": 1,
            "cutoff_len": a.cutoff,
            "seed": 42,
        }
        env = {
            **os.environ,
            "CUDA_VISIBLE_DEVICES": "",
            "OMP_NUM_THREADS": str(a.threads),
            "PYTHONWARNINGS": "ignore",
            "TOKENIZERS_PARALLELISM": "false",
        }
        results: dict[str, list[tuple[float, float, int]]] = {
            "bare TRL": [],
            "bare TRL, quiet": [],
            "cube-lab": [],
        }
        for run in range(a.runs):
            for name, quiet in (("bare TRL", "0"), ("bare TRL, quiet", "1")):
                bare = [sys.executable, str(root / "bare.py"), str(root / "base"),
                        str(root / "alpaca.json"), str(root / f"bare-{run}"), str(a.steps),
                        str(a.batch), str(a.cutoff), quiet]  # fmt: skip
                results[name].append(once(bare, env, printed_stamps))
            path = root / f"cube-{run}.yaml"
            path.write_text(yaml.safe_dump({**config, "output_dir": str(root / f"cube-{run}")}))
            cube = [sys.executable, "-m", "cube_lab.cli", "--data-dir", str(root / "data"),
                    "finetune", str(path)]  # fmt: skip
            results["cube-lab"].append(once(cube, env, reported_stamps(root / "data")))
            for name, done in results.items():
                first, rate, last = done[-1]
                print(f"run {run + 1} {name:15} first step {first:6.2f} s  {rate:6.2f} steps/s"
                      f"  ({last} steps)", flush=True)  # fmt: skip
    print()
    machine = platform.processor() or platform.machine()
    load = os.getloadavg()[0]
    print(f"{machine}, {os.cpu_count()} cores, load {load:.1f}, python {platform.python_version()}")
    print(f"{a.steps} steps, batch {a.batch}, cutoff {a.cutoff}, hidden {a.hidden}, "
          f"{a.layers} layers, OMP_NUM_THREADS={a.threads}, {a.runs} runs each")  # fmt: skip
    medians = {
        name: (statistics.median(r[0] for r in done), statistics.median(r[1] for r in done))
        for name, done in results.items()
    }
    print("| | time to first step (s) | steps/s |")
    print("|---|---:|---:|")
    for name, (first, rate) in medians.items():
        print(f"| {name} | {first:.2f} | {rate:.2f} |")
    for bare in ("bare TRL", "bare TRL, quiet"):
        ratio = medians["cube-lab"][1] / medians[bare][1]
        verdict = "met" if ratio >= 0.97 else "NOT met"
        first = medians["cube-lab"][0] / medians[bare][0]
        print(f"cube-lab / {bare}: steps/s {ratio:.3f} (target >= 0.97: {verdict}), "
              f"time to first step {first:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
