"""Identity and projects: /whoami, /projects, /projects/{project}/members/{username},
/invitations (the caller's pending invitations, accepted or declined by the invited user)."""

from __future__ import annotations

from tornado import web

from .base import CubeHandler


class WhoAmIHandler(CubeHandler):
    @web.authenticated
    async def get(self) -> None:
        caller = self.caller
        projects = await self.call(self.workspace.projects.list, caller)
        self.reply(
            {
                "user": caller.username,
                "backend": self.workspace.settings.backend,
                "projects": projects,
            }
        )


class ProjectsHandler(CubeHandler):
    @web.authenticated
    async def get(self) -> None:
        service, caller = self.workspace.projects, self.caller
        projects = await self.call(service.list, caller)
        self.reply(
            {"projects": projects, "invitations": await self.call(service.invitations, caller)}
        )

    @web.authenticated
    async def post(self) -> None:
        body = self.json_body()
        project = await self.call(
            self.workspace.projects.create,
            self.caller,
            body.get("name"),
            body.get("description", ""),
        )
        self.reply(project, 201)


class ProjectHandler(CubeHandler):
    @web.authenticated
    async def get(self, project: str) -> None:
        self.reply(await self.call(self.workspace.projects.get, self.caller, project))


class ProjectMemberHandler(CubeHandler):
    @web.authenticated
    async def put(self, project: str, username: str) -> None:
        role = self.json_body().get("role", "member")
        self.reply(
            await self.call(
                self.workspace.projects.set_member, self.caller, project, username, role
            )
        )

    @web.authenticated
    async def delete(self, project: str, username: str) -> None:
        self.reply(
            await self.call(self.workspace.projects.remove_member, self.caller, project, username)
        )


class InvitationsHandler(CubeHandler):
    @web.authenticated
    async def get(self) -> None:
        invitations = await self.call(self.workspace.projects.invitations, self.caller)
        self.reply({"invitations": invitations})


class InvitationAcceptHandler(CubeHandler):
    @web.authenticated
    async def post(self, project: str) -> None:
        self.reply(await self.call(self.workspace.projects.accept, self.caller, project))


class InvitationDeclineHandler(CubeHandler):
    @web.authenticated
    async def post(self, project: str) -> None:
        await self.call(self.workspace.projects.decline, self.caller, project)
        self.set_status(204)
        self.finish()
