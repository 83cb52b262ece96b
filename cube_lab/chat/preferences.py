"""Chat feedback as preference data: ``prompt`` / ``chosen`` / ``rejected`` records written
as a new version of a dataset, which the DPO fine-tune reads as it is
(``data: {dataset: NAME:VERSION}``; cube_lab/finetune/data.py's ``preference`` format).

Per turn (docs/chat.md):

1. an answer with ``edited`` text: the edited text over the original answer;
2. a thumbs-up answer over every other answer of the turn that is not thumbs-up;
3. no thumbs-up in the turn: the active answer over a thumbs-down one, when the active one
   is another, complete answer, not thumbs-down;
4. anything else gives no pair (counted as ``no_preference``).

A stopped or broken-off answer is never ``chosen`` (counted as ``stopped``).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from ..errors import InvalidInput, NotFound
from ..identity import Caller, check_name
from ..locale.messages import _t
from ..store.models import ChatConversation, ChatMessage, Dataset
from .service import ChatService, check_fields

if TYPE_CHECKING:
    from ..labeling.dataset_service import DatasetService

EXPORT_FIELDS = {"project", "dataset", "conversation_ids"}
FILE_NAME = "preferences.jsonl"


@dataclass
class Counts:
    pairs: int = 0
    conversations: int = 0
    skipped: dict[str, int] = field(default_factory=lambda: {"no_preference": 0, "stopped": 0})


def _text(m: ChatMessage) -> str:
    return m.content


def turn_pairs(answers: list[ChatMessage], counts: Counts) -> list[tuple[str, str]]:
    """(chosen, rejected) texts of one turn's answers (oldest first)."""
    pairs: list[tuple[str, str]] = []
    usable = [a for a in answers if a.status == "complete" and a.content]
    for a in answers:
        if a.edited and a.edited != a.content and a.content:
            pairs.append((a.edited, a.content))
    ups = [a for a in usable if a.rating == "up"]
    if ups:
        for up in ups:
            for other in answers:
                if other.id != up.id and other.rating != "up" and other.content:
                    pairs.append((up.edited or up.content, other.content))
    stopped = False
    if not ups:
        active = next((a for a in answers if a.active), None)
        for down in answers:
            if down.rating != "down" or not down.content or active is None or active.id == down.id:
                continue
            if active.status != "complete":
                stopped = True  # the answer kept instead is a stopped one: never chosen
            elif active.rating != "down" and active.content:
                pairs.append((active.edited or active.content, down.content))
    if not pairs:
        if stopped or (any(a.status != "complete" for a in answers) and not usable):
            counts.skipped["stopped"] += 1
        else:
            counts.skipped["no_preference"] += 1
    seen: set[tuple[str, str]] = set()
    unique = []
    for pair in pairs:
        if pair not in seen and pair[0] != pair[1]:
            seen.add(pair)
            unique.append(pair)
    return unique


def build_records(
    conversation: ChatConversation, messages: list[ChatMessage], counts: Counts
) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    prompt: list[dict[str, str]] = (
        [{"role": "system", "content": conversation.system}] if conversation.system else []
    )
    turns = sorted({m.turn for m in messages})
    for turn in turns:
        user = next((m for m in messages if m.turn == turn and m.role == "user"), None)
        answers = [m for m in messages if m.turn == turn and m.role == "assistant"]
        if user is None:
            continue
        prompt = [*prompt, {"role": "user", "content": user.content}]
        if answers:
            for chosen, rejected in turn_pairs(answers, counts):
                records.append(
                    {
                        "prompt": prompt,
                        "chosen": chosen,
                        "rejected": rejected,
                        "conversation_id": conversation.id,
                        "turn": turn,
                    }
                )
        active = next((a for a in answers if a.active), None)
        if active is not None and (active.edited or active.content):
            prompt = [*prompt, {"role": "assistant", "content": active.edited or active.content}]
    return records


def export(
    chat: ChatService,
    datasets: DatasetService,
    caller: Caller,
    body: dict[str, Any],
    staging_root: Path,
) -> dict[str, Any]:
    check_fields(body, EXPORT_FIELDS)
    name = check_name(body.get("dataset"), "dataset name")
    project = body.get("project")
    if project is not None and not isinstance(project, str):
        raise InvalidInput(_t("project must be a project's name"))
    wanted = body.get("conversation_ids")
    if wanted is not None and (
        not isinstance(wanted, list)
        or not all(isinstance(i, int) and not isinstance(i, bool) for i in wanted)
    ):
        raise InvalidInput(
            _t("conversation_ids must be a list of conversation ids"),
            _t("got {value!r}", value=wanted),
        )
    counts = Counts()
    records: list[dict[str, Any]] = []
    chat.projects.ensure_personal(caller)
    with chat.store.read() as s:
        project_row = chat.projects.resolve(s, caller, project)
        query = select(ChatConversation).where(
            ChatConversation.project_id == project_row.id,
            ChatConversation.owner == caller.username,
        )
        rows = {r.id: r for r in s.scalars(query.order_by(ChatConversation.id))}
        if wanted is not None:
            missing = [i for i in wanted if i not in rows]
            if missing:
                raise NotFound(
                    _t(
                        "conversations {ids} not found in project {project!r}",
                        ids=missing,
                        project=project_row.name,
                    ),
                    _t("GET /cube/api/v1/chat/conversations?project=P lists yours."),
                )
            rows = {i: rows[i] for i in wanted}
        for row in rows.values():
            found = build_records(row, chat._messages(s, row.id), counts)
            if found:
                counts.conversations += 1
            records += found
        project_name = project_row.name
        dataset = s.scalars(
            select(Dataset).where(Dataset.project_id == project_row.id, Dataset.name == name)
        ).first()
        dataset_id = dataset.id if dataset is not None else None
        if dataset is not None and dataset.kind != "texts":
            raise InvalidInput(
                _t(
                    "dataset {name!r} holds {kind}, not texts: preference pairs cannot be a "
                    "version of it",
                    name=name,
                    kind=dataset.kind,
                ),
                _t("Choose another dataset name."),
            )
    counts.pairs = len(records)
    if not records:
        raise InvalidInput(
            _t("no preference pairs to export"),
            _t(
                "Rate answers (thumbs up / down), edit an answer, or regenerate one and rate "
                "it; skipped turns: {skipped}",
                skipped=counts.skipped,
            ),
        )
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    if dataset_id is None:
        # a new dataset's source is this first export (its items: the chosen answers)
        sources = staging_root / "chat-exports"
        sources.mkdir(parents=True, exist_ok=True)
        source = sources / f"{name}-{uuid.uuid4().hex[:12]}.jsonl"
        source.write_text(text, encoding="utf-8")
        view = datasets.create(
            caller, name, source, project=project_name, kind="texts", text_field="chosen"
        )
        dataset_id = view.id

    def write(folder: Path) -> str:
        (folder / FILE_NAME).write_text(text, encoding="utf-8")
        return FILE_NAME

    version = datasets.add_version(caller, dataset_id, "jsonl", "chat", len(records), write)
    return {
        "project": project_name,
        "dataset": name,
        "version": version.version,
        "ref": f"{name}:{version.version}",
        "path": str(Path(version.path)),
        "pairs": counts.pairs,
        "conversations": counts.conversations,
        "skipped": counts.skipped,
    }


__all__ = ["build_records", "export", "turn_pairs"]
