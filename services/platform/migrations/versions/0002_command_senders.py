"""Command ids belong to their sender: the key of ``commands`` becomes
``(game_id, sender, command_id)``.

Rows written before this revision get sender ``""``, which no caller ever is: a retry that
straddles the upgrade is decided again rather than answered from the old row (with its
``expected_seq`` it is refused as stale), and nobody can claim an old row as theirs.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_PRIMARY_KEY = "commands_pkey"  # PostgreSQL's name for the key 0001 created


def upgrade() -> None:
    """Add ``commands.sender`` and make it part of the primary key."""
    op.add_column(
        "commands",
        sa.Column("sender", sa.String(160), nullable=False, server_default=""),
    )
    op.alter_column("commands", "sender", server_default=None)
    op.drop_constraint(_PRIMARY_KEY, "commands", type_="primary")
    op.create_primary_key(_PRIMARY_KEY, "commands", ["game_id", "sender", "command_id"])


def downgrade() -> None:
    """Key ``commands`` by ``(game_id, command_id)`` again, keeping one row per such pair."""
    op.execute(
        "DELETE FROM commands a USING commands b WHERE a.game_id = b.game_id "
        "AND a.command_id = b.command_id AND a.sender > b.sender"
    )
    op.drop_constraint(_PRIMARY_KEY, "commands", type_="primary")
    op.drop_column("commands", "sender")
    op.create_primary_key(_PRIMARY_KEY, "commands", ["game_id", "command_id"])
