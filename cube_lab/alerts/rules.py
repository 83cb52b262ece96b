"""Alert rules as a service: create, list, get, update, delete, test a project's rules, and
read a rule's delivery log.

A rule belongs to a project and is seen and changed by that project's members only (a rule
of a project the caller is not a member of is the same ``NotFound`` as a project that does
not exist: ``ProjectService.resolve``). A rule is::

    {"name", "events": ["job.failed", "*.duration", ...], "duration_s": 3600,
     "threshold": 0.05, "channel": {"type": "webhook", "url": ...}, "enabled": true}

``threshold`` is the limit of the one threshold event a rule names: ``deployment.error_rate``
(a fraction of the requests, 0 to 1) or ``deployment.p99`` (milliseconds).

The channel's secret fields (``url`` with its token, ``secret``, ``password``) are stored in
the rule's row and never answered: every view carries ``channels.masked(channel)``. An
update that sends a masked value back (a client that edits what GET gave it) keeps the
stored one.
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from .. import lab_links, outbound
from ..errors import Conflict, InvalidInput, NotFound
from ..identity import Caller
from ..locale.messages import _t
from ..projects import ProjectService
from ..store import Store
from ..store.models import AlertDelivery, AlertRule, Project
from . import channels
from .events import EVENTS, QUOTA_EVENT, THRESHOLD_EVENTS, Event

if TYPE_CHECKING:
    from .engine import AlertEngine

HTTP_FIELDS: dict[str, type] = {"type": str, "url": str, "secret": str}
EMAIL_FIELDS: dict[str, type] = {
    "type": str,
    "host": str,
    "port": int,
    "sender": str,
    "to": list,
    "starttls": bool,
    "username": str,
    "password": str,
}
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
FIELDS = {
    "name", "events", "duration_s", "threshold", "threshold_pct", "resource", "channel", "enabled"
}  # fmt: skip
# quota.usage's resources: a plain quota dimension, any accelerator (gpus), or any dimension
QUOTA_RESOURCES = ("any", "gpus", "gpu_hours", "cpu", "memory", "servers", "jobs")
_RESOURCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}\Z")
TEST_EVENT = "rule.test"


@dataclass(frozen=True)
class RuleView:
    name: str
    project: str
    owner: str
    events: list[str]
    duration_s: float | None
    threshold: float | None  # error_rate: a fraction; p99: ms; quota.usage: percent
    resource: str | None  # quota.usage: the quota dimension watched
    channel: dict[str, Any]  # masked
    enabled: bool
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, rule: AlertRule, project: str) -> RuleView:
        return cls(
            rule.name,
            project,
            rule.owner,
            list(rule.events or []),
            rule.duration_s,
            rule.threshold,
            rule.resource,
            channels.masked(dict(rule.channel or {})),
            rule.enabled,
            rule.created_at,
            rule.updated_at,
        )


@dataclass(frozen=True)
class DeliveryView:
    at: datetime
    event: str
    object: str
    ok: bool
    attempts: int
    status: int | None
    error: str

    @classmethod
    def of(cls, row: AlertDelivery) -> DeliveryView:
        return cls(row.at, row.event, row.object, row.ok, row.attempts, row.status, row.error)


def check_name(name: object) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise InvalidInput(
            _t("invalid alert rule name {name!r}", name=name),
            _t("Use 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit."),
        )
    return name


def check_events(events: object) -> list[str]:
    if not isinstance(events, list) or not events or len(events) > 32:
        raise InvalidInput(
            _t("events must be a non-empty list (at most 32)"),
            _t("Known events: {events}", events=", ".join(EVENTS)),
        )
    for pattern in events:
        if not isinstance(pattern, str) or not fnmatch.filter(EVENTS, pattern):
            raise InvalidInput(
                _t("event {pattern!r} matches no known event", pattern=pattern),
                _t("Known events: {events}", events=", ".join(EVENTS)),
            )
    return list(dict.fromkeys(events))


def check_duration(value: object, events: list[str]) -> float | None:
    # a pattern that names durations (``*.duration``) needs a limit; a broad one (``job.*``)
    # without a limit matches the outcomes only
    wants = any(p.endswith(".duration") for p in events)
    if value is None:
        if wants:
            raise InvalidInput(
                _t("a rule on a duration event needs duration_s"),
                _t('Give the limit in seconds, e.g. "duration_s": 3600.'),
            )
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(
            _t("duration_s must be a number of seconds"), _t("got {value!r}", value=value)
        )
    if value <= 0:
        raise InvalidInput(_t("duration_s must be more than 0"), _t("got {value!r}", value=value))
    return float(value)


def check_threshold(value: object, events: list[str]) -> float | None:
    """The limit of the one threshold event the rule's patterns name (a broad pattern like
    ``deployment.*`` without a threshold matches the other deployment events only)."""
    named = sorted({e for p in events for e in fnmatch.filter(THRESHOLD_EVENTS, p)})
    if value is None:
        if any(p in THRESHOLD_EVENTS for p in events):
            raise InvalidInput(
                _t("a rule on {events} needs a threshold", events=", ".join(named)),
                _t(
                    'Give "threshold": a fraction of the requests for deployment.error_rate '
                    "(e.g. 0.05), milliseconds for deployment.p99 (e.g. 500)."
                ),
            )
        return None
    if len(named) != 1:
        raise InvalidInput(
            _t("a threshold needs exactly one threshold event, got {events}", events=named),
            _t("Make one rule for deployment.error_rate and another for deployment.p99."),
        )
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(_t("threshold must be a number"), _t("got {value!r}", value=value))
    if value <= 0 or (named[0] == "deployment.error_rate" and value > 1):
        raise InvalidInput(
            _t("threshold {value!r} is out of range for {event}", value=value, event=named[0]),
            _t(
                "deployment.error_rate takes a fraction above 0 and at most 1 (0.05 is 5 %); "
                "deployment.p99 takes milliseconds above 0."
            ),
        )
    return float(value)


def _quota_threshold(data: dict[str, Any], old: float | None = None) -> float | None:
    """``threshold_pct`` (or ``threshold``) of a ``quota.usage`` rule: a percentage of the
    quota above 0 and at most 1000 (past 100: use beyond the limit, where the hub lets it)."""
    value = data.get("threshold_pct", data.get("threshold", old))
    if value is None:
        raise InvalidInput(
            _t("a rule on quota.usage needs a threshold"),
            _t('Give "threshold_pct": the percentage of the quota, e.g. 80.'),
        )
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(_t("threshold must be a number"), _t("got {value!r}", value=value))
    if not 0 < value <= 1000:
        raise InvalidInput(
            _t("threshold {value!r} is out of range for {event}", value=value, event=QUOTA_EVENT),
            _t("quota.usage takes a percentage of the quota above 0 and at most 1000."),
        )
    return float(value)


def check_resource(value: object) -> str:
    """The quota dimension of a ``quota.usage`` rule (``any`` when not given)."""
    if value is None:
        return "any"
    if not isinstance(value, str) or not (value in QUOTA_RESOURCES or _RESOURCE_NAME.match(value)):
        raise InvalidInput(
            _t("resource {value!r} is not a quota dimension", value=value),
            _t(
                "Known: {value}, or an accelerator resource name such as nvidia.com/gpu",
                value=", ".join(QUOTA_RESOURCES),
            ),
        )
    return value


def check_limits(
    data: dict[str, Any], events: list[str], old_threshold: float | None = None,
    old_resource: str | None = None,
) -> tuple[float | None, str | None]:  # fmt: skip
    """The rule's ``threshold`` and ``resource``: a quota.usage rule's percentage and
    dimension, else a deployment threshold (``check_threshold``) and no resource."""
    if QUOTA_EVENT not in events:  # a broad pattern ("*") does not hear quota.usage
        if "threshold_pct" in data or "resource" in data:
            raise InvalidInput(
                _t("threshold_pct and resource belong to quota.usage rules"),
                _t('Add "quota.usage" to events, or leave them out.'),
            )
        return check_threshold(data.get("threshold", old_threshold), events), None
    if len(events) != 1:
        raise InvalidInput(
            _t("a quota.usage rule names no other events"),
            _t("Make one rule for quota.usage and another for the other events."),
        )
    return _quota_threshold(data, old_threshold), check_resource(data.get("resource", old_resource))


def check_channel(channel: object) -> dict[str, Any]:
    if not isinstance(channel, dict):
        raise InvalidInput(
            _t("channel must be an object with a type"),
            _t("Types: {types}", types=", ".join(channels.TYPES)),
        )
    kind = channel.get("type")
    if kind not in channels.TYPES:
        raise InvalidInput(
            _t("unknown channel type {kind!r}", kind=kind),
            _t("Types: {types}", types=", ".join(channels.TYPES)),
        )
    fields = EMAIL_FIELDS if kind == "email" else HTTP_FIELDS
    unknown = sorted(set(channel) - set(fields))
    if unknown:
        raise InvalidInput(
            _t("unknown channel fields {unknown}", unknown=unknown),
            _t("Known: {value}", value=sorted(fields)),
        )
    for key, want in fields.items():
        value = channel.get(key)
        if value is not None and (
            not isinstance(value, want) or (want is int and isinstance(value, bool))
        ):
            raise InvalidInput(
                _t("channel field {key} has the wrong type", key=key),
                _t("got {value!r}", value=value),
            )
    if kind == "email" and not 0 < int(channel.get("port") or 25) < 65536:
        raise InvalidInput(
            _t("port must be from 1 to 65535"), _t("got {value!r}", value=channel["port"])
        )
    if kind == "email":
        to = channel.get("to")
        if (
            not isinstance(channel.get("host"), str)
            or not isinstance(channel.get("sender"), str)
            or not isinstance(to, list)
            or not to
            or not all(isinstance(t, str) for t in to)
        ):
            raise InvalidInput(
                _t("an email channel needs host, sender and to (a list of addresses)"),
                _t("e.g. {example}", example='{"host": "smtp.example.com", "port": 587, ...}'),
            )
        outbound.check_host(channel["host"], _t("mail server"))
    else:
        probe = channels.Message("rule.test", "", "", "", "", {})
        try:
            channels.build_request(channel, probe)
        except InvalidInput:
            raise InvalidInput(
                _t("a {kind} channel needs an http(s) url", kind=kind),
                _t("Give the webhook's url, e.g. https://example.com/hook."),
            ) from None
        outbound.check_url(channel["url"])
    return dict(channel)


def _keep_secrets(new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """Secret fields sent back as GET masked them keep their stored values."""
    shown = channels.masked(old)
    out = dict(new)
    for key in channels.SECRET_FIELDS:
        if key in out and key in old and out[key] == shown.get(key):
            out[key] = old[key]
    return out


class AlertRuleService:
    def __init__(
        self, store: Store, projects: ProjectService, engine: AlertEngine | None = None
    ) -> None:
        self.store = store
        self.projects = projects
        self.engine = engine

    def _rule(
        self, s: Session, caller: Caller, project: str | None, name: str
    ) -> tuple[AlertRule, Project]:
        found = self.projects.resolve(s, caller, project)
        rule = s.scalars(
            select(AlertRule).where(AlertRule.project_id == found.id, AlertRule.name == name)
        ).first()
        if rule is None:
            raise NotFound(
                _t(
                    "alert rule {name!r} not found in project {project!r}",
                    name=name,
                    project=found.name,
                ),
                _t(
                    "GET /cube/api/v1/projects/{project}/alert-rules lists them.",
                    project=found.name,
                ),
            )
        return rule, found

    def create(self, caller: Caller, project: str | None, data: dict[str, Any]) -> RuleView:
        _known(data)
        name = check_name(data.get("name"))
        events = check_events(data.get("events"))
        duration = check_duration(data.get("duration_s"), events)
        threshold, resource = check_limits(data, events)
        channel = check_channel(data.get("channel"))
        enabled = _bool(data.get("enabled", True))
        self.projects.ensure_personal(caller)
        with self.store.write() as s:
            found = self.projects.resolve(s, caller, project)
            if s.scalar(
                select(AlertRule.id).where(AlertRule.project_id == found.id, AlertRule.name == name)
            ):
                raise Conflict(
                    _t(
                        "alert rule {name!r} exists in project {project!r}",
                        name=name,
                        project=found.name,
                    ),
                    _t("Change it with PATCH, or choose another name."),
                )
            now = datetime.now(UTC)
            rule = AlertRule(
                project_id=found.id,
                owner=caller.username,
                name=name,
                events=events,
                duration_s=duration,
                threshold=threshold,
                resource=resource,
                channel=channel,
                enabled=enabled,
                created_at=now,
                updated_at=now,
            )
            s.add(rule)
            s.flush()
            return RuleView.of(rule, found.name)

    def list(self, caller: Caller, project: str | None) -> list[RuleView]:
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            found = self.projects.resolve(s, caller, project)
            rows = s.scalars(
                select(AlertRule).where(AlertRule.project_id == found.id).order_by(AlertRule.name)
            )
            return [RuleView.of(r, found.name) for r in rows]

    def get(self, caller: Caller, project: str | None, name: str) -> RuleView:
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            rule, found = self._rule(s, caller, project, name)
            return RuleView.of(rule, found.name)

    def update(
        self, caller: Caller, project: str | None, name: str, data: dict[str, Any]
    ) -> RuleView:
        _known(data)
        if "name" in data and data["name"] != name:
            raise InvalidInput(
                _t("an alert rule cannot be renamed"),
                _t("Delete it and create one under the new name."),
            )
        self.projects.ensure_personal(caller)
        with self.store.write() as s:
            rule, found = self._rule(s, caller, project, name)
            events = check_events(data["events"]) if "events" in data else list(rule.events)
            duration = data.get("duration_s", rule.duration_s)
            rule.duration_s = check_duration(duration, events)
            rule.threshold, rule.resource = check_limits(
                data, events, rule.threshold, rule.resource
            )
            rule.events = events
            if "channel" in data:
                sent = data["channel"]
                old = dict(rule.channel or {})
                if isinstance(sent, dict) and sent.get("type", old.get("type")) == old.get("type"):
                    sent = _keep_secrets({"type": old.get("type"), **sent}, old)
                rule.channel = check_channel(sent)
            if "enabled" in data:
                rule.enabled = _bool(data["enabled"])
            rule.updated_at = datetime.now(UTC)
            s.flush()
            return RuleView.of(rule, found.name)

    def delete(self, caller: Caller, project: str | None, name: str) -> None:
        self.projects.ensure_personal(caller)
        with self.store.write() as s:
            rule, _found = self._rule(s, caller, project, name)
            s.delete(rule)

    def deliveries(
        self, caller: Caller, project: str | None, name: str, limit: int = 100
    ) -> list[DeliveryView]:
        """The rule's delivery log, newest first."""
        if not 1 <= limit <= 100:
            raise InvalidInput(
                _t("limit must be between 1 and 100"), _t("got {limit}", limit=limit)
            )
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            rule, _found = self._rule(s, caller, project, name)
            rows = s.scalars(
                select(AlertDelivery)
                .where(AlertDelivery.rule_id == rule.id)
                .order_by(AlertDelivery.id.desc())
                .limit(limit)
            )
            return [DeliveryView.of(r) for r in rows]

    def test(self, caller: Caller, project: str | None, name: str) -> DeliveryView:
        """Send a test message by the rule's channel now (one attempt, so the answer comes
        at once), log it, and answer the delivery."""
        from .engine import AlertEngine

        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            rule, found = self._rule(s, caller, project, name)
            project_name = found.name
            s.expunge(rule)
        event = Event(
            TEST_EVENT,
            project_name,
            {
                "kind": "rule",
                "id": rule.name,
                "name": rule.name,
                "owner": caller.username,
                "status": "test",
            },
            os.environ.get(lab_links.ENV_LAB_URL, ""),
        )
        engine = self.engine or AlertEngine(self.store)
        engine.send(rule, event, attempts=1)
        with self.store.read() as s:
            row = s.scalars(
                select(AlertDelivery)
                .where(AlertDelivery.rule_id == rule.id)
                .order_by(AlertDelivery.id.desc())
                .limit(1)
            ).one()
            return DeliveryView.of(row)


def _known(data: Any) -> None:
    if not isinstance(data, dict):
        raise InvalidInput(_t("the request body must be a JSON object"))
    unknown = sorted(set(data) - FIELDS)
    if unknown:
        raise InvalidInput(
            _t("unknown fields {unknown}", unknown=unknown),
            _t("Known: {value}", value=sorted(FIELDS)),
        )


def _bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(_t("enabled must be true or false"), _t("got {value!r}", value=value))
    return value
