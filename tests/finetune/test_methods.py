"""Fine-tuning methods beyond SFT/DPO on a tiny random-init model (nothing downloaded): a
reward model ranks held-out pairs, continued pre-training on plain text with an eval split
(eval loss and perplexity in the job's metrics), resume from a checkpoint of a stopped job,
GRPO with a reward written in Python; bad configs say which field and why."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("trl")
pytest.importorskip("peft")

from cube_lab.cli import main
from cube_lab.errors import InvalidInput
from cube_lab.finetune import tiny
from cube_lab.finetune.config import FinetuneConfig

GOOD = "great lovely superb fine neat kind".split()  # noqa: SIM905
BAD = "awful broken poor ugly rude dull".split()  # noqa: SIM905
NOUNS = "cat dog bird sun moon tree river stone fire lamp chair book boat road".split()  # noqa: SIM905
STORY = (  # noqa: SIM905
    "the cat sat by the river and the dog ran to the stone tree while the sun rose over "
    "the moon and the bird sang near the fire"
).split()


def pairs(nouns: list[str], seed: int, each: int = 2) -> list[dict[str, str]]:
    """A separable preference set: the chosen answer is kind, the rejected one unkind."""
    rng = random.Random(seed)
    return [
        {
            "prompt": f"How is the {n}?",
            "chosen": f"the {n} is {rng.choice(GOOD)}",
            "rejected": f"the {n} is {rng.choice(BAD)}",
        }
        for n in nouns
        for _ in range(each)
    ]


def texts(count: int) -> list[dict[str, str]]:
    return [{"text": " ".join(STORY[i % 7 : i % 7 + 12])} for i in range(count)]


def jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("finetune-methods")
    jsonl(root / "pref.jsonl", pairs(NOUNS[:10], 0, 4))
    jsonl(root / "held.jsonl", pairs(NOUNS[10:], 1, 4))  # nouns the reward model never saw
    jsonl(root / "text.jsonl", texts(30))
    jsonl(root / "prompts.jsonl", [{"instruction": f"Name a {w}", "output": w} for w in NOUNS])
    corpus = [json.dumps(r) for r in pairs(NOUNS, 0) + texts(30)] + NOUNS
    tiny.build(root / "base", corpus)
    return root


def base_config(files: Path, out: Path, **extra: Any) -> dict[str, Any]:
    return {
        "model": str(files / "base"),
        "learning_rate": 0.01,
        "per_device_train_batch_size": 4,
        "logging_steps": 1,
        "cutoff_len": 64,
        "output_dir": str(out),
        **extra,
    }


def reports(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_reward_model_ranks_held_out_pairs_better_than_chance(
    files: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from cube_lab.finetune.trainer import train

    monkeypatch.setenv("CUBE_METRICS_FILE", str(tmp_path / "metrics.jsonl"))
    raw = base_config(
        files,
        tmp_path / "out",
        method="rm",
        data=str(files / "pref.jsonl"),
        eval_data=str(files / "held.jsonl"),
        max_steps=24,
    )
    meta = train(FinetuneConfig.from_dict(raw))
    saved = tmp_path / "out" / "model"
    assert meta["task"] == "reward-model" and meta["eval_records"] == 16
    # TRL's own eval on the held-out file, reported into the job's metrics
    assert meta["metrics"]["eval_accuracy"] >= 0.75, meta["metrics"]

    tokenizer = AutoTokenizer.from_pretrained(saved)
    base = AutoModelForSequenceClassification.from_pretrained(files / "base", num_labels=1)
    model = PeftModel.from_pretrained(base, saved).eval()

    def score(prompt: str, answer: str) -> float:
        chat = [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
        ids = tokenizer.apply_chat_template(chat, return_tensors="pt", return_dict=True)
        with torch.no_grad():
            return float(model(**ids).logits[0, 0])

    held = pairs(NOUNS[10:], 1, 4)
    right = sum(score(p["prompt"], p["chosen"]) > score(p["prompt"], p["rejected"]) for p in held)
    print(f"held-out pairs ranked right: {right} of {len(held)}", meta["metrics"])
    # measured: 16 of 16; chance is 8 (12 or more by chance: p < 0.04)
    assert right >= 12, f"{right} of {len(held)}"
    keys = set().union(*(r["metrics"] for r in reports(tmp_path / "metrics.jsonl")))
    assert {"loss", "accuracy", "margin", "eval_loss", "eval_accuracy"} <= keys
    assert "eval_perplexity" not in keys  # a reward model's loss is not a language model's


def llamafactory_pt(files: Path, root: Path) -> Path:
    data = root / "data"
    data.mkdir(parents=True)
    jsonl(data / "corpus.jsonl", [{"content": r["text"]} for r in texts(30)])
    info = {"corpus": {"file_name": "corpus.jsonl", "columns": {"prompt": "content"}}}
    (data / "dataset_info.json").write_text(json.dumps(info))
    lf = {
        "model_name_or_path": str(files / "base"),
        "stage": "pt",
        "do_train": True,
        "finetuning_type": "lora",
        "lora_rank": 16,
        "lora_alpha": 32,
        "dataset": "corpus",
        "dataset_dir": "data",
        "cutoff_len": 64,
        "val_size": 0.2,
        "eval_strategy": "steps",
        "eval_steps": 5,
        "per_device_eval_batch_size": 2,
        "output_dir": "saves/pt",
        "logging_steps": 5,
        "per_device_train_batch_size": 4,
        "learning_rate": 1.0e-2,
        "max_steps": 12,
        "report_to": "none",
    }
    path = root / "pt.yaml"
    path.write_text(yaml.safe_dump(lf))
    return path


def test_llamafactory_pt_with_val_size_reports_eval_loss_and_perplexity_to_the_job(
    files: Path, tmp_path: Path, capsys: Any
) -> None:
    from cube_lab.config import Settings
    from cube_lab.identity import Caller
    from cube_lab.workspace import Workspace

    path = llamafactory_pt(files, tmp_path / "lf")
    data_dir = tmp_path / "cube-data"
    code = main(["--data-dir", str(data_dir), "finetune", str(path), "--json", "--quiet"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["job"]["status"] == "succeeded", out
    meta = json.loads(
        (tmp_path / "lf" / "saves" / "pt" / "model" / "cube_finetune.json").read_text()
    )
    assert meta["method"] == "pt" and (meta["train_records"], meta["eval_records"]) == (24, 6)
    ws = Workspace(Settings.resolve(data_dir))
    try:
        found = ws.training.metrics(Caller(out["job"]["owner"]), out["job"]["id"])
    finally:
        ws.close()
    # the job's charts (what the live view and the SDK read): eval every 5 steps and at the end
    evals, perplexity = found.series["eval_loss"], found.series["eval_perplexity"]
    assert [step for step, _ in evals] == [5, 10, 12], evals
    for (_, loss), (_, ppl) in zip(evals, perplexity, strict=True):
        assert ppl == pytest.approx(math.exp(loss))
    assert evals[-1][1] < evals[0][1]  # the held-out text got likelier
    assert meta["metrics"]["eval_perplexity"] == pytest.approx(math.exp(evals[-1][1]))
    assert found.series["loss"][-1][1] < found.series["loss"][0][1]


def test_a_job_stopped_after_n_steps_resumes_at_step_n(files: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    raw = base_config(
        files, out, data=str(files / "text.jsonl"), max_steps=12, save_steps=2, method="pt"
    )
    path = tmp_path / "pt.yaml"
    path.write_text(yaml.safe_dump(raw))
    env = {**os.environ, "CUBE_METRICS_FILE": str(tmp_path / "first.jsonl")}
    command = [sys.executable, "-m", "cube_lab.finetune.trainer", str(path)]
    first = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    checkpoints = out / "checkpoints"
    deadline = time.monotonic() + 120
    while not (checkpoints / "checkpoint-2" / "trainer_state.json").is_file():
        assert first.poll() is None, first.stderr.read() if first.stderr else ""
        assert time.monotonic() < deadline, "no checkpoint in 120 s"
        time.sleep(0.02)
    first.send_signal(signal.SIGTERM)  # what stopping a job does
    first.wait(timeout=60)
    saved = sorted(
        int(p.name.split("-")[1])
        for p in checkpoints.iterdir()
        if (p / "trainer_state.json").is_file()
    )
    n = saved[-1]
    assert n < 12 and not (out / "model").exists(), "the first run was not stopped"
    first_steps = [r["step"] for r in reports(tmp_path / "first.jsonl") if "loss" in r["metrics"]]
    assert first_steps[-1] < 12

    raw["resume_from_checkpoint"] = True
    path.write_text(yaml.safe_dump(raw))
    env["CUBE_METRICS_FILE"] = str(tmp_path / "second.jsonl")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"resuming from {checkpoints / f'checkpoint-{n}'} at step {n}" in done.stdout
    steps = [r["step"] for r in reports(tmp_path / "second.jsonl") if "loss" in r["metrics"]]
    assert steps == list(range(n + 1, 13)), steps  # on from step N, not from 1
    meta = json.loads((out / "model" / "cube_finetune.json").read_text())
    assert meta["steps"] == 12 and meta["resumed_from"].endswith(f"checkpoint-{n}")


def test_resume_without_a_checkpoint_says_so(files: Path, tmp_path: Path) -> None:
    from cube_lab.finetune.trainer import train

    raw = base_config(
        files, tmp_path, data=str(files / "text.jsonl"), max_steps=2, resume_from_checkpoint=True
    )
    with pytest.raises(InvalidInput) as err:
        train(FinetuneConfig.from_dict(raw))
    assert "holds no checkpoint" in err.value.error and "save_steps" in err.value.detail


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"method": "rm"}, "method rm needs preference data"),
        ({"method": "pt", "data": {"path": "prompts.jsonl", "format": "alpaca"}}, "method pt"),
        ({"method": "pt"}, "method pt needs plain text"),
        ({"method": "rm", "data": "pref.jsonl", "eval_data": "text.jsonl"}, "method rm needs"),
        ({"val_size": 1.5}, "val_size must be a share below 1"),
        ({"val_size": 0.1, "eval_data": "text.jsonl"}, "give val_size or eval_data, not both"),
        ({"eval_steps": 5}, "eval_steps / eval_strategy need an eval split"),
        ({"eval_strategy": "sometimes", "val_size": 2}, "eval_strategy 'sometimes'"),
        ({"resume_from_checkpoint": "base"}, "is not a checkpoint"),
        ({"method": "grpo"}, "method grpo needs reward_file"),
        ({"reward_file": "reward.py"}, "reward_file is for method grpo"),
        ({"method": "ppo"}, "method 'ppo' is not supported"),
    ],
)
def test_bad_configs_name_the_field(files: Path, change: dict[str, Any], message: str) -> None:
    from cube_lab.finetune.service import check_before_launch

    (files / "reward.py").write_text("def reward(prompts, completions, **kw):\n    return []\n")
    raw = {"model": str(files / "base"), "data": "prompts.jsonl", **change}
    with pytest.raises(InvalidInput) as err:
        check_before_launch(FinetuneConfig.from_dict(raw, files))  # what the CLI and REST do
    assert message in err.value.error


def test_val_size_leaving_nothing_to_train_on_is_refused(files: Path, tmp_path: Path) -> None:
    from cube_lab.finetune.trainer import train

    raw = base_config(files, tmp_path, data=str(files / "text.jsonl"), val_size=30, max_steps=1)
    with pytest.raises(InvalidInput, match="leaving none to train on"):
        train(FinetuneConfig.from_dict(raw))


REWARD = """
import json
from pathlib import Path


def reward(prompts, completions, **kw):
    texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
    with open(Path(__file__).with_name("calls.jsonl"), "a") as fh:
        fh.write(json.dumps({"prompts": prompts, "completions": texts, "kw": sorted(kw)}) + "\\n")
    return [t.count("e") / max(1, len(t)) for t in texts]
"""


def test_grpo_runs_steps_with_a_python_reward_and_logs_it(
    files: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cube_lab.finetune.trainer import train

    (tmp_path / "reward.py").write_text(REWARD)
    monkeypatch.setenv("CUBE_METRICS_FILE", str(tmp_path / "metrics.jsonl"))
    raw = base_config(
        files,
        tmp_path / "out",
        method="grpo",
        data=str(files / "prompts.jsonl"),
        reward_file=str(tmp_path / "reward.py"),
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=8,
        max_steps=4,
    )
    meta = train(FinetuneConfig.from_dict(raw))
    assert meta["steps"] == 4 and meta["method"] == "grpo"
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert len(calls) >= 4  # one scoring per generation batch at least
    first = calls[0]
    assert len(first["completions"]) == 8 and len(first["prompts"]) == 8
    # the prompt is the chat before the answer: the user's turn, the answer dropped
    asked = {p[-1]["content"] for c in calls for p in c["prompts"]}
    assert asked <= {f"Name a {w}" for w in NOUNS}
    assert all(p[-1]["role"] == "user" for p in first["prompts"])
    rows = [r for r in reports(tmp_path / "metrics.jsonl") if "reward" in r["metrics"]]
    assert [r["step"] for r in rows][:4] == [1, 2, 3, 4]
    # step 1's logged mean reward is the mean of what the user's function gave its batch
    mean = sum(t.count("e") / max(1, len(t)) for t in first["completions"]) / 8
    assert rows[0]["metrics"]["reward"] == pytest.approx(mean, abs=1e-5)
    assert (tmp_path / "out" / "model" / "adapter_config.json").is_file()


def test_grpo_reward_file_errors_say_what_to_write(files: Path, tmp_path: Path) -> None:
    from cube_lab.finetune.trainer import load_reward

    (tmp_path / "none.py").write_text("def score(x):\n    return x\n")
    with pytest.raises(InvalidInput, match="has no function reward"):
        load_reward(str(tmp_path / "none.py"))
    (tmp_path / "broken.py").write_text("import nothing_here\n")
    with pytest.raises(InvalidInput, match="failed to load") as err:
        load_reward(str(tmp_path / "broken.py"))
    assert "ModuleNotFoundError" in err.value.detail
    (tmp_path / "short.py").write_text("def reward(prompts, completions, **kw):\n    return [1]\n")
    with pytest.raises(InvalidInput, match="one number per completion"):
        load_reward(str(tmp_path / "short.py"))(["a", "b"], ["x", "y"])
    raw = {"model": str(files / "base"), "data": "prompts.jsonl", "method": "grpo",
           "reward_file": str(tmp_path / "short.py"), "per_device_train_batch_size": 6}  # fmt: skip
    with pytest.raises(InvalidInput, match="multiple of num_generations"):
        FinetuneConfig.from_dict(raw, files)


async def test_rest_refuses_eval_and_reward_files_outside_the_root(
    api: Any, jp_root_dir: Path, files: Path
) -> None:
    import shutil

    shutil.copytree(files / "base", jp_root_dir / "base")
    shutil.copy(files / "prompts.jsonl", jp_root_dir / "prompts.jsonl")
    (files / "reward.py").write_text("def reward(prompts, completions, **kw):\n    return []\n")
    cases = [
        ({"val_size": 0, "eval_data": str(files / "prompts.jsonl")}, "eval_data"),
        (
            {
                "method": "grpo",
                "reward_file": str(files / "reward.py"),
                "per_device_train_batch_size": 4,
            },
            "reward_file",
        ),
    ]
    for change, what in cases:
        config = {"model": "base", "data": "prompts.jsonl", **change}
        status, body = await api("alice", "POST", "finetune/jobs", {"config": config})
        assert 400 <= status < 500 and what in body["error"], (status, body)
