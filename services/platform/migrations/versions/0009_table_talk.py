"""Table talk's tables (players' reports and mutes) and the accounts' last sign-in time,
by which idle guests are erased.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``chat_reports`` and ``chat_mutes``; add ``accounts_players.last_sign_in_ms``
    (0 for the players stored before: their idle time starts when retention first looks)."""
    op.create_table(
        "chat_reports",
        sa.Column("report_id", sa.BigInteger(), primary_key=True, autoincrement=True),
        sa.Column("reporter_id", sa.String(64), nullable=False),
        sa.Column("reported_id", sa.String(64), nullable=False),
        sa.Column("game_id", sa.String(128), nullable=False),
        sa.Column("table_id", sa.String(64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("category", sa.Integer(), nullable=False),
        sa.Column("note", sa.String(256), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_chat_reports_created", "chat_reports", ["created_ms"])
    op.create_index("ix_chat_reports_reported", "chat_reports", ["reported_id"])
    op.create_table(
        "chat_mutes",
        sa.Column("player_id", sa.String(64), primary_key=True),
        sa.Column("muted_id", sa.String(64), primary_key=True),
        sa.Column("muted_ms", sa.BigInteger(), nullable=False),
    )
    op.add_column("accounts_players", sa.Column("last_sign_in_ms", sa.BigInteger(),
                                                nullable=False, server_default="0"))


def downgrade() -> None:
    """Drop them."""
    op.drop_column("accounts_players", "last_sign_in_ms")
    op.drop_table("chat_mutes")
    op.drop_index("ix_chat_reports_reported", table_name="chat_reports")
    op.drop_index("ix_chat_reports_created", table_name="chat_reports")
    op.drop_table("chat_reports")
