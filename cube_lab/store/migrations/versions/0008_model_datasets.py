"""Model versions record the dataset versions they were trained on (lineage).

Revision ID: 0008_model_datasets
Revises: 0007_labeling
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_model_datasets"
down_revision = "0007_labeling"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # a list of {"project", "name", "version", "path"}; NULL on versions registered before
    op.add_column("model_versions", sa.Column("datasets", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column("model_versions", "datasets")
