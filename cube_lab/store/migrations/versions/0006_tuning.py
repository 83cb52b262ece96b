"""Tuning experiments and their trials.

Revision ID: 0006_tuning
Revises: 0005_serving
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_tuning"
down_revision = "0005_serving"
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = True) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "tuning_experiments",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column(
            "project_id",
            sa.Integer(),
            sa.ForeignKey("projects.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("folder", sa.String(1024), nullable=False),
        sa.Column("runner_pid", sa.Integer(), nullable=True),
        sa.Column("runner_host", sa.String(255), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        _ts("created_at", nullable=False),
        _ts("started_at"),
        _ts("finished_at"),
    )
    for column in ("project_id", "status", "created_at"):
        op.create_index(f"ix_tuning_experiments_{column}", "tuning_experiments", [column])
    op.create_table(
        "tuning_trials",
        sa.Column("id", sa.String(48), primary_key=True),
        sa.Column(
            "experiment_id",
            sa.String(40),
            sa.ForeignKey("tuning_experiments.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("parameter_id", sa.Integer(), nullable=False),
        sa.Column("parameters", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("intermediate", sa.JSON(), nullable=False),
        sa.Column("final", sa.Float(), nullable=True),
        sa.Column("final_raw", sa.JSON(), nullable=True),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        _ts("started_at"),
        _ts("finished_at"),
    )
    op.create_index("ix_tuning_trials_experiment_id", "tuning_trials", ["experiment_id"])


def downgrade() -> None:
    op.drop_table("tuning_trials")
    op.drop_table("tuning_experiments")
