"""An alert rule's threshold: the error rate or p99 latency past which a deployment rule fires
(cube_lab/alerts/watch.py).

Revision ID: 0014_alert_thresholds
Revises: 0013_chat
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_alert_thresholds"
down_revision = "0013_chat"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("alert_rules") as batch:
        batch.add_column(sa.Column("threshold", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("alert_rules") as batch:
        batch.drop_column("threshold")
