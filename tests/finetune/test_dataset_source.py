"""A fine-tune's data from a registered dataset (``data: {dataset: NAME[:VERSION], file}``):
the dataset's file (a text dataset's source here; a version's folder is searched for its
data file), the job and the registered adapter record the dataset as lineage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("peft")

from cube_lab.config import Settings
from cube_lab.errors import InvalidInput
from cube_lab.finetune import tiny
from cube_lab.finetune.service import FinetuneService
from cube_lab.identity import Caller
from cube_lab.workspace import Workspace

ALICE = Caller("alice")


@pytest.fixture
def ws(tmp_path: Path) -> Any:
    workspace = Workspace(Settings.resolve(tmp_path / "data"))
    yield workspace
    workspace.close()


def test_a_dataset_is_the_data_and_the_lineage(ws: Any, tmp_path: Path) -> None:
    rows = tiny.alpaca_rows()
    source = tmp_path / "chats.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in rows))
    ws.datasets.create(ALICE, "chats", source, kind="texts", text_field="instruction")
    tiny.build(tmp_path / "base", [json.dumps(r) for r in rows])
    service = FinetuneService(ws)
    raw = {"model": str(tmp_path / "base"), "data": {"dataset": "chats"}, "max_steps": 2,
           "cutoff_len": 64, "per_device_train_batch_size": 4,
           "output_dir": str(tmp_path / "out")}  # fmt: skip
    config = service.parse(ALICE, raw, tmp_path)
    assert config.data.path == str(source)
    assert config.dataset_ref == "alice/chats:source"
    job = service.prepare(ALICE, config)
    assert ws.training.run_foreground(job) == "succeeded"
    view = ws.training.get(ALICE, job.plan.job_id)
    assert [d["name"] for d in view.datasets] == ["chats"], view.datasets
    version = service.register(ALICE, job.plan.job_id, "chat-ft")
    assert version.lineage.datasets[0]["name"] == "chats"
    assert version.lineage.datasets[0]["path"] == str(source)

    with pytest.raises(InvalidInput, match="dataset chats is one file, not a folder"):
        service.parse(ALICE, {**raw, "data": {"dataset": "chats", "file": "x.csv"}}, tmp_path)
    bob = Caller("bob")  # alice's dataset is not bob's
    with pytest.raises(Exception, match="chats"):
        service.parse(bob, raw, tmp_path)


def test_a_version_folder_gives_its_only_data_file_or_the_one_named(tmp_path: Path) -> None:
    from cube_lab.finetune.service import _data_file

    folder = tmp_path / "v1"
    folder.mkdir()
    (folder / "export.jsonl").write_text("{}")
    (folder / "README.txt").write_text("")
    assert _data_file(folder, None, "d:1") == folder / "export.jsonl"
    (folder / "more.csv").write_text("a\n")
    with pytest.raises(InvalidInput, match=r"holds 2 data files: name one with data\.file"):
        _data_file(folder, None, "d:1")
    assert _data_file(folder, "more.csv", "d:1") == (folder / "more.csv").resolve()
    (tmp_path / "secret.json").write_text("{}")
    with pytest.raises(InvalidInput, match="is not a file of dataset d:1"):
        _data_file(folder, "../secret.json", "d:1")


async def test_the_forms_preview_over_rest_reads_a_registered_dataset(
    api: Any, jp_root_dir: Path
) -> None:
    """``POST /finetune/preview`` (the form's "Preview data"): the first records of a
    registered dataset through the named chat template, the answers marked trained."""
    rows = tiny.alpaca_rows()
    (jp_root_dir / "chats.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    tiny.build(jp_root_dir / "base", [json.dumps(r) for r in rows])
    made = {"name": "chats", "path": "chats.jsonl", "kind": "texts", "text_field": "instruction"}
    code, answer = await api("alice", "POST", "datasets", made)
    assert code == 201, answer
    config = {"model": "base", "data": {"dataset": "chats"}, "template": "chatml"}
    code, shown = await api("alice", "POST", "finetune/preview", {"config": config, "n": 2})
    assert code == 200, shown
    assert len(shown["records"]) == 2
    first = shown["records"][0]
    assert first["text"].startswith("<|im_start|>user\n")
    trained = "".join(s["text"] for s in first["segments"] if s["trained"])
    assert trained == rows[0]["output"] + "<|im_end|>\n"
    assert 0 < first["trained_tokens"] < first["tokens"]

    code, err = await api("alice", "POST", "finetune/preview", {"config": config, "n": 0})
    assert code == 400 and "n must be a whole number" in err["error"]
    dpo = {**config, "method": "dpo", "data": {"dataset": "chats", "format": "alpaca"}}
    code, err = await api("alice", "POST", "finetune/preview", {"config": dpo})
    assert code == 400, err
    code, err = await api("bob", "POST", "finetune/preview", {"config": config})
    assert code == 404 and "chats" in err["error"], err
