"""Runs and jobs record the process groups they started (so recovery can end them).

Revision ID: 0009_process_groups
Revises: 0008_model_datasets
"""

from __future__ import annotations

revision = "0009_process_groups"
down_revision = "0008_model_datasets"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass  # filled in by the change that needs it


def downgrade() -> None:
    pass
