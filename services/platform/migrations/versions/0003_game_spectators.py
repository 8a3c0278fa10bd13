"""The game service keeps whether a match admits spectators: ``games.spectators_allowed``.

The lobby used to be asked for it; now it is set when the game is created. Games stored
before this revision keep every spectator welcome (the column's server default, true), as
they were for any match the lobby did not create.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add ``games.spectators_allowed`` (true for the games already stored)."""
    op.add_column(
        "games",
        sa.Column("spectators_allowed", sa.Boolean(), nullable=False, server_default=sa.true()),
    )


def downgrade() -> None:
    """Drop ``games.spectators_allowed`` (every match admits spectators again)."""
    op.drop_column("games", "spectators_allowed")
