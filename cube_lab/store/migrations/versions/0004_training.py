"""Training jobs.

Revision ID: 0004_training
Revises: 0003_pipelines
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_training"
down_revision = "0003_pipelines"
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = True) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "training_jobs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column(
            "project_id",
            sa.Integer(),
            sa.ForeignKey("projects.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("framework", sa.String(16), nullable=False),
        sa.Column("backend", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("info", sa.JSON(), nullable=False),
        sa.Column("job_dir", sa.String(1024), nullable=False),
        sa.Column("runner_pid", sa.Integer(), nullable=True),
        sa.Column("runner_host", sa.String(255), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        _ts("created_at", nullable=False),
        _ts("started_at"),
        _ts("finished_at"),
    )
    for column in ("project_id", "status", "created_at"):
        op.create_index(f"ix_training_jobs_{column}", "training_jobs", [column])


def downgrade() -> None:
    op.drop_table("training_jobs")
