"""The events alert rules match, and the hook that publishes them.

An event is ``<kind>.<outcome>``: kind ``job`` (a training job), ``run`` (a pipeline run) or
``experiment`` (a tuning experiment); outcome ``succeeded``, ``failed``, ``stopped``, or
``duration`` (published with every end that has a duration; a rule on it fires when the
duration is past the rule's ``duration_s``; the watcher also publishes it once while the
object still runs past that limit). Kind ``deployment`` has the conditions the watcher
(cube_lab/alerts/watch.py) checks while a deployment serves: ``unhealthy``, ``error_rate``
and ``p99`` (past the rule's ``threshold``). Rules name events or ``fnmatch`` patterns of
them (``job.*``, ``*.failed``, ``*.duration``, ``deployment.*``).

Services call one line where an object ends::

    events.finished(self.store, "job", job_id)

and ``publish`` sends an event already built. Both only queue: the engine of that store
(``attach``: the workspace's, cube_lab/alerts/engine.py) reads the record, matches rules and
delivers in its own threads. Where no engine is attached (a service built without a
workspace) they do nothing. Neither ever raises into the caller.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import AlertEngine

log = logging.getLogger("cube_lab.alerts")

KINDS = ("job", "run", "experiment")
OUTCOMES = ("succeeded", "failed", "stopped", "duration")
# watched while a deployment serves; the last two fire past the rule's ``threshold``
THRESHOLD_EVENTS = ("deployment.error_rate", "deployment.p99")
DEPLOYMENT_EVENTS = ("deployment.unhealthy", *THRESHOLD_EVENTS)
# watched: a project's quota use past the rule's ``threshold`` percent (of its ``resource``)
QUOTA_EVENT = "quota.usage"
EVENTS = (
    *(f"{kind}.{outcome}" for kind in KINDS for outcome in OUTCOMES),
    *DEPLOYMENT_EVENTS,
    QUOTA_EVENT,
)
# a record's final status -> the outcome published (others publish only ``duration``)
STATUS_OUTCOME = {
    "succeeded": "succeeded",
    "done": "succeeded",  # a tuning experiment that ran to its end
    "failed": "failed",
    "interrupted": "failed",
    "stopped": "stopped",
    "cancelled": "stopped",
}


@dataclass(frozen=True)
class Event:
    name: str  # "job.failed"
    project: str
    object: dict[str, Any]  # {"kind", "id", "name", "status", "owner", "duration_s", "error"}
    link: str = ""  # the object's view in the lab ('' where the lab's address is unknown)


_ENGINES: weakref.WeakKeyDictionary[Any, Callable[[], AlertEngine]] = weakref.WeakKeyDictionary()


def attach(store: Any, engine: Callable[[], AlertEngine]) -> None:
    """Events published for ``store`` go to ``engine()`` (built on the first event)."""
    _ENGINES[store] = engine


def _engine(target: Any) -> AlertEngine | None:
    if target is None:
        return None
    if hasattr(target, "enqueue"):
        return target  # an engine
    factory = _ENGINES.get(target)
    return factory() if factory else None


def publish(
    target: Any, event: str, project: str, obj: dict[str, Any], link: str | None = None
) -> None:
    """Queue ``event`` of ``project`` (``target``: an engine, or a store with one attached)."""
    try:
        engine = _engine(target)
        if engine is not None:
            engine.enqueue(Event(event, project, dict(obj), link or ""))
    except Exception:  # an alert must never break what published it
        log.exception("cube-lab alerts: could not publish %s", event)


def finished(target: Any, kind: str, object_id: str) -> None:
    """Queue the end of ``kind`` ``object_id``: the engine reads its record (status,
    duration, project) in its own thread and publishes its outcome and duration."""
    try:
        engine = _engine(target)
        if engine is not None:
            engine.enqueue((kind, object_id))
    except Exception:
        log.exception("cube-lab alerts: could not publish the end of %s %s", kind, object_id)
