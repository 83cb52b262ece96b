"""What every process that owns the store does when it opens it and while it runs: the lab
extension in the embedded shape and the cube-lab service under the hub."""

from __future__ import annotations

import asyncio
import logging

from .config import Settings
from .workspace import Workspace


def open_workspace(settings: Settings, log: logging.Logger | logging.LoggerAdapter) -> Workspace:
    """Open (and migrate) the store; settle what a previous process left: staged artifacts,
    runs, jobs, experiments and deployments it was running."""
    workspace = Workspace.open(settings)
    workspace.registry.artifacts.sweep()
    interrupted = workspace.pipelines.recover()
    if interrupted:
        log.warning("cube-lab: marked %d pipeline run(s) interrupted", len(interrupted))
    jobs = workspace.training.recover()
    if jobs:
        log.warning("cube-lab: marked %d training job(s) interrupted", len(jobs))
    experiments = workspace.tuning.recover()
    if experiments:
        log.warning("cube-lab: marked %d experiment(s) interrupted", len(experiments))
    served = workspace.serving.recover()
    workspace.serving.prewarm()  # the first deploy after a restart need not start cold
    if served["adopted"] or served["dead"]:
        log.warning("cube-lab: deployments adopted %s, dead %s", *served.values())
    return workspace


def start_background(workspace: Workspace) -> asyncio.Task[None]:
    """Inside the running event loop: the pipeline scheduler, the alert rules' watcher (its
    own thread), and the cluster jobs and experiments found by ``recover()`` followed again.
    Cancel the task returned to stop the scheduler."""
    task = asyncio.get_running_loop().create_task(workspace.schedules.run_forever())
    workspace.alert_watcher.start()
    workspace.training.resume_cluster_jobs()
    workspace.tuning.on_cluster.resume()
    return task
