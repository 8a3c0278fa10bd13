"""The accounts service's moderation tables: the players' standing bans, the operators'
hash-chained action log, and the deleted accounts.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``accounts_bans``, ``accounts_admin_actions`` and ``accounts_erasures``."""
    op.create_table(
        "accounts_bans",
        sa.Column("player_id", sa.String(64), primary_key=True),
        sa.Column("until_ms", sa.BigInteger(), nullable=True),
        sa.Column("reason", sa.String(256), nullable=False),
        sa.Column("banned_by", sa.String(64), nullable=False),
        sa.Column("banned_ms", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "accounts_admin_actions",
        sa.Column("seq", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("at_ms", sa.BigInteger(), nullable=False),
        sa.Column("actor", sa.String(64), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("subject", sa.String(256), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("prev_hash", sa.LargeBinary(), nullable=False),
        sa.Column("hash", sa.LargeBinary(), nullable=False),
    )
    op.create_table(
        "accounts_erasures",
        sa.Column("player_id", sa.String(64), primary_key=True),
        sa.Column("erased_ms", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    """Drop the moderation tables."""
    op.drop_table("accounts_erasures")
    op.drop_table("accounts_admin_actions")
    op.drop_table("accounts_bans")
