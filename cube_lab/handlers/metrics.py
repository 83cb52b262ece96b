"""Monitoring REST handlers: Prometheus text of what the caller may see, and the resource
series of one pipeline run or training job (``cube_lab.monitoring.report``)."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST
from tornado import web

from ..monitoring import report
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
