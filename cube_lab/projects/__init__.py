"""Projects: the unit of sharing. Every object belongs to one."""

from .service import ProjectService, ProjectView

__all__ = ["ProjectService", "ProjectView"]
