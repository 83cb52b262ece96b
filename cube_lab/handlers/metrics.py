"""Monitoring REST handlers: Prometheus text of what the caller may see, and the resource
series of one pipeline run, training job or tuning experiment's trials
(``cube_lab.monitoring.report``)."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST
from tornado import web

from ..monitoring import live, report
from .base import CubeHandler


class PrometheusHandler(CubeHandler):
    @web.authenticated
    async def get(self) -> None:
        body = await self.call(report.prometheus_text, self.workspace, self.caller)
        self.finish(body, set_content_type=CONTENT_TYPE_LATEST)


class RunResourcesHandler(CubeHandler):
    @web.authenticated
    async def get(self, run_id: str) -> None:
        self.reply(await self.call(report.run_resources, self.workspace, self.caller, run_id))


class JobResourcesHandler(CubeHandler):
    @web.authenticated
    async def get(self, job_id: str) -> None:
        self.reply(await self.call(report.job_resources, self.workspace, self.caller, job_id))


class ExperimentResourcesHandler(CubeHandler):
    @web.authenticated
    async def get(self, experiment_id: str) -> None:
        found = await self.call(
            report.experiment_resources, self.workspace, self.caller, experiment_id
        )
        self.reply(found)


class ResourcesNowHandler(CubeHandler):
    """What runs now for the caller (``?all=1``: everyone's, for an admin) and this server's
    totals (``cube_lab.monitoring.live``)."""

    @web.authenticated
    async def get(self) -> None:
        everyone = self.query_bool("all")
        found = await self.call(
            live.resources_now, self.workspace, self.caller, everyone, self.client_path
        )
        self.reply(found)
