"""Shared by the tests that start real local deployments."""

from __future__ import annotations

from cube_lab.identity import Caller
from cube_lab.workspace import Workspace

LIVE = ("starting", "running", "updating")


def stop_serving(ws: Workspace, caller: Caller) -> None:
    """Undeploy what ``caller`` still has running and stop the warm host: no process outlives
    the test module."""
    for dep in ws.serving.list(caller):
        if dep.status in LIVE:
            ws.serving.undeploy(caller, dep.name)
    ws.serving.quit_warm_hosts()
