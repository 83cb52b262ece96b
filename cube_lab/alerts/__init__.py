"""Alerts (issue 23): channels.py (how one message reaches a webhook, chat bot or mailbox),
events.py (what is published when a job, run or experiment ends), engine.py (matching events
to a project's rules and delivering them in the background), watch.py (conditions checked
while objects run: durations, deployments' health, error rate and p99), rules.py (the rules
service).

From a notebook (``cl.alerts``, the SDK's ``cube_lab.sdk.alerts``): ``cl.alerts.list()``,
``cl.alerts.add(name, events, channel, ...)``, ``update``, ``remove``, ``test``,
``deliveries``.
"""

from __future__ import annotations

import builtins
from typing import Any


def list(project: str | None = None) -> builtins.list[dict[str, Any]]:
    """The project's alert rules (the personal project by default); secrets masked. (Not
    ``rules``: that is the service module's name in this package.)"""
    from ..sdk.alerts import alerts

    return alerts.list(project)


def add(
    name: str,
    events: builtins.list[str],
    channel: dict[str, Any],
    *,
    duration_s: float | None = None,
    threshold: float | None = None,
    enabled: bool = True,
    project: str | None = None,
) -> dict[str, Any]:
    """Make a rule (see ``cube_lab.sdk.alerts.Alerts.add``)."""
    from ..sdk.alerts import alerts

    return alerts.add(
        name,
        events,
        channel,
        duration_s=duration_s,
        threshold=threshold,
        enabled=enabled,
        project=project,
    )


def update(name: str, *, project: str | None = None, **fields: Any) -> dict[str, Any]:
    """Change a rule's ``events``, ``duration_s``, ``threshold``, ``channel`` or ``enabled``."""
    from ..sdk.alerts import alerts

    return alerts.update(name, project=project, **fields)


def remove(name: str, *, project: str | None = None) -> None:
    """Delete a rule and its delivery log."""
    from ..sdk.alerts import alerts

    alerts.remove(name, project=project)


def test(name: str, *, project: str | None = None) -> dict[str, Any]:
    """Send a test message by the rule's channel now; the answer is the delivery."""
    from ..sdk.alerts import alerts

    return alerts.test(name, project=project)


def deliveries(
    name: str, *, project: str | None = None, limit: int = 100
) -> builtins.list[dict[str, Any]]:
    """The rule's delivery log, newest first."""
    from ..sdk.alerts import alerts

    return alerts.deliveries(name, project=project, limit=limit)
