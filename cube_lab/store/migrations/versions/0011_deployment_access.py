"""Per-deployment access: hashed API keys, rate limits, client allow/deny lists.

Revision ID: 0011_deployment_access
Revises: 0010_project_invitations
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_deployment_access"
down_revision = "0010_project_invitations"
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = True) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    # {"auth", "rate_limit", "allow", "deny"}; NULL on deployments made before (no key asked)
    op.add_column("deployments", sa.Column("access", sa.JSON(), nullable=True))
    op.create_table(
        "deployment_keys",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column(
            "project_id",
            sa.Integer(),
            sa.ForeignKey("projects.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("deployment", sa.String(128), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_by", sa.String(255), nullable=False),
        _ts("created_at", nullable=False),
        _ts("expires_at"),
        _ts("revoked_at"),
        _ts("last_used_at"),
    )
    op.create_index(
        "ix_deployment_keys_deployment", "deployment_keys", ["project_id", "deployment"]
    )


def downgrade() -> None:
    op.drop_table("deployment_keys")
    with op.batch_alter_table("deployments") as batch:
        batch.drop_column("access")
