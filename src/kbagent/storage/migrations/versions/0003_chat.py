"""Chat: sessions, records (question, answer, citations, trace, context_info, usage, timings, status)
and the persisted per-session context (summary, watermark, revision).

Revision ID: 0003
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0001"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "chat_sessions",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("owner", sa.String(128), nullable=False, server_default="local"),
        sa.Column("title", sa.String(256), nullable=False, server_default=""),
        sa.Column("history_enabled", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("updated_at", TZ, nullable=False),
    )
    op.create_index("ix_chat_sessions_owner_updated", "chat_sessions", ["owner", "updated_at"])
    op.create_table(
        "chat_records",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(32), sa.ForeignKey("chat_sessions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("question", sa.Text, nullable=False),
        sa.Column("answer", sa.Text, nullable=False, server_default=""),
        sa.Column("citations", sa.JSON, nullable=False),
        sa.Column("agent_trace", sa.JSON, nullable=False),
        sa.Column("agent_stop_reason", sa.String(32), nullable=False, server_default=""),
        sa.Column("context_info", sa.JSON, nullable=False),
        sa.Column("usage", sa.JSON, nullable=False),
        sa.Column("timings", sa.JSON, nullable=False),
        sa.Column("status", sa.String(16), nullable=False, server_default="ok"),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_index("ix_chat_records_session_id_id", "chat_records", ["session_id", "id"])
    op.create_table(
        "chat_contexts",
        sa.Column(
            "session_id",
            sa.String(32),
            sa.ForeignKey("chat_sessions.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("summary", sa.Text, nullable=False, server_default=""),
        sa.Column("watermark", sa.Integer, nullable=False, server_default="0"),
        sa.Column("revision", sa.Integer, nullable=False, server_default="0"),
        sa.Column("compacted_rounds", sa.Integer, nullable=False, server_default="0"),
        sa.Column("wait_after", sa.Integer, nullable=True),
        sa.Column("updated_at", TZ, nullable=False),
    )
