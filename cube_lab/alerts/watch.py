"""Conditions no single end can fire, checked while objects run.

Every ``interval_s`` (``$CUBE_LAB_ALERTS_WATCH_S``, 30 s by default) the watcher reads the
enabled rules whose events it watches and, for each rule's project:

- ``job|run|experiment.duration``: an object still running past the rule's ``duration_s``
  fires once (the engine then sends no second duration message when it ends);
- ``deployment.unhealthy``: a deployment it saw serving is dead or failed, or its router does
  not answer;
- ``deployment.error_rate``: the failed share of the requests that came since the last check,
  past the rule's ``threshold`` (a fraction), counted once at least ``MIN_REQUESTS`` came;
- ``deployment.p99``: the 99th percentile latency of those requests past ``threshold`` ms
  (estimated from the router's histogram buckets, as Prometheus' ``histogram_quantile``).

- ``quota.usage``: the rule's project uses at least ``threshold`` percent of its quota in the
  rule's ``resource`` (a dimension: servers, jobs, cpu, memory, an accelerator, gpu_hours this
  month; ``gpus`` any accelerator, ``any`` every dimension), read from the hub's admission
  service (``monitoring.quota``; GPU-hours from the sampled series where the hub has none).
  Each dimension fires once per upward crossing and re-arms once a check finds it below.

A deployment condition fires when it becomes true and again only after a check found it
false: a deployment that stays bad sends one message, not one per check. The window is the
time between two checks, so it is ``interval_s`` long once the watcher runs.

The watcher only decides; the engine's threads deliver (``engine.Direct``), with the
channels' retries and the delivery log.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from .. import lab_links
from ..errors import CubeError
from ..identity import Caller
from ..monitoring import quota as quota_mod
from ..monitoring.quota import Use
from ..serialize import aware
from ..serving.metrics_summary import Totals, quantile, totals
from ..store import Store
from ..store.models import AlertRule, Deployment, Project
from .engine import _MODELS, Direct, already_sent
from .events import DEPLOYMENT_EVENTS, KINDS, QUOTA_EVENT, Event

if TYPE_CHECKING:
    from ..serving.service import DeploymentService
    from .engine import AlertEngine

log = logging.getLogger("cube_lab.alerts")

ENV_INTERVAL = "CUBE_LAB_ALERTS_WATCH_S"
INTERVAL_S = 30.0
MIN_REQUESTS = 5  # fewer requests in a window say nothing about its error rate or p99
SERVING = ("running", "updating")
UNHEALTHY = ("dead", "failed")
DURATIONS = tuple(f"{kind}.duration" for kind in KINDS)


def interval_from_env() -> float:
    try:
        value = float(os.environ.get(ENV_INTERVAL, INTERVAL_S))
    except ValueError:
        return INTERVAL_S
    return value if value > 0 else INTERVAL_S


def _names(rule: AlertRule, events: tuple[str, ...]) -> list[str]:
    return [e for e in events if any(fnmatch.fnmatchcase(e, p) for p in rule.events)]


@dataclass
class _Reading:
    at: float
    totals: Totals


class Watcher:
    """Checks one store's watched rules (``check`` once; ``start`` a daemon thread)."""

    def __init__(
        self,
        store: Store,
        engine: AlertEngine,
        deployments: DeploymentService | None,
        interval_s: float | None = None,
        quota_use: Callable[[str], list[Use] | None] | None = None,
        gpu_hours: Callable[[], dict[str, float]] | None = None,
    ) -> None:
        """``quota_use(project)``: its quota dimensions with their use now (None: unknown);
        by default the hub's (``monitoring.quota``), with ``gpu_hours()`` (GPU-hours this
        month per project) where the hub reports none."""
        self.store = store
        self.engine = engine
        self.deployments = deployments
        self.interval_s = interval_s or interval_from_env()
        self.quota_use = quota_use or self._hub_quota_use
        self.gpu_hours = gpu_hours
        self._over: set[tuple[int, str]] = set()  # (rule, quota dimension) at or past its limit
        self._readings: dict[str, _Reading] = {}  # deployment id -> its last counters
        self._serving: set[str] = set()  # deployments seen serving at the last check
        self._firing: set[tuple[int, str, str]] = set()  # (rule, event, deployment) still bad
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, name="cube-alerts-watch", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.check()
            except Exception:  # a broken check must not end the watcher
                log.exception("cube-lab alerts: the watcher's check failed")

    def check(self) -> int:
        """One pass over the watched rules; the number of messages queued."""
        with self.store.read() as s:
            rows = s.execute(
                select(AlertRule, Project.name)
                .join(Project, Project.id == AlertRule.project_id)
                .where(AlertRule.enabled.is_(True))
                .order_by(AlertRule.id)
            ).all()
            s.expunge_all()
        quota_rules = [(r, p) for r, p in rows if QUOTA_EVENT in (r.events or [])]
        rules = [(r, p) for r, p in rows if _names(r, (*DURATIONS, *DEPLOYMENT_EVENTS))]
        queued = self._quotas(quota_rules)
        for rule, project in rules:
            if rule.duration_s is not None:
                queued += self._durations(rule, project)
        queued += self._deployments([(r, p) for r, p in rules if _names(r, DEPLOYMENT_EVENTS)])
        return queued

    # -- objects running past their limit ------------------------------------------------------

    def _durations(self, rule: AlertRule, project: str) -> int:
        limit = float(rule.duration_s or 0)
        since = datetime.now(UTC) - timedelta(seconds=limit)
        queued = 0
        for event_name in _names(rule, DURATIONS):
            kind = event_name.split(".")[0]
            model = _MODELS[kind]
            with self.store.read() as s:
                found = s.scalars(
                    select(model)
                    .join(Project, Project.id == model.project_id)
                    .where(
                        Project.name == project,
                        model.finished_at.is_(None),
                        model.started_at.is_not(None),
                    )
                ).all()
                found = [row for row in found if aware(row.started_at) < since]
                objects = [
                    {
                        "kind": kind,
                        "id": row.id,
                        "name": row.pipeline_name if kind == "run" else row.name,
                        "status": row.status,
                        "owner": row.owner,
                        "duration_s": (datetime.now(UTC) - aware(row.started_at)).total_seconds(),
                        "running": True,
                        "path": row.pipeline_path if kind == "run" else None,
                    }
                    for row in found
                ]
            for obj in objects:
                if already_sent(self.store, rule.id, event_name, f"{kind} {obj['id']}"):
                    continue
                link = lab_links.link(kind, id=obj["id"], path=obj.pop("path")) or ""
                self.engine.enqueue(Direct(rule.id, Event(event_name, project, obj, link)))
                queued += 1
        return queued

    # -- quota use -----------------------------------------------------------------------------

    def _hub_quota_use(self, project: str) -> list[Use] | None:
        groups = quota_mod.hub_groups({project})
        group = (groups or {}).get(project)
        if group is None:
            return None  # outside a hub, not a hub group, or the hub did not answer
        hours = self.gpu_hours().get(project) if self.gpu_hours is not None else None
        return quota_mod.dimensions(group, hours)

    @staticmethod
    def _watched(resource: str | None, use: Use) -> bool:
        if resource in (None, "any"):
            return True
        if resource == "gpus":  # any accelerator
            return use.dimension not in (*quota_mod.PLAIN, "gpu_hours")
        return use.dimension == resource

    def _quotas(self, rules: list[tuple[AlertRule, str]]) -> int:
        uses: dict[str, list[Use] | None] = {}
        queued = 0
        for rule, project in rules:
            if rule.threshold is None:
                continue
            if project not in uses:
                try:
                    uses[project] = self.quota_use(project)
                except Exception:  # an unreadable quota says nothing: as it was
                    log.warning("cube-lab alerts: quota of %s unreadable", project, exc_info=True)
                    uses[project] = None
            found = uses[project]
            if found is None:
                continue
            for use in found:
                if not self._watched(rule.resource, use):
                    continue
                key = (rule.id, use.dimension)
                if use.percent < rule.threshold:
                    self._over.discard(key)  # re-armed
                    continue
                if key in self._over:
                    continue  # still past it: told once
                self._over.add(key)
                obj = {
                    "kind": "quota",
                    "id": project,
                    "name": use.dimension,
                    "status": "over",
                    "resource": use.dimension,
                    "used": use.used,
                    "limit": use.limit,
                    "percent": round(use.percent, 1),
                    "threshold_pct": rule.threshold,
                }
                link = lab_links.link("resources", project=project) or ""
                self.engine.enqueue(Direct(rule.id, Event(QUOTA_EVENT, project, obj, link)))
                queued += 1
        return queued

    # -- deployments ---------------------------------------------------------------------------

    def _deployments(self, rules: list[tuple[AlertRule, str]]) -> int:
        projects = sorted({p for _, p in rules})
        if not projects:
            return 0
        with self.store.read() as s:
            rows = s.execute(
                select(Deployment, Project.name)
                .join(Project, Project.id == Deployment.project_id)
                .where(Project.name.in_(projects))
            ).all()
            deployments = [
                (row.id, row.name, project, row.owner, row.status, row.error)
                for row, project in rows
            ]
        queued = 0
        serving_now: set[str] = set()
        for dep_id, name, project, owner, status, error in deployments:
            conditions, window = self._conditions(dep_id, name, project, owner, status, error)
            if status in SERVING and "unhealthy" not in conditions:
                serving_now.add(dep_id)
            obj = {
                "kind": "deployment",
                "id": dep_id,
                "name": name,
                "status": status,
                "owner": owner,
                "error": conditions.get("unhealthy"),
            }
            link = lab_links.link("deployment", project=project, name=name) or ""
            for rule, rule_project in rules:
                if rule_project != project:
                    continue
                for event_name in _names(rule, DEPLOYMENT_EVENTS):
                    bad = self._bad(rule, event_name, conditions, window)
                    key = (rule.id, event_name, dep_id)
                    if bad is None:
                        continue  # too few requests to say: as it was
                    if not bad:
                        self._firing.discard(key)
                        continue
                    if key in self._firing:
                        continue  # still bad: told once
                    self._firing.add(key)
                    body = dict(obj)
                    if window is not None and event_name != "deployment.unhealthy":
                        body["window"] = {**window, "threshold": rule.threshold}
                    event = Event(event_name, project, body, link)
                    self.engine.enqueue(Direct(rule.id, event))
                    queued += 1
        self._serving = serving_now
        return queued

    def _conditions(
        self, dep_id: str, name: str, project: str, owner: str, status: str, error: str | None
    ) -> tuple[dict[str, str], dict[str, float] | None]:
        """What is wrong with one deployment now (``{"unhealthy": why}``) and the window of
        requests since the last check (None before two readings)."""
        if status in UNHEALTHY:
            self._readings.pop(dep_id, None)
            if dep_id in self._serving:
                return {"unhealthy": error or status}, None
            return {}, None
        if status not in SERVING or self.deployments is None:
            self._readings.pop(dep_id, None)
            return {}, None
        try:
            text = self.deployments.metrics(Caller(owner), name, project)
        except CubeError as exc:
            self._readings.pop(dep_id, None)
            return {"unhealthy": exc.error}, None
        now = time.monotonic()
        reading = _Reading(now, totals(text))
        before = self._readings.get(dep_id)
        self._readings[dep_id] = reading
        came = reading.totals.since(before.totals) if before else None
        if came is None or came.requests < MIN_REQUESTS:
            return {}, None
        p99 = quantile(0.99, list(came.buckets))
        return {}, {
            "seconds": now - before.at,  # type: ignore[union-attr]
            "requests": came.requests,
            "errors": came.errors,
            "error_rate": came.errors / came.requests,
            "p99_ms": None if p99 is None else p99 * 1000,
        }

    @staticmethod
    def _bad(
        rule: AlertRule, event: str, conditions: dict[str, str], window: dict[str, Any] | None
    ) -> bool | None:
        """Whether ``event``'s condition holds for ``rule`` (None: no window to tell by)."""
        if event == "deployment.unhealthy":
            return "unhealthy" in conditions
        if rule.threshold is None:
            return False
        if window is None:
            return None if "unhealthy" not in conditions else False
        if event == "deployment.error_rate":
            return window["error_rate"] > rule.threshold
        return window["p99_ms"] is not None and window["p99_ms"] > rule.threshold
