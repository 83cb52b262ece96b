"""Course material (issue 24): a teacher's hand-out puts models and dataset versions into the
course's project, read-only to everyone but the teacher (``read_only``); a dataset version
copied so remembers its original (``origin``), so a second hand-out copies nothing twice.

Revision ID: 0016_course_material
Revises: 0015_alert_quota_resource
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016_course_material"
down_revision = "0015_alert_quota_resource"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("registered_models", "datasets"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(
                sa.Column("read_only", sa.Boolean(), nullable=False, server_default=sa.false())
            )
    with op.batch_alter_table("dataset_versions") as batch:
        batch.add_column(sa.Column("origin", sa.String(512), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("dataset_versions") as batch:
        batch.drop_column("origin")
    for table in ("datasets", "registered_models"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("read_only")
