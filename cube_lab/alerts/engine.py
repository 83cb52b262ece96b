"""The alert engine: matches published events to a project's enabled rules and delivers them.

``enqueue`` only puts the event on a queue; worker threads (daemon, started on the first
event) read the object's record, find the rules of its project whose events match, build the
message (English, through ``_t``, with the link to the object's view) and send it with
``channels.deliver`` and its retries. Every delivery, sent or not, is a row of the rule's
delivery log (the newest ``KEEP`` are kept). Nothing here raises into a publisher: a failing
channel, a broken rule or a store error is logged.

A process that ends (the CLI after ``cube-lab train``) waits for queued deliveries at most
``EXIT_WAIT_S`` (``Workspace.close`` and an ``atexit`` hook call ``close``).
"""

from __future__ import annotations

import atexit
import fnmatch
import logging
import queue
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, select

from .. import lab_links
from ..locale.messages import Text, _t
from ..serialize import aware
from ..store import Store
from ..store.models import (
    AlertDelivery,
    AlertRule,
    PipelineRun,
    Project,
    TrainingJob,
    TuningExperiment,
)
from . import channels
from .events import STATUS_OUTCOME, Event

log = logging.getLogger("cube_lab.alerts")

KEEP = 100  # delivery log rows kept per rule
EXIT_WAIT_S = 15.0
WORKERS = 2
_MODELS: dict[str, Any] = {"job": TrainingJob, "run": PipelineRun, "experiment": TuningExperiment}
_ALIVE: weakref.WeakSet[AlertEngine] = weakref.WeakSet()


def title(event: str, name: str) -> Text:
    """The message's title for ``event`` of the object called ``name``."""
    titles: dict[str, Callable[[], Text]] = {
        "job.succeeded": lambda: _t("Training job {name} succeeded", name=name),
        "job.failed": lambda: _t("Training job {name} failed", name=name),
        "job.stopped": lambda: _t("Training job {name} was stopped", name=name),
        "job.duration": lambda: _t("Training job {name} ran past its time limit", name=name),
        "run.succeeded": lambda: _t("Pipeline run {name} succeeded", name=name),
        "run.failed": lambda: _t("Pipeline run {name} failed", name=name),
        "run.stopped": lambda: _t("Pipeline run {name} was cancelled", name=name),
        "run.duration": lambda: _t("Pipeline run {name} ran past its time limit", name=name),
        "experiment.succeeded": lambda: _t("Tuning experiment {name} finished", name=name),
        "experiment.failed": lambda: _t("Tuning experiment {name} failed", name=name),
        "experiment.stopped": lambda: _t("Tuning experiment {name} was stopped", name=name),
        "experiment.duration": lambda: _t(
            "Tuning experiment {name} ran past its time limit", name=name
        ),
        "deployment.unhealthy": lambda: _t("Deployment {name} is unhealthy", name=name),
        "deployment.error_rate": lambda: _t(
            "Deployment {name}: error rate past its threshold", name=name
        ),
        "deployment.p99": lambda: _t(
            "Deployment {name}: p99 latency past its threshold", name=name
        ),
        "rule.test": lambda: _t("Test message of alert rule {name}", name=name),
        "quota.usage": lambda: _t("Quota use of {name} past its threshold", name=name),
    }
    found = titles.get(event)
    return found() if found else _t("{event}: {name}", event=event, name=name)


def text(event: Event, limit_s: float | None = None) -> str:
    """The message's text: project, owner, status, duration, the error if any."""
    obj = event.object
    if event.name == "rule.test":
        return _t(
            "Alert rule {name} of project {project} can reach its channel.",
            name=obj.get("name") or "",
            project=event.project,
        )
    if event.name == "quota.usage":  # cube_lab/alerts/watch.py
        return _t(
            "Project {project} uses {used:g} of its {limit:g} {resource} quota ({percent:.0f} %), "
            "at or past the threshold of {threshold:g} %.",
            project=event.project,
            used=float(obj.get("used") or 0),
            limit=float(obj.get("limit") or 0),
            resource=obj.get("resource") or "",
            percent=float(obj.get("percent") or 0),
            threshold=float(obj.get("threshold_pct") or 0),
        )
    lines = [
        _t(
            "Project {project}, owner {owner}, status {status}.",
            project=event.project,
            owner=obj.get("owner") or "",
            status=obj.get("status") or "",
        )
    ]
    duration = obj.get("duration_s")
    window = obj.get("window")  # a deployment's measured window (cube_lab/alerts/watch.py)
    if window and event.name == "deployment.error_rate":
        lines.append(
            _t(
                "{errors:.0f} of {requests:.0f} requests failed ({rate:.1%}) in the last "
                "{seconds:.0f} s, past the threshold of {limit:.1%}.",
                errors=window["errors"],
                requests=window["requests"],
                rate=window["error_rate"],
                seconds=window["seconds"],
                limit=window["threshold"],
            )
        )
    elif window and event.name == "deployment.p99":
        lines.append(
            _t(
                "The p99 latency was {p99:.0f} ms over {requests:.0f} requests in the last "
                "{seconds:.0f} s, past the threshold of {limit:.0f} ms.",
                p99=window["p99_ms"],
                requests=window["requests"],
                seconds=window["seconds"],
                limit=window["threshold"],
            )
        )
    if duration is not None and limit_s is not None and obj.get("running"):
        lines.append(
            _t(
                "It has run {seconds:.0f} s so far, past the limit of {limit:.0f} s.",
                seconds=duration,
                limit=limit_s,
            )
        )
    elif duration is not None and limit_s is not None:
        lines.append(
            _t(
                "It ran {seconds:.0f} s, past the limit of {limit:.0f} s.",
                seconds=duration,
                limit=limit_s,
            )
        )
    elif duration is not None:
        lines.append(_t("It ran {seconds:.0f} s.", seconds=duration))
    if obj.get("error"):
        lines.append(_t("Error: {error}", error=str(obj["error"])[:500]))
    return "\n".join(lines)


def message(event: Event, limit_s: float | None = None) -> channels.Message:
    name = str(event.object.get("name") or event.object.get("id") or "")
    return channels.Message(
        event.name,
        str(title(event.name, name)),
        text(event, limit_s),
        event.link,
        event.project,
        event.object,
    )


def matches(rule: AlertRule, event: Event) -> bool:
    """Whether ``rule`` fires on ``event`` (a duration event: only past its limit)."""
    if not rule.enabled or not any(fnmatch.fnmatchcase(event.name, p) for p in rule.events):
        return False
    if event.name.endswith(".duration"):
        duration = event.object.get("duration_s")
        return rule.duration_s is not None and duration is not None and duration > rule.duration_s
    return True


def object_label(event: Event) -> str:
    return f"{event.object.get('kind', '')} {event.object.get('id', '')}".strip()[:255]


def record(store: Store, rule_id: int, event: str, label: str, out: channels.Outcome) -> None:
    """Write one delivery to the rule's log and drop what is past the newest ``KEEP``."""
    with store.write() as s:
        s.add(
            AlertDelivery(
                rule_id=rule_id,
                at=datetime.now(UTC),
                event=event,
                object=label,
                ok=out.ok,
                attempts=out.attempts,
                status=out.status,
                error=out.error[:2000],
            )
        )
        s.flush()
        oldest_kept = s.scalar(
            select(AlertDelivery.id)
            .where(AlertDelivery.rule_id == rule_id)
            .order_by(AlertDelivery.id.desc())
            .offset(KEEP - 1)
            .limit(1)
        )
        if oldest_kept is not None:
            s.execute(
                delete(AlertDelivery).where(
                    AlertDelivery.rule_id == rule_id, AlertDelivery.id < oldest_kept
                )
            )


def events_of(store: Store, kind: str, object_id: str) -> list[Event]:
    """The outcome and duration events of a finished record (none while it is active)."""
    model = _MODELS[kind]
    with store.read() as s:
        found = s.execute(
            select(model, Project.name)
            .join(Project, Project.id == model.project_id)
            .where(model.id == object_id)
        ).first()
        if found is None:
            return []
        row, project = found
        if row.finished_at is None:
            return []
        name = row.pipeline_name if kind == "run" else row.name
        duration = (
            (aware(row.finished_at) - aware(row.started_at)).total_seconds()
            if row.started_at
            else None
        )
        obj = {
            "kind": kind,
            "id": row.id,
            "name": name,
            "status": row.status,
            "owner": row.owner,
            "duration_s": duration,
            "error": row.error,
            "started_at": aware(row.started_at).isoformat() if row.started_at else None,
            "finished_at": aware(row.finished_at).isoformat(),
        }
        path = row.pipeline_path if kind == "run" else None
        if kind == "run" and (row.options or {}).get("alert_rules"):
            obj["alert_rules"] = list(row.options["alert_rules"])
    link = lab_links.link(kind, id=object_id, path=path) or ""
    out = []
    outcome = STATUS_OUTCOME.get(str(obj["status"]))
    if outcome:
        out.append(Event(f"{kind}.{outcome}", project, obj, link))
    if duration is not None:
        out.append(Event(f"{kind}.duration", project, obj, link))
    return out


def already_sent(store: Store, rule_id: int, event: str, label: str) -> bool:
    """Whether ``rule_id``'s log holds a sent ``event`` for the object ``label`` (a duration
    sent while the object ran is not sent again when it ends)."""
    with store.read() as s:
        return (
            s.scalar(
                select(AlertDelivery.id)
                .where(
                    AlertDelivery.rule_id == rule_id,
                    AlertDelivery.event == event,
                    AlertDelivery.object == label,
                    AlertDelivery.ok.is_(True),
                )
                .limit(1)
            )
            is not None
        )


@dataclass(frozen=True)
class Direct:
    """An event the watcher has already matched to one rule (``rule_id``): sent as it is."""

    rule_id: int
    event: Event


class AlertEngine:
    """Delivers the events of one store's projects; ``attempts`` and ``base_delay_s`` are
    ``channels.deliver``'s retries (1 s, 2 s, 4 s between four attempts by default)."""

    def __init__(self, store: Store, *, attempts: int = 4, base_delay_s: float = 1.0) -> None:
        self.store = store
        self.attempts = attempts
        self.base_delay_s = base_delay_s
        self._queue: queue.Queue[Any] = queue.Queue()
        self._pending = 0
        self._idle = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def enqueue(self, item: Event | Direct | tuple[str, str]) -> None:
        """Queue an ``Event``, a ``Direct`` one or a finished ``(kind, object id)``; never
        blocks."""
        if self._closed:
            return
        with self._idle:
            self._pending += 1
            if not self._threads:
                _ALIVE.add(self)
                for n in range(WORKERS):
                    t = threading.Thread(target=self._loop, name=f"cube-alerts-{n}", daemon=True)
                    t.start()
                    self._threads.append(t)
        self._queue.put(item)

    def drain(self, timeout_s: float = EXIT_WAIT_S) -> bool:
        """Wait until everything queued is delivered (or given up); False on timeout."""
        deadline = time.monotonic() + timeout_s
        with self._idle:
            while self._pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def close(self, timeout_s: float = EXIT_WAIT_S) -> None:
        """Deliver what is queued (at most ``timeout_s``), then stop the threads."""
        if self._closed:
            return
        if not self.drain(timeout_s):
            log.warning("cube-lab alerts: %d deliveries still pending at exit", self._pending)
        self._closed = True
        for _ in self._threads:
            self._queue.put(None)

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            try:
                if isinstance(item, Direct):
                    self._direct(item)
                    continue
                found = [item] if isinstance(item, Event) else events_of(self.store, *item)
                for event in found:
                    self._dispatch(event)
            except Exception:
                log.exception("cube-lab alerts: could not handle %r", item)
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()

    def _dispatch(self, event: Event) -> None:
        with self.store.read() as s:
            rules = list(
                s.scalars(
                    select(AlertRule)
                    .join(Project, Project.id == AlertRule.project_id)
                    .where(Project.name == event.project, AlertRule.enabled.is_(True))
                    .order_by(AlertRule.id)
                )
            )
            s.expunge_all()  # read after the session: keep the loaded values
        named = set(event.object.get("alert_rules") or ()) if event.name == "run.failed" else set()
        for rule in rules:
            if not matches(rule, event) and not (rule.name in named and rule.enabled):
                continue
            if event.name.endswith(".duration") and already_sent(
                self.store, rule.id, event.name, object_label(event)
            ):
                continue  # the watcher sent it while the object ran
            self.send(rule, event)

    def _direct(self, item: Direct) -> None:
        with self.store.read() as s:
            rule = s.get(AlertRule, item.rule_id)
            if rule is None or not rule.enabled:
                return  # deleted or disabled since the watcher looked
            s.expunge(rule)
        self.send(rule, item.event)

    def send(self, rule: AlertRule, event: Event, attempts: int | None = None) -> channels.Outcome:
        """Deliver ``event`` by ``rule``'s channel now (in this thread) and log it."""
        limit = rule.duration_s if event.name.endswith(".duration") else None
        try:
            out = channels.deliver(
                dict(rule.channel or {}),
                message(event, limit),
                attempts=attempts or self.attempts,
                base_delay_s=self.base_delay_s,
            )
        except Exception as exc:  # a channel the rule could not build a request for
            out = channels.Outcome(False, 1, None, f"{type(exc).__name__}: {exc}")
        if not out.ok:
            log.warning(
                "cube-lab alerts: rule %s (%s) failed after %d attempt(s): %s",
                rule.name,
                event.name,
                out.attempts,
                out.error,
            )
        try:
            record(self.store, rule.id, event.name, object_label(event), out)
        except Exception:
            log.exception("cube-lab alerts: could not write the delivery log of %s", rule.name)
        return out


@atexit.register
def _drain_all() -> None:
    for engine in list(_ALIVE):
        engine.close(EXIT_WAIT_S)
