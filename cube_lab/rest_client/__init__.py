"""cube-lab's REST API as a caller sees it under the hub: the client (``client``), the home
that paths are sent relative to (``paths``), a job's log read or followed (``logs``) and the
caller's personal project (``projects``). The CLI, the SDK, ``cube_lab.registry.register``,
``cube_lab.datasets`` and the pipeline nodes all reach the cube-lab service through these."""

from .client import (
    API,
    ENV_JOB_TOKEN,
    ENV_TOKEN,
    ServiceClient,
    ServiceError,
    TooManyRequests,
    Unauthorized,
    segment,
)
from .logs import follow_log, read_log
from .paths import home, relative
from .projects import personal_project

__all__ = [
    "API",
    "ENV_JOB_TOKEN",
    "ENV_TOKEN",
    "ServiceClient",
    "ServiceError",
    "TooManyRequests",
    "Unauthorized",
    "follow_log",
    "home",
    "personal_project",
    "read_log",
    "relative",
    "segment",
]
