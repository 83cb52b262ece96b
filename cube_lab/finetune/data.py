"""Training records from the files users have, in the shapes TRL's trainers take.

Formats: alpaca (``instruction`` / ``input`` / ``output``), sharegpt (``conversations`` of
``from`` / ``value``), OpenAI ``messages`` (``role`` / ``content``), preference
(``prompt`` / ``chosen`` / ``rejected``), plain ``text``; column and tag names mapped as
LLaMA-Factory's ``dataset_info.json`` maps them. Files: JSON (a list of records), JSONL,
CSV, Parquet. Out come conversational records: ``{"messages": [...]}`` for SFT,
``{"prompt": [...], "chosen": [...], "rejected": [...]}`` for preference training, or
``{"text": ...}``; the chat template that renders them is the tokenizer's.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t
from .config import DataConfig

Message = dict[str, str]
_ROLES = {"user", "assistant", "system", "tool"}


def read_file(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON / JSONL / CSV / Parquet file."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".jsonl":
            rows = []
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise InvalidInput(
                            _t("{name} line {n} is not JSON", name=path.name, n=n), str(exc)
                        ) from None
        elif suffix == ".json":
            try:
                rows = json.loads(path.read_text())
            except json.JSONDecodeError as exc:
                raise InvalidInput(
                    _t("{name} is not valid JSON", name=path.name), str(exc)
                ) from None
        elif suffix == ".csv":
            with open(path, newline="") as fh:
                rows = list(csv.DictReader(fh))
        elif suffix == ".parquet":
            import pandas

            rows = pandas.read_parquet(path).to_dict("records")
        else:
            raise InvalidInput(
                _t(
                    "data file {name}: unknown type {suffix}",
                    name=path.name,
                    suffix=suffix or "(none)",
                ),
                _t("Use .json, .jsonl, .csv or .parquet."),
            )
    except FileNotFoundError:
        raise InvalidInput(_t("data file {path} not found", path=path)) from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise InvalidInput(_t("{name} must hold a list of records (JSON objects)", name=path.name))
    if not rows:
        raise InvalidInput(_t("{name} holds no records", name=path.name))
    return rows


def detect(row: dict[str, Any]) -> str:
    keys = set(row)
    if {"chosen", "rejected"} <= keys:
        return "preference"
    if "conversations" in keys:
        return "sharegpt"
    if "messages" in keys:
        return "openai"
    if "instruction" in keys:
        return "alpaca"
    if "text" in keys:
        return "text"
    raise InvalidInput(
        _t("cannot tell the data format from the columns {columns}", columns=sorted(keys)),
        _t(
            "Use alpaca (instruction/input/output), sharegpt "
            "(conversations), OpenAI messages, preference "
            "(prompt/chosen/rejected) or text, or set data.format and "
            "data.columns."
        ),
    )


def load_records(data: DataConfig) -> list[dict[str, Any]]:
    """The file's records converted for TRL (see the module doc)."""
    rows = read_file(Path(data.path))
    if data.max_samples:
        rows = rows[: data.max_samples]
    fmt = data.format if data.format != "auto" else detect(rows[0])
    out = []
    for i, row in enumerate(rows):
        try:
            out.append(convert(row, fmt, data))
        except InvalidInput as exc:
            raise InvalidInput(
                _t("{name} record {i}: {error}", name=Path(data.path).name, i=i, error=exc.error),
                exc.detail,
            ) from None
    return out


def convert(row: dict[str, Any], fmt: str, data: DataConfig) -> dict[str, Any]:
    cols = data.columns
    preference = data.ranking or fmt == "preference"
    if fmt == "text":
        return {"text": _field(row, cols.get("prompt") or cols.get("text") or "text")}
    if fmt == "alpaca":
        prompt = _field(row, cols.get("prompt", "instruction"))
        query = row.get(cols.get("query", "input")) or ""
        user = f"{prompt}\n{query}" if query else prompt
        messages = _system(row, cols.get("system", "system"))
        for turn in row.get(cols.get("history", "history")) or []:
            if not isinstance(turn, list | tuple) or len(turn) != 2:
                raise InvalidInput(_t("history must be a list of [user, assistant] pairs"))
            messages += [_msg("user", turn[0]), _msg("assistant", turn[1])]
        messages.append(_msg("user", user))
        if preference:
            return _pair(
                messages, row[cols.get("chosen", "chosen")], row[cols.get("rejected", "rejected")]
            )
        return {
            "messages": [*messages, _msg("assistant", _field(row, cols.get("response", "output")))]
        }
    if fmt in ("sharegpt", "openai"):
        default = "conversations" if fmt == "sharegpt" else "messages"
        turns = row.get(cols.get("messages", default))
        if not isinstance(turns, list) or not turns:
            raise InvalidInput(
                _t("{column!r} must be a list of turns", column=cols.get("messages", default))
            )
        messages = _system(row, cols.get("system", "system")) + [
            _turn(t, fmt, data.tags) for t in turns
        ]
        if preference:
            chosen, rejected = (
                row.get(cols.get("chosen", "chosen")),
                row.get(cols.get("rejected", "rejected")),
            )
            return _pair(
                messages, _answer(chosen, fmt, data.tags), _answer(rejected, fmt, data.tags)
            )
        if messages[-1]["role"] != "assistant":
            raise InvalidInput(_t("a conversation must end with the assistant's turn"))
        return {"messages": messages}
    if fmt == "preference":
        prompt = row.get(cols.get("prompt", "prompt"))
        if isinstance(prompt, str):
            messages = [_msg("user", prompt)]
        elif isinstance(prompt, list):
            messages = [_turn(t, "openai", {}) for t in prompt]
        else:
            raise InvalidInput(_t("prompt must be text or a list of messages"))
        return _pair(
            messages,
            row.get(cols.get("chosen", "chosen")),
            row.get(cols.get("rejected", "rejected")),
        )
    raise InvalidInput(_t("unknown data format {fmt!r}", fmt=fmt))


def _pair(prompt: list[Message], chosen: Any, rejected: Any) -> dict[str, Any]:
    def answer(value: Any, name: str) -> list[Message]:
        if isinstance(value, dict) and "content" in value:
            value = value["content"]
        if isinstance(value, list) and value and isinstance(value[-1], dict):
            value = value[-1].get("content")
        if not isinstance(value, str) or not value:
            raise InvalidInput(
                _t("{name} must be a non-empty answer", name=name), _t("got {value!r}", value=value)
            )
        return [_msg("assistant", value)]

    return {
        "prompt": prompt,
        "chosen": answer(chosen, "chosen"),
        "rejected": answer(rejected, "rejected"),
    }


def _answer(value: Any, fmt: str, tags: dict[str, str]) -> Any:
    """A sharegpt preference answer (one turn, in the file's tags) as plain text."""
    if isinstance(value, dict):
        return _turn(value, fmt, tags)["content"]
    return value


def _turn(turn: Any, fmt: str, tags: dict[str, str]) -> Message:
    if not isinstance(turn, dict):
        raise InvalidInput(_t("each turn must be an object"), _t("got {turn!r}", turn=turn))
    if fmt == "openai" and not tags:
        role_tag, content_tag, names = "role", "content", {}
    else:
        role_tag = tags.get("role_tag", "from" if fmt == "sharegpt" else "role")
        content_tag = tags.get("content_tag", "value" if fmt == "sharegpt" else "content")
        names = {
            tags.get("user_tag", "human"): "user",
            tags.get("assistant_tag", "gpt"): "assistant",
            tags.get("system_tag", "system"): "system",
            tags.get("observation_tag", "observation"): "tool",
            tags.get("function_tag", "function_call"): "assistant",
        }
    role = turn.get(role_tag)
    role = names.get(role, role)
    if role not in _ROLES:
        raise InvalidInput(
            _t(
                "turn role {role!r} (key {role_tag!r}) is unknown",
                role=turn.get(role_tag),
                role_tag=role_tag,
            ),
            _t(
                "Map it with tags (role_tag, user_tag, assistant_tag, "
                "system_tag) in dataset_info.json."
            ),
        )
    return _msg(str(role), turn.get(content_tag))


def _system(row: dict[str, Any], column: str) -> list[Message]:
    value = row.get(column)
    return [_msg("system", value)] if isinstance(value, str) and value else []


def _msg(role: str, content: Any) -> Message:
    if not isinstance(content, str):
        raise InvalidInput(
            _t("a {role} turn must be text", role=role), _t("got {content!r}", content=content)
        )
    return {"role": role, "content": content}


def _field(row: dict[str, Any], column: str) -> str:
    value = row.get(column)
    if not isinstance(value, str) or not value:
        raise InvalidInput(
            _t("column {column!r} is missing or empty", column=column),
            _t("The record has {columns}; map the columns in data.columns.", columns=sorted(row)),
        )
    return value


def load_prompt_set(path: Path, max_samples: int | None = None) -> list[dict[str, Any]]:
    """An evaluation's prompts: ``{"messages", "expected", "row"}`` each, the messages being
    what the model is asked (its answer is generated after them).

    A row is ``prompt`` (text or messages) + ``expected``, or a record of a fine-tune format
    (alpaca, sharegpt, OpenAI messages) whose last assistant turn is the expected answer."""
    rows = read_file(path)[:max_samples] if max_samples else read_file(path)
    out = []
    for i, row in enumerate(rows):
        try:
            if "expected" in row:
                prompt = row.get("prompt")
                if isinstance(prompt, str):
                    messages = [_msg("user", prompt)]
                elif isinstance(prompt, list) and prompt:
                    messages = [_turn(t, "openai", {}) for t in prompt]
                else:
                    raise InvalidInput(_t("prompt must be text or a list of messages"))
                expected = row["expected"]
            else:
                fmt = detect(row)
                if fmt not in ("alpaca", "sharegpt", "openai"):
                    raise InvalidInput(
                        _t("a {fmt} record is not a prompt", fmt=fmt),
                        _t(
                            "Give prompt + expected, or alpaca / sharegpt / OpenAI "
                            "messages records."
                        ),
                    )
                turns = convert(row, fmt, DataConfig(path=str(path), format=fmt))["messages"]
                messages, expected = turns[:-1], turns[-1]["content"]
        except InvalidInput as exc:
            raise InvalidInput(
                _t("{name} record {i}: {error}", name=path.name, i=i, error=exc.error), exc.detail
            ) from None
        if not isinstance(expected, str):
            raise InvalidInput(_t("{name} record {i}: expected must be text", name=path.name, i=i))
        out.append({"messages": messages, "expected": expected, "row": row})
    return out
