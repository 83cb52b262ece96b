"""Projects: the unit of sharing. Every object belongs to one."""

from .service import ProjectService, ProjectView, check_page_limit

__all__ = ["ProjectService", "ProjectView", "check_page_limit"]
