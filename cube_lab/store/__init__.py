"""Persistent state: SQLAlchemy models, the engine and Alembic migrations."""

from .db import Store

__all__ = ["Store"]
