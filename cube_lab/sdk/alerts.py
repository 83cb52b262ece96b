"""``cl.alerts``: a project's alert rules from a notebook (docs/monitoring.md).

``cl.alerts.list()`` lists them (secrets masked), ``cl.alerts.add(name, events, channel,
...)`` makes one, ``cl.alerts.update(name, ...)`` changes one, ``cl.alerts.test(name)`` sends
a test message now, ``cl.alerts.deliveries(name)`` reads its log, ``cl.alerts.remove(name)``
deletes it. The project is the personal one unless ``project=`` names another.

One implementation, two ways to reach it: in this process ``AlertRuleService`` is called
(the embedded shape), over REST (under the hub, or after ``cl.connect``) the API of
``cube_lab/handlers/alerts.py``; both answer the same JSON.
"""

from __future__ import annotations

import builtins
from typing import Any
from urllib.parse import quote

from . import current

Json = dict[str, Any]


class _Local:
    def __init__(self, transport: Any) -> None:
        self.t = transport
        self.rules = transport.ws.alerts

    @staticmethod
    def _json(value: Any) -> Any:
        from ..serialize import to_jsonable

        return to_jsonable(value)

    def list(self, project: str | None) -> builtins.list[Json]:
        return self._json(self.rules.list(self.t.caller, project))

    def create(self, project: str | None, body: Json) -> Json:
        return self._json(self.rules.create(self.t.caller, project, body))

    def update(self, project: str | None, name: str, body: Json) -> Json:
        return self._json(self.rules.update(self.t.caller, project, name, body))

    def delete(self, project: str | None, name: str) -> None:
        self.rules.delete(self.t.caller, project, name)

    def test(self, project: str | None, name: str) -> Json:
        return self._json(self.rules.test(self.t.caller, project, name))

    def deliveries(self, project: str | None, name: str, limit: int) -> builtins.list[Json]:
        return self._json(self.rules.deliveries(self.t.caller, project, name, limit))


class _Rest:
    def __init__(self, transport: Any) -> None:
        self.t = transport
        self.client = transport.client

    def _base(self, project: str | None, name: str | None = None) -> str:
        where = f"projects/{quote(project or self.t.personal_project(), safe='')}/alert-rules"
        return f"{where}/{quote(name, safe='')}" if name is not None else where

    def list(self, project: str | None) -> builtins.list[Json]:
        return self.client.get(self._base(project))["rules"]

    def create(self, project: str | None, body: Json) -> Json:
        return self.client.post(self._base(project), body)

    def update(self, project: str | None, name: str, body: Json) -> Json:
        return self.client.patch(self._base(project, name), body)

    def delete(self, project: str | None, name: str) -> None:
        self.client.delete(self._base(project, name))

    def test(self, project: str | None, name: str) -> Json:
        return self.client.post(f"{self._base(project, name)}/test")

    def deliveries(self, project: str | None, name: str, limit: int) -> builtins.list[Json]:
        return self.client.get(f"{self._base(project, name)}/deliveries", limit=limit)["deliveries"]


def _api() -> _Local | _Rest:
    transport = current()
    return _Local(transport) if transport.kind == "local" else _Rest(transport)


class Alerts:
    """``cl.alerts.list()``, ``add``, ``update``, ``remove``, ``test``, ``deliveries``."""

    def list(self, project: str | None = None) -> builtins.list[Json]:
        """The project's rules, by name; channel secrets masked."""
        return _api().list(project)

    def add(
        self,
        name: str,
        events: builtins.list[str],
        channel: Json,
        *,
        duration_s: float | None = None,
        threshold: float | None = None,
        enabled: bool = True,
        project: str | None = None,
    ) -> Json:
        """Make a rule: ``events`` are names or patterns (``job.failed``, ``*.duration``,
        ``deployment.error_rate``); ``channel`` is ``{"type": "webhook"|"wecom"|"dingtalk"|
        "feishu"|"slack"|"email", ...}``; ``duration_s`` is the limit of duration events,
        ``threshold`` that of the one threshold event (a fraction for error_rate, ms for
        p99)."""
        body: Json = {"name": name, "events": events, "channel": channel, "enabled": enabled}
        if duration_s is not None:
            body["duration_s"] = duration_s
        if threshold is not None:
            body["threshold"] = threshold
        return _api().create(project, body)

    def update(self, name: str, *, project: str | None = None, **fields: Any) -> Json:
        """Change ``events``, ``duration_s``, ``threshold``, ``channel`` or ``enabled``."""
        return _api().update(project, name, fields)

    def remove(self, name: str, *, project: str | None = None) -> None:
        """Delete the rule and its delivery log."""
        _api().delete(project, name)

    def test(self, name: str, *, project: str | None = None) -> Json:
        """Send a test message by the rule's channel now; the answer is the delivery
        (``ok``, ``attempts``, ``status``, ``error``)."""
        return _api().test(project, name)

    def deliveries(
        self, name: str, *, project: str | None = None, limit: int = 100
    ) -> builtins.list[Json]:
        """The rule's delivery log, newest first (at most 100 are kept)."""
        return _api().deliveries(project, name, limit)

    def __repr__(self) -> str:
        return (
            "<cube-lab alerts: list(), add(...), update(...), remove(name), test(name), "
            "deliveries(name)>"
        )


alerts = Alerts()
