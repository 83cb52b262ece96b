"""Labeling: datasets, their items and versions, labeling projects and their tasks.

Revision ID: 0007_labeling
Revises: 0006_tuning
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_labeling"
down_revision = "0006_tuning"
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = True) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _project_fk() -> sa.Column:
    return sa.Column(
        "project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=False
    )


def upgrade() -> None:
    op.create_table(
        "datasets",
        sa.Column("id", sa.Integer(), primary_key=True),
        _project_fk(),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("source", sa.String(1024), nullable=False),
        sa.Column("text_field", sa.String(128), nullable=True),
        sa.Column("item_count", sa.Integer(), nullable=False),
        _ts("created_at", nullable=False),
        sa.UniqueConstraint("project_id", "name", name="uq_dataset_project_name"),
    )
    op.create_index("ix_datasets_project_id", "datasets", ["project_id"])
    op.create_table(
        "dataset_items",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "dataset_id",
            sa.Integer(),
            sa.ForeignKey("datasets.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(1024), nullable=False),
        sa.Column("checksum", sa.String(80), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("width", sa.Integer(), nullable=True),
        sa.Column("height", sa.Integer(), nullable=True),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("meta", sa.JSON(), nullable=True),
        sa.UniqueConstraint("dataset_id", "position", name="uq_item_dataset_position"),
    )
    op.create_table(
        "dataset_versions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "dataset_id",
            sa.Integer(),
            sa.ForeignKey("datasets.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("format", sa.String(16), nullable=False),
        sa.Column("labeling", sa.String(128), nullable=False),
        sa.Column("path", sa.String(1024), nullable=False),
        sa.Column("item_count", sa.Integer(), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
        _ts("created_at", nullable=False),
        sa.UniqueConstraint("dataset_id", "version", name="uq_dataset_version"),
    )
    op.create_index("ix_dataset_versions_dataset_id", "dataset_versions", ["dataset_id"])
    op.create_table(
        "labeling_projects",
        sa.Column("id", sa.Integer(), primary_key=True),
        _project_fk(),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column(
            "dataset_id",
            sa.Integer(),
            sa.ForeignKey("datasets.id", ondelete="RESTRICT"),
            nullable=False,
        ),
        sa.Column("type", sa.String(16), nullable=False),
        sa.Column("multi_label", sa.Boolean(), nullable=False),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("instructions", sa.Text(), nullable=False),
        sa.Column("review", sa.Boolean(), nullable=False),
        sa.Column("reviewers", sa.JSON(), nullable=False),
        _ts("created_at", nullable=False),
        sa.UniqueConstraint("project_id", "name", name="uq_labeling_project_name"),
    )
    op.create_index("ix_labeling_projects_project_id", "labeling_projects", ["project_id"])
    op.create_index("ix_labeling_projects_dataset_id", "labeling_projects", ["dataset_id"])
    op.create_table(
        "labeling_tasks",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "labeling_id",
            sa.Integer(),
            sa.ForeignKey("labeling_projects.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "item_id",
            sa.Integer(),
            sa.ForeignKey("dataset_items.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("assignee", sa.String(255), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("prediction", sa.JSON(), nullable=True),
        sa.Column("prediction_model", sa.String(255), nullable=True),
        sa.Column("rejected", sa.Boolean(), nullable=False),
        sa.Column("review_comment", sa.Text(), nullable=True),
        sa.Column("reviewer", sa.String(255), nullable=True),
        _ts("updated_at", nullable=False),
    )
    op.create_index(
        "ix_labeling_tasks_queue", "labeling_tasks", ["labeling_id", "assignee", "status", "id"]
    )
    op.create_index("ix_labeling_tasks_pool", "labeling_tasks", ["labeling_id", "status", "id"])
    op.create_index("ix_labeling_tasks_item_id", "labeling_tasks", ["item_id"])


def downgrade() -> None:
    op.drop_table("labeling_tasks")
    op.drop_table("labeling_projects")
    op.drop_table("dataset_versions")
    op.drop_table("dataset_items")
    op.drop_table("datasets")
