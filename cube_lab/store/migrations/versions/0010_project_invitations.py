"""Project membership by invitation: a member is pending until the invited user accepts.

A pending invitation is its own table (not a status on ``project_members``), so every query
that joins members keeps meaning "members" and a pending user sees nothing. Rows already in
``project_members`` stay members: they were made under the old rules, and a user who was
added to a project named after them is turned back into an invitation when their personal
project takes its name (``ProjectService.personal_project``).

Revision ID: 0010_project_invitations
Revises: 0009_process_groups
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_project_invitations"
down_revision = "0009_process_groups"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "project_invitations",
        sa.Column(
            "project_id",
            sa.Integer(),
            sa.ForeignKey("projects.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("username", sa.String(255), primary_key=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("invited_by", sa.String(255), nullable=False),
        sa.Column("invited_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_project_invitations_username", "project_invitations", ["username"])


def downgrade() -> None:
    op.drop_index("ix_project_invitations_username", table_name="project_invitations")
    op.drop_table("project_invitations")
