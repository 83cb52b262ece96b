"""An alert rule's quota resource: the dimension a ``quota.usage`` rule watches
(cube_lab/alerts/watch.py); its percentage is the rule's ``threshold``.

Revision ID: 0015_alert_quota_resource
Revises: 0014_alert_thresholds
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_alert_quota_resource"
down_revision = "0014_alert_thresholds"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("alert_rules") as batch:
        batch.add_column(sa.Column("resource", sa.String(128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("alert_rules") as batch:
        batch.drop_column("resource")
