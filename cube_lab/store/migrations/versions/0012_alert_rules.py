"""Alert rules per project and their bounded delivery log (cube_lab/alerts/).

Revision ID: 0012_alert_rules
Revises: 0011_deployment_access
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_alert_rules"
down_revision = "0011_deployment_access"
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = True) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "alert_rules",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "project_id",
            sa.Integer(),
            sa.ForeignKey("projects.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.Column("duration_s", sa.Float(), nullable=True),
        sa.Column("channel", sa.JSON(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        _ts("created_at", nullable=False),
        _ts("updated_at", nullable=False),
        sa.UniqueConstraint("project_id", "name", name="uq_alert_rule_project_name"),
    )
    op.create_index("ix_alert_rules_project_id", "alert_rules", ["project_id"])
    op.create_table(
        "alert_deliveries",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "rule_id",
            sa.Integer(),
            sa.ForeignKey("alert_rules.id", ondelete="CASCADE"),
            nullable=False,
        ),
        _ts("at", nullable=False),
        sa.Column("event", sa.String(64), nullable=False),
        sa.Column("object", sa.String(255), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("status", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=False),
    )
    op.create_index("ix_alert_deliveries_rule", "alert_deliveries", ["rule_id", "id"])


def downgrade() -> None:
    op.drop_table("alert_deliveries")
    op.drop_index("ix_alert_rules_project_id", table_name="alert_rules")
    op.drop_table("alert_rules")
