"""Projects and their members.

Revision ID: 0001_projects
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_projects"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "projects",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(128), nullable=False, unique=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "project_members",
        sa.Column(
            "project_id",
            sa.Integer(),
            sa.ForeignKey("projects.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("username", sa.String(255), primary_key=True),
        sa.Column("role", sa.String(16), nullable=False),
    )
    op.create_index("ix_project_members_username", "project_members", ["username"])


def downgrade() -> None:
    op.drop_index("ix_project_members_username", "project_members")
    op.drop_table("project_members")
    op.drop_table("projects")
