"""After a fine-tune: a LoRA adapter version merged into its base gives a full model version
with the same logits as base + adapter; an evaluation job scores the model before and after
(perplexity, exact match, ROUGE-L, a Python scorer), side by side. Tiny random-init models,
nothing downloaded; ROUGE-L checked against Google's ``rouge-score``."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("trl")
pytest.importorskip("peft")

from cube_lab.cli import main
from cube_lab.finetune import tiny
from cube_lab.finetune.scores import exact_match, rouge_l, tokens

# Every test here reads the module's ``tuned`` adapter (a fine-tune job: most of the module's
# setup). Under pytest-xdist (``--dist loadgroup``) they go to one worker, which builds it
# once; spread over the workers, each built its own, and again whenever a test of another
# module ran between two of these (one build per parameter of the bad-config test).
pytestmark = pytest.mark.xdist_group("finetune-merge-eval")


def test_rouge_l_is_rouge_scores_on_english_and_counts_chinese_characters() -> None:
    from rouge_score import rouge_scorer

    reference = rouge_scorer.RougeScorer(["rougeL"])
    rng = random.Random(1)
    words = "the cat sat on a mat by the red river and blue stone 42 times".split()  # noqa: SIM905
    for _ in range(200):
        a = " ".join(rng.choices(words, k=rng.randint(0, 12)))
        b = " ".join(rng.choices(words, k=rng.randint(1, 12))).upper() + "!"
        assert rouge_l(a, b) == pytest.approx(reference.score(b, a)["rougeL"].fmeasure), (a, b)
    assert tokens("模型 fine-tune 好") == ["模", "型", "fine", "tune", "好"]
    assert rouge_l("推理服务很快", "推理服务") == pytest.approx(2 * (4 / 6) * 1 / (4 / 6 + 1))
    assert exact_match(" Red  and BLUE ", "red and blue") == 1.0
    assert exact_match("red", "red blue") == 0.0


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A tiny base, a LoRA SFT adapter on the 20 rows registered as ``tiny-ft`` (through
    the CLI, as a job), in a data dir of its own."""
    root = tmp_path_factory.mktemp("merge-eval")
    rows = tiny.alpaca_rows()
    (root / "alpaca.json").write_text(json.dumps(rows))
    tiny.build(root / "base", [json.dumps(r) for r in rows])
    config = {
        "model": str(root / "base"),
        "data": "alpaca.json",
        "lora": {"rank": 16, "alpha": 32},
        "learning_rate": 0.01,
        "max_steps": 60,
        "per_device_train_batch_size": 4,
        "logging_steps": 20,
        "cutoff_len": 128,
    }
    (root / "sft.yaml").write_text(yaml.safe_dump(config))
    data_dir = root / "cube-data"
    args = ["--data-dir", str(data_dir), "finetune", str(root / "sft.yaml"), "--register",
            "tiny-ft", "--quiet", "--json"]  # fmt: skip
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(args) == 0
    adapter = Path(json.loads(out.getvalue())["job"]["output_dir"]) / "model"
    return {"root": root, "data_dir": data_dir, "rows": rows, "adapter": adapter}


def test_merge_registers_a_full_model_with_the_adapters_logits(
    tuned: dict[str, Any], capsys: Any
) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    from cube_lab.config import Settings
    from cube_lab.finetune.service import FinetuneService
    from cube_lab.identity import Caller
    from cube_lab.workspace import Workspace

    capsys.readouterr()
    code = main(["--data-dir", str(tuned["data_dir"]), "merge", "tiny-ft:1", "--register",
                 "tiny-merged", "--json"])  # fmt: skip
    printed = capsys.readouterr()
    assert code == 0, printed.err
    out = json.loads(printed.out)
    merged, job = out["registered"], out["job"]
    assert job["status"] == "succeeded" and job["name"] == "merge-tiny-ft-1"
    assert "saved the merged model" in printed.err  # the job's log, streamed
    assert merged["flavor"] == "transformers" and merged["model"] == "tiny-merged"
    owner = merged["project"]
    assert merged["tags"]["merged_from"] == f"{owner}/tiny-ft:1"
    assert merged["params"]["lora_rank"] == 16  # the adapter's hyperparameters, kept
    assert merged["lineage"]["training_job_id"] == job["id"]

    ws = Workspace(Settings.resolve(tuned["data_dir"]))
    try:
        me = Caller(job["owner"])
        adapted, tokenizer = FinetuneService(ws).load(me, owner, "tiny-ft")
        folder = ws.registry.download(me, owner, "tiny-merged", 1).path
    finally:
        ws.close()
    assert not (folder / "adapter_config.json").exists()
    plain = AutoModelForCausalLM.from_pretrained(folder)  # no PEFT needed
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Say the pair 3\n" + tuned["rows"][3]["input"]}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    with torch.no_grad():
        torch.testing.assert_close(plain(**prompt).logits, adapted(**prompt).logits)

    # a version that is not an adapter is refused, with the fix, before any job
    code = main(["--data-dir", str(tuned["data_dir"]), "merge", "tiny-merged:1"])
    err = capsys.readouterr().err
    assert code == 2 and "is a transformers model, not a LoRA adapter" in err


def test_evaluation_scores_before_and_after_side_by_side(
    tuned: dict[str, Any], capsys: Any
) -> None:
    root = tuned["root"]
    prompts = [{"prompt": f"{r['instruction']}\n{r['input']}", "expected": r["output"]}
               for r in tuned["rows"]]  # fmt: skip
    (root / "prompts.jsonl").write_text("\n".join(json.dumps(p) for p in prompts))
    (root / "score.py").write_text(
        "def score(prediction, expected, **row):\n"
        "    return float(expected.split()[-1] in prediction.split())\n"
    )
    config = {
        "model": "tiny-ft:1",
        "data": "alpaca.json",
        "prompts": "prompts.jsonl",
        "scorer_file": "score.py",
        "max_new_tokens": 12,
        "cutoff_len": 128,
    }
    (root / "eval.yaml").write_text(yaml.safe_dump(config))
    capsys.readouterr()
    code = main(["--data-dir", str(tuned["data_dir"]), "evaluate", str(root / "eval.yaml")])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "before: answered 20/20 prompts" in printed.out  # progress in the log
    table = [line.split() for line in printed.out.splitlines()[-6:]]
    assert table[0] == ["metric", "before", "after"], table
    assert [row[0] for row in table[1:]] == [
        "loss",
        "perplexity",
        "exact_match",
        "rouge_l",
        "score",
    ]

    code = main(["--data-dir", str(tuned["data_dir"]), "evaluate", str(root / "eval.yaml"),
                 "--json", "--quiet"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    result, job = out["evaluation"], out["job"]
    before, after = result["metrics"]["before"], result["metrics"]["after"]
    assert [m["label"] for m in result["models"]] == ["before", "after"]
    assert result["models"][0]["ref"] == str(root / "base")  # the adapter's base
    assert result["records"] == 20 and result["prompts"] == 20
    # the random-init base knows nothing; the adapter memorised the 20 answers
    assert after["perplexity"] < before["perplexity"] / 10, (before, after)
    assert after["rouge_l"] > before["rouge_l"] + 0.3, (before, after)
    assert after["score"] > before["score"] and 0 <= before["exact_match"] <= 1
    row = result["rows"][3]
    assert row["expected"] == tuned["rows"][3]["output"]
    assert set(row["after"]) == {"prediction", "exact_match", "rouge_l", "score"}
    # the figures are the job's metrics too (before/perplexity...), for its charts
    from cube_lab.config import Settings
    from cube_lab.identity import Caller
    from cube_lab.workspace import Workspace

    ws = Workspace(Settings.resolve(tuned["data_dir"]))
    try:
        last = ws.training.metrics(Caller(job["owner"]), job["id"]).last
    finally:
        ws.close()
    assert last["after/perplexity"] == pytest.approx(after["perplexity"])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"prompts": None, "data": None}, "an evaluation needs data (perplexity) or prompts"),
        ({"metrics": ["bleu"]}, "metrics must be a list of exact_match, rouge_l"),
        ({"scorer_file": "nope.py"}, "scorer_file: "),
        ({"temperature": 0}, "unknown evaluation fields ['temperature']"),
        ({"model": "tiny-ft:7"}, "version"),
    ],
)
def test_bad_evaluation_configs_say_why(
    tuned: dict[str, Any], change: dict[str, Any], message: str, capsys: Any
) -> None:
    config = {"model": "tiny-ft:1", "prompts": str(tuned["root"] / "alpaca.json"), **change}
    path = tuned["root"] / "bad.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in config.items() if v is not None}))
    code = main(["--data-dir", str(tuned["data_dir"]), "evaluate", str(path)])
    assert code in (1, 2) and message in capsys.readouterr().err


async def test_rest_merge_and_evaluation(
    api: Any, jp_root_dir: Path, tuned: dict[str, Any]
) -> None:
    shutil.copytree(tuned["root"] / "base", jp_root_dir / "base")
    (jp_root_dir / "p.jsonl").write_text(json.dumps({"prompt": "Say", "expected": "red"}))
    status, base = await api("alice", "POST", "models", {"name": "tiny-base", "path": "base"})
    assert status == 201, base
    status, body = await api("alice", "POST", "finetune/merge", {"model": "tiny-base:1"})
    assert status == 400 and "not a LoRA adapter" in body["error"], body
    status, body = await api("alice", "POST", "finetune/merge", {"model": "x", "into": "y"})
    assert status == 400 and body["error"] == "unknown fields ['into']"
    outside = {"model": "tiny-base:1", "baseline": "none", "prompts": str(tuned["root"] / "p")}
    status, body = await api("alice", "POST", "finetune/evaluations", {"config": outside})
    assert status in (400, 403), body  # a file outside the server root is not read

    config = {"model": "tiny-base:1", "baseline": "none", "prompts": "p.jsonl",
              "max_new_tokens": 4}  # fmt: skip
    status, job = await api("alice", "POST", "finetune/evaluations", {"config": config})
    assert status == 201 and job["name"] == "evaluate-tiny-base-1", job
    for _ in range(600):
        status, job = await api("alice", "GET", f"training/jobs/{job['id']}")
        if job["status"] not in ("queued", "running"):
            break
        await asyncio.sleep(0.2)
    assert job["status"] == "succeeded", job
    status, result = await api("alice", "GET", f"finetune/evaluations/{job['id']}")
    assert status == 200 and [m["label"] for m in result["models"]] == ["model"], result
    assert set(result["metrics"]["model"]) >= {"exact_match", "rouge_l", "seconds"}
    assert len(result["rows"]) == 1 and "prediction" in result["rows"][0]["model"]
    # bob is not in alice's project: her job and its result do not exist for him
    status, body = await api("bob", "GET", f"finetune/evaluations/{job['id']}")
    assert status == 404, body


async def test_the_hub_form_merges_and_evaluates_at_the_service(
    api: Any,
    jp_root_dir: Path,
    jp_http_port: int,
    jp_base_url: str,
    tuned: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
) -> None:
    """Under the hub `cube-lab merge` / `cube-lab evaluate` have no store: they start the
    job at the service (a real jupyter server with cube-lab), follow it and print there."""
    shutil.copytree(tuned["adapter"], jp_root_dir / "adapter")  # its base: the tuned base folder
    status, version = await api("alice", "POST", "models", {"name": "ad", "path": "adapter"})
    assert status == 201 and version["flavor"] == "peft", version
    work = jp_root_dir / "work"
    work.mkdir()
    (work / "p.jsonl").write_text(json.dumps({"prompt": "Say the pair 1\nred", "expected": "x"}))
    (work / "eval.yaml").write_text(yaml.safe_dump({"model": "ad:1", "prompts": "p.jsonl"}))
    monkeypatch.setenv("CUBE_LAB_SERVICE_URL", f"http://localhost:{jp_http_port}{jp_base_url}")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "alice-secret")
    monkeypatch.setenv("CUBE_LAB_ROOT_DIR", str(jp_root_dir))
    monkeypatch.delenv("CUBE_LAB_DATA_DIR", raising=False)
    monkeypatch.chdir(work)
    capsys.readouterr()
    code = await asyncio.to_thread(main, ["merge", "ad:1", "--register", "ad-merged", "--json"])
    printed = capsys.readouterr()
    out = json.loads(printed.out)
    assert code == 0 and out["job"]["owner"] == "alice", printed.err
    assert "saved the merged model" in printed.err  # the job's log, followed at the service
    assert out["registered"]["flavor"] == "transformers"
    code = await asyncio.to_thread(main, ["evaluate", "eval.yaml"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    table = [line.split() for line in printed.out.splitlines() if line.startswith("metric ")]
    assert table == [["metric", "before", "after"]], printed.out


def test_scorer_file_errors_say_what_to_write(tmp_path: Path) -> None:
    from cube_lab.errors import InvalidInput
    from cube_lab.finetune.scores import load_scorer

    (tmp_path / "none.py").write_text("def reward(x):\n    return x\n")
    with pytest.raises(InvalidInput, match=r"scorer_file: .* has no function score") as err:
        load_scorer(str(tmp_path / "none.py"))
    assert "def score(prediction, expected, **row) -> float" in err.value.detail
    (tmp_path / "nan.py").write_text("def score(p, e, **row):\n    return float('nan')\n")
    with pytest.raises(InvalidInput, match="must return a finite number"):
        load_scorer(str(tmp_path / "nan.py"))("a", "b")
    (tmp_path / "ok.py").write_text("def score(p, e, **row):\n    return float(p == e)\n")
    assert load_scorer(str(tmp_path / "ok.py"))("a", "a", id=1) == 1.0
