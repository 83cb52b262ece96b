"""Deployments (model serving).

Revision ID: 0005_serving
Revises: 0004_training
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_serving"
down_revision = "0004_training"
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = True) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "deployments",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column(
            "project_id",
            sa.Integer(),
            sa.ForeignKey("projects.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("model_name", sa.String(128), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("backend", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("replicas", sa.Integer(), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("port", sa.Integer(), nullable=True),
        sa.Column("router_pid", sa.Integer(), nullable=True),
        sa.Column("runner_host", sa.String(255), nullable=True),
        sa.Column("info", sa.JSON(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        _ts("created_at", nullable=False),
        _ts("updated_at", nullable=False),
        _ts("stopped_at"),
        sa.UniqueConstraint("project_id", "name", name="uq_deployment_project_name"),
    )
    for column in ("project_id", "status"):
        op.create_index(f"ix_deployments_{column}", "deployments", [column])


def downgrade() -> None:
    op.drop_table("deployments")
