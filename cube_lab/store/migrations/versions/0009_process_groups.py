"""Runs and jobs record the process groups they started (so recovery can end them).

Revision ID: 0009_process_groups
Revises: 0008_model_datasets
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_process_groups"
down_revision = "0008_model_datasets"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "process_groups",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("owner_kind", sa.String(16), nullable=False),
        sa.Column("owner_id", sa.String(64), nullable=False),
        sa.Column("part", sa.String(255), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("pgid", sa.Integer(), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("start_ticks", sa.BigInteger(), nullable=False),
        sa.Column("boot_id", sa.String(64), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_process_groups_owner", "process_groups", ["owner_kind", "owner_id", "part"])


def downgrade() -> None:
    op.drop_index("ix_process_groups_owner", table_name="process_groups")
    op.drop_table("process_groups")
