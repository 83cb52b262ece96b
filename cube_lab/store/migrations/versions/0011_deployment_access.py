"""Per-deployment access: hashed API keys, rate limits, client allow/deny lists.

Revision ID: 0011_deployment_access
Revises: 0010_project_invitations
"""

from __future__ import annotations

revision = "0011_deployment_access"
down_revision = "0010_project_invitations"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass  # filled in by the change that needs it


def downgrade() -> None:
    pass
