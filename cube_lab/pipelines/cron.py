"""When a schedule fires: cron times, backfill and catch-up, as pure functions.

A run for cron time ``t`` (its logical date) starts once ``t`` has passed. With
catch-up on, every missed time since the last fire (or the start date) gets a run,
oldest first; with it off, only the newest missed time does.
"""

from __future__ import annotations

from datetime import UTC, datetime

from croniter import CroniterBadCronError, croniter

from ..errors import InvalidInput
from ..locale.messages import _t

MAX_BACKFILL = 1000  # a typo like "* * * * *" from a year ago must not start 500,000 runs


def check_cron(expression: object) -> str:
    if not isinstance(expression, str) or not croniter.is_valid(expression):
        raise InvalidInput(
            _t("invalid cron expression {expression!r}", expression=expression),
            _t(
                "Use five fields: minute hour day-of-month month day-of-week, e.g. '0 3 *"
                " * *' for 03:00 every day."
            ),
        )
    return expression


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def due_times(
    cron: str,
    start_at: datetime,
    last_fire_at: datetime | None,
    now: datetime,
    catchup: bool,
    end_at: datetime | None = None,
) -> list[datetime]:
    """Logical dates that should fire now, oldest first."""
    start_at, now = _utc(start_at), _utc(now)
    after = _utc(last_fire_at) if last_fire_at else None
    try:
        # croniter yields times strictly after its base: step back a second to include start.
        it = croniter(cron, after or start_at.replace(microsecond=0).timestamp() - 1)
    except CroniterBadCronError as exc:
        raise InvalidInput(_t("invalid cron expression {cron!r}", cron=cron), str(exc)) from None
    times: list[datetime] = []
    while True:
        t = datetime.fromtimestamp(it.get_next(float), UTC)
        if t > now or (end_at and t > _utc(end_at)):
            break
        times.append(t)
        if len(times) > MAX_BACKFILL:
            times.pop(0)
    return times if catchup else times[-1:]


def next_time(
    cron: str, start_at: datetime, last_fire_at: datetime | None, now: datetime
) -> datetime:
    base = max(_utc(now), _utc(last_fire_at) if last_fire_at else _utc(start_at))
    if not last_fire_at and _utc(start_at) > _utc(now):
        base = _utc(start_at).replace(microsecond=0)
        return datetime.fromtimestamp(croniter(cron, base.timestamp() - 1).get_next(float), UTC)
    return datetime.fromtimestamp(croniter(cron, base.timestamp()).get_next(float), UTC)
