"""Cron schedules: fire times, backfill, catch-up, no double fires across restarts,
max_active_runs, depends_on_past, expiry, and a real scheduled run."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pipeline_util import node, script, write_pipeline

from cube_lab.config import Settings
from cube_lab.errors import InvalidInput
from cube_lab.identity import Caller
from cube_lab.pipelines.cron import MAX_BACKFILL, due_times
from cube_lab.workspace import Workspace

ALICE = Caller("alice")
T0 = datetime(2026, 11, 29, 0, 0, tzinfo=UTC)


def hours(n: float) -> timedelta:
    return timedelta(hours=n)


def test_due_times_backfill_and_catchup() -> None:
    now = T0 + hours(5.5)
    assert due_times("0 * * * *", T0, None, now, catchup=True) == [T0 + hours(h) for h in range(6)]
    assert due_times("0 * * * *", T0, None, now, catchup=False) == [T0 + hours(5)]
    assert due_times("0 * * * *", T0, T0 + hours(3), now, catchup=True) == [
        T0 + hours(4),
        T0 + hours(5),
    ]
    assert due_times("0 * * * *", T0, T0 + hours(5), now, catchup=True) == []
    assert due_times("0 * * * *", T0, None, now, True, end_at=T0 + hours(2)) == [
        T0,
        T0 + hours(1),
        T0 + hours(2),
    ]
    many = due_times("* * * * *", T0 - timedelta(days=30), None, T0, catchup=True)
    assert len(many) == MAX_BACKFILL and many[-1] == T0


def _pipeline(tmp_path: Path) -> Path:
    code = "import os; print('logical date', os.environ.get('CUBE_LOGICAL_DATE'))\n"
    return write_pipeline(tmp_path, [node("n", filename=script(tmp_path, "n.py", code))])


def test_claims_backfill_once_even_after_a_restart(
    ws: Any, tmp_path: Path, settings: Settings
) -> None:
    path = _pipeline(tmp_path)
    view = ws.schedules.create(
        ALICE,
        path,
        tmp_path,
        "0 * * * *",
        start_at=T0.isoformat(),
        catchup=True,
        max_active_runs=10,
    )
    assert view.next_fire_at is not None
    now = T0 + hours(3.5)
    claims = ws.schedules.claim_due(now)
    assert [c.logical_date for c in claims] == [T0 + hours(h) for h in range(4)]
    assert ws.schedules.claim_due(now) == []
    restarted = Workspace.open(settings)  # a new server process over the same store
    try:
        assert restarted.schedules.claim_due(now) == []
        assert [c.logical_date for c in restarted.schedules.claim_due(now + hours(1))] == [
            T0 + hours(4)
        ]
    finally:
        restarted.close()


def test_max_active_runs_and_depends_on_past(ws: Any, tmp_path: Path) -> None:
    path = _pipeline(tmp_path)
    limited = ws.schedules.create(
        ALICE,
        path,
        tmp_path,
        "0 * * * *",
        name="limited",
        start_at=T0.isoformat(),
        catchup=True,
        max_active_runs=2,
    )
    claims = ws.schedules.claim_due(T0 + hours(5.5))
    assert [c.logical_date for c in claims] == [T0, T0 + hours(1)]
    prepared = [ws.schedules.prepare_claim(c) for c in claims]  # queued runs count as active
    assert ws.schedules.claim_due(T0 + hours(5.5)) == []
    for runner, recorder in prepared:
        assert ws.pipelines.run_foreground(runner, recorder) == "succeeded"
    assert [c.logical_date for c in ws.schedules.claim_due(T0 + hours(5.5))] == [
        T0 + hours(2),
        T0 + hours(3),
    ]
    ws.schedules.delete(ALICE, limited.id)

    (tmp_path / "bad.py").write_text("raise SystemExit(1)\n")
    strict_path = write_pipeline(tmp_path, [node("b", filename="bad.py")], filename="s.pipeline")
    ws.schedules.create(
        ALICE,
        strict_path,
        tmp_path,
        "0 * * * *",
        start_at=T0.isoformat(),
        catchup=True,
        depends_on_past=True,
    )
    first = ws.schedules.claim_due(T0 + hours(3.5))
    assert [c.logical_date for c in first] == [T0]  # one at a time
    runner, recorder = ws.schedules.prepare_claim(first[0])
    assert ws.pipelines.run_foreground(runner, recorder) == "failed"
    assert ws.schedules.claim_due(T0 + hours(3.5)) == []  # blocked by the failed past


def test_scheduled_run_starts_in_the_event_loop(ws: Any, tmp_path: Path) -> None:
    path = _pipeline(tmp_path)
    ws.schedules.create(
        ALICE,
        path,
        tmp_path,
        "* * * * *",
        start_at=(datetime.now(UTC) - timedelta(minutes=1)).isoformat(),
    )

    async def go() -> tuple[list[str], str | None]:
        started = await ws.schedules.tick()
        return started, await ws.pipelines.wait(started[0])

    started, status = asyncio.run(go())
    assert len(started) == 1 and status == "succeeded"
    run = ws.pipelines.get_run(ALICE, started[0])
    assert run.trigger == "schedule" and run.options["logical_date"]
    assert (
        f"logical date {run.options['logical_date']}"
        in ws.pipelines.tail_log(ALICE, run.id, "n").text
    )


def test_expiry_removes_old_finished_runs(ws: Any, tmp_path: Path) -> None:
    path = _pipeline(tmp_path)
    ws.schedules.create(
        ALICE, path, tmp_path, "0 * * * *", start_at=T0.isoformat(), expire_after_s=3600
    )
    claim = ws.schedules.claim_due(T0 + hours(1.5))[0]
    runner, recorder = ws.schedules.prepare_claim(claim)
    ws.pipelines.run_foreground(runner, recorder)
    run_dir = runner.plan.run_dir
    assert ws.schedules.expire(datetime.now(UTC)) == 0 and run_dir.exists()
    assert ws.schedules.expire(datetime.now(UTC) + hours(2)) == 1
    assert not run_dir.exists() and ws.pipelines.list_runs(ALICE) == []


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"cron": "every day"}, "invalid cron expression"),
        ({"cron": "0 * * * *", "max_active_runs": 0}, "max_active_runs"),
        ({"cron": "0 * * * *", "start_at": "tomorrow"}, "start_at must be an ISO date-time"),
        ({"cron": "0 * * * *", "params": {"nope": 1}}, "unknown pipeline parameters"),
    ],
)
def test_bad_schedules_are_refused(
    ws: Any, tmp_path: Path, kwargs: dict[str, Any], message: str
) -> None:
    path = _pipeline(tmp_path)
    cron = kwargs.pop("cron")
    with pytest.raises(InvalidInput, match=message):
        ws.schedules.create(ALICE, path, tmp_path, cron, **kwargs)
    assert ws.schedules.list(ALICE) == []
