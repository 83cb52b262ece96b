"""Chat conversations as a service: a user's conversations in a project, their messages,
feedback, and what a send needs (the target's URL and headers, the context to send).

A conversation is seen by its owner only, and only while they are a member of its project:
anyone else gets the same ``NotFound`` as for an id that does not exist. The streaming itself
(``relay.py``) runs in the server's event loop; this module does the blocking store work it
needs before and after (``plan_send``, ``save_user``, ``save_answer``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from ..errors import Conflict, InvalidInput, NotFound
from ..identity import Caller
from ..locale.messages import _t
from ..projects import ProjectService
from ..store import Store
from ..store.models import ChatConversation, ChatMessage, Project
from . import endpoint
from .params import MASK, check_params, check_target, check_text, check_title

if TYPE_CHECKING:
    from ..labeling.dataset_service import DatasetService
    from ..serving.service import DeploymentService

CREATE_FIELDS = {"project", "title", "target", "system", "params"}
PATCH_FIELDS = {"title", "target", "system", "params"}
SEND_FIELDS = {"content", "params", "regenerate"}
FEEDBACK_FIELDS = {"rating", "edited"}
TITLE_FROM_MESSAGE = 60


def check_fields(body: dict[str, Any], known: set[str]) -> None:
    unknown = sorted(set(body) - known)
    if unknown:
        raise InvalidInput(
            _t("unknown fields {unknown}", unknown=unknown),
            _t("Known: {value}", value=", ".join(sorted(known))),
        )


@dataclass(frozen=True)
class MessageView:
    id: int
    role: str
    content: str
    turn: int
    active: bool
    status: str
    error: str | None
    rating: str | None
    edited: str | None
    params: dict[str, Any]
    usage: dict[str, Any] | None
    model: str
    created_at: datetime

    @classmethod
    def of(cls, row: ChatMessage) -> MessageView:
        return cls(
            row.id,
            row.role,
            row.content,
            row.turn,
            row.active,
            row.status,
            row.error,
            row.rating,
            row.edited,
            dict(row.params or {}),
            dict(row.usage) if row.usage else None,
            row.model,
            row.created_at,
        )


@dataclass(frozen=True)
class ConversationView:
    id: int
    project: str
    owner: str
    title: str
    target: dict[str, Any]  # an external target's api_key shows as "***"
    system: str
    params: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    message_count: int
    messages: list[MessageView] | None = None

    @classmethod
    def of(
        cls,
        row: ChatConversation,
        project: str,
        count: int,
        messages: list[ChatMessage] | None = None,
    ) -> ConversationView:
        target = dict(row.target or {})
        if row.api_key:
            target["api_key"] = MASK
        return cls(
            row.id,
            project,
            row.owner,
            row.title,
            target,
            row.system,
            dict(row.params or {}),
            row.created_at,
            row.updated_at,
            count,
            None if messages is None else [MessageView.of(m) for m in messages],
        )


@dataclass
class SendPlan:
    """What one send needs: where to, with what, and what to save afterwards."""

    conversation_id: int
    owner: str
    turn: int
    url: str
    headers: dict[str, str] = field(repr=False)
    payload: dict[str, Any]
    params: dict[str, Any]
    model: str
    content: str | None  # the user's message to save; None on regenerate
    regenerate: int | None = None


def _now() -> datetime:
    return datetime.now(UTC)


def _answer_text(m: ChatMessage) -> str:
    return m.edited if m.edited is not None else m.content


class ChatService:
    def __init__(
        self,
        store: Store,
        projects: ProjectService,
        serving: DeploymentService,
        datasets: Callable[[], DatasetService],
        data_dir: Path,
    ) -> None:
        self.store = store
        self.projects = projects
        self.serving = serving
        self._datasets = datasets
        self.data_dir = Path(data_dir)
        self._streaming: set[int] = set()
        self._lock = threading.Lock()

    # -- lookups -----------------------------------------------------------------------

    def _conversation(
        self, s: Session, caller: Caller, conversation_id: object
    ) -> tuple[ChatConversation, Project]:
        row = None
        if isinstance(conversation_id, int) or (
            isinstance(conversation_id, str) and conversation_id.isdigit()
        ):
            number = int(conversation_id)
            row = s.get(ChatConversation, number) if 0 < number < 2**63 else None
        project = row and s.get(Project, row.project_id)
        member = project and any(m.username == caller.username for m in project.members)
        if row is None or project is None or row.owner != caller.username or not member:
            raise NotFound(
                _t("conversation {id} not found", id=conversation_id),
                _t("GET /cube/api/v1/chat/conversations?project=P lists yours."),
            )
        return row, project

    @staticmethod
    def _messages(s: Session, conversation_id: int) -> list[ChatMessage]:
        return list(
            s.scalars(
                select(ChatMessage)
                .where(ChatMessage.conversation_id == conversation_id)
                .order_by(ChatMessage.turn, ChatMessage.id)
            )
        )

    @staticmethod
    def _count(s: Session, conversation_id: int) -> int:
        return int(
            s.scalar(
                select(func.count(ChatMessage.id)).where(
                    ChatMessage.conversation_id == conversation_id
                )
            )
            or 0
        )

    def _message(self, s: Session, row: ChatConversation, message_id: object) -> ChatMessage:
        found = None
        if isinstance(message_id, int) or (isinstance(message_id, str) and message_id.isdigit()):
            number = int(message_id)
            found = s.get(ChatMessage, number) if 0 < number < 2**63 else None
        if found is None or found.conversation_id != row.id:
            raise NotFound(
                _t("message {mid} not found in conversation {id}", mid=message_id, id=row.id),
                _t("GET /cube/api/v1/chat/conversations/{id} lists its messages.", id=row.id),
            )
        return found

    def _check_target(self, caller: Caller, project: str, target: dict[str, Any]) -> None:
        """A deployment that serves a language model (404 for another's), or a URL this
        server may call."""
        if "deployment" in target:
            endpoint.llm_deployment(self.serving, caller, project, target["deployment"])
        else:
            endpoint.check_outbound(target["base_url"])

    # -- conversations -----------------------------------------------------------------

    def list(self, caller: Caller, project: str | None) -> list[ConversationView]:
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            project_row = self.projects.resolve(s, caller, project)
            rows = s.scalars(
                select(ChatConversation)
                .where(
                    ChatConversation.project_id == project_row.id,
                    ChatConversation.owner == caller.username,
                )
                .order_by(ChatConversation.updated_at.desc(), ChatConversation.id.desc())
            ).all()
            counts = dict(
                s.execute(
                    select(ChatMessage.conversation_id, func.count(ChatMessage.id))
                    .where(ChatMessage.conversation_id.in_([r.id for r in rows]))
                    .group_by(ChatMessage.conversation_id)
                ).all()
            )
            return [ConversationView.of(r, project_row.name, counts.get(r.id, 0)) for r in rows]

    def create(self, caller: Caller, body: dict[str, Any]) -> ConversationView:
        check_fields(body, CREATE_FIELDS)
        if body.get("target") is None:
            raise InvalidInput(
                _t("target is required"),
                _t('e.g. {{"project": "P", "target": {{"deployment": "my-llm"}}}}'),
            )
        target, key = check_target(body["target"])
        if key == MASK:
            raise InvalidInput(_t("target.api_key: give the key itself, not {mask}", mask=MASK))
        title = check_title(body.get("title"))
        system = check_text("system", body.get("system"))
        params = check_params(body.get("params"))
        project = body.get("project")
        if project is not None and not isinstance(project, str):
            raise InvalidInput(_t("project must be a project's name"))
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            project_name = self.projects.resolve(s, caller, project).name
        self._check_target(caller, project_name, target)
        with self.store.write() as s:
            project_row = self.projects.resolve(s, caller, project_name)
            row = ChatConversation(
                project_id=project_row.id,
                owner=caller.username,
                title=title,
                target=target,
                api_key=key,
                system=system,
                params=params,
            )
            s.add(row)
            s.flush()
            return ConversationView.of(row, project_row.name, 0)

    def get(self, caller: Caller, conversation_id: object) -> ConversationView:
        with self.store.read() as s:
            row, project = self._conversation(s, caller, conversation_id)
            messages = self._messages(s, row.id)
            return ConversationView.of(row, project.name, len(messages), messages)

    def update(
        self, caller: Caller, conversation_id: object, body: dict[str, Any]
    ) -> ConversationView:
        check_fields(body, PATCH_FIELDS)
        changes: dict[str, Any] = {}
        if "title" in body:
            changes["title"] = check_title(body["title"])
        if "system" in body:
            changes["system"] = check_text("system", body["system"])
        if "params" in body:
            changes["params"] = check_params(body["params"])
        target = key = None
        if "target" in body:
            target, key = check_target(body["target"])
        with self.store.read() as s:
            row, project = self._conversation(s, caller, conversation_id)
            project_name, old_key = project.name, row.api_key
        if target is not None:
            self._check_target(caller, project_name, target)
            if "deployment" in target:
                key = None
            elif key == MASK:
                key = old_key  # sent back as a view showed it: keep the stored one
            changes["target"], changes["api_key"] = target, key
        with self.store.write() as s:
            row, project = self._conversation(s, caller, conversation_id)
            for name, value in changes.items():
                setattr(row, name, value)
            row.updated_at = _now()
            s.flush()
            return ConversationView.of(row, project.name, self._count(s, row.id))

    def delete(self, caller: Caller, conversation_id: object) -> None:
        with self.store.write() as s:
            row, _ = self._conversation(s, caller, conversation_id)
            s.execute(delete(ChatMessage).where(ChatMessage.conversation_id == row.id))
            s.delete(row)

    # -- feedback ----------------------------------------------------------------------

    def feedback(
        self, caller: Caller, conversation_id: object, message_id: object, body: dict[str, Any]
    ) -> MessageView:
        check_fields(body, FEEDBACK_FIELDS)
        if not body:
            raise InvalidInput(
                _t("give rating and/or edited"),
                _t('e.g. {{"rating": "up"}} or {{"edited": "the better answer"}}'),
            )
        rating = body.get("rating")
        if "rating" in body and rating not in ("up", "down", None):
            raise InvalidInput(
                _t("rating must be up, down or null"), _t("got {value!r}", value=rating)
            )
        edited = body.get("edited")
        if "edited" in body and edited is not None:
            edited = check_text("edited", edited, required=True)
        with self.store.write() as s:
            row, _ = self._conversation(s, caller, conversation_id)
            message = self._message(s, row, message_id)
            if message.role != "assistant":
                raise InvalidInput(
                    _t(
                        "feedback is for the model's answers; message {mid} is the user's",
                        mid=message.id,
                    ),
                )
            if "rating" in body:
                message.rating = rating
            if "edited" in body:
                message.edited = edited
            row.updated_at = _now()
            s.flush()
            return MessageView.of(message)

    def activate(
        self, caller: Caller, conversation_id: object, message_id: object
    ) -> ConversationView:
        """Show another answer of its turn (an alternative a regenerate kept)."""
        with self.store.write() as s:
            row, project = self._conversation(s, caller, conversation_id)
            message = self._message(s, row, message_id)
            if message.role != "assistant":
                raise InvalidInput(
                    _t(
                        "only an answer can be shown instead of another; message {mid} is the "
                        "user's",
                        mid=message.id,
                    )
                )
            for other in self._messages(s, row.id):
                if other.role == "assistant" and other.turn == message.turn:
                    other.active = other.id == message.id
            row.updated_at = _now()
            s.flush()
            messages = self._messages(s, row.id)
            return ConversationView.of(row, project.name, len(messages), messages)

    # -- sending -----------------------------------------------------------------------

    def plan_send(self, caller: Caller, conversation_id: object, body: dict[str, Any]) -> SendPlan:
        """Check a send and claim the conversation for it (``release`` gives it back)."""
        check_fields(body, SEND_FIELDS)
        regenerate = body.get("regenerate")
        content = None
        if regenerate is None:
            content = check_text("content", body.get("content"), required=True)
        elif "content" in body:
            raise InvalidInput(
                _t("give content (a new message) or regenerate (an answer to redo), not both")
            )
        elif isinstance(regenerate, bool) or not isinstance(regenerate, int):
            raise InvalidInput(
                _t("regenerate must be the id of an answer"),
                _t("got {value!r}", value=regenerate),
            )
        overrides = check_params(body.get("params"))
        with self.store.read() as s:
            row, project = self._conversation(s, caller, conversation_id)
            messages = self._messages(s, row.id)
            target, api_key, project_name = dict(row.target), row.api_key, project.name
            system, params = row.system, {**(row.params or {}), **overrides}
            conv_id = row.id
            last_turn = max((m.turn for m in messages), default=-1)
            if regenerate is not None:
                redo = next((m for m in messages if m.id == regenerate), None)
                if redo is None:
                    raise NotFound(
                        _t(
                            "message {mid} not found in conversation {id}",
                            mid=regenerate,
                            id=row.id,
                        )
                    )
                if redo.role != "assistant" or redo.turn != last_turn:
                    raise InvalidInput(
                        _t("only an answer of the last turn can be regenerated"),
                        _t("Message {mid} is not one.", mid=regenerate),
                    )
                turn = last_turn
                asked = next(m for m in messages if m.role == "user" and m.turn == turn)
                question = asked.content
            else:
                turn = last_turn + 1
                question = content or ""
            history: list[dict[str, str]] = (
                [{"role": "system", "content": system}] if system else []
            )
            for t in range(turn):
                user = next((m for m in messages if m.turn == t and m.role == "user"), None)
                answer = next(
                    (m for m in messages if m.turn == t and m.role == "assistant" and m.active),
                    None,
                )
                if user is None:
                    continue
                history.append({"role": "user", "content": user.content})
                if answer is not None and _answer_text(answer):
                    history.append({"role": "assistant", "content": _answer_text(answer)})
            history.append({"role": "user", "content": question})
        found = endpoint.resolve(self.serving, caller, project_name, target, api_key)
        url, headers, model = f"{found.base_url}/chat/completions", found.headers, found.model
        if found.api_key:
            headers = {**headers, "Authorization": f"Bearer {found.api_key}"}
        payload = {
            "model": model,
            "messages": history,
            "stream": True,
            "stream_options": {"include_usage": True},
            **params,
        }
        with self._lock:
            if conv_id in self._streaming:
                raise Conflict(
                    _t("conversation {id} is answering already", id=conv_id),
                    _t("Wait for the answer, or stop it, before sending again."),
                )
            self._streaming.add(conv_id)
        return SendPlan(
            conv_id,
            caller.username,
            turn,
            url,
            headers,
            payload,
            overrides,
            model,
            content,
            regenerate,
        )

    def release(self, plan: SendPlan) -> None:
        with self._lock:
            self._streaming.discard(plan.conversation_id)

    def save_user(self, caller: Caller, plan: SendPlan) -> MessageView | None:
        """The user's message, saved once the target took the request (None on regenerate)."""
        if plan.content is None:
            return None
        with self.store.write() as s:
            row, _ = self._conversation(s, caller, plan.conversation_id)
            message = ChatMessage(
                conversation_id=row.id,
                turn=plan.turn,
                role="user",
                content=plan.content,
                active=True,
                status="complete",
                params={},
                model="",
            )
            s.add(message)
            if not row.title:
                first = " ".join(plan.content.split())
                row.title = (
                    first
                    if len(first) <= TITLE_FROM_MESSAGE
                    else first[: TITLE_FROM_MESSAGE - 1] + "…"
                )
            row.updated_at = _now()
            s.flush()
            return MessageView.of(message)

    def save_answer(
        self,
        caller: Caller,
        plan: SendPlan,
        text: str,
        status: str,
        usage: dict[str, Any] | None,
        error: str | None = None,
    ) -> MessageView:
        """The answer as it came (whole, stopped or broken off); it becomes its turn's
        active one, the turn's earlier answers stay as alternatives."""
        with self.store.write() as s:
            row, _ = self._conversation(s, caller, plan.conversation_id)
            for other in s.scalars(
                select(ChatMessage).where(
                    ChatMessage.conversation_id == row.id,
                    ChatMessage.turn == plan.turn,
                    ChatMessage.role == "assistant",
                )
            ):
                other.active = False
            message = ChatMessage(
                conversation_id=row.id,
                turn=plan.turn,
                role="assistant",
                content=text,
                active=True,
                status=status,
                error=error,
                params=plan.params,
                usage=usage,
                model=plan.model,
            )
            s.add(message)
            row.updated_at = _now()
            s.flush()
            return MessageView.of(message)

    # -- targets -----------------------------------------------------------------------

    def targets(self, caller: Caller, project: str | None) -> list[dict[str, Any]]:
        """The project's running LLM deployments (``models`` is filled by the caller that
        can ask each one: ``relay.list_models``)."""
        views = self.serving.list(caller, project=project)
        return [
            {
                "deployment": v.name,
                "project": v.project,
                "model": v.model,
                "version": v.version,
                "runtime": v.runtime,
                "status": v.status,
                "endpoint": v.endpoint,
                "models": [v.model],
            }
            for v in views
            if v.runtime == "llm" and v.status == "running" and v.endpoint
        ]

    def router_token(self, caller: Caller, name: str, project: str) -> str:
        return self.serving.router_token(caller, name, project)

    # -- preference export -------------------------------------------------------------

    def export(self, caller: Caller, body: dict[str, Any]) -> dict[str, Any]:
        """Feedback as a new dataset version of preference pairs (``preferences.py``)."""
        from .preferences import export

        return export(self, self._datasets(), caller, body, self.data_dir)
