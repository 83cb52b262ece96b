"""Model registry: models, versions and aliases.

Revision ID: 0002_model_registry
Revises: 0001_projects
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_model_registry"
down_revision = "0001_projects"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "registered_models",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "project_id",
            sa.Integer(),
            sa.ForeignKey("projects.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("archived", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("project_id", "name", name="uq_model_project_name"),
    )
    op.create_index("ix_registered_models_project_id", "registered_models", ["project_id"])
    op.create_index("ix_registered_models_updated_at", "registered_models", ["updated_at"])
    op.create_table(
        "model_versions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "model_id",
            sa.Integer(),
            sa.ForeignKey("registered_models.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("flavor", sa.String(32), nullable=False),
        sa.Column("format", sa.String(16), nullable=False),
        sa.Column("artifact_name", sa.String(255), nullable=False),
        sa.Column("artifact_path", sa.String(1024), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("checksum", sa.String(80), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("source", sa.String(1024), nullable=True),
        sa.Column("pipeline_run_id", sa.String(128), nullable=True),
        sa.Column("training_job_id", sa.String(128), nullable=True),
        sa.Column("archived", sa.Boolean(), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("model_id", "version", name="uq_version_model_number"),
    )
    op.create_index("ix_model_versions_model_id", "model_versions", ["model_id"])
    op.create_table(
        "model_aliases",
        sa.Column(
            "model_id",
            sa.Integer(),
            sa.ForeignKey("registered_models.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("alias", sa.String(64), primary_key=True),
        sa.Column(
            "version_id",
            sa.Integer(),
            sa.ForeignKey("model_versions.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("updated_by", sa.String(255), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_model_aliases_version_id", "model_aliases", ["version_id"])


def downgrade() -> None:
    op.drop_table("model_aliases")
    op.drop_table("model_versions")
    op.drop_table("registered_models")
