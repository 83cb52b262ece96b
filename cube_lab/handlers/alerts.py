"""Alert rules over REST (cube_lab/alerts/rules.py), under a project:

- ``GET /projects/{project}/alert-rules``: the rules; ``POST``: make one
  ``{"name", "events", "duration_s", "channel", "enabled"}``.
- ``GET / PATCH / DELETE /projects/{project}/alert-rules/{name}``: one rule.
- ``POST .../alert-rules/{name}/test``: send a test message now; the answer is the delivery.
- ``GET .../alert-rules/{name}/deliveries?limit=N``: its delivery log, newest first.

Only the project's members see or change its rules (others get 404); channel secrets are
never answered (masked).
"""

from __future__ import annotations

from tornado import web

from .base import CubeHandler


class AlertRulesHandler(CubeHandler):
    @web.authenticated
    async def get(self, project: str) -> None:
        rules = await self.call(self.workspace.alerts.list, self.caller, project)
        self.reply({"rules": rules})

    @web.authenticated
    async def post(self, project: str) -> None:
        body = self.json_body()
        rule = await self.call(self.workspace.alerts.create, self.caller, project, body)
        self.reply(rule, 201)


class AlertRuleHandler(CubeHandler):
    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        self.reply(await self.call(self.workspace.alerts.get, self.caller, project, name))

    @web.authenticated
    async def patch(self, project: str, name: str) -> None:
        body = self.json_body()
        self.reply(await self.call(self.workspace.alerts.update, self.caller, project, name, body))

    @web.authenticated
    async def delete(self, project: str, name: str) -> None:
        await self.call(self.workspace.alerts.delete, self.caller, project, name)
        self.set_status(204)
        self.finish()


class AlertRuleTestHandler(CubeHandler):
    @web.authenticated
    async def post(self, project: str, name: str) -> None:
        self.reply(await self.call(self.workspace.alerts.test, self.caller, project, name))


class AlertDeliveriesHandler(CubeHandler):
    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        limit = self.query_int("limit", 100, low=1, high=100)
        found = await self.call(self.workspace.alerts.deliveries, self.caller, project, name, limit)
        self.reply({"deliveries": found})
