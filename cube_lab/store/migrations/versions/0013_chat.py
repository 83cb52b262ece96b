"""Chat conversations and their messages per user and project (cube_lab/chat/).

Revision ID: 0013_chat
Revises: 0012_alert_rules
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_chat"
down_revision = "0012_alert_rules"
branch_labels = None
depends_on = None


def _ts(name: str) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=False)


def upgrade() -> None:
    op.create_table(
        "chat_conversations",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "project_id",
            sa.Integer(),
            sa.ForeignKey("projects.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("title", sa.String(255), nullable=False),
        sa.Column("target", sa.JSON(), nullable=False),
        sa.Column("api_key", sa.Text(), nullable=True),
        sa.Column("system", sa.Text(), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        _ts("created_at"),
        _ts("updated_at"),
    )
    op.create_index("ix_chat_conversations_owner", "chat_conversations", ["project_id", "owner"])
    op.create_table(
        "chat_messages",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "conversation_id",
            sa.Integer(),
            sa.ForeignKey("chat_conversations.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("rating", sa.String(8), nullable=True),
        sa.Column("edited", sa.Text(), nullable=True),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("usage", sa.JSON(), nullable=True),
        sa.Column("model", sa.String(255), nullable=False),
        _ts("created_at"),
    )
    op.create_index(
        "ix_chat_messages_conversation", "chat_messages", ["conversation_id", "turn", "id"]
    )


def downgrade() -> None:
    op.drop_index("ix_chat_messages_conversation", table_name="chat_messages")
    op.drop_table("chat_messages")
    op.drop_index("ix_chat_conversations_owner", table_name="chat_conversations")
    op.drop_table("chat_conversations")
