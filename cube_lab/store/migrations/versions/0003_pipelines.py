"""Pipeline runs, node runs and schedules.

Revision ID: 0003_pipelines
Revises: 0002_model_registry
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_pipelines"
down_revision = "0002_model_registry"
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = True) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _project_fk() -> sa.ForeignKey:
    return sa.ForeignKey("projects.id", ondelete="CASCADE")


def upgrade() -> None:
    op.create_table(
        "pipeline_runs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("project_id", sa.Integer(), _project_fk(), nullable=False),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("pipeline_path", sa.String(1024), nullable=False),
        sa.Column("pipeline_name", sa.String(255), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("trigger", sa.String(16), nullable=False),
        sa.Column("schedule_id", sa.Integer(), nullable=True),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("run_dir", sa.String(1024), nullable=False),
        sa.Column("runner_pid", sa.Integer(), nullable=True),
        sa.Column("runner_host", sa.String(255), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        _ts("created_at", nullable=False),
        _ts("started_at"),
        _ts("finished_at"),
    )
    for column in ("project_id", "pipeline_path", "status", "schedule_id", "created_at"):
        op.create_index(f"ix_pipeline_runs_{column}", "pipeline_runs", [column])
    op.create_table(
        "node_runs",
        sa.Column(
            "run_id",
            sa.String(32),
            sa.ForeignKey("pipeline_runs.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("node_id", sa.String(255), primary_key=True),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("label", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("log_path", sa.String(1024), nullable=True),
        sa.Column("values", sa.JSON(), nullable=False),
        sa.Column("outputs", sa.JSON(), nullable=False),
        sa.Column("cache_key", sa.String(80), nullable=True),
        sa.Column("reused_from", sa.String(32), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        _ts("started_at"),
        _ts("finished_at"),
    )
    op.create_index("ix_node_runs_cache_key", "node_runs", ["cache_key"])
    op.create_table(
        "pipeline_schedules",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("project_id", sa.Integer(), _project_fk(), nullable=False),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("pipeline_path", sa.String(1024), nullable=False),
        sa.Column("root_dir", sa.String(1024), nullable=False),
        sa.Column("cron", sa.String(128), nullable=False),
        _ts("start_at", nullable=False),
        _ts("end_at"),
        sa.Column("catchup", sa.Boolean(), nullable=False),
        sa.Column("depends_on_past", sa.Boolean(), nullable=False),
        sa.Column("max_active_runs", sa.Integer(), nullable=False),
        sa.Column("expire_after_s", sa.Integer(), nullable=True),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        _ts("last_fire_at"),
        sa.Column("last_error", sa.Text(), nullable=True),
        _ts("created_at", nullable=False),
    )
    op.create_index("ix_pipeline_schedules_project_id", "pipeline_schedules", ["project_id"])


def downgrade() -> None:
    op.drop_table("pipeline_schedules")
    op.drop_table("node_runs")
    op.drop_table("pipeline_runs")
