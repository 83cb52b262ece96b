"""`cube-lab chat list|export`: a project's chat conversations (cube_lab/chat/), as
``/chat/conversations`` and ``/chat/exports`` have them over REST (docs/chat.md).

``export --dataset NAME [--conversation ID ...]`` writes the feedback given in the Chat panel
as a new version of dataset NAME: ``prompt`` / ``chosen`` / ``rejected`` records that a DPO
fine-tune reads with ``data: {dataset: NAME:VERSION}``. Under the hub the same commands go
to the cube-lab service (``REMOTE``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..identity import Caller
from ..serialize import to_jsonable
from .args import print_json, print_table

if TYPE_CHECKING:
    from ..rest_client import ServiceClient
    from ..workspace import Workspace


def _export_body(a: argparse.Namespace, project: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"project": project, "dataset": a.dataset}
    if a.conversation:
        body["conversation_ids"] = a.conversation
    return body


def _show_list(a: argparse.Namespace, found: list[dict[str, Any]]) -> None:
    if a.json:
        print_json(found)
        return
    if not found:
        print("No conversations yet: start one in the Chat panel")
        return
    print_table(
        [
            [
                str(c["id"]),
                c["title"] or "-",
                c["target"].get("deployment") or c["target"].get("base_url", ""),
                str(c["message_count"]),
                str(c["updated_at"])[:16].replace("T", " "),
            ]
            for c in found
        ],
        ["ID", "TITLE", "TARGET", "MESSAGES", "UPDATED"],
    )


def _show_export(a: argparse.Namespace, out: dict[str, Any]) -> None:
    if a.json:
        print_json(out)
        return
    skipped = ", ".join(f"{k} {v}" for k, v in out["skipped"].items())
    print(
        f"dataset {out['ref']} in project {out['project']}: {out['pairs']} preference pair(s) "
        f"from {out['conversations']} conversation(s); skipped turns: {skipped}"
    )
    print(f"  fine-tune with: data: {{dataset: {out['ref']}}} (method: dpo)")


def chat_list(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    _show_list(a, to_jsonable(ws.chat.list(caller, a.project)))


def chat_export(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    _show_export(a, to_jsonable(ws.chat.export(caller, _export_body(a, a.project))))


# -- under the hub: the cube-lab service's, over REST ---------------------------------------


def remote_list(client: ServiceClient, a: argparse.Namespace) -> None:
    from .remote.common import project_of

    found = client.get("chat/conversations", project=project_of(client, a))
    _show_list(a, found["conversations"])


def remote_export(client: ServiceClient, a: argparse.Namespace) -> None:
    from .remote.common import project_of

    _show_export(a, client.post("chat/exports", _export_body(a, project_of(client, a))))


REMOTE: dict[str, Callable[[Any, argparse.Namespace], None]] = {
    "chat_list": remote_list,
    "chat_export": remote_export,
}


def add_commands(groups: Any, command: Callable[..., Any]) -> None:
    chat = groups.add_parser("chat", help="chat conversations and their feedback").add_subparsers(
        dest="command", required=True
    )
    command(chat, "list", chat_list, "list your conversations in the project")
    p = command(
        chat,
        "export",
        chat_export,
        "write the feedback as preference data (prompt/chosen/rejected): a dataset version",
    )
    p.add_argument("--dataset", required=True, help="the dataset to add the version to")
    p.add_argument(
        "--conversation",
        type=int,
        action="append",
        metavar="ID",
        help="only this conversation (repeat it; default: all of yours in the project)",
    )
