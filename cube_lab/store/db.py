"""The engine, sessions and start-up migrations.

SQLite (the embedded default) runs in WAL mode so readers never wait for a
writer, and every write transaction starts with ``BEGIN IMMEDIATE`` so two
server processes (or a server and the CLI) queue for the write lock instead of
failing half-way with "database is locked". Any other SQLAlchemy URL
(PostgreSQL included) uses ordinary transactions plus row locks in the services.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# The newest revision; tests check it matches the migrations folder. Knowing it lets a
# start-up with an up-to-date database skip importing Alembic (half a second per CLI call).
HEAD_REVISION = "0016_course_material"
_IMMEDIATE = "cube_lab_immediate"


def _sqlite_engine(url: str) -> Engine:
    engine = create_engine(
        url,
        connect_args={"check_same_thread": False, "timeout": 60},
        pool_size=8,
        max_overflow=8,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event below issue BEGIN, not pysqlite.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=60000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get(_IMMEDIATE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


class Store:
    """Owns the engine; hands out read and write sessions."""

    def __init__(self, db_url: str) -> None:
        self.url = make_url(db_url)
        self.is_sqlite = self.url.get_backend_name() == "sqlite"
        if self.is_sqlite:
            if self.url.database and self.url.database != ":memory:":
                Path(self.url.database).parent.mkdir(parents=True, exist_ok=True)
            self.engine = _sqlite_engine(db_url)
            write_bind = self.engine.execution_options(**{_IMMEDIATE: True})
        else:
            self.engine = create_engine(db_url, pool_pre_ping=True)
            write_bind = self.engine
        self._read = sessionmaker(self.engine, expire_on_commit=False)
        self._write = sessionmaker(write_bind, expire_on_commit=False)

    @contextlib.contextmanager
    def read(self) -> Iterator[Session]:
        with self._read() as session:
            yield session
            session.rollback()

    @contextlib.contextmanager
    def write(self) -> Iterator[Session]:
        """A transaction that commits on success and rolls back on any error."""
        with self._write() as session, session.begin():
            yield session

    def migrate(self) -> None:
        """Bring the schema to the newest revision; safe when several processes start at once."""
        if self.current_revision() == HEAD_REVISION:
            return
        from alembic import command

        with self._migration_lock(), self.engine.begin() as conn:
            cfg = alembic_config()
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")

    def current_revision(self) -> str | None:
        try:
            with self.engine.connect() as conn:
                return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
        except DBAPIError:  # no alembic_version table yet: an empty database
            return None

    @contextlib.contextmanager
    def _migration_lock(self) -> Iterator[None]:
        if self.is_sqlite and self.url.database and self.url.database != ":memory:":
            lock_path = Path(self.url.database).with_suffix(".migrate.lock")
            with open(lock_path, "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)
        elif self.url.get_backend_name() == "postgresql":
            with self.engine.connect() as conn:
                conn.execute(text("SELECT pg_advisory_lock(7262024)"))
                try:
                    yield
                finally:
                    conn.execute(text("SELECT pg_advisory_unlock(7262024)"))
                    conn.commit()
        else:
            yield

    def dispose(self) -> None:
        self.engine.dispose()


def alembic_config() -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    return cfg
