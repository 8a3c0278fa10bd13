"""The event store: games, events, commands.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the tables of services/platform/models.py."""
    op.create_table(
        "games",
        sa.Column("game_id", sa.String(64), primary_key=True),
        sa.Column("game_type", sa.Integer(), nullable=False),
        sa.Column("last_seq", sa.BigInteger(), nullable=False),
        sa.Column("last_hash", sa.LargeBinary(), nullable=False),
        sa.Column("relayed_seq", sa.BigInteger(), nullable=False),
        sa.Column("relay_lease_until_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index(
        "ix_games_unrelayed",
        "games",
        ["game_id"],
        postgresql_where=sa.text("relayed_seq < last_seq"),
        sqlite_where=sa.text("relayed_seq < last_seq"),
    )
    op.create_table(
        "events",
        sa.Column("game_id", sa.String(64), primary_key=True),
        sa.Column("seq", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("game_type", sa.Integer(), nullable=False),
        sa.Column("event", sa.LargeBinary(), nullable=False),
        sa.Column("hash", sa.LargeBinary(), nullable=False),
        sa.Column("command_id", sa.String(128), nullable=True),
        sa.Column("at_ms", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "commands",
        sa.Column("game_id", sa.String(64), primary_key=True),
        sa.Column("command_id", sa.String(128), primary_key=True),
        sa.Column("first_seq", sa.BigInteger(), nullable=False),
        sa.Column("last_seq", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    """Drop the event store's tables."""
    op.drop_table("commands")
    op.drop_table("events")
    op.drop_index("ix_games_unrelayed", table_name="games")
    op.drop_table("games")
