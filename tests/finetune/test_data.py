"""Fine-tune data: the formats users bring, from JSON / JSONL / CSV, as the records TRL takes;
LLaMA-Factory ``dataset_info.json`` mappings; errors that name the record and the column."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from cube_lab.errors import InvalidInput
from cube_lab.finetune.config import DataConfig
from cube_lab.finetune.data import load_records
from cube_lab.finetune.llamafactory import dataset_entry


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    if path.suffix == ".jsonl":
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    elif path.suffix == ".csv":
        with open(path, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    else:
        path.write_text(json.dumps(rows))
    return path


def records(path: Path, **kw: Any) -> list[dict[str, Any]]:
    return load_records(DataConfig(path=str(path), **kw))


def test_alpaca_from_json_jsonl_and_csv(tmp_path: Path) -> None:
    rows = [
        {"instruction": "Add", "input": "2 and 3", "output": "5", "system": "Be brief."},
        {"instruction": "Greet", "input": "", "output": "Hello", "system": ""},
    ]
    expected = [
        {
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Add\n2 and 3"},
                {"role": "assistant", "content": "5"},
            ]
        },
        {
            "messages": [
                {"role": "user", "content": "Greet"},
                {"role": "assistant", "content": "Hello"},
            ]
        },
    ]
    for name in ("a.json", "a.jsonl", "a.csv"):
        assert records(write(tmp_path / name, rows)) == expected, name


def test_sharegpt_openai_preference_and_text(tmp_path: Path) -> None:
    share = [{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "yo"}]}]
    assert records(write(tmp_path / "s.json", share)) == [
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
    ]
    openai = [
        {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
    ]
    assert records(write(tmp_path / "o.jsonl", openai)) == openai
    pref = [{"prompt": "p", "chosen": "good", "rejected": "bad"}]
    assert records(write(tmp_path / "p.jsonl", pref)) == [
        {
            "prompt": [{"role": "user", "content": "p"}],
            "chosen": [{"role": "assistant", "content": "good"}],
            "rejected": [{"role": "assistant", "content": "bad"}],
        }
    ]
    text = [{"text": "once upon a time"}]
    assert records(write(tmp_path / "t.jsonl", text)) == text
    assert len(records(write(tmp_path / "many.jsonl", text * 5), max_samples=2)) == 2


def test_dataset_info_mappings_are_read_as_llamafactory_writes_them(tmp_path: Path) -> None:
    write(
        tmp_path / "chat.json",
        [{"msgs": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}],
    )
    write(
        tmp_path / "rank.json",
        [{"instruction": "q", "input": "", "chosen": "good", "rejected": "bad"}],
    )
    info = {
        "openai_style": {
            "file_name": "chat.json",
            "formatting": "sharegpt",
            "columns": {"messages": "msgs"},
            "tags": {
                "role_tag": "role",
                "content_tag": "content",
                "user_tag": "user",
                "assistant_tag": "assistant",
            },
        },
        "pairs": {
            "file_name": "rank.json",
            "ranking": True,
            "columns": {
                "prompt": "instruction",
                "query": "input",
                "chosen": "chosen",
                "rejected": "rejected",
            },
        },
        "remote": {"hf_hub_url": "org/data"},
    }
    (tmp_path / "dataset_info.json").write_text(json.dumps(info))
    chat = DataConfig(**dataset_entry("openai_style", str(tmp_path), tmp_path))
    assert load_records(chat)[0]["messages"][1] == {"role": "assistant", "content": "a"}
    pairs = DataConfig(**dataset_entry("pairs", str(tmp_path), tmp_path))
    assert pairs.ranking and load_records(pairs)[0]["chosen"][0]["content"] == "good"
    with pytest.raises(InvalidInput, match="offline"):
        dataset_entry("remote", str(tmp_path), tmp_path)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"instruction": "q", "output": ""}], "record 0: column 'output' is missing or empty"),
        ([{"conversations": [{"from": "alien", "value": "x"}]}], "turn role 'alien'"),
        ([{"question": "q"}], "cannot tell the data format"),
        ([], "holds no records"),
    ],
)
def test_bad_records_say_which_and_why(tmp_path: Path, rows: Any, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(rows))
    with pytest.raises(InvalidInput) as err:
        records(path)
    assert message in err.value.error
