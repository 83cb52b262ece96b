"""LLM fine-tuning on a tiny random-init model (nothing downloaded): LoRA SFT memorises,
full SFT runs, DPO widens the reward margin, a LLaMA-Factory YAML runs unchanged as a
training job, the adapter registers as ``peft`` and loads back, bad configs say why."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("trl")
pytest.importorskip("peft")

from cube_lab.cli import main
from cube_lab.errors import InvalidInput
from cube_lab.finetune import chat_templates, tiny
from cube_lab.finetune.config import FinetuneConfig


def preference_rows() -> list[dict[str, str]]:
    return [
        {
            "prompt": f"Color of {w}?",
            "chosen": f"the {w} is bright",
            "rejected": f"no idea {w} sorry",
        }
        for w in tiny.WORDS
    ]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("finetune")
    (root / "alpaca.json").write_text(json.dumps(tiny.alpaca_rows()))
    (root / "pref.jsonl").write_text("\n".join(json.dumps(r) for r in preference_rows()))
    texts = [json.dumps(r) for r in tiny.alpaca_rows() + preference_rows()]
    tiny.build(root / "base", texts)
    return root


def config(files: Path, out: Path, **extra: Any) -> FinetuneConfig:
    raw = {
        "model": str(files / "base"),
        "data": {"path": str(files / "alpaca.json")},
        "lora": {"rank": 16, "alpha": 32},
        "learning_rate": 0.01,
        "max_steps": 60,
        "per_device_train_batch_size": 4,
        "logging_steps": 10,
        "cutoff_len": 128,
        "output_dir": str(out),
        **extra,
    }
    return FinetuneConfig.from_dict(raw)


def test_lora_sft_memorises_twenty_examples(files: Path, tmp_path: Path) -> None:
    from cube_lab.finetune.trainer import train

    meta = train(config(files, tmp_path / "out"))
    first = json.loads((tmp_path / "out" / "model" / "cube_finetune.json").read_text())
    # the loss over the answers' tokens (the prompts are context, not targets)
    assert meta["metrics"]["final_loss"] < 1.2, meta["metrics"]
    assert first["hyperparameters"]["lora_rank"] == 16
    saved = tmp_path / "out" / "model"
    assert (saved / "adapter_config.json").is_file()
    assert not (saved / "model.safetensors").exists()  # the adapter only, not the base


def test_full_sft_saves_a_whole_model(files: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    from cube_lab.finetune.trainer import train

    meta = train(config(files, tmp_path / "out", finetuning_type="full", max_steps=4))
    saved = tmp_path / "out" / "model"
    assert meta["steps"] == 4 and (saved / "model.safetensors").is_file()
    assert not (saved / "adapter_config.json").exists()
    AutoModelForCausalLM.from_pretrained(saved)  # loads as a plain transformers model


def test_dpo_raises_the_reward_margin(files: Path, tmp_path: Path, monkeypatch: Any) -> None:
    from cube_lab.finetune.trainer import train

    reports = tmp_path / "metrics.jsonl"
    monkeypatch.setenv("CUBE_METRICS_FILE", str(reports))
    cfg = config(
        files,
        tmp_path / "out",
        method="dpo",
        data={"path": str(files / "pref.jsonl")},
        lora={"rank": 8, "alpha": 16},
        learning_rate=0.005,
        max_steps=20,
        logging_steps=1,
    )
    train(cfg)
    rows = [json.loads(line) for line in reports.read_text().splitlines()]
    margins = [r["metrics"]["rewards/margins"] for r in rows if "rewards/margins" in r["metrics"]]
    # measured: 0 at step 1 (policy = reference), 5.13 at step 20
    assert margins[0] < 0.5 and margins[-1] > margins[0] + 2.0, margins
    # the job's charts get loss, learning rate, grad norm and tokens/s
    keys = set().union(*(r["metrics"] for r in rows))
    assert {"loss", "learning_rate", "grad_norm", "tokens_per_second"} <= keys


def llamafactory_project(files: Path, root: Path) -> Path:
    data = root / "data"
    data.mkdir(parents=True)
    convs = [
        {
            "dialog": [
                {"speaker": "person", "text": r["instruction"] + " " + r["input"]},
                {"speaker": "bot", "text": r["output"]},
            ]
        }
        for r in tiny.alpaca_rows()
    ]
    (data / "pairs.json").write_text(json.dumps(convs))
    info = {
        "my_pairs": {
            "file_name": "pairs.json",
            "formatting": "sharegpt",
            "columns": {"messages": "dialog"},
            "tags": {
                "role_tag": "speaker",
                "content_tag": "text",
                "user_tag": "person",
                "assistant_tag": "bot",
            },
        }
    }
    (data / "dataset_info.json").write_text(json.dumps(info))
    lf = {
        "model_name_or_path": str(files / "base"),
        "stage": "sft",
        "do_train": True,
        "finetuning_type": "lora",
        "lora_rank": 16,
        "lora_alpha": 32,
        "lora_target": "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj",
        "dataset": "my_pairs",
        "dataset_dir": "data",
        "template": "default",
        "cutoff_len": 128,
        "overwrite_cache": True,
        "output_dir": "saves/tiny/lora/sft",
        "logging_steps": 10,
        "plot_loss": True,
        "overwrite_output_dir": True,
        "per_device_train_batch_size": 4,
        "gradient_accumulation_steps": 1,
        "learning_rate": 1.0e-2,
        "num_train_epochs": 12.0,
        "lr_scheduler_type": "linear",
        "report_to": "none",
    }
    path = root / "tiny_lora_sft.yaml"
    path.write_text(yaml.safe_dump(lf))
    return path


def test_llamafactory_yaml_runs_as_a_training_job_and_registers_a_peft_adapter(
    files: Path, tmp_path: Path, capsys: Any
) -> None:
    import torch

    from cube_lab.config import Settings
    from cube_lab.finetune.service import FinetuneService
    from cube_lab.identity import Caller
    from cube_lab.workspace import Workspace

    path = llamafactory_project(files, tmp_path / "lf")
    data_dir = tmp_path / "cube-data"
    code = main(["--data-dir", str(data_dir), "finetune", str(path), "--register", "tiny-chat",
                 "--json"])  # fmt: skip
    printed = capsys.readouterr()
    out = json.loads(printed.out)  # --json: one document on stdout, the job's log on stderr
    assert code == 0, printed.err
    # the log shows the steps, not libraries' warnings or progress bars
    assert "step=10 loss=" in printed.err
    assert not re.search(r"Warning: |WARNING|Traceback|it/s\]", printed.err), printed.err
    job, version = out["job"], out["registered"]
    assert job["status"] == "succeeded" and job["framework"] == "pytorch"
    assert job["output_dir"] == str(tmp_path / "lf" / "saves" / "tiny" / "lora" / "sft")
    assert version["flavor"] == "peft" and version["lineage"]["training_job_id"] == job["id"]
    assert version["params"]["base_model"] == str(files / "base")
    assert version["params"]["dataset"] == str(tmp_path / "lf" / "data" / "pairs.json")
    assert version["params"]["lora_target"].startswith("q_proj,k_proj")
    assert version["metrics"]["final_loss"] < 1.5, version["metrics"]

    ws = Workspace(Settings.resolve(data_dir))
    try:
        me = Caller(job["owner"])
        found = ws.training.metrics(me, job["id"])  # the job's charts, from its reports
        assert found.source == "report" and len(found.series["loss"]) >= 5
        assert found.series["loss"][-1][1] < found.series["loss"][0][1] / 2
        model, tokenizer = FinetuneService(ws).load(me, version["project"], "tiny-chat")
    finally:
        ws.close()
    # template: default (LLaMA-Factory's name) trained and saved with the adapter
    assert tokenizer.chat_template == chat_templates.TEMPLATES["default"].source
    assert version["params"]["template"] == "default"
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Say the pair 3 " + tiny.alpaca_rows()[3]["input"]}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    with torch.no_grad():
        adapted = model(**prompt).logits
        generated = model.generate(**prompt, max_new_tokens=8, do_sample=False)
        merged = model.merge_and_unload()(**prompt).logits
    assert generated.shape[1] > prompt["input_ids"].shape[1]
    assert tokenizer.decode(generated[0, prompt["input_ids"].shape[1] :]).strip()
    torch.testing.assert_close(adapted, merged, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"method": "ppo"}, "method 'ppo' is not supported"),
        ({"model": "Qwen/Qwen2.5-0.5B"}, "looks like a Hugging Face Hub id"),
        ({"lora": {"rank": 0}}, "lora.rank must be a whole number"),
        ({"learnin_rate": 1}, "unknown fine-tune config fields ['learnin_rate']"),
        ({"method": "dpo"}, "method dpo needs preference data"),
        ({"data": {"path": "missing.jsonl"}}, "data.path"),
    ],
)
def test_bad_configs_name_the_field(files: Path, change: dict[str, Any], message: str) -> None:
    raw = {"model": str(files / "base"), "data": {"path": str(files / "alpaca.json")}}
    if change.get("method") == "dpo":
        raw["data"]["format"] = "alpaca"
    with pytest.raises(InvalidInput) as err:
        FinetuneConfig.from_dict({**raw, **change}, files)
    assert message in err.value.error


def test_llamafactory_keys_not_supported_are_refused_by_name(files: Path, tmp_path: Path) -> None:
    path = llamafactory_project(files, tmp_path)
    raw = yaml.safe_load(path.read_text())
    with pytest.raises(InvalidInput) as err:
        FinetuneConfig.from_dict({**raw, "use_galore": True, "pissa_init": True}, tmp_path)
    assert "['pissa_init', 'use_galore']" in err.value.error
    with pytest.raises(InvalidInput) as err:
        FinetuneConfig.from_dict({**raw, "dataset": "nope"}, tmp_path)
    assert "dataset 'nope' is not in" in err.value.error and "my_pairs" in err.value.detail


def test_cli_bad_config_exits_2_with_the_reason(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "ft.yaml"
    path.write_text(yaml.safe_dump({"model_name_or_path": "meta-llama/Llama-3-8B", "stage": "sft"}))
    assert main(["--data-dir", str(tmp_path / "d"), "finetune", str(path)]) == 2
    err = capsys.readouterr().err
    assert "looks like a Hugging Face Hub id" in err and "offline" in err


async def test_rest_bad_config_is_a_400_json(api: Any, jp_root_dir: Path) -> None:
    status, body = await api("alice", "POST", "finetune/jobs", {"config": {"model": "x"}})
    assert status == 400 and "model: 'x' is neither a folder nor a registered" in body["error"]
    status, body = await api("alice", "POST", "finetune/jobs", {"config": {}, "nprocs": 2})
    assert status == 400 and body["error"] == "unknown fields ['nprocs']"
    (jp_root_dir / "d.jsonl").write_text('{"instruction": "a", "output": "b"}\n')
    status, body = await api(
        "alice", "POST", "finetune/jobs", {"config": {"model": "org/some-model", "data": "d.jsonl"}}
    )
    assert status == 400 and "Hugging Face Hub id" in body["error"], body


async def test_rest_fine_tunes_a_registered_base_version_as_a_training_job(
    api: Any, jp_root_dir: Path, files: Path, tmp_path: Path
) -> None:
    import asyncio
    import shutil

    shutil.copytree(files / "base", jp_root_dir / "base")
    shutil.copy(files / "alpaca.json", jp_root_dir / "alpaca.json")
    status, base = await api("alice", "POST", "models", {"name": "tiny-base", "path": "base"})
    assert status == 201 and base["flavor"] == "transformers", base
    config = {
        "model": "tiny-base:1",
        "data": "alpaca.json",
        "max_steps": 6,
        "logging_steps": 2,
        "learning_rate": 0.01,
        "per_device_train_batch_size": 4,
        "cutoff_len": 128,
    }
    status, job = await api("alice", "POST", "finetune/jobs", {"config": config})
    assert status == 201, job
    assert job["name"] == "finetune-sft" and job["framework"] == "pytorch"
    for _ in range(600):
        status, job = await api("alice", "GET", f"training/jobs/{job['id']}")
        if job["status"] not in ("queued", "running"):
            break
        await asyncio.sleep(0.2)
    assert job["status"] == "succeeded", job
    status, found = await api("alice", "GET", f"training/jobs/{job['id']}/metrics")
    assert [p[0] for p in found["series"]["loss"]] == [2, 4, 6]
    assert found["last_checkpoint"].endswith("/model")
    meta = json.loads((Path(found["last_checkpoint"]) / "cube_finetune.json").read_text())
    assert meta["base_ref"] == "alice/tiny-base:1"  # the registered version, as lineage
    status, version = await api(
        "alice", "POST", f"training/jobs/{job['id']}/register", {"name": "tiny-ft"}
    )
    assert status == 201 and version["flavor"] == "peft", version
    assert version["metrics"]["final_loss"] == found["last"]["loss"]
    # loaded back onto the registered base (found through the registry, not a path)
    from cube_lab.config import Settings
    from cube_lab.finetune.service import FinetuneService
    from cube_lab.identity import Caller
    from cube_lab.workspace import Workspace

    ws = Workspace(Settings.resolve(tmp_path / "server-data"))
    try:
        model, tokenizer = FinetuneService(ws).load(Caller("alice"), "alice", "tiny-ft")
    finally:
        ws.close()
    assert type(model).__name__ == "PeftModelForCausalLM"
    assert model.base_model.model.config.hidden_size == 64 and tokenizer.chat_template
    # another user cannot fine-tune alice's version: it is not found for them
    status, body = await api("bob", "POST", "finetune/jobs", {"config": config})
    assert status == 404, body


def test_two_process_ddp_lora(files: Path, tmp_path: Path, capsys: Any) -> None:
    cfg = {
        "model": str(files / "base"),
        "data": {"path": str(files / "alpaca.json")},
        "max_steps": 4,
        "per_device_train_batch_size": 2,
        "cutoff_len": 128,
        "output_dir": str(tmp_path / "out"),
    }
    path = tmp_path / "ddp.yaml"
    path.write_text(yaml.safe_dump(cfg))
    code = main(["--data-dir", str(tmp_path / "d"), "finetune", str(path), "--nproc", "2",
                 "--json", "--quiet"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["job"]["nproc_per_worker"] == 2, out
    meta = json.loads((tmp_path / "out" / "model" / "cube_finetune.json").read_text())
    assert meta["world_size"] == 2 and meta["steps"] == 4  # torchrun, gloo, both ranks


async def test_the_hub_form_starts_the_job_at_the_service_and_registers_it(
    api: Any,
    jp_root_dir: Path,
    jp_http_port: int,
    jp_base_url: str,
    files: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
) -> None:
    """Under the hub `cube-lab finetune` has no store: it posts the config to the service
    (here a real jupyter server with cube-lab), follows the job there and registers it."""
    import asyncio
    import shutil

    await api("alice", "GET", "whoami")  # the server is up
    shutil.copytree(files / "base", jp_root_dir / "base")
    work = jp_root_dir / "work"
    work.mkdir()
    shutil.copy(files / "alpaca.json", work / "alpaca.json")
    cfg = {"model": "../base", "data": "alpaca.json", "max_steps": 3, "cutoff_len": 128}
    (work / "ft.yaml").write_text(yaml.safe_dump({**cfg, "per_device_train_batch_size": 4}))
    monkeypatch.setenv("CUBE_LAB_SERVICE_URL", f"http://localhost:{jp_http_port}{jp_base_url}")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "alice-secret")
    monkeypatch.setenv("CUBE_LAB_ROOT_DIR", str(jp_root_dir))
    monkeypatch.delenv("CUBE_LAB_DATA_DIR", raising=False)
    monkeypatch.chdir(work)
    argv = ["finetune", "ft.yaml", "--register", "hub-adapter", "--json", "--quiet"]
    code = await asyncio.to_thread(main, argv)
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    assert out["job"]["status"] == "succeeded" and out["job"]["owner"] == "alice"
    assert out["registered"]["flavor"] == "peft"
    assert out["registered"]["lineage"]["training_job_id"] == out["job"]["id"]


def test_what_would_fail_in_the_job_is_refused_before_one_is_recorded(
    files: Path, tmp_path: Path, capsys: Any
) -> None:
    import shutil

    from cube_lab.config import Settings, local_username
    from cube_lab.identity import Caller
    from cube_lab.workspace import Workspace

    plain = tmp_path / "no-template"
    shutil.copytree(files / "base", plain)
    (plain / "chat_template.jinja").unlink()
    settings = json.loads((plain / "tokenizer_config.json").read_text())
    settings.pop("chat_template", None)
    (plain / "tokenizer_config.json").write_text(json.dumps(settings))
    cases = [
        ({"model": str(plain)}, "has no chat template"),
        ({"method": "dpo"}, "method dpo needs preference data"),
    ]
    data_dir = tmp_path / "d"
    for change, message in cases:
        path = tmp_path / "ft.yaml"
        base = {"model": str(files / "base"), "data": str(files / "alpaca.json")}
        path.write_text(yaml.safe_dump({**base, **change}))
        assert main(["--data-dir", str(data_dir), "finetune", str(path)]) == 2
        assert message in capsys.readouterr().err
    ws = Workspace(Settings.resolve(data_dir))
    try:
        assert ws.training.list(Caller(local_username())) == []  # no job was recorded
    finally:
        ws.close()


def test_sample_generations_every_n_steps(files: Path, tmp_path: Path, capsys: Any) -> None:
    from cube_lab.finetune.trainer import train

    out = tmp_path / "out"
    train(config(files, out, max_steps=4, sample_every=2, sample_max_new_tokens=6))
    printed = capsys.readouterr().out
    assert "sample step=2 [1/2]: Say the pair 0" in printed and "sample step=4 [2/2]:" in printed
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [2, 2, 4, 4]
    assert rows[0]["prompt"][-1]["content"].startswith("Say the pair 0")  # the data's prompt
    asked = config(files, tmp_path / "o2", max_steps=2, sample_every=2, sample_prompts=["Hi?"])
    train(asked)
    rows = [
        json.loads(line) for line in (tmp_path / "o2" / "samples.jsonl").read_text().splitlines()
    ]
    assert [r["prompt"] for r in rows] == [[{"role": "user", "content": "Hi?"}]]
    with pytest.raises(InvalidInput, match="a reward model scores, it does not generate"):
        config(files, out, method="rm", data={"path": str(files / "pref.jsonl")}, sample_every=2)
