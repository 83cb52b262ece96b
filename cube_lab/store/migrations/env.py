"""Alembic environment: always driven programmatically by ``Store.migrate``."""

from __future__ import annotations

from alembic import context

from cube_lab.store.models import Base

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only reached by a bare `alembic` call
    raise RuntimeError("Run migrations through cube_lab.store.Store.migrate()")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
