"""Cron schedules for pipelines, fired by the server (the embedded shape's scheduler).

Fire times are derived from the store on every tick (``last_fire_at`` plus the cron
expression), so a restarted server picks up where it left off. A tick claims the
times it fires by moving ``last_fire_at`` inside one write transaction (the SQLite
write lock, or a row lock on PostgreSQL): two servers never start the same run.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..errors import CubeError, InvalidInput, NotFound
from ..identity import Caller, check_name
from ..locale.messages import _t
from ..projects import ProjectService
from ..serialize import aware
from ..store import Store
from ..store.models import PipelineRun, PipelineSchedule, Project
from .cron import check_cron, due_times, next_time
from .service import ACTIVE, PipelineService

log = logging.getLogger(__name__)
TICK_S = 5.0


@dataclass(frozen=True)
class ScheduleView:
    id: int
    project: str
    name: str
    pipeline_path: str
    cron: str
    start_at: datetime
    end_at: datetime | None
    catchup: bool
    depends_on_past: bool
    max_active_runs: int
    expire_after_s: int | None
    params: dict[str, Any]
    enabled: bool
    last_fire_at: datetime | None
    next_fire_at: datetime | None
    last_error: str | None
    owner: str

    @classmethod
    def of(cls, row: PipelineSchedule, project: str, now: datetime) -> ScheduleView:
        upcoming = next_time(
            row.cron,
            aware(row.start_at),
            aware(row.last_fire_at) if row.last_fire_at else None,
            now,
        )
        if row.end_at and upcoming > aware(row.end_at):
            upcoming = None  # type: ignore[assignment]
        return cls(
            row.id,
            project,
            row.name,
            row.pipeline_path,
            row.cron,
            aware(row.start_at),
            aware(row.end_at) if row.end_at else None,
            row.catchup,
            row.depends_on_past,
            row.max_active_runs,
            row.expire_after_s,
            dict(row.params or {}),
            row.enabled,
            aware(row.last_fire_at) if row.last_fire_at else None,
            upcoming if row.enabled else None,
            row.last_error,
            row.owner,
        )


@dataclass(frozen=True)
class Claim:
    schedule_id: int
    owner: str
    project: str
    path: Path
    root: Path
    params: dict[str, Any]
    logical_date: datetime


def _positive(value: object, what: str, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(
            _t("{what} must be a whole number of at least 1", what=what),
            _t("got {value!r}", value=value),
        )
    return value


def _when(value: object, what: str) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return aware(value) if value else None
    if not isinstance(value, str):
        raise InvalidInput(
            _t("{what} must be an ISO date-time", what=what), _t("got {value!r}", value=value)
        )
    try:
        return aware(datetime.fromisoformat(value))
    except ValueError:
        raise InvalidInput(
            _t("{what} must be an ISO date-time", what=what),
            _t("got {value!r}; e.g. 2026-12-01T03:00:00Z", value=value),
        ) from None


class ScheduleService:
    def __init__(self, store: Store, projects: ProjectService, pipelines: PipelineService) -> None:
        self.store = store
        self.projects = projects
        self.pipelines = pipelines

    # -- managing schedules ------------------------------------------------------------------

    def create(
        self,
        caller: Caller,
        path: Path,
        root: Path,
        cron: object,
        *,
        name: object = None,
        project: str | None = None,
        start_at: object = None,
        end_at: object = None,
        catchup: bool = False,
        depends_on_past: bool = False,
        max_active_runs: object = 1,
        expire_after_s: object = None,
        params: dict[str, Any] | None = None,
    ) -> ScheduleView:
        check_cron(cron)
        pipeline, problems = self.pipelines.check(path, root, caller)
        if problems:
            from .validation import PipelineInvalid

            raise PipelineInvalid(problems)
        from .launch import coerce_params

        coerce_params(pipeline, params or {})  # refuse bad parameters now, not at 3 a.m.
        label = name if name is not None else path.stem
        check_name(label, "schedule name")
        now = datetime.now(UTC)
        start = _when(start_at, "start_at") or now
        end = _when(end_at, "end_at")
        if end and end <= start:
            raise InvalidInput(_t("end_at must be after start_at"))
        self.projects.ensure_personal(caller)
        with self.store.write() as s:
            project_row = self.projects.resolve(s, caller, project)
            row = PipelineSchedule(
                project_id=project_row.id,
                owner=caller.username,
                name=str(label),
                pipeline_path=str(path.resolve()),
                root_dir=str(root.resolve()),
                cron=cron,
                start_at=start,
                end_at=end,
                catchup=bool(catchup),
                depends_on_past=bool(depends_on_past),
                max_active_runs=_positive(max_active_runs, "max_active_runs"),
                expire_after_s=_positive(expire_after_s, "expire_after_s", allow_none=True),
                params=dict(params or {}),
                enabled=True,
            )
            s.add(row)
            s.flush()
            return ScheduleView.of(row, project_row.name, now)

    def list(self, caller: Caller) -> list[ScheduleView]:
        self.projects.ensure_personal(caller)
        now = datetime.now(UTC)
        with self.store.read() as s:
            rows = s.execute(
                self.projects.visible(s, caller, PipelineSchedule).order_by(PipelineSchedule.id)
            ).all()
            return [ScheduleView.of(row, name, now) for row, name in rows]

    def _get(self, s: Session, caller: Caller, schedule_id: int) -> tuple[PipelineSchedule, str]:
        self.projects.ensure_personal(caller)
        row = s.execute(
            self.projects.visible(s, caller, PipelineSchedule).where(
                PipelineSchedule.id == schedule_id
            )
        ).first()
        if row is None:
            raise NotFound(_t("schedule {schedule_id} not found", schedule_id=schedule_id))
        return row[0], row[1]

    def set_enabled(self, caller: Caller, schedule_id: int, enabled: object) -> ScheduleView:
        if not isinstance(enabled, bool):
            raise InvalidInput(_t("enabled must be true or false"))
        with self.store.write() as s:
            row, project = self._get(s, caller, schedule_id)
            row.enabled = enabled
            if enabled and not row.catchup:  # resuming does not replay the paused period
                row.last_fire_at = max(aware(row.last_fire_at or row.start_at), datetime.now(UTC))
            return ScheduleView.of(row, project, datetime.now(UTC))

    def delete(self, caller: Caller, schedule_id: int) -> None:
        with self.store.write() as s:
            row, _ = self._get(s, caller, schedule_id)
            s.delete(row)

    # -- firing ------------------------------------------------------------------------------

    def claim_due(self, now: datetime | None = None) -> list[Claim]:
        """Decide what fires now and record it as fired, in one transaction."""
        now = now or datetime.now(UTC)
        claims: list[Claim] = []
        with self.store.write() as s:
            rows = s.execute(
                select(PipelineSchedule, Project.name)
                .join(Project, Project.id == PipelineSchedule.project_id)
                .where(PipelineSchedule.enabled.is_(True))
                .with_for_update()
            ).all()
            for row, project in rows:
                last = aware(row.last_fire_at) if row.last_fire_at else None
                end = aware(row.end_at) if row.end_at else None
                times = due_times(row.cron, aware(row.start_at), last, now, row.catchup, end)
                if not times:
                    continue
                active = (
                    s.scalar(
                        select(func.count(PipelineRun.id)).where(
                            PipelineRun.schedule_id == row.id, PipelineRun.status.in_(ACTIVE)
                        )
                    )
                    or 0
                )
                slots = row.max_active_runs - active
                if row.depends_on_past:
                    last = s.scalar(
                        select(PipelineRun.status)
                        .where(PipelineRun.schedule_id == row.id)
                        .order_by(PipelineRun.created_at.desc())
                        .limit(1)
                    )
                    if active or (last is not None and last != "succeeded"):
                        continue  # wait for (or stay blocked by) the previous run
                    slots = 1
                for t in times[: max(slots, 0)]:
                    claims.append(
                        Claim(
                            row.id,
                            row.owner,
                            project,
                            Path(row.pipeline_path),
                            Path(row.root_dir),
                            dict(row.params or {}),
                            t,
                        )
                    )
                    row.last_fire_at = t
        return claims

    def prepare_claim(self, claim: Claim) -> tuple[Any, Any] | None:
        """Build a claimed run; a failure (the file changed, say) is kept on the schedule."""
        try:
            prepared = self.pipelines.prepare(
                Caller(claim.owner),
                claim.path,
                claim.root,
                project=claim.project,
                params=claim.params,
                trigger="schedule",
                schedule_id=claim.schedule_id,
                logical_date=claim.logical_date.isoformat(),
            )
        except CubeError as exc:
            self._note_error(claim.schedule_id, f"{claim.logical_date:%Y-%m-%d %H:%M}: {exc.error}")
            return None
        self._note_error(claim.schedule_id, None)
        return prepared

    def _note_error(self, schedule_id: int, error: str | None) -> None:
        with self.store.write() as s:
            row = s.get(PipelineSchedule, schedule_id)
            if row is not None:
                row.last_error = error

    def expire(self, now: datetime | None = None) -> int:
        """Delete finished runs (records and folders) older than their schedule keeps."""
        now = now or datetime.now(UTC)
        removed: list[str] = []
        with self.store.write() as s:
            for sched in s.scalars(
                select(PipelineSchedule).where(PipelineSchedule.expire_after_s.is_not(None))
            ):
                cutoff = now - timedelta(seconds=sched.expire_after_s or 0)
                for run in s.scalars(
                    select(PipelineRun).where(
                        PipelineRun.schedule_id == sched.id,
                        PipelineRun.status.not_in(ACTIVE),
                        PipelineRun.finished_at < cutoff,
                    )
                ):
                    removed.append(run.run_dir)
                    s.delete(run)
        for folder in removed:
            shutil.rmtree(folder, ignore_errors=True)
        return len(removed)

    async def tick(self) -> list[str]:
        """Start what is due (in this event loop) and expire old runs."""
        started = []
        for claim in await asyncio.to_thread(self.claim_due):
            prepared = await asyncio.to_thread(self.prepare_claim, claim)
            if prepared:
                started.append(self.pipelines.start(*prepared))
        await asyncio.to_thread(self.expire)
        return started

    async def run_forever(self) -> None:
        while True:
            try:
                await self.tick()
            except Exception:  # the scheduler must outlive a bad tick
                log.exception("cube-lab scheduler tick failed")
            await asyncio.sleep(TICK_S)
