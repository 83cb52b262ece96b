"""Project membership by invitation: a member is pending until the invited user accepts.

Revision ID: 0010_project_invitations
Revises: 0009_process_groups
"""

from __future__ import annotations

revision = "0010_project_invitations"
down_revision = "0009_process_groups"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass  # filled in by the change that needs it


def downgrade() -> None:
    pass
