"""Migrations and the store: empty database, existing database, models == migrations."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from cube_lab.store import Store
from cube_lab.store.db import HEAD_REVISION, alembic_config
from cube_lab.store.models import Base


def test_migrate_empty_database_reaches_head(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    store.migrate()
    assert store.current_revision() == HEAD_REVISION
    with sqlite3.connect(tmp_path / "db.sqlite") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {
        "projects",
        "project_members",
        "registered_models",
        "model_versions",
        "model_aliases",
    } <= tables


def test_migrate_existing_database_keeps_rows(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    store = Store(url)
    with store.engine.begin() as conn:  # a database left by an older cube-lab
        cfg = alembic_config()
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0001_projects")
        conn.exec_driver_sql(
            "INSERT INTO projects (name, kind, description, created_by, created_at) "
            "VALUES ('alice', 'personal', '', 'alice', '2026-01-01 00:00:00')"
        )
    assert store.current_revision() == "0001_projects"
    Store(url).migrate()
    Store(url).migrate()  # a second start is a no-op
    assert store.current_revision() == HEAD_REVISION
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT name FROM projects").scalar() == "alice"


def test_head_revision_constant_matches_the_migrations() -> None:
    from alembic.script import ScriptDirectory

    assert ScriptDirectory.from_config(alembic_config()).get_current_head() == HEAD_REVISION


def test_models_match_migrations(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    store.migrate()
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == [], f"models and migrations disagree; add a revision: {diff}"
