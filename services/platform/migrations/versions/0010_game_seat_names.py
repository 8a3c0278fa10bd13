"""The game service keeps its seats' display names beside the signed logs:
``game_seat_names``.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``game_seat_names`` (empty: the games stored before keep their names in their
    logs)."""
    op.create_table(
        "game_seat_names",
        sa.Column("game_id", sa.String(64), primary_key=True),
        sa.Column("seat", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("player_id", sa.Text(), nullable=False),
        sa.Column("display_name", sa.Text(), nullable=False),
        sa.Column("deleted", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.create_index("ix_game_seat_names_player", "game_seat_names", ["player_id"])


def downgrade() -> None:
    """Drop it."""
    op.drop_index("ix_game_seat_names_player", table_name="game_seat_names")
    op.drop_table("game_seat_names")
